/**
 * Checks an `Authorization: Bearer <token>` header against a configured secret (the admin token,
 * the metrics token) in constant time: both sides are hashed first, so neither the content nor the
 * length of a guess changes how long the comparison takes.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/** A matcher for `token`; undefined when no token is configured (nothing can match). */
export function bearerTokenMatcher(token: string | undefined): ((authorization: unknown) => boolean) | undefined {
  if (!token) return undefined;
  const expected = digest(token);
  return (authorization) => {
    const match = typeof authorization === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null;
    return match !== null && timingSafeEqual(digest(match[1]!), expected);
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
