/**
 * Which llama-swap schema validated a save, and the copy of llama-swap's schema bundled with
 * Gatehouse: the newest published one byte for byte, plus the keys llama-swap accepts since, so
 * today's configs (`setParams` `key?`, `hooks.on_startup.profile`, `globalConcurrencyLimit`)
 * validate and save.
 */
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  deadUrl,
  removeDir,
  SCHEMA_PATH,
  startEditorServer,
  startSchemaServer,
  tempDir,
  V1,
  type EditorServer,
  type SchemaServer,
} from './helpers.js';
import { schemaVersion } from '../../src/config-editor/bundled-schema.js';

const PUBLISHED = 'llama-swap 0bdb3720 (2026-08-22)';
const BUNDLED = `${PUBLISHED} + globalConcurrencyLimit, hooks.on_startup.profile`;

let dir: string;
let file: string;
let servers: EditorServer[] = [];
let schemaServer: SchemaServer | undefined;

beforeEach(async () => {
  dir = await tempDir();
  file = join(dir, 'config.yaml');
  await writeFile(file, V1);
});
afterEach(async () => {
  for (const s of servers) await s.close();
  servers = [];
  await schemaServer?.close();
  schemaServer = undefined;
  await removeDir(dir);
});

async function offline(): Promise<EditorServer> {
  const s = await startEditorServer({
    configFile: file,
    dataDir: join(dir, 'data'),
    defaultSchemaUrl: await deadUrl(),
  });
  servers.push(s);
  return s;
}

async function saveText(s: EditorServer, text: string) {
  const { version } = (await s.request('GET', '/api/config')).body as { version: string };
  return s.request('PUT', '/api/config', { text, version });
}

describe('the schema version in config answers', () => {
  it('names the llama-swap release of a downloaded schema that validated a save', async () => {
    schemaServer = await startSchemaServer(readFileSync(SCHEMA_PATH(), 'utf8'));
    const s = await startEditorServer({
      configFile: file,
      dataDir: join(dir, 'data'),
      defaultSchemaUrl: schemaServer.url,
    });
    servers.push(s);
    const res = await saveText(s, `${V1}  other:\n    cmd: llama-server --port \${PORT}\n`);
    expect(res.status).toBe(200);
    expect(res.body.schema).toMatchObject({ available: true, version: PUBLISHED, bundled: false, origin: 'default' });
    expect((await s.request('POST', '/api/config/validate', { text: V1 })).body.schema.version).toBe(PUBLISHED);
  });

  it('names an unknown schema by the start of its sha256', async () => {
    const path = join(dir, 'my-schema.json');
    await writeFile(path, JSON.stringify({ type: 'object' }));
    const s = await startEditorServer({ configFile: file, dataDir: join(dir, 'data'), schemaSource: path });
    servers.push(s);
    const res = await saveText(s, `${V1}# edited\n`);
    expect(res.status).toBe(200);
    expect(res.body.schema.version).toMatch(/^sha256 [0-9a-f]{12}$/);
  });
});

describe('the schema bundled with Gatehouse', () => {
  it('is the published llama-swap release whose sha256 bundled-schema.ts records', () => {
    expect(schemaVersion(readFileSync(SCHEMA_PATH(), 'utf8'))).toBe(PUBLISHED);
  });

  it("validates and saves when llama-swap's schema cannot be downloaded and nothing is cached, with a warning", async () => {
    const s = await offline();
    const loaded = (await s.request('GET', '/api/config')).body;
    expect(loaded.schema).toMatchObject({
      available: true,
      bundled: true,
      version: BUNDLED,
      origin: 'default',
      fromCache: false,
      warning: expect.stringContaining('bundled with Gatehouse'),
    });
    expect(loaded.schema.document.properties.hooks).toBeDefined();
    const bad = await s.request('PUT', '/api/config', { text: 'models:\n  a:\n    ttl: x\n', version: loaded.version });
    expect(bad.status).toBe(422);
    const good = await saveText(s, `${V1}# saved offline\n`);
    expect(good.status).toBe(200);
    expect(good.body.schema).toMatchObject({ bundled: true, version: BUNDLED });
  });

  it('accepts setParams keys ending in ? (set only if absent)', async () => {
    const s = await offline();
    const text = `${V1}    filters:\n      setParams:\n        "temperature?": 0.7\n        top_k: 20\n`;
    const res = await s.request('POST', '/api/config/validate', { text });
    expect(res.body).toMatchObject({ valid: true, errors: [] });
    expect((await saveText(s, text)).status).toBe(200);
  });

  it('accepts hooks.on_startup.profile, and still refuses a misspelt hook key', async () => {
    const s = await offline();
    const profiles = 'profiles:\n  fast:\n    description: small models\n    pins:\n      qwen: qwen\n';
    const text = `${V1}${profiles}hooks:\n  on_startup:\n    profile: fast\n    preload: [qwen]\n`;
    expect((await s.request('POST', '/api/config/validate', { text })).body).toMatchObject({ valid: true, errors: [] });
    expect((await saveText(s, text)).status).toBe(200);
    const typo = await s.request('POST', '/api/config/validate', {
      text: `${V1}hooks:\n  on_startup:\n    profil: fast\n`,
    });
    expect(typo.body.valid).toBe(false);
    expect(typo.body.errors[0]).toMatchObject({ kind: 'schema', path: '/hooks/on_startup/profil' });
  });

  it('accepts globalConcurrencyLimit as a non-negative integer only', async () => {
    const s = await offline();
    const ok = await s.request('POST', '/api/config/validate', { text: `globalConcurrencyLimit: 4\n${V1}` });
    expect(ok.body).toMatchObject({ valid: true, errors: [] });
    const negative = await s.request('POST', '/api/config/validate', { text: `globalConcurrencyLimit: -1\n${V1}` });
    expect(negative.body.valid).toBe(false);
    expect(negative.body.errors[0]).toMatchObject({ kind: 'schema', path: '/globalConcurrencyLimit' });
    expect((await saveText(s, `globalConcurrencyLimit: 4\n${V1}`)).status).toBe(200);
  });
});
