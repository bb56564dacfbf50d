/**
 * Rate-limit headers as a sequence of calls consumes a key's limits: OpenAI's x-ratelimit-* on
 * every /v1 answer (streams and 429s included), Anthropic's on /v1/messages, from the tightest
 * limit of each kind; none at all for a key without limits or budget.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryLimitStore } from '../../src/limits/memory-limit-store.js';
import { goDuration, tightest } from '../../src/limits/rate-limit-headers.js';
import { PROMPT_BYTES_PER_TOKEN } from '../../src/limits/token-reservation.js';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import type { TestGateway } from '../helpers/gateway.js';
import { rawRequest, type RawResponse } from '../helpers/http.js';
import { adminApi, createKey, startUsageGateway } from '../usage/usage-helpers.js';

const MAX_TOKENS = 10;
const BODY = JSON.stringify({ model: 'm', max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'hi' }] });
const STREAM_BODY = JSON.stringify({ ...JSON.parse(BODY), stream: true });
const estimate = (body: string) => Math.ceil(Buffer.byteLength(body) / PROMPT_BYTES_PER_TOKEN) + MAX_TOKENS;
const USED = 30;

let upstream: RecordingUpstream;
let gateway: TestGateway;
/** The limit store's monotonic clock and the gateway's wall clock, both moved by the tests. */
const mono = { now: 1_000_000 };
const wall = { now: Date.parse('2030-01-15T12:00:00Z') };

beforeAll(async () => {
  upstream = await startRecordingUpstream((req, res, body) => {
    if (req.url?.startsWith('/v1/messages')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'msg',
          type: 'message',
          role: 'assistant',
          content: [{ type: 'text', text: 'hi' }],
          usage: { input_tokens: 20, output_tokens: 10 },
        }),
      );
    } else if (body.includes('"stream":true')) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n');
      const last = {
        choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
        usage: { prompt_tokens: 20, completion_tokens: 10 },
      };
      res.end(`data: ${JSON.stringify(last)}\n\ndata: [DONE]\n\n`);
    } else {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ choices: [], usage: { prompt_tokens: 20, completion_tokens: 10 } }));
    }
  });
  gateway = await startUsageGateway(
    upstream.url,
    {},
    { usageOptions: { now: () => wall.now, limits: new MemoryLimitStore({ now: () => mono.now }) } },
  );
});
afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

function call(secret: string, path: string, body: string | undefined): Promise<RawResponse> {
  return rawRequest(`${gateway.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${secret}`,
      'anthropic-version': '2023-06-01',
    },
    body,
  });
}

function ratelimit(res: RawResponse): Record<string, string> {
  return Object.fromEntries(
    Object.entries(res.headers)
      .filter(([name]) => name.startsWith('x-ratelimit-') || name.startsWith('anthropic-ratelimit-'))
      .map(([name, value]) => [name, String(value)]),
  );
}

/** Waits until the key's finished calls are settled (the budget API shows them). */
async function settledRequests(keyId: string, n: number): Promise<void> {
  await expect
    .poll(async () => {
      const res = await adminApi(gateway, 'GET', '/api/budgets');
      const keys = (
        JSON.parse(res.body.toString()) as {
          keys: Array<{ id: string; budgets: Array<{ kind: string; used: number }> }>;
        }
      ).keys;
      return keys.find((k) => k.id === keyId)?.budgets.find((b) => b.kind === 'requests')?.used;
    })
    .toBe(n);
}

