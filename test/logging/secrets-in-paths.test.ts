/**
 * An API key pasted into a path (a wrong base URL: `/v1/sk-…/chat/completions`) or a query
 * string, or a `Bearer` value in a path, never reaches what Gatehouse logs or keeps: the access
 * log, the request log, the usage exports and the dashboard's log stream all show it redacted.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import type { TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';
import { ADMIN_TOKEN, adminApi, createKey, recordFor, requestId, startUsageGateway } from '../usage/usage-helpers.js';

const BEARER_VALUE = 'opaque.token_value-42';

let sim: Simulator;
let gateway: TestGateway;
let secret: string;
const ids = { path: requestId('key-in-path'), query: requestId('key-in-query'), bearer: requestId('bearer') };

function call(path: string, id: string) {
  return rawRequest(`${gateway.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}`, 'x-request-id': id },
    body: JSON.stringify({ model: 'qwen', messages: [{ role: 'user', content: 'hi' }] }),
  });
}

/** The text of a dashboard log stream (history and live lines) once `enough` says it has it all. */
function logStreamText(source: string, enough: (text: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    let text = '';
    const req = request(
      `${gateway.url}/api/logs/stream?source=${source}`,
      { headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, agent: false },
      (res) => {
        res.on('data', (chunk: Buffer) => {
          buffer += chunk.toString('utf8');
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const frame = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const data = /^event: (?:history|log)\ndata: (.*)$/m.exec(frame)?.[1];
            if (data !== undefined) text += JSON.parse(data) as string;
          }
          if (!enough(text)) return;
          req.destroy();
          resolve(text);
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const count = (text: string, part: string) => text.split(part).length - 1;

beforeAll(async () => {
  sim = await startSimulator({ config: DEMO_CONFIG, knobs: { tokens: 2 } });
  gateway = await startUsageGateway(sim.url, { logLevel: 'info' });
  ({ secret } = await createKey(gateway, { name: 'pasted' }));
  await call(`/v1/${secret}/chat/completions`, ids.path);
  await call(`/v1/chat/completions?key=${secret}&api_key=${encodeURIComponent(secret)}`, ids.query);
  await call(`/v1/Bearer%20${BEARER_VALUE}/chat/completions`, ids.bearer);
  // The admin API and the dashboard's routes write their own access lines.
  await rawRequest(`${gateway.url}/api/${secret}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  for (const id of Object.values(ids)) await recordFor(gateway, id);
});
afterAll(async () => {
  await gateway?.close();
  await sim?.close();
});

describe('secrets in paths and query strings', () => {
  it('writes the access log lines with the key and the Bearer value redacted', () => {
    const log = gateway.logText();
    expect(log).not.toContain(secret.slice(3));
    expect(log).not.toContain(BEARER_VALUE);
    expect(log).toContain('"path":"/v1/sk-[redacted]/chat/completions"');
    expect(log).toContain('"path":"/v1/Bearer%20[redacted]/chat/completions"');
    expect(log).toContain('"path":"/api/sk-[redacted]"');
  });

  it('keeps the redacted path in the request log', async () => {
    expect((await recordFor(gateway, ids.path)).endpoint).toBe('/v1/sk-[redacted]/chat/completions');
    expect((await recordFor(gateway, ids.query)).endpoint).toBe('/v1/chat/completions');
    expect((await recordFor(gateway, ids.bearer)).endpoint).toBe('/v1/Bearer%20[redacted]/chat/completions');
  });

  it('exports the redacted path as CSV and JSON', async () => {
    for (const format of ['csv', 'json']) {
      const res = await adminApi(gateway, 'GET', `/api/usage/export?format=${format}&group=call`);
      expect(res.status).toBe(200);
      const text = res.body.toString('utf8');
      expect(text, format).not.toContain(secret.slice(3));
      expect(text, format).not.toContain(BEARER_VALUE);
      expect(text, format).toContain('/v1/sk-[redacted]/chat/completions');
    }
  });

  it("shows the redacted path in the dashboard's streams of the gateway log and llama-swap's proxy log", async () => {
    const gatewayLog = await logStreamText('gateway', (text) => text.includes('/api/sk-'));
    // llama-swap logs each path it was sent; the three calls above were forwarded.
    const proxyLog = await logStreamText('proxy', (text) => count(text, '/chat/completions') >= 3);
    for (const text of [gatewayLog, proxyLog]) {
      expect(text).toContain('/v1/sk-[redacted]/chat/completions');
      expect(text).not.toContain(secret.slice(3));
      expect(text).not.toContain(BEARER_VALUE);
    }
    expect(proxyLog).toContain('/v1/Bearer [redacted]/chat/completions');
  });

  it('redacts a key sent as the model name from the access log, the request log and the exports', async () => {
    const id = requestId('key-as-model');
    await rawRequest(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}`, 'x-request-id': id },
      body: JSON.stringify({ model: secret, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect((await recordFor(gateway, id)).model).toBe('sk-[redacted]');
    expect(gateway.logText()).not.toContain(secret.slice(3));
    for (const group of ['call', 'model']) {
      const res = await adminApi(gateway, 'GET', `/api/usage/export?format=csv&group=${group}`);
      expect(res.body.toString('utf8'), group).not.toContain(secret.slice(3));
    }
  });

  it('decides a restricted key on the path as received, not on its redacted form', async () => {
    const restricted = await createKey(gateway, { name: 'qwen only', models: ['qwen'] });
    const before = sim.received.length;
    const res = await rawRequest(`${gateway.url}/v1/Bearer+x%2F..%2Fmodels/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${restricted.secret}` },
      body: JSON.stringify({ model: 'qwen', messages: [] }),
    });
    expect(res.status).toBe(403);
    expect(json(res.body)).toMatchObject({ error: { code: 'model_required' } });
    expect(sim.received.slice(before)).toEqual([]);
  });
});
