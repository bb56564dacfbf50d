import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLlamaSwapClient, type LlamaSwapClient } from '../../src/management-client/llama-swap-client.js';
import { decodeEnvelope, textStream } from '../../src/management-client/log-stream.js';
import { SseDecoder } from '../../src/core/sse-decoder.js';
import type { ClosableStream, LlamaSwapEvent } from '../../src/management-client/types.js';
import { UpstreamError } from '../../src/management-client/errors.js';
import { startSimulator, type Simulator } from '../fakes/llama-swap/index.js';

/** Pull items until `pred` holds for the collected list. */
async function collect<T>(stream: AsyncIterable<T>, pred: (items: T[]) => boolean, timeoutMs = 2000): Promise<T[]> {
  const items: T[] = [];
  const iterator = stream[Symbol.asyncIterator]();
  const deadline = Date.now() + timeoutMs;
  while (!pred(items)) {
    let timer: NodeJS.Timeout | undefined;
    const next = await Promise.race([
      iterator.next(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`timed out with ${JSON.stringify(items)}`)),
          Math.max(1, deadline - Date.now()),
        );
      }),
    ]).finally(() => clearTimeout(timer));
    if (next.done) throw new Error(`stream ended with ${JSON.stringify(items)}`);
    items.push(next.value);
  }
  return items;
}

/** Read to the end; fails if the stream does not end within `timeoutMs`. */
async function drain<T>(stream: AsyncIterable<T>, timeoutMs = 2000): Promise<T[]> {
  const items: T[] = [];
  let timer: NodeJS.Timeout | undefined;
  const reading = (async () => {
    for await (const item of stream) items.push(item);
    return items;
  })();
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('stream did not end')), timeoutMs);
  });
  return Promise.race([reading, timeout]).finally(() => clearTimeout(timer));
}

const CONFIG = {
  models: { qwen: { cmd: 'llama-server --port ${PORT}', aliases: ['q'] } },
};

describe('log and event streams against the simulator', () => {
  let sim: Simulator;
  let client: LlamaSwapClient;
  beforeAll(async () => {
    sim = await startSimulator({ config: CONFIG });
    client = createLlamaSwapClient({ baseUrl: new URL(sim.url), timeoutMs: 2000 });
  });
  afterAll(async () => {
    await client.close();
    await sim.close();
  });

  it('streams the proxy log: history first, then live text', async () => {
    sim.log('proxy', '[INFO] history line');
    const stream = await client.logStream('proxy');
    sim.log('proxy', '[INFO] live line');
    const chunks = await collect(stream, (c) => c.join('').includes('live line'));
    expect(chunks.join('')).toMatch(/history line[\s\S]*live line/);
    stream.close();
    expect(await drain(stream)).toEqual([]);
  });

  it('skips history with noHistory', async () => {
    const stream = await client.logStream('proxy', { noHistory: true });
    sim.log('proxy', '[INFO] only this');
    const chunks = await collect(stream, (c) => c.join('').includes('only this'));
    expect(chunks.join('')).toBe('[INFO] only this\n');
    stream.close();
  });

  it('streams a model log by alias and the combined log', async () => {
    await sim.load('qwen');
    const model = await client.logStream({ model: 'q' });
    expect((await collect(model, (c) => c.join('').includes('server is listening'))).length).toBeGreaterThan(0);
    model.close();
    const combined = await client.logStream('combined');
    expect((await collect(combined, (c) => c.join('').includes('Executing start command'))).length).toBeGreaterThan(0);
    combined.close();
    expect(sim.received.filter((r) => r.path.startsWith('/logs/stream')).map((r) => r.path)).toContain('/logs/stream');
  });

  it('throws a typed 400 for an unknown log source', async () => {
    await expect(client.logStream({ model: 'nope' })).rejects.toMatchObject({
      kind: 'http',
      status: 400,
      upstreamMessage: "invalid logger. Use 'proxy', 'upstream' or a model's ID",
    });
  });

  it('ends a stream quietly when the caller aborts', async () => {
    const controller = new AbortController();
    const stream = await client.logStream('upstream', { signal: controller.signal, noHistory: true });
    const drained = drain(stream);
    controller.abort();
    expect(await drained).toEqual([]);
  });

  it('decodes /api/events twice into typed events and follows state changes', async () => {
    await sim.unload();
    const events = await client.events();
    const initial = await collect(events, (e) => e.some((x) => x.type === 'inflight'));
    expect(initial.map((e) => e.type)).toEqual([
      'logData',
      'logData',
      'modelStatus',
      'uiConfig',
      'profileChanged',
      'inflight',
    ]);
    const status = initial[2] as Extract<LlamaSwapEvent, { type: 'modelStatus' }>;
    expect(status.data).toEqual([
      { id: 'qwen', name: '', description: '', state: 'stopped', unlisted: false, peerID: '', aliases: ['q'] },
    ]);
    await sim.load('qwen');
    const later = await collect(events, (e) =>
      e.some((x) => x.type === 'modelStatus' && x.data.some((m) => m.id === 'qwen' && m.state === 'ready')),
    );
    expect(later.some((x) => x.type === 'logData' && x.data.source === 'proxy')).toBe(true);
    events.close();
  });

  it('ends the event stream when llama-swap reloads its config', async () => {
    const events: ClosableStream<LlamaSwapEvent> = await client.events();
    await collect(events, (e) => e.length >= 6);
    await sim.reload();
    // Ends on its own (no close() from us) once llama-swap shuts the old instance down.
    await expect(drain(events)).resolves.toBeInstanceOf(Array);
  });
});