describe('rate-limit headers', () => {
  it('count down requests (RPM) and tokens (the day budget) call by call, on JSON, streams and the 429', async () => {
    const key = await createKey(gateway, {
      name: 'agent',
      limits: { rpm: 3 },
      budget: { tokens: 1000, requests: 100, period: 'day' },
    });
    const first = await call(key.secret, '/v1/chat/completions', BODY);
    expect(first.status).toBe(200);
    // Requests: the RPM window (2 of 3 left) is tighter than the budget (99 of 100 left).
    expect(ratelimit(first)).toEqual({
      'x-ratelimit-limit-requests': '3',
      'x-ratelimit-remaining-requests': '2',
      'x-ratelimit-reset-requests': '1m0s',
      'x-ratelimit-limit-tokens': '1000',
      'x-ratelimit-remaining-tokens': String(1000 - estimate(BODY)),
      'x-ratelimit-reset-tokens': '12h0m0s',
    });
    await settledRequests(key.id, 1);

    mono.now += 15_500;
    wall.now += 15_500;
    const stream = await call(key.secret, '/v1/chat/completions', STREAM_BODY);
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toBe('text/event-stream');
    expect(ratelimit(stream)).toEqual({
      'x-ratelimit-limit-requests': '3',
      'x-ratelimit-remaining-requests': '1',
      'x-ratelimit-reset-requests': '1m0s',
      'x-ratelimit-limit-tokens': '1000',
      'x-ratelimit-remaining-tokens': String(1000 - USED - estimate(STREAM_BODY)),
      'x-ratelimit-reset-tokens': '11h59m44.5s',
    });
    await settledRequests(key.id, 2);

    mono.now += 1000;
    const messages = await call(key.secret, '/v1/messages', BODY);
    expect(messages.status).toBe(200);
    expect(ratelimit(messages)).toEqual({
      'x-ratelimit-limit-requests': '3',
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-reset-requests': '1m0s',
      'x-ratelimit-limit-tokens': '1000',
      'x-ratelimit-remaining-tokens': String(1000 - 2 * USED - estimate(BODY)),
      'x-ratelimit-reset-tokens': '11h59m44.5s',
      'anthropic-ratelimit-requests-limit': '3',
      'anthropic-ratelimit-requests-remaining': '0',
      'anthropic-ratelimit-requests-reset': '2030-01-15T12:01:16Z',
      'anthropic-ratelimit-tokens-limit': '1000',
      'anthropic-ratelimit-tokens-remaining': String(1000 - 2 * USED - estimate(BODY)),
      'anthropic-ratelimit-tokens-reset': '2030-01-16T00:00:00Z',
    });
    await settledRequests(key.id, 3);

    // The fourth call in the minute: 429, and the headers say when the window is empty again.
    mono.now += 2000;
    const refused = await call(key.secret, '/v1/chat/completions', BODY);
    expect(refused.status).toBe(429);
    expect(ratelimit(refused)).toMatchObject({
      'x-ratelimit-limit-requests': '3',
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-reset-requests': '58s',
      'x-ratelimit-remaining-tokens': String(1000 - 3 * USED),
    });
  });

  it('are on model lists too, and absent for a key without limits or budget', async () => {
    const limited = await createKey(gateway, { name: 'lists', limits: { tpm: 500 } });
    const list = await call(limited.secret, '/v1/models', undefined);
    expect(ratelimit(list)).toEqual({
      'x-ratelimit-limit-tokens': '500',
      'x-ratelimit-remaining-tokens': '500',
      'x-ratelimit-reset-tokens': '0s',
    });
    const free = await createKey(gateway, { name: 'free' });
    const answer = await call(free.secret, '/v1/chat/completions', BODY);
    expect(answer.status).toBe(200);
    expect(ratelimit(answer)).toEqual({});
  });
});

describe('the header values', () => {
  it('write resets as Go durations, as OpenAI sends them', () => {
    expect([0, 59, 1000, 1500, 60_000, 360_000, 3_723_004].map(goDuration)).toEqual([
      '0s',
      '59ms',
      '1s',
      '1.5s',
      '1m0s',
      '6m0s',
      '1h2m3.004s',
    ]);
  });

  it('take the limit with the least left, and on a tie the one that resets later', () => {
    const minute = { limit: 60, remaining: 5, resetMs: 60_000 };
    const day = { limit: 1000, remaining: 5, resetMs: 3_600_000 };
    expect(tightest(minute, { ...day, remaining: 6 })).toBe(minute);
    expect(tightest(minute, day)).toBe(day);
    expect(tightest(undefined, day)).toBe(day);
  });
});
