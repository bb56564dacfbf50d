import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { chatBody, postJson, json } from './helpers.js';

const CONFIG = {
  models: {
    qwen: { cmd: 'llama-server --port ${PORT} -m qwen.gguf', aliases: ['gpt-4o-mini'] },
    renamed: { cmd: 'llama-server --port ${PORT}', useModelName: 'org/Renamed-GGUF' },
    whisper: { cmd: 'whisper-server --port ${PORT}' },
    shadow: { cmd: 'llama-server --port ${PORT}' },
  },
  peers: {
    box: { proxy: 'http://192.0.2.10:8080', models: ['big-70b', 'shadow'] },
  },
};

describe('model extraction and dispatch', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ config: CONFIG });
  });
  afterAll(() => sim.close());
  afterEach(() => {
    sim.knobs.errorShape = 'envelope';
    sim.knobs.peerUnreachable = false;
  });

  it('answers 404 "no model id could be identified" when a JSON body is sent as text/plain', async () => {
    const res = await fetch(`${sim.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: JSON.stringify(chatBody('qwen')),
    });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.text()).toBe(
      '{"src":"llama-swap","error":{"message":"no model id could be ' +
        'identified","type":"invalid_request_error","param":null,"code":"not_found"}}',
    );
  });

  it('answers 404 "no model id could be identified" when the model field is missing', async () => {
    const res = await postJson(`${sim.url}/v1/chat/completions`, { messages: [] });
    expect(res.status).toBe(404);
    expect((await json(res)).error.message).toBe('no model id could be identified');
  });

  it('answers 404 "no router for requested model" for an unknown model', async () => {
    const res = await postJson(`${sim.url}/v1/chat/completions`, chatBody('nope'));
    expect(res.status).toBe(404);
    expect((await json(res)).error.message).toBe('no router for requested model');
    expect(sim.received.at(-1)?.model).toBe('nope');
  });

  it('uses the legacy string error shape when the errorShape knob says so', async () => {
    sim.knobs.errorShape = 'legacy';
    const res = await postJson(`${sim.url}/v1/chat/completions`, chatBody('nope'));
    expect(await json(res)).toEqual({ src: 'llama-swap', error: 'no router for requested model' });
  });

  it('negotiates text/plain and HTML error bodies from the Accept header', async () => {
    const text = await postJson(`${sim.url}/v1/chat/completions`, chatBody('nope'), { accept: 'text/plain' });
    expect(text.headers.get('content-type')).toBe('text/plain');
    expect(await text.text()).toBe('llama-swap: no router for requested model');
    const html = await postJson(`${sim.url}/v1/chat/completions`, chatBody('nope'), { accept: 'text/html' });
    expect(await html.text()).toBe('<html><body><h1>llama-swap</h1><p>no router for requested model</p></body></html>');
  });

  it('reads the model from a urlencoded form and forwards the body untouched', async () => {
    const res = await fetch(`${sim.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'model=qwen&stream=true',
    });
    // llama-swap routed it; the fake llama-server then rejects the non-JSON body in its own shape.
    expect(res.status).toBe(400);
    expect(await json(res)).toEqual({
      error: { code: 400, message: 'Invalid JSON in request body', type: 'invalid_request_error' },
    });
    expect(sim.received.at(-1)?.model).toBe('qwen');
  });

  it('reads the model from ?model= for a non-JSON POST without a form body', async () => {
    const res = await fetch(`${sim.url}/v1/embeddings?model=qwen`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'x',
    });
    // qwen is a chat model: like llama-server, it refuses embeddings before reading the body.
    expect(res.status).toBe(501);
    expect(sim.received.at(-1)?.model).toBe('qwen');
  });

  it('reads the model from a multipart transcription upload and reports the file size', async () => {
    const form = new FormData();
    form.append('model', 'whisper');
    form.append('file', new Blob([new Uint8Array(1234)], { type: 'audio/wav' }), 'hello.wav');
    const res = await fetch(`${sim.url}/v1/audio/transcriptions`, { method: 'POST', body: form });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ text: 'Transcribed 1234 bytes of audio with whisper.' });
    expect(sim.received.at(-1)?.model).toBe('whisper');
  });

  it('reads the model from the query on GET model routes', async () => {
    const res = await fetch(`${sim.url}/v1/audio/voices?model=qwen`);
    expect(res.status).toBe(200);
    expect((await json(res)).voices).toContain('alloy');
  });

  it('resolves an alias to its model and echoes the alias the client sent', async () => {
    const res = await postJson(`${sim.url}/v1/chat/completions`, chatBody('gpt-4o-mini'));
    expect(res.status).toBe(200);
    expect((await json(res)).model).toBe('gpt-4o-mini');
    expect(sim.state('qwen')).toBe('ready');
  });

  it('rewrites the model name with useModelName', async () => {
    const res = await postJson(`${sim.url}/v1/chat/completions`, chatBody('renamed'));
    expect((await json(res)).model).toBe('org/Renamed-GGUF');
  });

  it('routes a peer FQN and a bare peer model to the peer, which never shows in /running', async () => {
    const fqn = await postJson(`${sim.url}/v1/chat/completions`, chatBody('box/big-70b'));
    expect(fqn.status).toBe(200);
    expect((await json(fqn)).model).toBe('big-70b');
    const bare = await postJson(`${sim.url}/v1/chat/completions`, chatBody('big-70b'));
    expect(bare.status).toBe(200);
    const running = (await json(await fetch(`${sim.url}/running`))) as { running: Array<{ model: string }> };
    expect(running.running.map((r) => r.model)).not.toContain('big-70b');
  });

  it('lets a local model shadow a bare peer model of the same ID', async () => {
    await postJson(`${sim.url}/v1/chat/completions`, chatBody('shadow'));
    expect(sim.state('shadow')).toBe('ready');
  });

  it('answers 502 "peer proxy error" when the peer is unreachable', async () => {
    sim.knobs.peerUnreachable = true;
    const res = await postJson(`${sim.url}/v1/chat/completions`, chatBody('box/big-70b'));
    expect(res.status).toBe(502);
    expect((await json(res)).error).toMatchObject({
      message: expect.stringMatching(/^peer proxy error: /),
      code: 'bad_gateway',
    });
  });

  it('strips /v from versionless routes before the upstream sees them', async () => {
    const res = await postJson(`${sim.url}/v/chat/completions`, chatBody('qwen'));
    expect(res.status).toBe(200);
    expect((await json(res)).object).toBe('chat.completion');
  });

  it('records method, path with query, lower-cased headers and a body hash', async () => {
    const body = JSON.stringify(chatBody('qwen'));
    await fetch(`${sim.url}/v1/chat/completions?trace=1`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Trace-Id': 'abc' },
      body,
    });
    const rec = await sim.waitForRequest((r) => r.path === '/v1/chat/completions?trace=1');
    expect(rec.method).toBe('POST');
    expect(rec.headers['x-trace-id']).toBe('abc');
    expect(rec.bodyBytes).toBe(Buffer.byteLength(body));
    const { createHash } = await import('node:crypto');
    expect(rec.bodySha256).toBe(createHash('sha256').update(body).digest('hex'));
  });
});
