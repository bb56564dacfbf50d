/**
 * receiveBody / discardRest against real requests: a node:http server hands each request to the
 * test, and a raw socket sends exactly the bytes (and the Content-Length) the test chooses.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  watch,
  type FSWatcher,
  writeFileSync,
} from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { BodyHead } from '../../src/core/context.js';
import { discardRest, MEMORY_BODY_MAX_BYTES, receiveBody } from '../../src/proxy/request-body.js';
import { openSpoolDir } from '../../src/proxy/spool-dir.js';

let server: Server;
let port: number;
const waiting: Array<(call: { req: IncomingMessage; res: ServerResponse }) => void> = [];
const sockets: Socket[] = [];
const watchers: FSWatcher[] = [];
let spoolDir: string;

beforeAll(async () => {
  server = createServer((req, res) => waiting.shift()?.({ req, res }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  spoolDir = mkdtempSync(join(tmpdir(), 'gatehouse-request-body-'));
});
afterEach(() => {
  vi.useRealTimers();
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const watcher of watchers.splice(0)) watcher.close();
  rmSync(spoolDir, { recursive: true, force: true });
});

/** Opens a raw connection, sends `head` (request line and headers), resolves with the request the server got. */
async function send(head: string): Promise<{ req: IncomingMessage; socket: Socket }> {
  const arrived = new Promise<{ req: IncomingMessage }>((resolve) => waiting.push(resolve));
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  socket.write(`${head}\r\nHost: test\r\n\r\n`);
  const { req } = await arrived;
  return { req, socket };
}

const chunked = (data: Buffer | string): Buffer => {
  const bytes = Buffer.from(data);
  return Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n')]);
};
const LAST_CHUNK = '0\r\n\r\n';

