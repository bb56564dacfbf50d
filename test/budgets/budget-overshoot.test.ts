/**
 * One call cannot overshoot a token budget: a call whose requested output (max_tokens and the
 * like, or the documented estimate when it names none) and prompt estimate exceed what remains is
 * refused with 429 `budget_exceeded` before it reaches the model, so what the request log records
 * stays within the budget plus one call's prompt. In front of the llama-swap simulator, which
 * generates as many tokens as a call's max_tokens allows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json, rawRequest, type RawResponse } from '../helpers/http.js';
import { createKey, requestId, startUsageGateway } from '../usage/usage-helpers.js';

const BUDGET = 100;
const MODEL = 'qwen3-8b';

let sim: Simulator;
let gateway: TestGateway;
beforeAll(async () => {
  sim = await startSimulator({ config: DEMO_CONFIG, knobs: { tokens: 2000 } });
  gateway = await startUsageGateway(sim.url);
});
afterAll(async () => {
  await gateway?.close();
  await sim?.close();
});

function chat(secret: string, extra: Record<string, unknown>): Promise<RawResponse> {
  return rawRequest(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}`, 'x-request-id': requestId('b') },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], ...extra }),
  });
}

/** Tokens (input + output) the request log holds for the key, once every call so far is written. */
async function recorded(keyId: string): Promise<number> {
  await gateway.app.usage.flush();
  const rows = await gateway.store!.usage.list({ keyId, limit: 100 });
  return rows.reduce((sum, r) => sum + (r.inputTokens ?? 0) + (r.outputTokens ?? 0), 0);
}

function refusal(res: RawResponse): string {
  expect(res.status, res.body.toString()).toBe(429);
  expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  const error = (json(res.body) as { error: { code: string; message: string } }).error;
  expect(error.code).toBe('budget_exceeded');
  return error.message;
}

describe('a call larger than what remains of a token budget', () => {
  it('is refused before it reaches the model, even on an unused budget, saying what remains', async () => {
    const key = await createKey(gateway, { name: 'small', budget: { tokens: BUDGET, period: 'day' } });
    const before = sim.received.length;
    const message = refusal(await chat(key.secret, { max_tokens: 2000 }));
    expect(message).toMatch(/may use up to \d+ tokens \(its prompt and max_tokens\), more than the 100 tokens left/);
    expect(message).toContain('Ask for fewer output tokens');
    // The Anthropic shape too.
    const anthropic = await rawRequest(`${gateway.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': key.secret },
      body: JSON.stringify({ model: MODEL, max_tokens: 2000, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(anthropic.status).toBe(429);
    expect(json(anthropic.body)).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
    // A call naming no maximum is estimated at 512 output tokens: more than this budget holds.
    refusal(await chat(key.secret, {}));
    // llama.cpp's own n_predict goes before max_tokens there, so it counts as much; a negative one
    // (no limit) leaves the call naming no maximum.
    refusal(await chat(key.secret, { max_tokens: 1, n_predict: 2000 }));
    refusal(await chat(key.secret, { max_tokens: 1, n_predict: -1 }));
    expect(sim.received.length).toBe(before);
    expect(await recorded(key.id)).toBe(0);
  });

  it('keeps what the log records within the budget plus one prompt, call after call', async () => {
    const key = await createKey(gateway, { name: 'steady', budget: { tokens: BUDGET, period: 'day' } });
    const statuses: number[] = [];
    let prompt = 0;
    for (const max_tokens of [50, 50, 10, 2000, 1]) {
      const res = await chat(key.secret, { max_tokens });
      statuses.push(res.status);
      if (res.status === 200)
        prompt = Math.max(prompt, (json(res.body) as { usage: { prompt_tokens: number } }).usage.prompt_tokens);
      await gateway.app.usage.flush();
    }
    // 50 fits the unused budget; the second 50 does not fit what is left; 10 does; 2000 never.
    expect(statuses.slice(0, 4)).toEqual([200, 429, 200, 429]);
    expect(await recorded(key.id)).toBeLessThanOrEqual(BUDGET + prompt);
  });
});
