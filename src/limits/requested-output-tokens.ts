/**
 * The most output a call asks for, from the top level of its JSON body as the request JSON
 * reader read it (`ctx.decided.requestJson`): `max_tokens` (chat, completions, Anthropic),
 * `max_completion_tokens` (newer OpenAI chat), `max_output_tokens` (Responses) or `n_predict`
 * (llama.cpp's own, which it prefers to `max_tokens`); the largest when several are given.
 * Undefined when the body names none, is not valid JSON, or one is negative (llama.cpp: no limit).
 */
import { OUTPUT_LIMIT_FIELDS, type JsonMember } from '../core/context.js';

export function requestedOutputTokens(members: ReadonlyMap<string, JsonMember> | undefined): number | undefined {
  if (members === undefined) return undefined;
  let most: number | undefined;
  for (const field of OUTPUT_LIMIT_FIELDS) {
    const member = members.get(field);
    if (member?.kind !== 'number' || member.text === undefined) continue;
    const value = Number(member.text);
    if (value < 0) return undefined;
    if (Number.isFinite(value)) most = Math.max(most ?? 0, Math.ceil(value));
  }
  return most;
}
