/**
 * Findings of an attack on a key allowed only `qwen`: requests where the gateway's reading of
 * the call disagrees with llama-swap's (Go's net/http, mime/multipart, ServeMux). The simulator
 * reads models with the gateway's own reader, so these tests state what the gateway must do
 * (refuse, or answer itself) and check that nothing reached llama-swap; the Go behaviour each
 * one relies on is quoted in the test.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';
import { createLlamaSwapClient } from '../../src/management-client/llama-swap-client.js';
import { bodyModelReader } from '../../src/proxy/request-model.js';

const ADMIN = 'admin-token-for-tests';
let sim: Simulator;
let gateway: TestGateway;
let qwenOnly: string;

beforeAll(async () => {
  sim = await startSimulator({ config: DEMO_CONFIG, knobs: { tokens: 2, tokensPerSecond: 1000 } });
  const upstream = createLlamaSwapClient({ baseUrl: new URL(sim.url) });
  gateway = await startTestGateway(
    sim.url,
    { adminToken: ADMIN },
    { listModels: () => upstream.models(), closeables: [upstream] },
    { withStore: true },
  );
  const res = await rawRequest(`${gateway.url}/api/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'qwen-only', models: ['qwen'] }),
  });
  expect(res.status).toBe(201);
  qwenOnly = (json(res.body) as { secret: string }).secret;
});
afterAll(async () => {
  await gateway.close();
  await sim.close();
});

function call(path: string, contentType: string | undefined, body: string | Buffer | undefined, method = 'POST') {
  return rawRequest(`${gateway.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${qwenOnly}`, ...(contentType ? { 'content-type': contentType } : {}) },
    body,
  });
}

/**
 * Go's `scanUntilBoundary` (mime/multipart): at the very start of a part's body (`total == 0`)
 * a `--boundary` followed by white space, CR, LF or `--` ends the part — no CRLF before it is
 * needed. So the `x` part below is empty for Go, and the bytes the gateway reads as its
 * content are a second part, `model=llama-3.2-3b`, which Go's `FormValue` returns first.
 */
const LEADING_BOUNDARY_BODY =
  '--B\r\nContent-Disposition: form-data; name="x"\r\n\r\n' +
  '--B\r\nContent-Disposition: form-data; name="model"\r\n\r\nllama-3.2-3b\r\n' +
  '--B\r\nContent-Disposition: form-data; name="model"\r\n\r\nqwen\r\n' +
  '--B--\r\n';

describe('multipart: a boundary right after a part header (Go ends the part there)', () => {
  it('does not read the model as certain when a part body starts with the boundary', () => {
    const reader = bodyModelReader('POST', 'multipart/form-data; boundary=B', '');
    reader.feed(Buffer.from(LEADING_BOUNDARY_BODY, 'latin1'));
    // Go (llama-swap) reads "llama-3.2-3b"; the gateway must not answer "qwen".
    expect(reader.end()).not.toEqual({ status: 'found', model: 'qwen' });
  });

  it('refuses a multipart upload hiding a llama-3.2-3b part at the start of another part, and llama-swap never sees it', async () => {
    const before = sim.received.length;
    const res = await call('/v1/audio/transcriptions', 'multipart/form-data; boundary=B', LEADING_BOUNDARY_BODY);
    expect(res.status).toBe(403);
    expect(sim.received.slice(before).filter((r) => r.path !== '/v1/models')).toEqual([]);
  });
});

describe('/v1/models under another spelling (Go ServeMux matches unescaped path segments)', () => {
  for (const path of ['/v1/%6dodels?model=qwen', '/v1/model%73?model=qwen', '/v1/%6D%6F%64%65%6C%73?model=qwen']) {
    it(`never forwards GET ${path} unfiltered: llama-swap would answer it with its whole list`, async () => {
      const before = sim.received.length;
      const res = await call(path, undefined, undefined, 'GET');
      const forwarded = sim.received.slice(before).filter((r) => r.path !== '/v1/models' && r.path.includes('%'));
      expect(forwarded).toEqual([]);
      expect(res.body.toString()).not.toContain('llama-3.2-3b');
      if (res.status === 200) {
        expect((json(res.body) as { data: Array<{ id: string }> }).data.map((m) => m.id)).toEqual(['qwen3-8b']);
      }
    });
  }
});
