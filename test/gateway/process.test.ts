import { request } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRecordingUpstream, type RecordingUpstream } from '../fakes/recording-upstream.js';
import { rawRequest } from '../helpers/http.js';
import { spawnGateway } from '../helpers/process.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let upstream: RecordingUpstream;
const dataDir = () => mkdtempSync(join(tmpdir(), 'gh-proc-'));
/** Lets the running upstream stream finish: it sends its first event, then waits for this. */
let finishStream: () => void = () => undefined;

beforeAll(async () => {
  upstream = await startRecordingUpstream(async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {"n":0}\n\n');
    await new Promise<void>((resolve) => (finishStream = resolve));
    res.write('data: {"n":1}\n\n');
    res.end('data: [DONE]\n\n');
  });
});
afterEach(() => finishStream());
afterAll(() => upstream.close());

/** Starts a stream and resolves once its first event arrived; `done` resolves with all bytes. */
function openStream(url: string): Promise<{ done: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/v1/chat/completions`,
      { method: 'POST', headers: { 'content-type': 'application/json' }, agent: false },
      (res) => {
        let text = '';
        const done = new Promise<string>((ok) => {
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => ok(text));
          res.on('close', () => ok(text));
        });
        res.once('data', () => resolve({ done }));
      },
    );
    req.on('error', reject);
    req.end('{"model":"m","stream":true}');
  });
}

describe('the gatehouse process', () => {
  it('on SIGTERM stops accepting, lets a running stream finish, then exits 0', async () => {
    const gw = await spawnGateway({ GATEHOUSE_UPSTREAM_URL: upstream.url, GATEHOUSE_DATA_DIR: dataDir() });
    const stream = await openStream(gw.url);
    gw.child.kill('SIGTERM');
    await gw.waitForOutput(/shutting down/);
    await expect(rawRequest(`${gw.url}/healthz`)).rejects.toThrow(/ECONNREFUSED/);
    finishStream();
    const text = await stream.done;
    expect(text).toContain('data: {"n":1}');
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(await gw.exited).toBe(0);
    expect(gw.output()).toContain('shutting down');
    expect(gw.output()).toContain('"msg":"shutdown complete"');
  });

  it('on a second signal exits 1 at once, its log line written', async () => {
    const gw = await spawnGateway({ GATEHOUSE_UPSTREAM_URL: upstream.url, GATEHOUSE_DATA_DIR: dataDir() });
    const stream = await openStream(gw.url);
    gw.child.kill('SIGTERM');
    await gw.waitForOutput(/shutting down/);
    gw.child.kill('SIGTERM');
    expect(await gw.exited).toBe(1);
    expect(await stream.done).not.toContain('[DONE]');
    expect(gw.output()).toContain('"msg":"second signal: exiting now"');
  });

  it('cuts streams still running when the grace period is over, and still exits 0', async () => {
    const gw = await spawnGateway({
      GATEHOUSE_UPSTREAM_URL: upstream.url,
      GATEHOUSE_DATA_DIR: dataDir(),
      GATEHOUSE_SHUTDOWN_GRACE: '200ms',
    });
    // Upstream never finishes this stream: only the grace period can end the process.
    const stream = await openStream(gw.url);
    gw.child.kill('SIGTERM');
    const text = await stream.done;
    expect(text).not.toContain('[DONE]');
    expect(await gw.exited).toBe(0);
  });

  it('refuses invalid settings with a clear message and exit code 2', async () => {
    await expect(spawnGateway({ GATEHOUSE_IDLE_TIMEOUT: '300' })).rejects.toThrow(
      /exited with 2[\s\S]*GATEHOUSE_IDLE_TIMEOUT: "300" is not a duration/,
    );
  });
});
