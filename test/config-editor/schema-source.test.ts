import { existsSync, readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LLAMA_SWAP_SCHEMA_URL, modelineSchema } from '../../src/config-editor/schema-source.js';
import {
  deadUrl,
  removeDir,
  SCHEMA_PATH,
  startEditorServer,
  startSchemaServer,
  tempDir,
  V1,
  V2,
  type EditorServer,
  type SchemaServer,
} from './helpers.js';

const SCHEMA_TEXT = () => readFileSync(SCHEMA_PATH(), 'utf8');

let dir: string;
let file: string;
let dataDir: string;
let servers: EditorServer[] = [];
let schemaServer: SchemaServer | undefined;

beforeEach(async () => {
  dir = await tempDir();
  file = join(dir, 'config.yaml');
  dataDir = join(dir, 'data');
  await writeFile(file, V1);
});
afterEach(async () => {
  for (const s of servers) await s.close();
  servers = [];
  await schemaServer?.close();
  schemaServer = undefined;
  await removeDir(dir);
});

async function start(
  options: {
    schemaSource?: string;
    defaultSchemaUrl?: string;
    schemaFetchTimeoutMs?: number;
    background?: boolean;
  } = {},
): Promise<EditorServer> {
  const s = await startEditorServer({ configFile: file, dataDir, ...options });
  if (options.background) s.editor.start();
  servers.push(s);
  return s;
}

