/**
 * Where llama-swap's JSON schema comes from, in this order: `INFERENCE_CONFIG_SCHEMA` (a path
 * or URL), else the file's `# yaml-language-server: $schema=...` modeline, else llama-swap's
 * published schema. A downloaded schema is kept in `<dataDir>/cache/config-schema.json` (with
 * `config-schema.meta.json`: source, fetchedAt) so the editor keeps validating offline, and is
 * refreshed in the background. Without a download or a cached copy, llama-swap's published schema
 * falls back to the copy bundled with Gatehouse (`bundled-schema.ts`). When no schema can be had
 * (a setting or modeline that fails, nothing cached), the lookup says so and why; the editor then
 * refuses to save (it never saves unvalidated).
 */
import { readFile, mkdir, rename, stat, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import type { Ajv as AjvClass, ValidateFunction } from 'ajv';
import { BUNDLED_VERSION, bundledSchema, schemaVersion } from './bundled-schema.js';
import { describeError, sha256Hex } from './config-file.js';

/** llama-swap's own schema, as its example config's modeline names it. */
export const LLAMA_SWAP_SCHEMA_URL =
  'https://raw.githubusercontent.com/mostlygeek/llama-swap/refs/heads/main/config-schema.json';
const SCHEMA_SETTING = 'INFERENCE_CONFIG_SCHEMA';

export type SchemaOrigin = 'setting' | 'modeline' | 'default';

export interface SchemaInfo {
  /** The URL or absolute path the schema in use came from. */
  source: string;
  origin: SchemaOrigin;
  /** When it was downloaded (remote) or last modified (local file); ISO 8601. */
  fetchedAt: string | null;
  /** True when it was read from Gatehouse's cache in the data dir rather than from `source` itself. */
  fromCache: boolean;
  /** Set when the schema in use is not the one asked for, or may be out of date. */
  warning: string | null;
  /** Which llama-swap schema this is: `llama-swap <commit> (<date>)` when known, else `sha256 <prefix>`. */
  version: string;
  /** The copy bundled with Gatehouse (no download, nothing cached). */
  bundled: boolean;
}

export type SchemaLookup =
  | { available: true; info: SchemaInfo; document: Record<string, unknown>; validate: ValidateFunction }
  | { available: false; wanted: string; origin: SchemaOrigin; reason: string };

export interface SchemaWanted {
  source: string;
  origin: SchemaOrigin;
}

export interface SchemaProviderOptions {
  /** `INFERENCE_CONFIG_SCHEMA`: absolute path, `file:` URL or http(s) URL. */
  configured?: string;
  /** Where `config-schema.json` and its metadata are cached (`<dataDir>/cache`). */
  cacheDir: string;
  /** Replaces llama-swap's published URL (tests: never contact GitHub). */
  defaultUrl?: string;
  fetchTimeoutMs?: number;
  /** How old a downloaded schema may get before a background refresh (default 24 h). */
  refreshIntervalMs?: number;
  /** After a failed download, how long before the next foreground attempt (default 60 s). */
  retryAfterMs?: number;
  now?: () => number;
  logger?: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
}

interface LoadedSchema {
  source: string;
  document: Record<string, unknown>;
  validate: ValidateFunction;
  fetchedAt: string;
  version: string;
}

const MAX_SCHEMA_BYTES = 5 * 1024 * 1024;
type BundledSchema = Omit<LoadedSchema, 'fetchedAt'> & { fetchedAt: null; bundled: true };

/** `source` of the bundled schema. */
const BUNDLED_SOURCE = 'gatehouse:bundled/llama-swap-schema.json';
const CACHE_FILE = 'config-schema.json';
const CACHE_META = 'config-schema.meta.json';

/**
 * Compiles llama-swap's schema (docs/llama-swap.md, "Configuration"): `validateSchema: false` (its `$schema` is the
 * https draft-07 id Ajv does not register), `uri` accepted as-is (`${PORT}` is not URI-legal),
 * `strict: false` (strictRequired throws on the groups/matrix if-then). Never `useDefaults`.
 */
export function compileConfigSchema(document: Record<string, unknown>): ValidateFunction {
  // `verbose` only adds the failing sub-schema to errors, for readable `not` messages.
  // Required at the first compile, not at start: see loadYamlTools in config-editor.ts.
  const { Ajv } = createRequire(import.meta.url)('ajv') as { Ajv: typeof AjvClass };
  const ajv = new Ajv({
    validateSchema: false,
    formats: { uri: true },
    allErrors: true,
    strict: false,
    logger: false,
    verbose: true,
  });
  return ajv.compile(document);
}

/** The `$schema=` of a `# yaml-language-server:` comment line, if the text has one. */
export function modelineSchema(text: string): string | undefined {
  const match = /^[ \t]*#[ \t]*yaml-language-server:[ \t]*\$schema=(\S+)/m.exec(text);
  return match?.[1];
}

function isRemote(source: string): boolean {
  return /^https?:\/\//i.test(source);
}

export class SchemaProvider {
  private readonly cacheDir: string;
  private readonly defaultUrl: string;
  private readonly configured: string | undefined;
  private readonly fetchTimeoutMs: number;
  private readonly refreshIntervalMs: number;
  private readonly retryAfterMs: number;
  private readonly now: () => number;
  private readonly logger: SchemaProviderOptions['logger'];
  /** Downloaded schemas by URL; `fromCache` when read from the data dir. */
  private readonly remote = new Map<string, LoadedSchema & { fromCache: boolean }>();
  private readonly local = new Map<string, LoadedSchema & { stamp: string }>();
  private readonly failures = new Map<string, { at: number; message: string }>();
  private readonly inflight = new Map<string, Promise<LoadedSchema>>();
  private readonly compiled = new Map<string, ValidateFunction>();
  private disk: LoadedSchema | null | undefined;
  private bundled: BundledSchema | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(options: SchemaProviderOptions) {
    this.cacheDir = options.cacheDir;
    this.defaultUrl = options.defaultUrl ?? LLAMA_SWAP_SCHEMA_URL;
    this.configured = options.configured === '' ? undefined : options.configured;
    this.fetchTimeoutMs = options.fetchTimeoutMs ?? 10_000;
    this.refreshIntervalMs = options.refreshIntervalMs ?? 24 * 3_600_000;
    this.retryAfterMs = options.retryAfterMs ?? 60_000;
    this.now = options.now ?? Date.now;
    this.logger = options.logger;
  }

  /** Which schema a config text asks for: the setting, else its modeline, else llama-swap's. */
  wanted(text: string | undefined, configDir: string | undefined): SchemaWanted {
    if (this.configured !== undefined)
      return { source: normaliseSource(this.configured, process.cwd()), origin: 'setting' };
    const modeline = text === undefined ? undefined : modelineSchema(text);
    if (modeline !== undefined)
      return { source: normaliseSource(modeline, configDir ?? process.cwd()), origin: 'modeline' };
    return { source: this.defaultUrl, origin: 'default' };
  }

  /** Starts the background refresh of the schema Gatehouse will use by default. */
  start(): void {
    const primary = this.wanted(undefined, undefined);
    if (isRemote(primary.source)) void this.refreshInBackground(primary.source);
    this.timer = setInterval(
      () => {
        for (const url of this.remote.keys()) void this.refreshInBackground(url);
      },
      Math.min(this.refreshIntervalMs, 2_147_000_000),
    );
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  async get(wanted: SchemaWanted): Promise<SchemaLookup> {
    return isRemote(wanted.source) ? this.getRemote(wanted) : this.getLocal(wanted);
  }

  private async getLocal(wanted: SchemaWanted): Promise<SchemaLookup> {
    const path = wanted.source;
    try {
      const stats = await stat(path);
      const stamp = `${stats.mtimeMs}:${stats.size}`;
      let loaded = this.local.get(path);
      if (!loaded || loaded.stamp !== stamp) {
        const text = await readFile(path, 'utf8');
        loaded = { ...this.parse(path, text, stats.mtime.toISOString()), stamp };
        this.local.set(path, loaded);
      }
      return {
        available: true,
        info: { ...infoOf(loaded), origin: wanted.origin, fromCache: false, warning: null },
        document: loaded.document,
        validate: loaded.validate,
      };
    } catch (error) {
      return this.fallback(wanted, `could not read ${path}: ${describeError(error)}`);
    }
  }

  private async getRemote(wanted: SchemaWanted): Promise<SchemaLookup> {
    const url = wanted.source;
    let entry = this.remote.get(url);
    if (!entry) {
      const disk = await this.loadDisk();
      if (disk && disk.source === url) {
        entry = { ...disk, fromCache: true };
        this.remote.set(url, entry);
      }
    }
    if (entry) {
      if (this.now() - Date.parse(entry.fetchedAt) > this.refreshIntervalMs) void this.refreshInBackground(url);
      const stale =
        entry.fromCache && this.failures.has(url)
          ? `Could not refresh it from ${url} (${this.failures.get(url)!.message}); using the copy ` +
            `downloaded at ${entry.fetchedAt}.`
          : null;
      return {
        available: true,
        info: { ...infoOf(entry), origin: wanted.origin, fromCache: entry.fromCache, warning: stale },
        document: entry.document,
        validate: entry.validate,
      };
    }
    const recent = this.failures.get(url);
    if (recent && this.now() - recent.at < this.retryAfterMs)
      return this.fallback(wanted, `could not download ${url}: ${recent.message}`);
    try {
      const loaded = await this.download(url);
      return {
        available: true,
        info: { ...infoOf(loaded), origin: wanted.origin, fromCache: false, warning: null },
        document: loaded.document,
        validate: loaded.validate,
      };
    } catch (error) {
      return this.fallback(wanted, `could not download ${url}: ${describeError(error)}`);
    }
  }

  /** Any llama-swap schema beats none: the cached one, flagged, when the wanted one failed. */
  private async fallback(wanted: SchemaWanted, problem: string): Promise<SchemaLookup> {
    const disk = await this.loadDisk();
    if (disk) {
      return {
        available: true,
        info: {
          ...infoOf(disk),
          origin: wanted.origin,
          fromCache: true,
          warning:
            `The schema asked for (${wanted.source}) is unavailable: ${problem}. Using the cached copy of ` +
            `${disk.source} downloaded at ${disk.fetchedAt}.`,
        },
        document: disk.document,
        validate: disk.validate,
      };
    }
    if (wanted.origin === 'default') {
      const bundled = await this.loadBundled();
      return {
        available: true,
        info: {
          ...infoOf(bundled),
          origin: wanted.origin,
          fromCache: false,
          warning:
            `llama-swap's published schema is unavailable: ${problem}. Using the copy bundled with Gatehouse ` +
            `(${bundled.version}).`,
        },
        document: bundled.document,
        validate: bundled.validate,
      };
    }
    const how =
      wanted.origin === 'setting'
        ? `Fix ${SCHEMA_SETTING}, or point it at a local copy of llama-swap's config-schema.json`
        : `Set ${SCHEMA_SETTING} to a local copy of llama-swap's config-schema.json (download it from ` +
          `${LLAMA_SWAP_SCHEMA_URL}) and restart Gatehouse`;
    return {
      available: false,
      wanted: wanted.source,
      origin: wanted.origin,
      reason:
        `No llama-swap config schema is available (${problem}; no cached copy in ${this.cacheDir}), so the ` +
        `config cannot be validated and saving is refused. ${how}.`,
    };
  }

  private refreshInBackground(url: string): Promise<void> {
    const recent = this.failures.get(url);
    if (recent && this.now() - recent.at < this.retryAfterMs) return Promise.resolve();
    return this.download(url).then(
      () => undefined,
      (error: unknown) =>
        this.logger?.warn(
          { err: describeError(error), url },
          'config schema refresh failed; the cached copy stays in use',
        ),
    );
  }

  /** One download per URL at a time; success replaces the memory entry and the disk cache. */
  private download(url: string): Promise<LoadedSchema> {
    const running = this.inflight.get(url);
    if (running) return running;
    const job = (async () => {
      try {
        const text = await fetchText(url, this.fetchTimeoutMs);
        const loaded = this.parse(url, text, new Date(this.now()).toISOString());
        this.remote.set(url, { ...loaded, fromCache: false });
        this.failures.delete(url);
        await this.saveDisk(text, loaded).catch((error: unknown) =>
          this.logger?.warn({ err: describeError(error), dir: this.cacheDir }, 'could not cache the config schema'),
        );
        this.logger?.info({ url }, 'config schema downloaded');
        return loaded;
      } catch (error) {
        this.failures.set(url, { at: this.now(), message: describeError(error) });
        throw error;
      } finally {
        this.inflight.delete(url);
      }
    })();
    this.inflight.set(url, job);
    return job;
  }

  private parse(source: string, text: string, fetchedAt: string): LoadedSchema {
    let document: unknown;
    try {
      document = JSON.parse(text);
    } catch (error) {
      throw new Error(`${source} is not JSON (${(error as Error).message})`, { cause: error });
    }
    if (typeof document !== 'object' || document === null || Array.isArray(document))
      throw new Error(`${source} is not a JSON schema (not an object)`);
    const key = sha256Hex(Buffer.from(text));
    let validate = this.compiled.get(key);
    if (!validate) {
      try {
        validate = compileConfigSchema(document as Record<string, unknown>);
      } catch (error) {
        throw new Error(`${source} does not compile as a JSON schema: ${(error as Error).message}`, {
          cause: error,
        });
      }
      this.compiled.set(key, validate);
    }
    return { source, document: document as Record<string, unknown>, validate, fetchedAt, version: schemaVersion(text) };
  }

  /** Compiled once, on first need. */
  private async loadBundled(): Promise<BundledSchema> {
    if (!this.bundled) {
      const document = await bundledSchema();
      this.bundled = {
        source: BUNDLED_SOURCE,
        document,
        validate: compileConfigSchema(document),
        fetchedAt: null,
        version: BUNDLED_VERSION,
        bundled: true,
      };
    }
    return this.bundled;
  }

  private async loadDisk(): Promise<LoadedSchema | null> {
    if (this.disk !== undefined) return this.disk;
    try {
      const meta = JSON.parse(await readFile(join(this.cacheDir, CACHE_META), 'utf8')) as {
        source?: unknown;
        fetchedAt?: unknown;
        sha256?: unknown;
      };
      const text = await readFile(join(this.cacheDir, CACHE_FILE), 'utf8');
      if (typeof meta.source !== 'string' || typeof meta.fetchedAt !== 'string') throw new Error('bad metadata');
      if (typeof meta.sha256 === 'string' && meta.sha256 !== sha256Hex(Buffer.from(text)))
        throw new Error('cache does not match its metadata');
      this.disk = this.parse(meta.source, text, meta.fetchedAt);
    } catch {
      this.disk = null;
    }
    return this.disk;
  }

  private async saveDisk(text: string, loaded: LoadedSchema): Promise<void> {
    await mkdir(this.cacheDir, { recursive: true });
    const meta = { source: loaded.source, fetchedAt: loaded.fetchedAt, sha256: sha256Hex(Buffer.from(text)) };
    await writeAtomically(join(this.cacheDir, CACHE_FILE), text);
    await writeAtomically(join(this.cacheDir, CACHE_META), `${JSON.stringify(meta, null, 2)}\n`);
    this.disk = loaded;
  }
}

/** What a schema in use says about itself; the lookup adds origin, cache and warning. */
function infoOf(
  loaded: LoadedSchema | BundledSchema,
): Pick<SchemaInfo, 'source' | 'fetchedAt' | 'version' | 'bundled'> {
  return {
    source: loaded.source,
    fetchedAt: loaded.fetchedAt,
    version: loaded.version,
    bundled: 'bundled' in loaded,
  };
}

/** `file:` URLs become paths; relative paths (modelines) resolve against `baseDir`. */
function normaliseSource(raw: string, baseDir: string): string {
  if (isRemote(raw)) return raw;
  if (/^file:/i.test(raw)) return fileURLToPath(raw);
  return isAbsolute(raw) ? raw : resolve(baseDir, raw);
}

async function fetchText(url: string, timeoutMs: number): Promise<string> {
  let res;
  try {
    // Node's built-in fetch: its code loads only when a schema is fetched, not with the gateway.
    res = await fetch(url, {
      signal: AbortSignal.timeout(timeoutMs),
      headers: { accept: 'application/json, text/plain;q=0.9, */*;q=0.1', 'user-agent': 'gatehouse' },
    });
  } catch (error) {
    // undici says only "fetch failed"; the cause names the real problem (ECONNREFUSED, ENOTFOUND...).
    const cause = (error as { cause?: unknown }).cause;
    if ((error as Error).name === 'TimeoutError') {
      throw new Error(`no answer within ${timeoutMs} ms (timeout)`, { cause: error });
    }
    throw cause instanceof Error ? new Error(`${(error as Error).message}: ${describeError(cause)}`, { cause }) : error;
  }
  if (res.status !== 200) {
    await res.body?.cancel().catch(() => undefined);
    throw new Error(`HTTP ${res.status}`);
  }
  const declared = Number(res.headers.get('content-length') ?? '0');
  if (declared > MAX_SCHEMA_BYTES) {
    await res.body?.cancel().catch(() => undefined);
    throw new Error(`schema too large (${declared} bytes)`);
  }
  const body = Buffer.from(await res.arrayBuffer());
  if (body.length > MAX_SCHEMA_BYTES) throw new Error(`schema too large (${body.length} bytes)`);
  return body.toString('utf8');
}

async function writeAtomically(path: string, text: string): Promise<void> {
  const temp = join(dirname(path), `.${randomBytes(6).toString('hex')}.tmp`);
  await writeFile(temp, text);
  await rename(temp, path);
}