describe('stream decoding', () => {
  const FRAMES =
    'event:message\ndata:{"type":"activity","data":"{\\"id\\":7}"}\n\n' +
    'event: message\r\ndata: {"type":"profileChanged","data":"{\\"active\\":null}"}\r\n\r\n' +
    ': comment\ndata:{"type":"brandNew","data":"[1,2]"}\n\n';

  it('decodes SSE frames identically however the bytes are split', () => {
    const whole = new SseDecoder().push(FRAMES);
    expect(whole).toHaveLength(3);
    for (let cut = 0; cut <= FRAMES.length; cut++) {
      const d = new SseDecoder();
      const parts = [...d.push(FRAMES.slice(0, cut)), ...d.push(FRAMES.slice(cut))];
      expect(parts).toEqual(whole);
    }
    for (let step = 1; step <= 3; step++) {
      const d = new SseDecoder();
      const parts = [];
      for (let i = 0; i < FRAMES.length; i += step) parts.push(...d.push(FRAMES.slice(i, i + step)));
      expect(parts).toEqual(whole);
    }
  });

  it('double-decodes envelopes and keeps unknown event types', () => {
    const [a, b, c] = new SseDecoder().push(FRAMES).map((m) => decodeEnvelope(m.data));
    expect(a).toEqual({ type: 'activity', data: { id: 7 } });
    expect(b).toEqual({ type: 'profileChanged', data: { active: null } });
    expect(c).toEqual({ type: 'unknown', rawType: 'brandNew', data: [1, 2] });
    expect(decodeEnvelope('not json')).toBeUndefined();
  });

  it('decodes UTF-8 split across chunks in log streams', async () => {
    const bytes = Buffer.from('naïve ✓ log\n');
    const pieces = Array.from(bytes).map((b) => Buffer.from([b]));
    expect((await drain(textStream(Readable.from(pieces), 'log stream'))).join('')).toBe('naïve ✓ log\n');
  });

  it('turns a broken log connection into an unreachable UpstreamError', async () => {
    const body = new Readable({ read() {} });
    const stream = textStream(body, 'log stream');
    body.push(Buffer.from('partial'));
    const drained = drain(stream).catch((e: unknown) => e);
    body.destroy(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
    const err = await drained;
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err).toMatchObject({ kind: 'unreachable' });
  });
});
