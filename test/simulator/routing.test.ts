import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { chatBody, postJson, json } from './helpers.js';

const CONFIG = {
  models: {
    qwen: { cmd: 'llama-server --port ${PORT} -m qwen.gguf', aliases: ['gpt-4o-mini'] },
  },
};

describe('route table with Go mux semantics', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ config: CONFIG });
  });
  afterAll(() => sim.close());

  it('answers an unknown path with the plain-text mux 404, not a JSON envelope', async () => {
    const res = await fetch(`${sim.url}/v1/models/qwen`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await res.text()).toBe('404 page not found\n');
  });

  it('answers a known path with the wrong method with 405 and an Allow header', async () => {
    const res = await fetch(`${sim.url}/v1/chat/completions`);
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    expect(await res.text()).toBe('Method Not Allowed\n');
  });

  it('lists GET and HEAD in Allow when a GET-only route is POSTed to', async () => {
    const res = await fetch(`${sim.url}/running`, { method: 'POST' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
  });

  it('lets GET routes answer HEAD without a body', async () => {
    const res = await fetch(`${sim.url}/health`, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('');
  });

  it('serves /health as plain OK', async () => {
    const res = await fetch(`${sim.url}/health`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('OK');
  });

  it('redirects / to /ui with 302 and /ui to /ui/ with 301', async () => {
    const root = await fetch(`${sim.url}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/ui');
    const ui = await fetch(`${sim.url}/ui`, { redirect: 'manual' });
    expect(ui.status).toBe(301);
    expect(ui.headers.get('location')).toBe('/ui/');
  });

  it('redirects an unclean path to its cleaned form', async () => {
    const res = await fetch(`${sim.url}//running`, { redirect: 'manual' });
    expect(res.status).toBe(301);
    expect(res.headers.get('location')).toBe('/running');
  });

  it('redirects /upstream/<model> without a trailing slash with 301 for GET and 308 for POST', async () => {
    const get = await fetch(`${sim.url}/upstream/gpt-4o-mini?x=1`, { redirect: 'manual' });
    expect(get.status).toBe(301);
    expect(get.headers.get('location')).toBe('/upstream/gpt-4o-mini/?x=1');
    const post = await fetch(`${sim.url}/upstream/qwen`, { method: 'POST', redirect: 'manual' });
    expect(post.status).toBe(308);
    expect(sim.state('qwen')).toBe('stopped');
  });

  it('answers an unknown /upstream model with the 404 envelope "model not found"', async () => {
    const res = await fetch(`${sim.url}/upstream/nope/health`);
    expect(res.status).toBe(404);
    expect(await json(res)).toEqual({
      src: 'llama-swap',
      error: { message: 'model not found', type: 'invalid_request_error', param: null, code: 'not_found' },
    });
  });

  it('loads a model through GET /upstream/<model>/ like the UI button does', async () => {
    const res = await fetch(`${sim.url}/upstream/qwen/?_=123`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/html');
    expect(sim.state('qwen')).toBe('ready');
    const health = await fetch(`${sim.url}/upstream/qwen/health`);
    expect(await json(health)).toEqual({ status: 'ok' });
    await sim.unload();
  });

  it('answers 409 on /upstream ignorePaths when the model is not loaded, without loading it', async () => {
    const res = await fetch(`${sim.url}/upstream/qwen/favicon.ico`);
    expect(res.status).toBe(409);
    expect((await json(res)).error.message).toBe('model qwen is not loaded; path matches upstream.ignorePaths');
    expect(sim.state('qwen')).toBe('stopped');
  });

  it('answers CORS preflights with 204 on any path', async () => {
    const res = await fetch(`${sim.url}/v1/chat/completions`, {
      method: 'OPTIONS',
      headers: { 'access-control-request-headers': 'authorization, content-type' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-headers')).toBe('authorization, content-type');
    expect(res.headers.get('access-control-max-age')).toBe('86400');
  });

  it('writes one access log line per request in the proxy log', async () => {
    await fetch(`${sim.url}/running`, { headers: { 'user-agent': 'routing-test/1' } });
    const line = await sim.waitForLog(
      'proxy',
      /\[INFO\] Request 127\.0\.0\.1 "GET \/running HTTP\/1\.1" 200 \d+ "routing-test\/1" [\d.]+(µs|ms|s)\n/,
    );
    expect(line).toMatch(/^\[INFO\] Request/);
  });

  it('serves /api/version', async () => {
    const res = await fetch(`${sim.url}/api/version`);
    expect(await json(res)).toEqual(sim.knobs.version);
  });
});

describe('API keys', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ config: { ...CONFIG, apiKeys: ['sk-right'] } });
  });
  afterAll(() => sim.close());

  it('rejects a request without a key with 401 and a Basic challenge', async () => {
    const res = await postJson(`${sim.url}/v1/chat/completions`, chatBody('qwen'));
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Basic realm="llama-swap"');
    expect((await json(res)).error).toMatchObject({
      message: 'unauthorized: invalid or missing API key',
      code: 'unauthorized',
    });
  });

  it('accepts the key as Bearer, as Basic password and as x-api-key', async () => {
    const basic = `Basic ${Buffer.from('anyone:sk-right').toString('base64')}`;
    for (const headers of [
      { authorization: 'Bearer sk-right' },
      { authorization: basic },
      { 'x-api-key': 'sk-right' },
    ] as Array<Record<string, string>>) {
      const res = await fetch(`${sim.url}/running`, { headers });
      expect(res.status).toBe(200);
    }
  });

  it('checks only one candidate: a wrong Bearer beats a correct x-api-key', async () => {
    const res = await fetch(`${sim.url}/running`, {
      headers: { authorization: 'Bearer wrong', 'x-api-key': 'sk-right' },
    });
    expect(res.status).toBe(401);
  });

  it('prefers the Basic password over a Bearer token', async () => {
    // Only one Authorization header is possible; Basic wins over x-api-key too.
    const basic = `Basic ${Buffer.from('u:sk-right').toString('base64')}`;
    const res = await fetch(`${sim.url}/running`, { headers: { authorization: basic, 'x-api-key': 'wrong' } });
    expect(res.status).toBe(200);
  });

  it('leaves /health, the root redirect and preflights open', async () => {
    expect((await fetch(`${sim.url}/health`)).status).toBe(200);
    expect((await fetch(`${sim.url}/`, { redirect: 'manual' })).status).toBe(302);
    expect((await fetch(`${sim.url}/running`, { method: 'OPTIONS' })).status).toBe(204);
  });

  it('still answers unknown paths with the mux 404 before auth', async () => {
    const res = await fetch(`${sim.url}/nope`);
    expect(res.status).toBe(404);
    expect(await res.text()).toBe('404 page not found\n');
  });

  it('lets the apiKeys knob override the config at runtime', async () => {
    sim.knobs.apiKeys = [];
    try {
      expect((await fetch(`${sim.url}/running`)).status).toBe(200);
    } finally {
      sim.knobs.apiKeys = null;
    }
    expect((await fetch(`${sim.url}/running`)).status).toBe(401);
  });
});
