/**
 * Shared pieces of the config-editor tests: temp dirs with real files, a small Fastify app
 * serving the config handlers with the gateway's admin error rendering, a local HTTP server
 * standing in for GitHub (this machine has no internet, and tests never contact it), the schema
 * Gatehouse bundles, and the config files written for these tests (`configs/`).
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import { ConfigEditor, type ConfigEditorOptions } from '../../src/config-editor/config-editor.js';
import { AuditLog } from '../../src/audit/audit-log.js';
import { createAudited } from '../../src/http/admin/audited.js';
import { createConfigHandlers } from '../../src/http/admin/config-handlers.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { GatewayError, isGatewayError } from '../../src/core/errors.js';
import { errorBody } from '../../src/core/render-error.js';
import { rawRequest, type RawResponse } from '../helpers/http.js';

/** llama-swap's published schema as Gatehouse bundles it (without the later keys). */
export const SCHEMA_PATH = () =>
  fileURLToPath(new URL('../../src/config-editor/llama-swap-schema.json', import.meta.url));

/** The text of a config file written for these tests, e.g. `every-key.yaml` or `config-dir/coder.yaml`. */
export function testConfig(name: string): string {
  return readFileSync(new URL(`configs/${name}`, import.meta.url), 'utf8');
}

/** A small valid config the simulator also loads. */
export const V1 = `# llama-swap config
models:
  qwen:
    cmd: llama-server --port \${PORT} -m qwen.gguf
    aliases: [gpt-4o-mini]
`;

export const V2 = `${V1}  llama:
    cmd: llama-server --port \${PORT} -m llama.gguf
`;

export async function tempDir(prefix = 'gh-config-'): Promise<string> {
  return mkdtemp(join(tmpdir(), prefix));
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

export async function listDir(dir: string): Promise<string[]> {
  return (await readdir(dir)).sort();
}

export interface EditorServer {
  url: string;
  editor: ConfigEditor;
  app: FastifyInstance;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read whatever JSON the route answered
  request(method: string, path: string, body?: unknown): Promise<{ status: number; body: any; raw: RawResponse }>;
  close(): Promise<void>;
}

/**
 * The config routes exactly as the route table registers them (minus the admin chain, which
 * has its own tests), with the error handler of `src/app.ts` reduced to the admin shape. Saves
 * and formats are audited into a real SQLite store of its own.
 */
export async function startEditorServer(options: ConfigEditorOptions): Promise<EditorServer> {
  // Never GitHub: a test that forgets to choose a schema URL gets one where nothing listens.
  const editor = new ConfigEditor({ defaultSchemaUrl: 'http://127.0.0.1:9/config-schema.json', ...options });
  // Apart from the config's directory, whose listing the tests compare.
  const storeDir = await mkdtemp(join(tmpdir(), 'gatehouse-editor-audit-'));
  const store = await openSqliteStore({ dataDir: storeDir });
  const audited = createAudited(new AuditLog(store), () => '127.0.0.1');
  const app = Fastify({ logger: false });
  app.decorateRequest('adminIdentity', null);
  app.setErrorHandler((error: FastifyError, _request, reply) => {
    let gatewayError: GatewayError;
    if (isGatewayError(error)) gatewayError = error;
    else if (error.statusCode === 400) gatewayError = new GatewayError('bad_request', { message: error.message });
    else gatewayError = new GatewayError('internal_error', { message: `unexpected: ${error.message}` });
    void reply.code(gatewayError.status).headers(gatewayError.headers).send(errorBody(gatewayError, 'admin'));
  });
  const config = createConfigHandlers({ editor });
  app.get('/api/config', config.load);
  app.put('/api/config', audited('config.save', config.save));
  app.post('/api/config/validate', config.validate);
  app.post('/api/config/format', audited('config.format', config.format));
  app.get('/api/config/reload-status', config.reloadStatus);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return {
    url,
    editor,
    app,
    async request(method, path, body) {
      const raw = await rawRequest(`${url}${path}`, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = raw.body.toString('utf8');
      return { status: raw.status, body: text === '' ? undefined : JSON.parse(text), raw };
    },
    async close() {
      editor.close();
      await app.close();
      await store.close();
      await rm(storeDir, { recursive: true, force: true });
    },
  };
}

/** A local stand-in for raw.githubusercontent.com: serves `body` at every path, counts hits. */
export interface SchemaServer {
  url: string;
  hits: number;
  body: string;
  status: number;
  close(): Promise<void>;
}

export async function startSchemaServer(body: string): Promise<SchemaServer> {
  const state = { hits: 0, body, status: 200 };
  const server: Server = createServer((_req, res) => {
    state.hits++;
    res.writeHead(state.status, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(state.status === 200 ? state.body : 'nope');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mostlygeek/llama-swap/config-schema.json`;
  return {
    url,
    get hits() {
      return state.hits;
    },
    get body() {
      return state.body;
    },
    set body(v: string) {
      state.body = v;
    },
    get status() {
      return state.status;
    },
    set status(v: number) {
      state.status = v;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A URL on 127.0.0.1 where nothing listens (connection refused at once). */
export async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/config-schema.json`;
}
