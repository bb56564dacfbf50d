/**
 * `/readyz` is for load balancers and orchestrators: it must answer within its own short
 * timeout (GATEHOUSE_READY_TIMEOUT) even when llama-swap's `/health` hangs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';
import { loadSettings } from '../../src/settings/index.js';
import { createLlamaSwapClient } from '../../src/management-client/llama-swap-client.js';

let upstream: RecordingUpstream;
let gateway: TestGateway;

beforeAll(async () => {
  // A llama-swap busy loading a model: /health never answers.
  upstream = await startRecordingUpstream(() => undefined);
  // The client's own timeout is far beyond the test's: only the ready timeout can end the probe.
  const client = createLlamaSwapClient({ baseUrl: new URL(upstream.url), timeoutMs: 600_000 });
  gateway = await startTestGateway(upstream.url, { readyTimeoutMs: 300 }, { upstream: client, closeables: [client] });
});
afterAll(async () => {
  await gateway.close();
  await upstream.close();
});

describe('/readyz', () => {
  it('answers 503 once GATEHOUSE_READY_TIMEOUT is over, not after the llama-swap client timeout', async () => {
    const res = await rawRequest(`${gateway.url}/readyz`);
    expect(res.status).toBe(503);
    expect(json(res.body)).toMatchObject({ status: 'upstream unavailable', upstream: { ok: false } });
    // It asked llama-swap first, then gave up on the probe instead of leaving it hanging.
    const probe = await upstream.waitFor((r) => r.url === '/health' && r.closedAt !== undefined);
    expect(probe.aborted).toBe(true);
  });

  it('waits 2 s by default', () => {
    expect(loadSettings({}).readyTimeoutMs).toBe(2000);
  });
});
