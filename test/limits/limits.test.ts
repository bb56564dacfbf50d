/**
 * Per-key limits: requests per minute (exact sliding window: the N+1st call in any 60 s gets
 * 429), tokens per minute (tokens of finished calls plus the estimates of calls in flight),
 * requests in flight. Refused before
 * anything is forwarded, in the caller's wire format, with `Retry-After`.
 */
import { Writable } from 'node:stream';
import { request } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runKeysCommand } from '../../src/cli/keys.js';
import { MemoryLimitStore } from '../../src/limits/memory-limit-store.js';
import { countPromptTokens, DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json, rawRequest, type RawResponse } from '../helpers/http.js';
import { adminApi, createKey, recordFor, requestId, startUsageGateway } from '../usage/usage-helpers.js';

let sim: Simulator;
let gateway: TestGateway;

beforeAll(async () => {
  sim = await startSimulator({ config: DEMO_CONFIG, knobs: { tokens: 6 } });
  gateway = await startUsageGateway(sim.url);
});
afterAll(async () => {
  await gateway?.close();
  await sim?.close();
});
beforeEach(() => {
  sim.knobs.tokens = 6;
  sim.knobs.tokensPerSecond = 0;
});

const CHAT = JSON.stringify({ model: 'qwen', messages: [{ role: 'user', content: 'hello' }] });
const MESSAGE = JSON.stringify({ model: 'qwen', max_tokens: 10, messages: [{ role: 'user', content: 'hello' }] });

function chat(secret: string, id = requestId('chat')): Promise<RawResponse> {
  return rawRequest(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}`, 'x-request-id': id },
    body: CHAT,
  });
}

function message(secret: string): Promise<RawResponse> {
  return rawRequest(`${gateway.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': secret, 'anthropic-version': '2023-06-01' },
    body: MESSAGE,
  });
}

function retryAfter(res: RawResponse): number {
  const value = res.headers['retry-after'];
  expect(value, 'Retry-After header').toMatch(/^\d+$/);
  return Number(value);
}

/** Calls that reached llama-swap so far. */
const forwarded = () => sim.received.length;

describe('requests per minute', () => {
  it('lets N calls through and refuses the N+1st with 429, Retry-After and the OpenAI error shape, forwarding nothing', async () => {
    const key = await createKey(gateway, { name: 'rpm-openai', limits: { rpm: 3 } });
    for (let i = 0; i < 3; i++) expect((await chat(key.secret)).status).toBe(200);
    const before = forwarded();
    const refused = await chat(key.secret);
    expect(refused.status).toBe(429);
    expect(json(refused.body)).toEqual({
      error: {
        message: expect.stringMatching(
          /^Rate limit exceeded: this API key allows 3 requests per minute\. Retry after \d+ s\.$/,
        ),
        type: 'rate_limit_error',
        param: null,
        code: 'rate_limited',
      },
    });
    const seconds = retryAfter(refused);
    expect(seconds).toBeGreaterThanOrEqual(58);
    expect(seconds).toBeLessThanOrEqual(60);
    expect(forwarded()).toBe(before);
    // A refused call does not count: still refused, not pushed further out.
    expect((await chat(key.secret)).status).toBe(429);
  });

  it('answers the Anthropic shape on /v1/messages', async () => {
    const key = await createKey(gateway, { name: 'rpm-anthropic', limits: { rpm: 2 } });
    expect((await message(key.secret)).status).toBe(200);
    expect((await message(key.secret)).status).toBe(200);
    const refused = await message(key.secret);
    expect(refused.status).toBe(429);
    expect(json(refused.body)).toEqual({
      type: 'error',
      error: { type: 'rate_limit_error', message: expect.stringContaining('2 requests per minute') },
    });
    expect(retryAfter(refused)).toBeGreaterThanOrEqual(58);
  });

  it('counts each key on its own and leaves keys without limits alone', async () => {
    const limited = await createKey(gateway, { name: 'rpm-one', limits: { rpm: 1 } });
    const free = await createKey(gateway, { name: 'no-limits' });
    expect((await chat(limited.secret)).status).toBe(200);
    expect((await chat(limited.secret)).status).toBe(429);
    for (let i = 0; i < 5; i++) expect((await chat(free.secret)).status).toBe(200);
  });

  it('records the refused call with 429 and rate_limited', async () => {
    const key = await createKey(gateway, { name: 'rpm-recorded', limits: { rpm: 1 } });
    await chat(key.secret);
    const id = requestId('refused');
    expect((await chat(key.secret, id)).status).toBe(429);
    expect(await recordFor(gateway, id)).toMatchObject({
      status: 429,
      errorClass: 'rate_limited',
      key: { id: key.id, name: 'rpm-recorded' },
      inputTokens: null,
    });
  });

  it('is an exact sliding window: the call that would be the N+1st within any 60 s is refused, and allowed once the oldest leaves', () => {
    let t = 1_000_000;
    const store = new MemoryLimitStore({ now: () => t });
    const limits = { rpm: 3, tpm: null, concurrent: null };
    try {
      expect(store.acquire('k', limits)).toEqual({ allowed: true, slot: false }); // t = 0 s
      t += 20_000;
      expect(store.acquire('k', limits).allowed).toBe(true); // 20 s
      t += 20_000;
      expect(store.acquire('k', limits).allowed).toBe(true); // 40 s
      t += 19_999;
      // 59.999 s
      expect(store.acquire('k', limits)).toEqual({ allowed: false, limit: 'rpm', max: 3, retryAfterMs: 1 });
      t += 1;
      expect(store.acquire('k', limits).allowed).toBe(true); // 60 s: the first call left the window
      expect(store.acquire('k', limits)).toEqual({ allowed: false, limit: 'rpm', max: 3, retryAfterMs: 20_000 });
      // A lowered limit applies at once to what the window holds (20 s, 40 s, 60 s): with 1 per
      // minute the next call waits until the newest of them has left.
      expect(store.acquire('k', { ...limits, rpm: 1 })).toEqual({
        allowed: false,
        limit: 'rpm',
        max: 1,
        retryAfterMs: 60_000,
      });
      expect(store.acquire('k', { ...limits, rpm: 2 })).toEqual({
        allowed: false,
        limit: 'rpm',
        max: 2,
        retryAfterMs: 40_000,
      });
    } finally {
      store.close();
    }
  });
});

