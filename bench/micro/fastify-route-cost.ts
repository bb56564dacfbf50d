/**
 * What a Fastify route costs a `/v1` call compared with handling Node's raw request, the
 * overhead `/v1` saves by being dispatched before Fastify (docs/architecture.md). Each variant
 * is a server in its own child process answering the bench's JSON chat-completion POST with the
 * same fixed JSON, its body read as bytes and never parsed (as the proxy treats it):
 *
 *   raw node:http         http.createServer, the body collected from the request stream
 *   fastify, buffer body  a Fastify 5 route, a content-type parser handing over the body as a Buffer
 *   fastify, stream body  a Fastify 5 route, a content-type parser handing over the unread stream
 *
 * Load from this process (autocannon), the variants alternating round by round; CPU time of the
 * server process per call (/proc) at 50 connections, and p50 at 1 connection.
 * Run: `npm run build && node dist/bench/micro/fastify-route-cost.js` (bounded: about a minute).
 */
import { fork } from 'node:child_process';
import { createServer, type IncomingMessage } from 'node:http';
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';
import { announceListening, type ListeningMessage } from '../child-ipc.js';
import { createLoadDriver } from '../load.js';
import { requestFor } from '../load-suite.js';
import { cpuTimeMs } from '../proc.js';
import { median, sleep } from '../stats.js';

const VARIANTS = ['raw node:http', 'fastify, buffer body', 'fastify, stream body'] as const;
type Variant = (typeof VARIANTS)[number];
const ROUNDS = 5;
const SECONDS = 2;
const START_TIMEOUT_MS = 30_000;

const ANSWER = Buffer.from(
  JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    model: 'bench-model',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hello!' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 },
  }),
);
const ANSWER_HEADERS = { 'content-type': 'application/json', 'content-length': String(ANSWER.length) };

function readBody(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

async function serve(variant: Variant): Promise<void> {
  if (variant === 'raw node:http') {
    const server = createServer({ noDelay: true }, (req, res) => {
      void readBody(req).then(() => res.writeHead(200, ANSWER_HEADERS).end(ANSWER));
    });
    server.listen(0, '127.0.0.1', () => announceListening(server));
    return;
  }
  const app = Fastify({ logger: false });
  app.removeContentTypeParser(['application/json', 'text/plain']);
  if (variant === 'fastify, buffer body')
    app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  else app.addContentTypeParser('*', (_req, payload, done) => done(null, payload));
  app.post('/v1/chat/completions', async (request, reply) => {
    if (!Buffer.isBuffer(request.body)) await readBody(request.body as IncomingMessage);
    return reply.headers(ANSWER_HEADERS).send(ANSWER);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  announceListening(app.server);
}

async function start(variant: Variant): Promise<{ pid: number; url: string; stop(): void }> {
  const child = fork(fileURLToPath(import.meta.url), ['serve', variant], { execArgv: [], stdio: 'inherit' });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${variant} did not start`)), START_TIMEOUT_MS);
    child.on('message', (message: ListeningMessage) => {
      clearTimeout(timer);
      resolve(message.port);
    });
    child.once('exit', (code) => reject(new Error(`${variant} exited (code ${code})`)));
  });
  return { pid: child.pid!, url: `http://127.0.0.1:${port}`, stop: () => child.kill() };
}

async function measure(): Promise<void> {
  const driver = createLoadDriver('autocannon');
  const call = requestFor('json', {});
  const servers: Array<Awaited<ReturnType<typeof start>>> = [];
  try {
    for (const variant of VARIANTS) servers.push(await start(variant));
    for (const server of servers) await driver.run(server.url, call, 50, SECONDS); // warm-up: JIT
    const cpu = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
    const p50 = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < VARIANTS.length; i++) {
        const k = (i + round) % VARIANTS.length;
        const [variant, server] = [VARIANTS[k]!, servers[k]!];
        const before = await cpuTimeMs(server.pid);
        const loaded = await driver.run(server.url, call, 50, SECONDS);
        const after = await cpuTimeMs(server.pid);
        if (before !== undefined && after !== undefined)
          cpu.get(variant)!.push(((after - before) * 1000) / loaded.okResponses);
        p50.get(variant)!.push((await driver.run(server.url, call, 1, SECONDS / 2)).p50Ms);
        await sleep(100);
      }
    }
    const raw = median(cpu.get('raw node:http')!);
    const rawP50 = median(p50.get('raw node:http')!);
    process.stdout.write(`median of ${ROUNDS} rounds of ${SECONDS} s; CPU of the server process per call\n`);
    process.stdout.write('variant                CPU µs/call (50 conn.)   vs raw      p50 ms (1 conn.)   vs raw\n');
    for (const variant of VARIANTS) {
      const us = median(cpu.get(variant)!);
      const ms = median(p50.get(variant)!);
      process.stdout.write(
        `${variant.padEnd(22)} ${us.toFixed(1).padStart(22)} ${`+${(us - raw).toFixed(1)}`.padStart(9)} ` +
          `${ms.toFixed(3).padStart(19)} ${`+${(ms - rawP50).toFixed(3)}`.padStart(8)}\n`,
      );
    }
  } finally {
    for (const server of servers) server.stop();
  }
}

if (process.argv[2] === 'serve') await serve(process.argv[3] as Variant);
else await measure();
