/**
 * A month of made-up but plausible traffic for the Usage page (seeded, so every run draws the
 * same), as store records: busier in the last day and in working hours, with errors, aborts,
 * refused calls and captured bodies. The dashboard tests append it to the real store in one go.
 */
import { newUsageId } from '../../src/store/usage-id.js';
import type { UsageRecord } from '../../src/store/records.js';
import { prng } from '../helpers/prng.js';
import type { DemoKeyIds } from './demo-admin.js';

/** About 2,000 calls over 30 days, busier in the last day and in working hours. */
export function demoUsage(keyIds: DemoKeyIds, now = Date.now()): UsageRecord[] {
  const random = prng(20261121);
  const pick = <T>(items: ReadonlyArray<readonly [T, number]>): T => {
    const total = items.reduce((s, [, w]) => s + w, 0);
    let r = random() * total;
    for (const [item, w] of items) if ((r -= w) < 0) return item;
    return items[items.length - 1]![0];
  };
  type Who = { id: string; name: string } | null;
  const keys: Array<readonly [Who, number]> = [
    [{ id: keyIds['open-webui'], name: 'open-webui' }, 6],
    [{ id: keyIds['laptop (Claude Code)'], name: 'laptop (Claude Code)' }, 3],
    [{ id: keyIds['home-assistant'], name: 'home-assistant' }, 2],
    [null, 0.4],
  ];
  const modelsFor = (keyId: string | undefined): Array<readonly [string, number]> =>
    keyId === keyIds['home-assistant']
      ? [
          ['qwen', 5],
          ['whisper-large-v3', 2],
        ]
      : keyId === keyIds['laptop (Claude Code)']
        ? [
            ['qwen3-30b-a3b', 6],
            ['gemma-3-12b', 2],
            ['nomic-embed-text', 1],
          ]
        : [
            ['qwen3-30b-a3b', 4],
            ['qwen', 3],
            ['gemma-3-12b', 2],
            ['nomic-embed-text', 1],
          ];
  const records: UsageRecord[] = [];
  let serial = 0;
  const add = (at: number) => {
    const key = pick(keys);
    const model = key === null ? null : pick(modelsFor(key.id));
    const embed = model === 'nomic-embed-text';
    const audio = model === 'whisper-large-v3';
    const endpoint = embed
      ? '/v1/embeddings'
      : audio
        ? '/v1/audio/transcriptions'
        : key?.id === keyIds['laptop (Claude Code)']
          ? '/v1/messages'
          : '/v1/chat/completions';
    const streamed = !embed && !audio && random() < 0.7;
    const roll = random();
    let status = 200;
    let errorClass: string | null = null;
    let aborted = false;
    if (key === null) {
      status = 401;
      errorClass = 'invalid_api_key';
    } else if (roll < 0.025) {
      status = 429;
      errorClass = 'rate_limited';
    } else if (roll < 0.035) {
      status = 502;
      errorClass = 'upstream_unreachable';
    } else if (roll < 0.045 && streamed) {
      aborted = true;
      errorClass = 'client_abort';
    } else if (roll < 0.05) {
      status = 404;
      errorClass = 'upstream_error';
    }
    const ok = status === 200;
    const input = ok ? Math.round(40 + random() ** 2 * 6000) : null;
    const output = ok && !embed ? Math.round(aborted ? 5 + random() * 60 : 20 + random() ** 1.5 * 900) : ok ? 0 : null;
    const cached =
      ok && input !== null && !embed && random() < 0.5 ? Math.round(input * random() * 0.8) : ok ? 0 : null;
    const ttfb = ok ? Math.round(15 + random() ** 3 * 2500) : status === 502 ? 3 + Math.round(random() * 20) : 1;
    const perToken = 6 + random() * 14;
    const duration = ok
      ? Math.round(ttfb + (output ?? 0) * perToken * (streamed ? 1 : 0.9))
      : ttfb + Math.round(random() * 3);
    serial++;
    const captured = ok && serial % 7 === 0;
    const prompt = 'Summarise the last meeting notes in three bullet points.';
    records.push({
      id: newUsageId(Math.floor(at)),
      at: Math.floor(at),
      requestId: `req-${((serial * 2_654_435_761) % 4_294_967_296).toString(16).padStart(8, '0')}-${serial}`,
      keyId: key?.id ?? null,
      keyName: key?.name ?? null,
      model,
      method: 'POST',
      endpoint,
      status,
      streamed: streamed && (ok || status === 200),
      inputTokens: aborted && endpoint === '/v1/chat/completions' ? null : input,
      outputTokens: output,
      cachedTokens: aborted ? null : cached,
      tokensSource: !ok
        ? null
        : aborted
          ? 'estimate'
          : streamed && endpoint === '/v1/chat/completions'
            ? 'timings'
            : 'usage',
      ttfbMs: ok || status === 502 ? ttfb : null,
      ttftMs: ok ? ttfb + Math.round(random() * 40) : null,
      durationMs: duration,
      bytesIn: 180 + Math.round(random() * 9000),
      bytesOut: ok ? 400 + (output ?? 0) * (streamed ? 110 : 6) : 160,
      clientAborted: aborted,
      errorClass,
      queueMs: key === null ? null : 0,
      gpuMs: ok ? duration : null,
      requestBody: captured
        ? JSON.stringify({ model, stream: streamed, messages: [{ role: 'user', content: prompt }] })
        : null,
      responseBody: captured
        ? streamed
          ? `data: {"choices":[{"delta":{"role":"assistant"}}]}\n\ndata: {"choices":[{"delta":{"content":"- ` +
            `The budget"}}]}\n\n[... ${(output ?? 0) * 110} more bytes not captured]`
          : JSON.stringify({
              id: 'chatcmpl-1',
              object: 'chat.completion',
              model,
              choices: [
                {
                  index: 0,
                  message: {
                    role: 'assistant',
                    content: '- The budget is approved.\n- Launch moves to May.\n- Hiring continues.',
                  },
                  finish_reason: 'stop',
                },
              ],
              usage: { prompt_tokens: input, completion_tokens: output },
            })
        : null,
    });
  };
  // The last hour, minute by minute, busy; the rest of the day in working-hours waves; a month behind.
  for (let m = 0; m < 60; m++) {
    const n = Math.round(2 + 3 * Math.sin(m / 7) ** 2 + random() * 3);
    for (let i = 0; i < n; i++) add(now - m * 60_000 - random() * 60_000);
  }
  for (let q = 4; q < 96; q++) {
    const t = now - q * 900_000;
    const hour = new Date(t).getUTCHours();
    const n = Math.round((hour >= 8 && hour <= 19 ? 14 : 3) * (0.6 + random() * 0.8));
    for (let i = 0; i < n; i++) add(t - random() * 900_000);
  }
  for (let d = 1; d < 30; d++) {
    const n = Math.round(25 + random() * 40 + (d % 7 < 2 ? -15 : 0));
    for (let i = 0; i < n; i++) add(now - d * 86_400_000 - random() * 86_400_000);
  }
  return records.filter((r) => r.at <= now);
}
