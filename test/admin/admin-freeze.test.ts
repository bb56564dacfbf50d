/**
 * Anyone who reaches the port can post to the public admin routes. Oversized bodies there are
 * refused (413) while they arrive, before the gateway has read them, while a stream in flight and
 * the probes go on and the gateway's memory stays put. The gateway runs in this process, in front
 * of the simulator.
 */
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_CONFIG, startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import type { TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/http.js';
import { api, completeSetup, errorCode, login, printedSetupToken, startAdminGateway } from '../helpers/admin.js';

const MiB = 1024 * 1024;
/** One event every 20 ms while the stream lasts. */
const TOKENS_PER_SECOND = 50;

let sim: Simulator;
let gateway: TestGateway;

beforeAll(async () => {
  sim = await startSimulator({ config: DEMO_CONFIG, knobs: { tokensPerSecond: TOKENS_PER_SECOND, tokens: 1000 } });
  gateway = await startAdminGateway(sim.url);
});
afterAll(async () => {
  await gateway?.close();
  await sim?.close();
});

interface Answer {
  status: number;
  body: string;
  /** The answer came while the 20 MB body was still being sent. */
  beforeBodySent: boolean;
}

/**
 * The attacker, in its own process so that its writes are not counted as the gateway's time:
 * posts 20 MB bodies to /api/setup and /api/login all at once, half with their Content-Length
 * and half chunked without one, and prints every answer as JSON with whether it came before
 * the body was all sent. A refused body is not read to its end: the gateway closes the connection
 * after its 413, and the attacker's write can fail before it reads that answer (status 0 and the
 * socket error's code). 20 MB is far more than loopback socket buffers hold, so a body counts as
 * sent only once the gateway has read it.
 */
const ATTACKER = `
const http = require('node:http');
const [base, token] = process.argv.slice(1);
const password = Buffer.alloc(20 * 1024 * 1024, 0x61);
const bodies = {
  '/api/setup': Buffer.concat([Buffer.from('{"token":"' + token + '","password":"'), password, Buffer.from('"}')]),
  '/api/login': Buffer.concat([Buffer.from('{"password":"'), password, Buffer.from('"}')]),
};
const post = (path, framing) => new Promise((resolve) => {
  const body = bodies[path];
  const framed = framing === 'chunked' ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(body.length) };
  const headers = { 'content-type': 'application/json', ...framed };
  let answered = false;
  let sent = false;
  const req = http.request(base + path, { method: 'POST', headers, agent: false }, (res) => {
    answered = true;
    const beforeBodySent = !sent;
    const chunks = [];
    const done = () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString(), beforeBodySent });
    res.on('data', (c) => chunks.push(c));
    res.on('end', done);
    res.on('error', done);
  });
  req.on('error', (error) => { if (!answered) resolve({ status: 0, body: error.code, beforeBodySent: !sent }); });
  req.on('finish', () => { sent = true; });
  req.end(body);
});
process.stdout.write('ready\\n');
process.stdin.once('data', () => {
  const paths = ['/api/setup', '/api/setup', '/api/login', '/api/login'];
  Promise.all(['content-length', 'chunked'].flatMap((framing) => paths.map((path) => post(path, framing)))).then(
    (answers) => process.stdout.write(JSON.stringify(answers)),
    (error) => { console.error(error); process.exit(1); },
  );
});
`;

/** Starts the attacker and waits until it is ready: forking is the test's cost, not the gateway's. */
async function readyAttacker(token: string): Promise<{ attack: () => Promise<Answer[]> }> {
  const child = spawn(process.execPath, ['-e', ATTACKER, gateway.url, token], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  const answers = new Promise<Answer[]>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(out.slice(out.indexOf('\n') + 1)) as Answer[])
        : reject(new Error(`the attacker exited with ${code}`)),
    );
  });
  await new Promise<void>((resolve) => {
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('\n')) resolve();
    });
  });
  return {
    attack() {
      child.stdin.end('go\n');
      return answers;
    },
  };
}

