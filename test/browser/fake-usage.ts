/**
 * The usage part of the in-memory admin API (docs/admin-api.md, "Usage", and `GET /api/limits`):
 * a month of made-up but plausible traffic (seeded, so every run draws the same), with the
 * summary computed from the records the way the contract defines it (buckets, zero-filled
 * series, groups sorted by requests; exact percentiles stand in for the histogram estimate).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { prng } from '../helpers/prng.js';

export interface FakeUsageRecord {
  id: string;
  at: string;
  requestId: string;
  key: { id: string; name: string | null } | null;
  model: string | null;
  method: string;
  endpoint: string;
  status: number;
  streamed: boolean;
  inputTokens: number | null;
  outputTokens: number | null;
  cachedTokens: number | null;
  tokensSource: 'usage' | 'timings' | 'estimate' | null;
  ttfbMs: number | null;
  ttftMs: number | null;
  durationMs: number | null;
  bytesIn: number | null;
  bytesOut: number | null;
  clientAborted: boolean;
  errorClass: string | null;
  captured: boolean;
  requestBody: string | null;
  responseBody: string | null;
}

export interface FakeLimitsInfo {
  limitsScope: 'replica' | 'shared';
  redis: 'off' | 'connected' | 'unavailable';
  unavailableSince: string | null;
}

export interface FakeUsageState {
  usage: FakeUsageRecord[];
  /** null: the route answers 404 (an older gateway without it). */
  limitsInfo: FakeLimitsInfo | null;
  /** Every usage route answers 503 (to render the error state). */
  usageDown: boolean;
}

const RANGES = {
  '1h': { rangeMs: 3_600_000, stepMs: 60_000 },
  '24h': { rangeMs: 86_400_000, stepMs: 900_000 },
  '30d': { rangeMs: 30 * 86_400_000, stepMs: 86_400_000 },
} as const;