/** Records what the observer saw; `until(n)` resolves once n bytes have been seen. */
function observer() {
  const seen: Buffer[] = [];
  let total = 0;
  const waiters: Array<{ bytes: number; resolve: () => void }> = [];
  return {
    seen,
    total: () => total,
    observe(chunk: Buffer) {
      seen.push(chunk);
      total += chunk.length;
      for (const w of waiters.filter((w) => total >= w.bytes)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    },
    until(bytes: number): Promise<void> {
      return total >= bytes ? Promise.resolve() : new Promise((resolve) => waiters.push({ bytes, resolve }));
    },
  };
}

/** Lets pending I/O callbacks and promise reactions run (setImmediate is never faked here). */
const turn = () => new Promise((resolve) => setImmediate(resolve));

const bodyBytes = (n: number): Buffer => Buffer.from(Array.from({ length: n }, (_, i) => 97 + (i % 26)));

async function readAll(body: BodyHead['body']): Promise<Buffer> {
  if (body === null) return Buffer.alloc(0);
  if (Buffer.isBuffer(body)) return body;
  if (Array.isArray(body)) return Buffer.concat(body);
  return Buffer.concat((await body.toArray()) as Buffer[]);
}

const spoolFiles = () => readdirSync(spoolDir).filter((name) => name.endsWith('.body'));

/**
 * Watches the spool directory for the one body file a test makes: `created` once it appeared,
 * `removed` once it was created and deleted again (two rename events, file absent), whatever
 * the order the two happen in relative to the call settling.
 */
function watchSpool(): { created: Promise<void>; removed: Promise<void> } {
  let onCreated!: () => void;
  let onRemoved!: () => void;
  const created = new Promise<void>((resolve) => (onCreated = resolve));
  const removed = new Promise<void>((resolve) => (onRemoved = resolve));
  const renames = new Map<string, number>();
  watchers.push(
    watch(spoolDir, (event, name) => {
      if (event !== 'rename' || !name?.endsWith('.body')) return;
      const count = (renames.get(name) ?? 0) + 1;
      renames.set(name, count);
      onCreated();
      if (count >= 2 && !existsSync(join(spoolDir, name))) onRemoved();
    }),
  );
  return { created, removed };
}

describe('receiving a request body', () => {
  it('holds a small body in memory and hands over exactly the bytes sent', async () => {
    const { req, socket } = await send('POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 11');
    const seen = observer();
    const received = receiveBody(req, { limit: 1024, idleTimeoutMs: 10_000, spoolDir, observe: seen.observe });
    socket.write('hello world');
    const head = await received;
    expect(head.bytes).toBe(11);
    expect(head.received()).toBe(11);
    expect((await readAll(head.body)).toString()).toBe('hello world');
    expect(Buffer.concat(head.complete!).toString()).toBe('hello world');
    expect(Buffer.concat(seen.seen).toString()).toBe('hello world');
    expect(spoolFiles()).toEqual([]);
  });

  it('treats a request with neither Content-Length nor Transfer-Encoding as having no body', async () => {
    const { req } = await send('GET /v1/models HTTP/1.1');
    const head = await receiveBody(req, { limit: 1024, idleTimeoutMs: 10_000, spoolDir });
    expect(head.bytes).toBe(0);
    expect(head.body).toBeNull();
  });

  it('rejects a declared Content-Length over the limit with 413 before any body byte arrives', async () => {
    const { req } = await send('POST / HTTP/1.1\r\nContent-Length: 1025');
    const seen = observer();
    await expect(
      receiveBody(req, { limit: 1024, idleTimeoutMs: 10_000, spoolDir, observe: seen.observe }),
    ).rejects.toMatchObject({
      code: 'body_too_large',
      status: 413,
      message: "The request body exceeds the gateway's limit of 1024 bytes.",
    });
    expect(seen.total()).toBe(0);
  });

  it('counts received bytes against the limit when there is no Content-Length (chunked)', async () => {
    const { req, socket } = await send('POST / HTTP/1.1\r\nTransfer-Encoding: chunked');
    const seen = observer();
    const received = receiveBody(req, { limit: 10, idleTimeoutMs: 10_000, spoolDir, observe: seen.observe });
    const outcome = received.then(
      () => 'resolved',
      (error: unknown) => error,
    );
    socket.write(chunked('abcd'));
    await seen.until(4);
    socket.write(chunked('efgh'));
    await seen.until(8);
    socket.write(chunked('ijkl'));
    expect(await outcome).toMatchObject({ code: 'body_too_large', status: 413 });
    // The chunk that crossed the limit is never shown to the model reader.
    expect(Buffer.concat(seen.seen).toString()).toBe('abcdefgh');
  });

  it('accepts a chunked body of exactly the limit', async () => {
    const { req, socket } = await send('POST / HTTP/1.1\r\nTransfer-Encoding: chunked');
    const received = receiveBody(req, { limit: 10, idleTimeoutMs: 10_000, spoolDir });
    socket.write(Buffer.concat([chunked('abcde'), chunked('fghij'), Buffer.from(LAST_CHUNK)]));
    const head = await received;
    expect(head.bytes).toBe(10);
    expect((await readAll(head.body)).toString()).toBe('abcdefghij');
  });

  it('keeps a body of exactly the memory threshold in memory', async () => {
    const body = bodyBytes(MEMORY_BODY_MAX_BYTES);
    const { req, socket } = await send(`POST / HTTP/1.1\r\nContent-Length: ${body.length}`);
    const received = receiveBody(req, { limit: 1024 * 1024, idleTimeoutMs: 10_000, spoolDir });
    socket.write(body);
    const head = await received;
    expect(head.complete).toBeDefined();
    expect((await readAll(head.body)).equals(body)).toBe(true);
    expect(spoolFiles()).toEqual([]);
  });

  it('spools a body over the memory threshold to a private file, keeps its start, and removes the file on dispose', async () => {
    const body = bodyBytes(MEMORY_BODY_MAX_BYTES + 1);
    const { req, socket } = await send(`POST / HTTP/1.1\r\nContent-Length: ${body.length}`);
    const received = receiveBody(req, { limit: 1024 * 1024, idleTimeoutMs: 10_000, spoolDir });
    socket.write(body);
    const head = await received;
    expect(head.bytes).toBe(body.length);
    expect(head.complete).toBeUndefined();
    const [file] = spoolFiles();
    expect(file).toBeDefined();
    expect(statSync(join(spoolDir, file!)).mode & 0o777).toBe(0o600);
    const start = Buffer.concat(head.start);
    expect(start.length).toBeGreaterThanOrEqual(64 * 1024);
    expect(start.equals(body.subarray(0, start.length))).toBe(true);
    expect((await readAll(head.body)).equals(body)).toBe(true);
    head.dispose();
    expect(spoolFiles()).toEqual([]);
  });

  it('removes the spool file when a spooled body crosses the limit', async () => {
    const { req, socket } = await send('POST / HTTP/1.1\r\nTransfer-Encoding: chunked');
    const seen = observer();
    const limit = MEMORY_BODY_MAX_BYTES + 1024;
    const spool = watchSpool();
    const received = receiveBody(req, { limit, idleTimeoutMs: 10_000, spoolDir, observe: seen.observe });
    const outcome = received.then(
      () => 'resolved',
      (error: unknown) => error,
    );
    socket.write(chunked(bodyBytes(MEMORY_BODY_MAX_BYTES + 1)));
    await seen.until(MEMORY_BODY_MAX_BYTES + 1);
    await spool.created;
    socket.write(chunked(bodyBytes(2048)));
    expect(await outcome).toMatchObject({ code: 'body_too_large', status: 413 });
    await spool.removed;
    expect(spoolFiles()).toEqual([]);
  });

  it('rejects and removes the spool file when the client goes away mid-body', async () => {
    const { req, socket } = await send(`POST / HTTP/1.1\r\nContent-Length: ${MEMORY_BODY_MAX_BYTES * 2}`);
    const seen = observer();
    const spool = watchSpool();
    const received = receiveBody(req, { limit: 1024 * 1024, idleTimeoutMs: 10_000, spoolDir, observe: seen.observe });
    const outcome = received.then(
      () => 'resolved',
      (error: unknown) => error,
    );
    socket.write(bodyBytes(MEMORY_BODY_MAX_BYTES + 1));
    await seen.until(MEMORY_BODY_MAX_BYTES + 1);
    await spool.created;
    socket.destroy();
    expect(await outcome).toBeInstanceOf(Error);
    await spool.removed;
    expect(spoolFiles()).toEqual([]);
  });
});

describe('the body timeout', () => {
  it('answers 408 when nothing arrives for the timeout, the clock restarting at every chunk', async () => {
    const { req, socket } = await send('POST / HTTP/1.1\r\nContent-Length: 6');
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const seen = observer();
    let outcome: unknown = 'pending';
    receiveBody(req, { limit: 1024, idleTimeoutMs: 1000, spoolDir, observe: seen.observe }).then(
      () => (outcome = 'resolved'),
      (error: unknown) => (outcome = error),
    );
    socket.write('ab');
    await seen.until(2);
    vi.advanceTimersByTime(999);
    socket.write('cd');
    await seen.until(4);
    vi.advanceTimersByTime(999);
    await turn();
    expect(outcome, 'a chunk within the timeout keeps the body alive').toBe('pending');
    vi.advanceTimersByTime(1);
    await turn();
    expect(outcome).toMatchObject({
      code: 'body_timeout',
      status: 408,
      message: 'The request body stopped arriving: nothing for 1 s (GATEHOUSE_BODY_TIMEOUT).',
    });
  });

  it('removes the spool file of a body that stopped arriving', async () => {
    const { req, socket } = await send(`POST / HTTP/1.1\r\nContent-Length: ${MEMORY_BODY_MAX_BYTES * 2}`);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const seen = observer();
    const spool = watchSpool();
    const outcome = receiveBody(req, { limit: 1024 * 1024, idleTimeoutMs: 1000, spoolDir, observe: seen.observe }).then(
      () => 'resolved',
      (error: unknown) => error,
    );
    socket.write(bodyBytes(MEMORY_BODY_MAX_BYTES + 1));
    await seen.until(MEMORY_BODY_MAX_BYTES + 1);
    await spool.created;
    vi.advanceTimersByTime(1000);
    expect(await outcome).toMatchObject({ code: 'body_timeout', status: 408 });
    await spool.removed;
    expect(spoolFiles()).toEqual([]);
  });
});

describe('dropping the rest of an unwanted body', () => {
  it('reads the rest and resolves true once the body ended', async () => {
    const { req, socket } = await send('POST / HTTP/1.1\r\nContent-Length: 8');
    const drained = discardRest(req, 1024);
    socket.write('12345678');
    expect(await drained).toBe(true);
  });

  it('gives up (false) when the client sends more than allowed', async () => {
    const { req, socket } = await send('POST / HTTP/1.1\r\nTransfer-Encoding: chunked');
    const drained = discardRest(req, 4);
    socket.write(chunked('12345'));
    expect(await drained).toBe(false);
  });

  it('gives up (false) when the rest does not arrive in time', async () => {
    const { req, socket } = await send('POST / HTTP/1.1\r\nContent-Length: 8');
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let drained: boolean | undefined;
    void discardRest(req, 1024, 5000).then((value) => (drained = value));
    socket.write('1234');
    vi.advanceTimersByTime(4999);
    await turn();
    expect(drained).toBeUndefined();
    vi.advanceTimersByTime(1);
    await turn();
    expect(drained).toBe(false);
  });
});

describe('the spool directory', () => {
  it("makes this process's own directory, leaving what else is there, and removes it on close", () => {
    const parent = join(spoolDir, 'nested', 'spool');
    mkdirSync(parent, { recursive: true });
    writeFileSync(join(parent, 'left-over.body'), 'x');
    const spool = openSpoolDir(parent);
    expect(spool.dir.startsWith(parent)).toBe(true);
    expect(readdirSync(parent).sort()).toEqual([basename(spool.dir), 'left-over.body'].sort());
    spool.close();
    expect(readdirSync(parent)).toEqual(['left-over.body']);
  });

  it("never removes another live owner's directory, in this process or another", () => {
    const parent = join(spoolDir, 'shared');
    const first = openSpoolDir(parent);
    writeFileSync(join(first.dir, 'in-flight.body'), 'x');
    const second = openSpoolDir(parent);
    expect(readdirSync(first.dir).sort()).toEqual(['in-flight.body', 'owner.lock']);
    expect(second.dir).not.toBe(first.dir);
    second.close();
    first.close();
  });

  it("falls back to the system's temp dir when the directory cannot be made", () => {
    const file = join(spoolDir, 'a-file');
    writeFileSync(file, 'not a directory');
    const spool = openSpoolDir(join(file, 'spool'));
    expect(spool.dir.startsWith(tmpdir())).toBe(true);
    expect(statSync(spool.dir).isDirectory()).toBe(true);
    spool.close();
  });
});
