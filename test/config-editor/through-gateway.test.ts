/**
 * The config editor behind the real gateway's route table: admin chain, cross-site checks and
 * error rendering included, with the simulator watching the file it saves.
 * Validates with the llama-swap schema Gatehouse bundles.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigEditor } from '../../src/config-editor/config-editor.js';
import { createLlamaSwapClient } from '../../src/management-client/llama-swap-client.js';
import { startSimulator, type Simulator } from '../fakes/llama-swap/index.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { json, rawRequest } from '../helpers/http.js';
import { SCHEMA_PATH, tempDir, V1, V2 } from './helpers.js';

const ADMIN = 'config-admin-token';
let dir: string;
let file: string;
let sim: Simulator;
let gateway: TestGateway;
let editor: ConfigEditor;
let firstVersion = '';

beforeAll(async () => {
  dir = await tempDir();
  file = join(dir, 'config.yaml');
  await writeFile(file, V1);
  sim = await startSimulator({ configFile: file, watchConfig: true, watchIntervalMs: 100 });
  const llamaSwap = createLlamaSwapClient({ baseUrl: new URL(sim.url) });
  editor = new ConfigEditor({ configFile: file, schemaSource: SCHEMA_PATH(), dataDir: dir, proxyLog: llamaSwap });
  gateway = await startTestGateway(
    sim.url,
    { adminToken: ADMIN },
    { configEditor: editor, closeables: [editor, llamaSwap] },
    { withStore: true },
  );
});
afterAll(async () => {
  await gateway.close();
  await sim.close();
});

const api = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  rawRequest(`${gateway.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

describe('config editor through the gateway', () => {
  it('loads the file with its version, saves an edit byte for byte, and llama-swap reloads it', async () => {
    const loaded = json((await api('GET', '/api/config')).body) as { enabled: boolean; text: string; version: string };
    expect(loaded.enabled).toBe(true);
    expect(loaded.text).toBe(V1);
    firstVersion = loaded.version;
    const since = new Date().toISOString();
    const saved = await api('PUT', '/api/config', { text: V2, version: loaded.version });
    expect(saved.status).toBe(200);
    expect(await readFile(file, 'utf8')).toBe(V2);
    const status = json(
      (await api('GET', `/api/config/reload-status?since=${encodeURIComponent(since)}&wait=3000`)).body,
    ) as { state: string };
    expect(status.state).toBe('reloaded');
  });

  it('refuses a stale version with 409 in the admin shape and leaves the file alone', async () => {
    const res = await api('PUT', '/api/config', { text: V1, version: firstVersion });
    expect(res.status).toBe(409);
    expect(json(res.body)).toMatchObject({ error: { code: 'config_conflict', details: { currentText: V2 } } });
    expect(await readFile(file, 'utf8')).toBe(V2);
  });

  it('takes a config text over the 64 KiB admin cap on its own routes, up to 4 MiB, then 413', async () => {
    const padded = `${V1}${'# a long comment line to pad the file out\n'.repeat(5000)}`;
    expect(Buffer.byteLength(padded)).toBeGreaterThan(64 * 1024);
    expect((await api('POST', '/api/config/validate', { text: padded })).status).toBe(200);
    const tooBig = await api('POST', '/api/config/format', { text: 'x'.repeat(4 * 1024 * 1024) });
    expect(tooBig.status).toBe(413);
    expect(json(tooBig.body)).toEqual({
      error: { code: 'body_too_large', message: "The request body exceeds this route's limit of 4 MiB." },
    });
  });

  it('refuses a save sent from another origin', async () => {
    const res = await api('PUT', '/api/config', { text: V1, version: 'x' }, { origin: 'http://evil.example' });
    expect(res.status).toBe(403);
    expect(await readFile(file, 'utf8')).toBe(V2);
  });
});
