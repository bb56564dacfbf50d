/**
 * The start-up line that says whether `/v1` needs a key. Protected as soon as any key record
 * exists (revoked and expired ones too: deleting the last key is what reopens the API), but
 * the count it names is of the keys that work.
 */

export interface AuthModeLine {
  level: 'info' | 'warn';
  fields: Record<string, unknown>;
  message: string;
}

export function authModeLine(input: { anyKeys: boolean; activeKeys: number; host: string }): AuthModeLine {
  const { anyKeys, activeKeys, host } = input;
  if (anyKeys) {
    const fields = { auth: 'protected', keys: activeKeys };
    if (activeKeys === 0)
      return {
        level: 'warn',
        fields,
        message: 'API is PROTECTED, but no API key is active (all are revoked or expired): every /v1 call is refused.',
      };
    return {
      level: 'info',
      fields,
      message: `API is PROTECTED: every /v1 call needs one of the ${activeKeys} active API key(s).`,
    };
  }
  const loopback = host === '127.0.0.1' || host === '::1' || host === 'localhost' || host.startsWith('127.');
  const message =
    'API is OPEN: no API keys exist, so /v1 accepts calls without a key. Create one with ' +
    '`./bin/gatehouse keys create --name <name>` to protect it.';
  if (loopback) return { level: 'info', fields: { auth: 'open' }, message };
  return {
    level: 'warn',
    fields: { auth: 'open', host },
    message: `${message} WARNING: listening on ${host}, so anyone on the network can use your models.`,
  };
}