describe('tokens per minute', () => {
  it('refuses a call once the tokens of finished calls in the last minute leave no room for its estimate', async () => {
    const perCall = countPromptTokens({ messages: [{ role: 'user', content: 'hello' }] }) + 6;
    const body = JSON.stringify({ model: 'qwen', max_tokens: 6, messages: [{ role: 'user', content: 'hello' }] });
    const estimate = Math.ceil(Buffer.byteLength(body) / 4) + 6;
    const key = await createKey(gateway, { name: 'tpm', limits: { tpm: perCall + estimate } });
    const call = (id = requestId('tpm')) =>
      rawRequest(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key.secret}`, 'x-request-id': id },
        body,
      });
    // Tokens count once a call has finished: wait for each record before the next call.
    const first = requestId('tpm');
    expect((await call(first)).status).toBe(200);
    // room for one more estimate
    expect(await recordFor(gateway, first)).toMatchObject({ inputTokens: perCall - 6, outputTokens: 6 });
    const second = requestId('tpm');
    expect((await call(second)).status).toBe(200);
    await recordFor(gateway, second); // now 2 x perCall: no room for another estimate
    const refused = await call();
    expect(refused.status).toBe(429);
    expect((json(refused.body) as { error: { message: string } }).error.message).toContain(
      `${perCall + estimate} tokens per minute`,
    );
    expect(retryAfter(refused)).toBeGreaterThanOrEqual(58);
  });

  it('ages tokens out of the window', () => {
    let t = 0;
    const store = new MemoryLimitStore({ now: () => t });
    const limits = { rpm: null, tpm: 100, concurrent: null };
    try {
      store.addTokens('k', 60); // t = 0
      t = 10_000;
      store.addTokens('k', 50); // 110 in the window
      expect(store.acquire('k', limits)).toEqual({ allowed: false, limit: 'tpm', max: 100, retryAfterMs: 50_000 });
      t = 60_000; // the 60 left
      expect(store.acquire('k', limits).allowed).toBe(true);
    } finally {
      store.close();
    }
  });
});

describe('concurrent requests', () => {
  it('makes a second call wait while the first streams, and frees the slot when it ends or the client leaves', async () => {
    const key = await createKey(gateway, { name: 'one-at-a-time', limits: { concurrent: 1 } });
    sim.knobs.tokens = 10;
    sim.knobs.tokensPerSecond = 20;
    const slowId = requestId('slow');
    const slow = rawRequest(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key.secret}`, 'x-request-id': slowId },
      body: JSON.stringify({ model: 'qwen', stream: true, messages: [{ role: 'user', content: 'slow' }] }),
    });
    await sim.waitForRequest((r) => r.headers['x-request-id'] === slowId && r.status === 200);
    const events: string[] = [];
    const waiting = chat(key.secret).then((res) => {
      events.push('second answered');
      return res;
    });
    void slow.then(() => events.push('first ended'));
    const second = await waiting;
    expect(second.status).toBe(200);
    expect(events).toEqual(['first ended', 'second answered']);
    expect(Number(second.headers['x-gatehouse-queue-ms'])).toBeGreaterThan(0);
    expect((await slow).status).toBe(200);
    sim.knobs.tokensPerSecond = 0;
    expect((await chat(key.secret)).status).toBe(200);

    // A client that leaves mid-stream gives its slot back too.
    sim.knobs.tokensPerSecond = 20;
    const id = requestId('leaver');
    await new Promise<void>((resolve) => {
      const req = request(
        `${gateway.url}/v1/chat/completions`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key.secret}`, 'x-request-id': id },
          agent: false,
        },
        (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        },
      );
      req.on('error', () => {});
      req.end(JSON.stringify({ model: 'qwen', stream: true, messages: [{ role: 'user', content: 'bye' }] }));
    });
    await recordFor(gateway, id);
    sim.knobs.tokensPerSecond = 0;
    expect((await chat(key.secret)).status).toBe(200);
  });
});

describe('limits set from the admin API and the CLI', () => {
  it('applies a limit changed with PATCH /api/keys/:id to the next call, and lifts it again', async () => {
    const key = await createKey(gateway, { name: 'patched' });
    expect((await chat(key.secret)).status).toBe(200);
    const patched = await adminApi(gateway, 'PATCH', `/api/keys/${key.id}`, { limits: { rpm: 1 } });
    expect(patched.status).toBe(200);
    expect((json(patched.body) as { key: { limits: unknown } }).key.limits).toEqual({
      rpm: 1,
      tpm: null,
      concurrent: null,
    });
    expect((await chat(key.secret)).status).toBe(200);
    expect((await chat(key.secret)).status).toBe(429);
    expect((await adminApi(gateway, 'PATCH', `/api/keys/${key.id}`, { limits: { rpm: null } })).status).toBe(200);
    expect((await chat(key.secret)).status).toBe(200);
  });

  it('enforces limits of a key created and changed with the CLI while the server runs', async () => {
    const out = sink();
    const code = await runKeysCommand(
      ['create', '--name', 'from-cli', '--rpm', '2', '--quiet'],
      { stdout: out.stream, stderr: sink().stream },
      { dataDir: gateway.dataDir, databaseUrl: undefined },
    );
    expect(code).toBe(0);
    const secret = out.text().trim();
    // The server hears about the new key within a second (store change notification).
    const deadline = Date.now() + 3000;
    let first = await chat(secret);
    while (first.status === 401 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      first = await chat(secret);
    }
    expect(first.status).toBe(200);
    expect((await chat(secret)).status).toBe(200);
    expect((await chat(secret)).status).toBe(429);

    const changed = await runKeysCommand(
      ['limits', secret, '--rpm', 'none', '--concurrent', '4'],
      { stdout: sink().stream, stderr: sink().stream },
      { dataDir: gateway.dataDir, databaseUrl: undefined },
    );
    expect(changed).toBe(0);
    const until = Date.now() + 3000;
    let after = await chat(secret);
    while (after.status === 429 && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 50));
      after = await chat(secret);
    }
    expect(after.status).toBe(200);
    expect((await chat(secret)).status).toBe(200);
  });
});

function sink(): { stream: Writable; text: () => string } {
  let text = '';
  return {
    stream: new Writable({ write: (chunk: Buffer, _e, done) => ((text += chunk.toString()), done()) }),
    text: () => text,
  };
}
