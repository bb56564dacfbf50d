import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ReloadWatcher, type ProxyLogSource, type ProxyLogStream } from '../../src/config-editor/reload-watcher.js';
import { createLlamaSwapClient, type LlamaSwapClient } from '../../src/management-client/llama-swap-client.js';
import { startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { deadUrl, removeDir, SCHEMA_PATH, startEditorServer, tempDir, V1, V2, type EditorServer } from './helpers.js';

describe('reload outcome, end to end with the simulator watching the file', () => {
  let dir: string;
  let file: string;
  let sim: Simulator;
  let client: LlamaSwapClient;
  let server: EditorServer;

  beforeEach(async () => {
    dir = await tempDir();
    file = join(dir, 'config.yaml');
    await writeFile(file, V1);
    sim = await startSimulator({ configFile: file, watchConfig: true, watchIntervalMs: 100, reloadStatusDelayMs: 20 });
    client = createLlamaSwapClient({ baseUrl: new URL(sim.url), timeoutMs: 2000 });
    server = await startEditorServer({
      configFile: file,
      schemaSource: SCHEMA_PATH(),
      dataDir: join(dir, 'data'),
      proxyLog: client,
      reloadWatch: { startTimeoutMs: 6000, finishTimeoutMs: 8000 },
    });
  });
  afterEach(async () => {
    await server.close();
    await client.close();
    await sim.close();
    await removeDir(dir);
  });

  it('save → llama-swap reloads → reload-status says reloaded', async () => {
    await sim.load('qwen');
    expect(sim.state('qwen')).toBe('ready');
    const loaded = (await server.request('GET', '/api/config')).body;
    const saved = await server.request('PUT', '/api/config', { text: V2, version: loaded.version });
    expect(saved.status).toBe(200);
    expect(saved.body.reload).toMatchObject({ state: 'pending', savedAt: expect.any(String) });
    const status = await server.request(
      'GET',
      `/api/config/reload-status?since=${encodeURIComponent(saved.body.reload.savedAt)}&wait=15000`,
    );
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({
      state: 'reloaded',
      savedAt: saved.body.reload.savedAt,
      settledAt: expect.any(String),
    });
    expect(status.body.message).toContain('Every model was stopped');
    expect(sim.logHistory('proxy')).toContain('[INFO] configuration reloaded\n');
    expect(sim.state('qwen')).toBe('stopped');
    expect(sim.state('llama')).toBe('stopped');
  });

  it('a schema-valid config the loader rejects (duplicate alias) → saved with a warning, reload-status shows the failure from the log', async () => {
    const loaded = (await server.request('GET', '/api/config')).body;
    const text = `${V2}    aliases: [gpt-4o-mini]\n`;
    const saved = await server.request('PUT', '/api/config', { text, version: loaded.version });
    expect(saved.status).toBe(200);
    expect(
      saved.body.warnings.map((w: { kind: string; message: string }) => [
        w.kind,
        w.message.includes('duplicate alias gpt-4o-mini found in model: llama'),
      ]),
    ).toEqual([['loader', true]]);
    const status = await server.request(
      'GET',
      `/api/config/reload-status?since=${encodeURIComponent(saved.body.reload.savedAt)}&wait=15000`,
    );
    expect(status.body).toMatchObject({ state: 'failed' });
    // which of the two models llama-swap names depends on Go's map order
    expect(status.body.message).toMatch(
      /^llama-swap refused the saved config and keeps running the previous one: duplicate alias gpt-4o-mini found in model: (qwen|llama)$/,
    );
    // llama-swap kept the old config
    expect(sim.state('llama')).toBeUndefined();
  });

  it('reports two saves in a row, each with its own outcome', async () => {
    let version = (await server.request('GET', '/api/config')).body.version as string;
    for (const [text, state] of [
      [V2, 'reloaded'],
      [`${V2}    aliases: [gpt-4o-mini]\n`, 'failed'],
      [V1, 'reloaded'],
    ] as const) {
      const saved = await server.request('PUT', '/api/config', { text, version });
      expect(saved.status).toBe(200);
      version = saved.body.version;
      const status = await server.request(
        'GET',
        `/api/config/reload-status?since=${encodeURIComponent(saved.body.reload.savedAt)}&wait=15000`,
      );
      expect(status.body.state).toBe(state);
    }
  });

  it('without a wait, reload-status answers at once (pending right after the save)', async () => {
    const loaded = (await server.request('GET', '/api/config')).body;
    expect((await server.request('PUT', '/api/config', { text: V2, version: loaded.version })).status).toBe(200);
    const status = await server.request('GET', '/api/config/reload-status');
    expect(['pending', 'reloaded']).toContain(status.body.state);
  });
});

describe('reload-status without a usable watch', () => {
  let dir: string;
  let file: string;
  let server: EditorServer | undefined;
  let sim: Simulator | undefined;
  let client: LlamaSwapClient | undefined;

  beforeEach(async () => {
    dir = await tempDir();
    file = join(dir, 'config.yaml');
    await writeFile(file, V1);
  });
  afterEach(async () => {
    await server?.close();
    await client?.close();
    await sim?.close();
    server = undefined;
    client = undefined;
    sim = undefined;
    await removeDir(dir);
  });

  it('is unknown before any save', async () => {
    server = await startEditorServer({ configFile: file, schemaSource: SCHEMA_PATH(), dataDir: join(dir, 'data') });
    const res = await server.request('GET', '/api/config/reload-status');
    expect(res.body).toEqual({
      state: 'unknown',
      message: 'No config has been saved from Gatehouse since it started.',
      savedAt: null,
      settledAt: null,
    });
  });

  it('refuses a malformed since or wait with 422', async () => {
    server = await startEditorServer({ configFile: file, schemaSource: SCHEMA_PATH(), dataDir: join(dir, 'data') });
    const res = await server.request('GET', '/api/config/reload-status?since=yesterday&wait=99999999');
    expect(res.status).toBe(422);
    expect(res.body.error.details.map((d: { path: string }) => d.path)).toEqual(['/since', '/wait']);
  });

  it('is unknown, with the -watch-config hint, when llama-swap does not watch the file', async () => {
    sim = await startSimulator({ configFile: file });
    client = createLlamaSwapClient({ baseUrl: new URL(sim.url), timeoutMs: 2000 });
    server = await startEditorServer({
      configFile: file,
      schemaSource: SCHEMA_PATH(),
      dataDir: join(dir, 'data'),
      proxyLog: client,
      reloadWatch: { startTimeoutMs: 400 },
    });
    const loaded = (await server.request('GET', '/api/config')).body;
    const saved = await server.request('PUT', '/api/config', { text: V2, version: loaded.version });
    expect(saved.body.reload.state).toBe('pending');
    const status = await server.request('GET', '/api/config/reload-status?wait=3000');
    expect(status.body.state).toBe('unknown');
    expect(status.body.message).toContain('-watch-config');
    // a `since` after that save: nothing to report
    const later = new Date(Date.parse(saved.body.reload.savedAt) + 1000).toISOString();
    const none = await server.request('GET', `/api/config/reload-status?since=${later}`);
    expect(none.body).toMatchObject({ state: 'unknown', savedAt: null });
  });

  it('is unknown, saying why, when llama-swap cannot be reached (the save still succeeds)', async () => {
    client = createLlamaSwapClient({ baseUrl: new URL(await deadUrl()), timeoutMs: 500 });
    server = await startEditorServer({
      configFile: file,
      schemaSource: SCHEMA_PATH(),
      dataDir: join(dir, 'data'),
      proxyLog: client,
    });
    const loaded = (await server.request('GET', '/api/config')).body;
    const saved = await server.request('PUT', '/api/config', { text: V2, version: loaded.version });
    expect(saved.status).toBe(200);
    expect(saved.body.reload).toMatchObject({
      state: 'unknown',
      message: expect.stringContaining("Could not watch llama-swap's proxy log"),
    });
  });
});

/**
 * A scripted proxy log: each connection plays its chunks, then ends (as a reload does) or, with
 * `keepOpen`, stays open until closed. `played(i)` resolves once connection i's last chunk was
 * taken by the reader.
 */
function scriptedSource(
  connections: Array<{ chunks: string[]; keepOpen?: boolean }>,
): ProxyLogSource & { calls: Array<{ noHistory: boolean }>; played(connection: number): Promise<void> } {
  const calls: Array<{ noHistory: boolean }> = [];
  const playedAll: Array<() => void> = [];
  const played = connections.map(() => new Promise<void>((resolve) => playedAll.push(resolve)));
  return {
    calls,
    played: (connection) => played[connection]!,
    async logStream(_source, options) {
      const index = calls.length;
      const script = connections[index];
      calls.push({ noHistory: options.noHistory === true });
      if (!script) throw new Error('no more connections');
      let closed = false;
      let onClosed: () => void = () => undefined;
      const closing = new Promise<void>((resolve) => (onClosed = resolve));
      options.signal?.addEventListener('abort', () => onClosed(), { once: true });
      if (options.signal?.aborted) onClosed();
      const stream: ProxyLogStream = {
        close: () => {
          closed = true;
          onClosed();
        },
        async *[Symbol.asyncIterator]() {
          try {
            for (const chunk of script.chunks) {
              // Each chunk on its own turn of the event loop, as separate network reads would be.
              await new Promise((r) => setImmediate(r));
              if (closed || options.signal?.aborted) return;
              yield chunk;
            }
          } finally {
            // Reached when the reader asks for more or stops reading: after it handled the last chunk.
            playedAll[index]!();
          }
          if (script.keepOpen) await closing;
        },
      };
      return stream;
    },
  };
}

describe('ReloadWatcher', () => {
  it('finds its place in the history after the reload closed the stream, even mid-line', async () => {
    const before = '[INFO] Request 127.0.0.1 "GET /health HTTP/1.1" 200 2 "" 1ms\n';
    const source = scriptedSource([
      { chunks: ['[INFO] reloading config', 'uration\n[INFO] Request 127.0.0.1 "GET /v1/mo'] },
      {
        chunks: [
          // the history: an old reload, then what the first stream saw, then the outcome
          `[INFO] reloading configuration\n[INFO] configuration reloaded\n${before}[INFO] reloading ` +
            `configuration\n[INFO] Request 127.0.0.1 "GET /v1/models HTTP/1.1" 200 9 "" 1ms\n[WARN] failed ` +
            `to reload config: boom\n`,
        ],
        keepOpen: true,
      },
    ]);
    const watcher = await ReloadWatcher.arm({ source });
    watcher.begin(new Date());
    const status = await watcher.waitSettled(3000);
    expect(status).toMatchObject({
      state: 'failed',
      message: 'llama-swap refused the saved config and keeps running the previous one: boom',
    });
    expect(source.calls).toEqual([{ noHistory: true }, { noHistory: false }]);
  });

  it('falls back to the last start line of the history when its own text is gone', async () => {
    const source = scriptedSource([
      { chunks: [] },
      {
        chunks: [
          '[INFO] reloading configuration\n[WARN] failed to reload config: old\n[INFO] reloading ' +
            'configuration\n[INFO] configuration reloaded\n',
        ],
        keepOpen: true,
      },
    ]);
    const watcher = await ReloadWatcher.arm({ source });
    watcher.begin(new Date());
    expect((await watcher.waitSettled(3000)).state).toBe('reloaded');
  });

  it('ignores reload lines written before the save', async () => {
    const source = scriptedSource([
      { chunks: ['[INFO] reloading configuration\n[INFO] configuration reloaded\n'], keepOpen: true },
    ]);
    const watcher = await ReloadWatcher.arm({ source, startTimeoutMs: 300 });
    await source.played(0);
    watcher.begin(new Date());
    const status = await watcher.waitSettled(2000);
    expect(status.state).toBe('unknown');
  });

  it('counts an outcome logged while the write was still finishing (after the rename, before the directory sync)', async () => {
    const source = scriptedSource([
      { chunks: ['[INFO] reloading configuration\n[WARN] failed to reload config: duplicate alias\n'], keepOpen: true },
    ]);
    const watcher = await ReloadWatcher.arm({ source, startTimeoutMs: 300 });
    watcher.writing();
    await source.played(0);
    watcher.begin(new Date());
    const status = await watcher.waitSettled(2000);
    expect(status).toMatchObject({
      state: 'failed',
      message: expect.stringContaining('duplicate alias'),
      savedAt: expect.any(String),
    });
  });

  it('reports a server that could not be built as failed', async () => {
    const source = scriptedSource([
      {
        chunks: [
          '[INFO] reloading configuration\n',
          '[WARN] failed to build new server during reload: group g: member x is not a model\n',
        ],
        keepOpen: true,
      },
    ]);
    const watcher = await ReloadWatcher.arm({ source });
    watcher.begin(new Date());
    const status = await watcher.waitSettled(3000);
    expect(status).toMatchObject({ state: 'failed', message: expect.stringContaining('member x is not a model') });
  });

  it('says a started reload with no outcome is unknown after the finish timeout', async () => {
    const source = scriptedSource([{ chunks: ['[INFO] reloading configuration\n'], keepOpen: true }]);
    const watcher = await ReloadWatcher.arm({ source, finishTimeoutMs: 200 });
    watcher.begin(new Date());
    const pending = watcher.status();
    expect(pending.state).toBe('pending');
    const status = await watcher.waitSettled(3000);
    expect(status).toMatchObject({ state: 'unknown', message: expect.stringContaining('no outcome') });
  });

  it('marks a watcher replaced by a newer save as unknown', async () => {
    const source = scriptedSource([{ chunks: [], keepOpen: true }]);
    const watcher = await ReloadWatcher.arm({ source });
    watcher.begin(new Date());
    watcher.close();
    expect(watcher.status()).toMatchObject({ state: 'unknown', message: expect.stringContaining('newer save') });
  });
});