/** About 2,000 calls over 30 days, busier in the last day and in working hours. */
export function demoUsage(now = Date.now()): FakeUsageRecord[] {
  const random = prng(20261121);
  const pick = <T>(items: ReadonlyArray<readonly [T, number]>): T => {
    const total = items.reduce((s, [, w]) => s + w, 0);
    let r = random() * total;
    for (const [item, w] of items) if ((r -= w) < 0) return item;
    return items[items.length - 1]![0];
  };
  type Who = { id: string; name: string } | null;
  const keys: Array<readonly [Who, number]> = [
    [{ id: 'key_01', name: 'open-webui' }, 6],
    [{ id: 'key_03', name: 'laptop (Claude Code)' }, 3],
    [{ id: 'key_02', name: 'home-assistant' }, 2],
    [null, 0.4],
  ];
  const modelsFor = (keyId: string | undefined): Array<readonly [string, number]> =>
    keyId === 'key_02'
      ? [
          ['qwen', 5],
          ['whisper-large-v3', 2],
        ]
      : keyId === 'key_03'
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
  const records: FakeUsageRecord[] = [];
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
        : key?.id === 'key_03'
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
    const id = `0${Math.floor(at).toString(36)}-demo-${String(serial).padStart(6, '0')}`;
    const captured = ok && serial % 7 === 0;
    const prompt = 'Summarise the last meeting notes in three bullet points.';
    records.push({
      id,
      at: new Date(at).toISOString(),
      requestId: `req-${((serial * 2_654_435_761) % 4_294_967_296).toString(16).padStart(8, '0')}-${serial}`,
      key,
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
      captured,
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
  return records
    .filter((r) => Date.parse(r.at) <= now)
    .sort((a, b) => (a.at === b.at ? (a.id < b.id ? 1 : -1) : a.at < b.at ? 1 : -1));
}

interface Stats {
  requests: number;
  errors: number;
  aborted: number;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  latencyMs: { avg: number; p50: number; p95: number; p99: number } | null;
}

function stats(records: FakeUsageRecord[]): Stats {
  const durations = records.map((r) => r.durationMs ?? 0).sort((a, b) => a - b);
  const pct = (p: number) => durations[Math.min(durations.length - 1, Math.floor((p / 100) * durations.length))] ?? 0;
  return {
    requests: records.length,
    errors: records.filter((r) => r.status >= 400 && !r.clientAborted).length,
    aborted: records.filter((r) => r.clientAborted).length,
    inputTokens: records.reduce((s, r) => s + (r.inputTokens ?? 0), 0),
    outputTokens: records.reduce((s, r) => s + (r.outputTokens ?? 0), 0),
    cachedTokens: records.reduce((s, r) => s + (r.cachedTokens ?? 0), 0),
    latencyMs:
      records.length === 0
        ? null
        : { avg: durations.reduce((a, b) => a + b, 0) / durations.length, p50: pct(50), p95: pct(95), p99: pct(99) },
  };
}

export function fakeSummary(
  records: FakeUsageRecord[],
  range: keyof typeof RANGES,
  groupBy: 'key' | 'model' | null,
  now = Date.now(),
) {
  const { rangeMs, stepMs } = RANGES[range];
  const to = Math.floor(now / stepMs) * stepMs + stepMs;
  const from = to - rangeMs;
  const points = rangeMs / stepMs;
  const inRange = records.filter((r) => {
    const at = Date.parse(r.at);
    return at >= from && at < to;
  });
  const series = (rows: FakeUsageRecord[]) => {
    const buckets: FakeUsageRecord[][] = Array.from({ length: points }, () => []);
    for (const r of rows) buckets[Math.floor((Date.parse(r.at) - from) / stepMs)]?.push(r);
    return buckets.map((b, i) => ({ t: new Date(from + i * stepMs).toISOString(), ...stats(b) }));
  };
  const groups = new Map<string, FakeUsageRecord[]>();
  if (groupBy) {
    for (const r of inRange) {
      const id = groupBy === 'key' ? (r.key?.id ?? '') : (r.model ?? '');
      groups.set(id, [...(groups.get(id) ?? []), r]);
    }
  }
  return {
    range,
    groupBy,
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    stepMs,
    totals: stats(inRange),
    series: series(inRange),
    groups: [...groups.entries()]
      .map(
        ([id, rows]): {
          key?: { id: string | null; name: string | null };
          model?: string | null;
          totals: Stats;
          series: ReturnType<typeof series>;
        } => ({
          ...(groupBy === 'key'
            ? { key: { id: id === '' ? null : id, name: id === '' ? null : (rows[0]?.key?.name ?? null) } }
            : { model: id === '' ? null : id }),
          totals: stats(rows),
          series: series(rows),
        }),
      )
      .sort((a, b) => b.totals.requests - a.totals.requests),
  };
}

export function registerFakeUsageApi(app: FastifyInstance, state: FakeUsageState): void {
  const down = (reply: FastifyReply) =>
    reply.code(503).send({
      error: { code: 'service_unavailable', message: 'The usage store is not answering (database is locked).' },
    });
  const view = ({ requestBody: _req, responseBody: _res, ...row }: FakeUsageRecord) => row;

  app.get('/api/limits', async (_request, reply) =>
    state.limitsInfo ? state.limitsInfo : reply.code(404).send({ error: { code: 'not_found', message: 'Not found.' } }),
  );

  app.get('/api/usage/summary', async (request, reply) => {
    if (state.usageDown) return down(reply);
    const query = request.query as { range?: string; groupBy?: string };
    const range = (query.range ?? '24h') as keyof typeof RANGES;
    if (!(range in RANGES))
      return reply.code(422).send({
        error: {
          code: 'validation_failed',
          message: 'Invalid query.',
          details: [{ path: '/range', message: 'must be one of 1h, 24h, 30d' }],
        },
      });
    const groupBy = query.groupBy === 'key' || query.groupBy === 'model' ? query.groupBy : null;
    return fakeSummary(state.usage, range, groupBy);
  });

  app.get('/api/usage/requests', async (request, reply) => {
    if (state.usageDown) return down(reply);
    const q = request.query as Record<string, string | undefined>;
    const status = q.status?.toLowerCase();
    const limit = q.limit ? Number(q.limit) : 100;
    let rows = state.usage.filter(
      (r) =>
        (!q.key || r.key?.id === q.key) &&
        (!q.model || r.model === q.model) &&
        (!status ||
          (/^\dxx$/.test(status) ? Math.floor(r.status / 100) === Number(status[0]) : r.status === Number(status))) &&
        (!q.from || r.at >= new Date(q.from).toISOString()) &&
        (!q.to || r.at < new Date(q.to).toISOString()),
    );
    if (q.cursor) {
      const [at, id] = Buffer.from(q.cursor, 'base64url').toString('utf8').split('|');
      rows = rows.filter((r) => r.at < (at ?? '') || (r.at === at && r.id < (id ?? '')));
    }
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      requests: page.map(view),
      nextCursor: rows.length > limit && last ? Buffer.from(`${last.at}|${last.id}`).toString('base64url') : null,
    };
  });

  app.get('/api/usage/requests/:id', async (request, reply) => {
    if (state.usageDown) return down(reply);
    const record = state.usage.find((r) => r.id === (request.params as { id: string }).id);
    if (!record)
      return reply.code(404).send({ error: { code: 'not_found', message: 'No usage record with that id.' } });
    return { request: { ...record, bodiesWithheld: false } };
  });
}
