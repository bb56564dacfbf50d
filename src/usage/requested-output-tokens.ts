/**
 * The most output a call asks for, from the top level of its JSON body as the request JSON
 * reader read it (`ctx.decided.requestJson`): `max_tokens` (chat, completions, Anthropic),
 * `max_completion_tokens` (newer OpenAI chat) or `max_output_tokens` (Responses); the largest
 * when several are given. Undefined when the body names none or is not valid JSON.
 */
import type { JsonMember } from '../core/context.js';

const FIELDS = ['max_tokens', 'max_completion_tokens', 'max_output_tokens'] as const;

export function requestedOutputTokens(members: ReadonlyMap<string, JsonMember> | undefined): number | undefined {
  if (members === undefined) return undefined;
  let most: number | undefined;
  for (const field of FIELDS) {
    const member = members.get(field);
    if (member?.kind !== 'number' || member.text === undefined) continue;
    const value = Number(member.text);
    if (Number.isFinite(value) && value >= 0) most = Math.max(most ?? 0, Math.ceil(value));
  }
  return most;
}
