/**
 * A TPM limit holds under parallel calls: each call reserves its estimate (JSON body bytes / 4 +
 * the requested output) at admission, atomically, so 20 calls at once on an empty window cannot
 * all pass. With the per-process store and with Redis (127.0.0.1:6379, one prefix per run).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PROMPT_BYTES_PER_TOKEN } from '../../src/limits/token-reservation.js';
import { requestedOutputTokens } from '../../src/limits/requested-output-tokens.js';
import { readJsonMembers } from '../../src/proxy/request-json.js';
import { JSON_MEMBERS } from '../../src/proxy/request-model.js';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';
import { createKey, recordFor, requestId, startUsageGateway } from '../usage/usage-helpers.js';

const TPM = 200;
const MAX_TOKENS = 20;
const BODY = JSON.stringify({ model: 'm', max_tokens: MAX_TOKENS, messages: [{ role: 'user', content: 'hello' }] });
const ESTIMATE = Math.ceil(Buffer.byteLength(BODY) / PROMPT_BYTES_PER_TOKEN) + MAX_TOKENS;
/** What the upstream reports per call: fewer than estimated, as a short answer does. */
const USED = { prompt_tokens: 9, completion_tokens: 11 };

let upstream: RecordingUpstream;
/** Answers held until the test lets them go, so every call is in flight at once. */
const held: Array<() => void> = [];
/** False: the upstream answers at once. */
let holding = true;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  upstream.handle((_req, res) => {
    const answer = () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'c',
          object: 'chat.completion',
          choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
          usage: { ...USED, total_tokens: 20 },
        }),
      );
    };
    if (holding) held.push(answer);
    else answer();
  });
});
afterAll(async () => {
  await upstream?.close();
});
afterEach(() => {
  holding = true;
  for (const release of held.splice(0)) release();
});

function chat(gateway: TestGateway, secret: string, body = BODY, id = requestId('tpm-par')) {
  return rawRequest(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}`, 'x-request-id': id },
    body,
  });
}

/** Fires `n` calls at once; once each is either refused or waiting at the upstream, lets the upstream answer. */
async function parallel(gateway: TestGateway, secret: string, n: number, body = BODY) {
  const before = upstream.received.length;
  let refused = 0;
  const calls = Array.from({ length: n }, () =>
    chat(gateway, secret, body).then((res) => {
      if (res.status === 429) refused++;
      return res;
    }),
  );
  await expect.poll(() => upstream.received.length - before + refused, { timeout: 5000 }).toBe(n);
  for (const release of held.splice(0)) release();
  return Promise.all(calls);
}

for (const store of ['memory', 'redis'] as const) {
  describe(`TPM under parallel calls (${store} store)`, () => {
    let gateway: TestGateway;
    beforeAll(async () => {
      gateway = await startUsageGateway(
        upstream.url,
        store === 'redis'
          ? { redisUrl: 'redis://127.0.0.1:6379', redisPrefix: `gh-test-tpm-${process.pid}-${Date.now()}:` }
          : {},
        // A wide command timeout: this file tests atomic reservations, not the fallback a slow Redis opens.
        { usageOptions: { redis: { commandTimeoutMs: 10_000 } } },
      );
      await gateway.app.usage.ready();
    });
    afterAll(async () => {
      await gateway?.close();
    });

    it(`lets at most floor(${TPM} / estimate) of 20 parallel calls through, and refuses the rest with 429 and Retry-After`, async () => {
      const key = await createKey(gateway, { name: `tpm-parallel-${store}`, limits: { tpm: TPM } });
      const results = await parallel(gateway, key.secret, 20);
      const passed = results.filter((r) => r.status === 200);
      const refused = results.filter((r) => r.status === 429);
      expect(passed).toHaveLength(Math.floor(TPM / ESTIMATE));
      expect(refused).toHaveLength(20 - passed.length);
      for (const res of refused) {
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        expect(json(res.body)).toMatchObject({ error: { code: 'rate_limited', type: 'rate_limit_error' } });
      }
    });

    it('reserves the whole limit for a call that names no maximum output, so it runs alone', async () => {
      const key = await createKey(gateway, { name: `tpm-default-${store}`, limits: { tpm: TPM } });
      const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hello' }] });
      const results = await parallel(gateway, key.secret, 5, body);
      expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    });

    it('settles a finished call to its real tokens, freeing the rest of its reservation', async () => {
      const key = await createKey(gateway, { name: `tpm-settle-${store}`, limits: { tpm: TPM } });
      holding = false;
      const used = USED.prompt_tokens + USED.completion_tokens;
      // One call after the other: each reserves ESTIMATE, then holds only what it used; a call
      // fits while the used tokens leave room for its estimate.
      let passed = 0;
      for (let i = 0; i < 20; i++) {
        const id = requestId('tpm-seq');
        const res = await chat(gateway, key.secret, BODY, id);
        if (res.status === 429) break;
        expect(res.status).toBe(200);
        passed++;
        // Settled when the record is made; with Redis, the settle goes out on the connection
        // the next call's scripts use, so Redis runs it first.
        await recordFor(gateway, id);
      }
      expect(passed).toBe(Math.floor((TPM - ESTIMATE) / used) + 1);
    });
  });
}

describe('requestedOutputTokens', () => {
  it('reads max_tokens, max_completion_tokens or max_output_tokens from the top level, the largest when several', () => {
    const read = (value: unknown) => {
      const reading = readJsonMembers(
        Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)),
        JSON_MEMBERS,
      );
      return requestedOutputTokens(reading.valid ? reading.members : undefined);
    };
    expect(read({ max_tokens: 20 })).toBe(20);
    expect(read({ max_completion_tokens: 30 })).toBe(30);
    expect(read({ max_output_tokens: 40 })).toBe(40);
    expect(read({ max_tokens: 20, max_completion_tokens: 50 })).toBe(50);
    expect(read({ messages: [{ max_tokens: 9 }] })).toBeUndefined();
    expect(read({ max_tokens: 'many' })).toBeUndefined();
    expect(read('  {"max_tokens": 7}')).toBe(7);
    expect(read('--boundary\r\n')).toBeUndefined();
    expect(read('{"max_tokens": 7')).toBeUndefined();
    expect(requestedOutputTokens(undefined)).toBeUndefined();
  });
});