/** A streaming chat call through the gateway: its status, and `events` gets 'stream' per chunk. */
function openStream(events: string[]): { status: () => number; stop: () => void } {
  let status = 0;
  const req = request(
    `${gateway.url}/v1/chat/completions`,
    { method: 'POST', headers: { 'content-type': 'application/json' }, agent: false },
    (res) => {
      status = res.statusCode ?? 0;
      res.on('data', () => events.push('stream'));
      res.on('error', () => undefined);
    },
  );
  req.on('error', () => undefined);
  req.end(JSON.stringify({ model: 'qwen3-8b', stream: true, messages: [{ role: 'user', content: 'keep talking' }] }));
  return { status: () => status, stop: () => req.destroy() };
}

const nextTick = () => new Promise((r) => setImmediate(r));
/** Waits until `events` holds `count` more of `kind` than it held when called. */
async function more(events: string[], kind: string, count: number): Promise<void> {
  const seen = () => events.filter((e) => e === kind).length;
  const target = seen() + count;
  while (seen() < target) await nextTick();
}

describe('oversized bodies on the public admin routes', () => {
  it('refuses 8 parallel 20 MB setup and sign-in posts with 413 before reading them, while a stream and /healthz go on and memory stays steady', async () => {
    const events: string[] = [];
    const attacker = await readyAttacker(printedSetupToken(gateway));
    const stream = openStream(events);
    await more(events, 'stream', 3);
    const rssBefore = process.memoryUsage.rss();
    let rssPeak = rssBefore;
    let attacking = true;
    const probing = (async () => {
      while (attacking) {
        const res = await rawRequest(`${gateway.url}/healthz`);
        events.push(res.status === 200 ? 'healthz' : `healthz ${res.status}`);
        rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
      }
    })();

    events.push('attack');
    let answers: Answer[];
    try {
      answers = await attacker.attack();
      events.push('answered');
      // Work left behind by the refused bodies would hold up what comes next.
      await Promise.all([more(events, 'stream', 3), more(events, 'healthz', 3)]);
    } finally {
      attacking = false;
      await probing;
    }
    rssPeak = Math.max(rssPeak, process.memoryUsage.rss());

    expect(answers).toHaveLength(8);
    // A reset means the gateway closed the connection on a body it had not read to the end.
    for (const answer of answers) {
      if (answer.status === 0) expect(['EPIPE', 'ECONNRESET']).toContain(answer.body);
      else
        expect({
          status: answer.status,
          body: JSON.parse(answer.body) as unknown,
          early: answer.beforeBodySent,
        }).toEqual({
          status: 413,
          body: {
            error: { code: 'body_too_large', message: "The request body exceeds this route's limit of 64 KiB." },
          },
          early: true,
        });
    }
    // Every probe during and after the attack was answered 200.
    expect(events.filter((e) => e.startsWith('healthz ')).length).toBe(0);
    expect(rssPeak - rssBefore).toBeLessThan(64 * MiB);

    // Nothing was set or used up: the printed link still completes setup, then sign-in works.
    await completeSetup(gateway);
    await login(gateway);
    expect(stream.status()).toBe(200);
    stream.stop();
  });

  it('answers a Content-Length over the cap at once, before the body is sent', async () => {
    const answer = await new Promise<number>((resolve, reject) => {
      const req = request(
        `${gateway.url}/api/login`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-length': String(50 * MiB) },
          agent: false,
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.write('{"password":"');
    });
    expect(answer).toBe(413);
  });

  it('accepts a body just under 64 KiB on an admin route and refuses one just over', async () => {
    const fits = JSON.stringify({ password: 'x'.repeat(64 * 1024 - 20) });
    const over = JSON.stringify({ password: 'x'.repeat(64 * 1024) });
    expect(Buffer.byteLength(fits)).toBeLessThanOrEqual(64 * 1024);
    const small = await api(gateway, 'POST', '/api/login', {
      rawBody: fits,
      headers: { 'content-type': 'application/json' },
    });
    expect(small.status).toBe(401);
    const large = await api(gateway, 'POST', '/api/login', {
      rawBody: over,
      headers: { 'content-type': 'application/json' },
    });
    expect(large.status).toBe(413);
    expect(errorCode(large)).toBe('body_too_large');
  });
});
