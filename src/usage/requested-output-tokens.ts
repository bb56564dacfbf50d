/**
 * The most output a call asks for, from the top level of its JSON body: `max_tokens` (chat,
 * completions, Anthropic), `max_completion_tokens` (newer OpenAI chat) or `max_output_tokens`
 * (Responses); the largest when several are given. Undefined when the body names none or is not
 * a JSON object. The one reader of these fields (the TPM reservation's estimate).
 */
const FIELDS = ['max_tokens', 'max_completion_tokens', 'max_output_tokens'] as const;
const OPEN_BRACE = 0x7b;

export function requestedOutputTokens(body: Buffer | undefined): number | undefined {
  if (body === undefined) return undefined;
  let first = 0;
  while (first < body.length && (body[first] === 0x20 || body[first] === 0x0a || body[first] === 0x0d || body[first] === 0x09)) first++;
  // Not a JSON object (a multipart upload...): not decoded at all.
  if (body[first] !== OPEN_BRACE) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  let most: number | undefined;
  for (const field of FIELDS) {
    const value = (parsed as Record<string, unknown>)[field];
    if (typeof value === 'number' && Number.isFinite(value) && value >= 0) most = Math.max(most ?? 0, Math.ceil(value));
  }
  return most;
}