async function waitFor(check: () => boolean, ms = 3000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('schema source', () => {
  it("defaults to llama-swap's published schema URL", () => {
    expect(LLAMA_SWAP_SCHEMA_URL).toBe(
      'https://raw.githubusercontent.com/mostlygeek/llama-swap/refs/heads/main/config-schema.json',
    );
  });

  it('downloads the default schema (a local stand-in), caches it in <dataDir>/cache and says so', async () => {
    schemaServer = await startSchemaServer(SCHEMA_TEXT());
    const s = await start({ defaultSchemaUrl: schemaServer.url });
    const res = await s.request('GET', '/api/config');
    expect(res.body.schema).toMatchObject({
      available: true,
      source: schemaServer.url,
      origin: 'default',
      fromCache: false,
      warning: null,
      fetchedAt: expect.stringMatching(/^\d{4}-/),
    });
    expect(await readFile(join(dataDir, 'cache', 'config-schema.json'), 'utf8')).toBe(SCHEMA_TEXT());
    const meta = JSON.parse(await readFile(join(dataDir, 'cache', 'config-schema.meta.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(meta).toMatchObject({ source: schemaServer.url, fetchedAt: res.body.schema.fetchedAt });
    // validated with it: a schema error is found
    const bad = await s.request('POST', '/api/config/validate', { text: 'models:\n  a:\n    ttl: x\n' });
    expect(bad.body.valid).toBe(false);
    expect(bad.body.errors.map((e: { kind: string }) => e.kind)).toEqual(['schema', 'schema']);
    expect(schemaServer.hits).toBe(1);
  });

  it('starts offline from the cached schema and still validates and saves', async () => {
    schemaServer = await startSchemaServer(SCHEMA_TEXT());
    const url = schemaServer.url;
    const first = await start({ defaultSchemaUrl: url });
    const fetchedAt = (await first.request('GET', '/api/config')).body.schema.fetchedAt as string;
    await schemaServer.close();
    schemaServer = undefined;

    // a new process: same data dir, the network gone
    const s = await start({ defaultSchemaUrl: url, background: true });
    const loaded = (await s.request('GET', '/api/config')).body;
    expect(loaded.schema).toMatchObject({ available: true, source: url, fromCache: true, fetchedAt });
    const bad = await s.request('PUT', '/api/config', { text: 'models:\n  a:\n    ttl: x\n', version: loaded.version });
    expect(bad.status).toBe(422);
    const good = await s.request('PUT', '/api/config', { text: V2, version: loaded.version });
    expect(good.status).toBe(200);
    expect(good.body.schema).toMatchObject({ fromCache: true, source: url });
  });

  it('refreshes the schema in the background at start', async () => {
    schemaServer = await startSchemaServer(SCHEMA_TEXT());
    await start({ defaultSchemaUrl: schemaServer.url, background: true });
    await waitFor(() => existsSync(join(dataDir, 'cache', 'config-schema.meta.json')));
    expect(schemaServer.hits).toBe(1);
  });

  it('refuses to save when the configured schema cannot be had at all, saying how to provide one', async () => {
    // The bundled copy stands in for llama-swap's published schema only, not for one asked for.
    const s = await start({ schemaSource: await deadUrl() });
    const loaded = (await s.request('GET', '/api/config')).body;
    expect(loaded.schema).toMatchObject({
      available: false,
      document: null,
      version: null,
      reason: expect.stringContaining('Fix INFERENCE_CONFIG_SCHEMA, or point it at a local copy'),
    });
    const validation = await s.request('POST', '/api/config/validate', { text: V2 });
    expect(validation.body.valid).toBe(false);
    expect(validation.body.errors).toEqual([expect.objectContaining({ kind: 'schema_unavailable', line: null })]);
    const res = await s.request('PUT', '/api/config', { text: V2, version: loaded.version });
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('schema_unavailable');
    expect(res.body.error.message).toContain('saving is refused');
    expect(res.body.error.message).toContain('INFERENCE_CONFIG_SCHEMA');
    expect(await readFile(file, 'utf8')).toBe(V1);
  });

  it('does not retry a failed download on every validation', async () => {
    schemaServer = await startSchemaServer(SCHEMA_TEXT());
    schemaServer.status = 500;
    const s = await start({ schemaSource: schemaServer.url });
    for (let i = 0; i < 3; i++)
      expect((await s.request('POST', '/api/config/validate', { text: V1 })).body.schema.available).toBe(false);
    expect(schemaServer.hits).toBe(1);
  });

  it('gives up on a server that does not answer within the timeout', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const s = await start({
        schemaSource: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/s.json`,
        schemaFetchTimeoutMs: 200,
      });
      // Without the timeout this request would hang on the silent server.
      const res = await s.request('GET', '/api/config');
      expect(res.body.schema.available).toBe(false);
      expect(res.body.schema.reason).toMatch(/timeout|abort/i);
    } finally {
      silent.closeAllConnections();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it('rejects a download that is not a JSON schema and keeps using the cache, with a warning', async () => {
    schemaServer = await startSchemaServer(SCHEMA_TEXT());
    const good = schemaServer.url;
    await (await start({ defaultSchemaUrl: good })).request('GET', '/api/config');
    schemaServer.body = '<html>rate limited</html>';
    const other = `${good}?v=2`;
    const s = await start({ schemaSource: other });
    const res = await s.request('POST', '/api/config/validate', { text: V2 });
    expect(res.body.valid).toBe(true);
    expect(res.body.schema).toMatchObject({
      available: true,
      source: good,
      origin: 'setting',
      fromCache: true,
      warning: expect.stringContaining('is not JSON'),
    });
    expect(res.body.warnings[0]).toMatchObject({ kind: 'schema', message: res.body.schema.warning });
  });

  it('uses INFERENCE_CONFIG_SCHEMA as a URL', async () => {
    schemaServer = await startSchemaServer(SCHEMA_TEXT());
    const s = await start({ schemaSource: schemaServer.url, defaultSchemaUrl: await deadUrl() });
    const res = await s.request('GET', '/api/config');
    expect(res.body.schema).toMatchObject({
      available: true,
      source: schemaServer.url,
      origin: 'setting',
      fromCache: false,
    });
  });

  it("follows the file's yaml-language-server modeline (relative to the file), unless the setting is set", async () => {
    await writeFile(join(dir, 'my-schema.json'), SCHEMA_TEXT());
    await writeFile(file, `# yaml-language-server: $schema=./my-schema.json\n${V1}`);
    const s = await start({ defaultSchemaUrl: await deadUrl() });
    const res = await s.request('GET', '/api/config');
    expect(res.body.schema).toMatchObject({ available: true, source: join(dir, 'my-schema.json'), origin: 'modeline' });
    const withSetting = await start({ schemaSource: SCHEMA_PATH() });
    expect((await withSetting.request('GET', '/api/config')).body.schema).toMatchObject({
      source: SCHEMA_PATH(),
      origin: 'setting',
    });
  });

  it('follows a modeline URL', async () => {
    schemaServer = await startSchemaServer(SCHEMA_TEXT());
    await writeFile(file, `# yaml-language-server: $schema=${schemaServer.url}\n${V1}`);
    const s = await start({ defaultSchemaUrl: await deadUrl() });
    expect((await s.request('GET', '/api/config')).body.schema).toMatchObject({
      available: true,
      source: schemaServer.url,
      origin: 'modeline',
    });
  });

  it('reads the modeline of config.example.yaml', () => {
    expect(
      modelineSchema('# add this modeline\n# yaml-language-server: $schema=https://example.test/s.json\nmodels: {}\n'),
    ).toBe('https://example.test/s.json');
    expect(modelineSchema('models: {}\n')).toBeUndefined();
  });

  it('reports a missing local schema file as unavailable with the path', async () => {
    const s = await start({ schemaSource: join(dir, 'nope.json') });
    const res = await s.request('GET', '/api/config');
    expect(res.body.schema).toMatchObject({
      available: false,
      source: join(dir, 'nope.json'),
      origin: 'setting',
      reason: expect.stringContaining(`could not read ${join(dir, 'nope.json')}`),
    });
  });
});
