/**
 * The config editor: load, validate, format and save llama-swap's config.yaml, and report
 * whether llama-swap took a saved config. See README.md in this folder for the design.
 */
import { dirname, join } from 'node:path';
import type { ConfigLoad, ConfigSaved, ConfigSchemaInfo, ConfigValidation } from '../admin-api/types.js';
import { GatewayError } from '../core/errors.js';
import {
  FileWriteError,
  formatVersion,
  parseVersion,
  readOnlyReason,
  readSnapshot,
  REAL_FILE_OPS,
  replaceFileBytes,
  resolveConfigTarget,
  versionDifferences,
  type ConfigTarget,
  type FileOps,
  type FileVersion,
  type WriteResult,
} from './config-file.js';
import { ReloadWatcher, type ProxyLogSource, type ReloadStatus, type ReloadWatcherOptions } from './reload-watcher.js';
import { SchemaProvider, type SchemaLookup } from './schema-source.js';
import type { ConfigIssue } from './validate.js';

/**
 * The YAML and validation code (the `yaml` package, and Ajv through the schema) is loaded at the
 * first use of the editor, not at start: most gateways never open it, and its resident
 * memory would otherwise be carried by every process (docs/benchmarks.md, RSS).
 */
let yamlTools: Promise<[typeof import('./validate.js'), typeof import('./format.js')]> | undefined;
const loadYamlTools = () => (yamlTools ??= Promise.all([import('./validate.js'), import('./format.js')]));

export interface EditorLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface ConfigEditorOptions {
  /** `INFERENCE_CONFIG_FILE` as set (unset, relative... are reported as the reason the editor is off). */
  configFile: string | undefined;
  /** `INFERENCE_CONFIG_SCHEMA`: path, `file:` URL or http(s) URL of llama-swap's config-schema.json. */
  schemaSource?: string | undefined;
  /** Gatehouse's data dir; the downloaded schema is cached in `<dataDir>/cache`. */
  dataDir: string;
  /** Replaces llama-swap's published schema URL (tests). */
  defaultSchemaUrl?: string;
  schemaFetchTimeoutMs?: number;
  /** llama-swap's proxy log (the llama-swap client); without it reload outcomes are `unknown`. */
  proxyLog?: ProxyLogSource;
  reloadWatch?: Pick<ReloadWatcherOptions, 'startTimeoutMs' | 'finishTimeoutMs' | 'connectTimeoutMs'>;
  logger?: EditorLogger;
  /** Filesystem calls used for writing (tests inject rename failures). */
  fileOps?: Partial<FileOps>;
  now?: () => number;
  cwd?: string;
}

/** The editor's answers are the admin API's bodies (docs/admin-api.md, "Config editor"). */
export type SchemaView = ConfigSchemaInfo;
export type LoadResult = ConfigLoad;
export type ValidateResult = ConfigValidation;
export type SaveResult = ConfigSaved;

export const RELOAD_NOTICE =
  'llama-swap reloads a changed config by stopping every running model (in-flight requests are cut); ' +
  'models start again on their next request.';

interface LastSave {
  savedAt: Date;
  watcher: ReloadWatcher | undefined;
  status: ReloadStatus;
}

export class ConfigEditor {
  private readonly schemas: SchemaProvider;
  private readonly fileOps: FileOps;
  private readonly now: () => number;
  private readonly cwd: string;
  private queue: Promise<unknown> = Promise.resolve();
  private lastSave: LastSave | undefined;

  constructor(private readonly options: ConfigEditorOptions) {
    this.now = options.now ?? Date.now;
    this.cwd = options.cwd ?? process.cwd();
    this.fileOps = { ...REAL_FILE_OPS, ...options.fileOps };
    this.schemas = new SchemaProvider({
      configured: options.schemaSource,
      cacheDir: join(options.dataDir, 'cache'),
      defaultUrl: options.defaultSchemaUrl,
      fetchTimeoutMs: options.schemaFetchTimeoutMs,
      now: this.now,
      logger: options.logger,
    });
  }

  /** Background schema download/refresh. */
  start(): void {
    this.schemas.start();
  }

  close(): void {
    this.schemas.close();
    this.lastSave?.watcher?.close();
  }

  async target(): Promise<ConfigTarget> {
    return resolveConfigTarget(this.options.configFile, this.cwd);
  }

  async load(): Promise<LoadResult> {
    const target = await this.target();
    if (!target.enabled) return { enabled: false, path: target.path, reason: target.reason };
    const snapshot = await readSnapshot(target.realPath);
    const schema = await this.schemaFor(snapshot.text, target.path);
    const readOnly = await readOnlyReason(target.realPath, snapshot.mode);
    return {
      enabled: true,
      path: target.path,
      realPath: target.realPath,
      text: snapshot.text,
      version: formatVersion(snapshot.version),
      size: snapshot.version.size,
      modifiedAt: isoFromNs(snapshot.version.mtimeNs),
      lossless: snapshot.lossless,
      writable: readOnly === undefined,
      readOnlyReason: readOnly ?? null,
      warnings: snapshot.lossless
        ? []
        : [
            'The file is not valid UTF-8; invalid bytes are shown as U+FFFD and saving replaces them with ' +
              'it (llama-swap needs UTF-8 anyway).',
          ],
      schema: { ...schemaView(schema), document: schema.available ? schema.document : null },
    };
  }

  async validate(text: string): Promise<ValidateResult> {
    const target = await this.target();
    const schema = await this.schemaFor(text, target.enabled ? target.path : undefined);
    const [{ validateConfigText }] = await loadYamlTools();
    const result = validateConfigText(text, schema.available ? schema.validate : undefined);
    const errors = [...result.errors];
    if (!schema.available) errors.push(unavailableIssue(schema.reason));
    return {
      valid: errors.length === 0,
      errors,
      warnings: withSchemaWarning(result.warnings, schema),
      schema: schemaView(schema),
    };
  }

  /** Re-prints the text (the only operation allowed to change comments or key order); never saves. */
  async format(text: string): Promise<{ text: string; changed: boolean }> {
    const [, { formatConfigText }] = await loadYamlTools();
    const result = formatConfigText(text);
    if (!result.ok)
      throw new GatewayError('config_invalid', {
        message: 'The text is not valid YAML, so it cannot be formatted.',
        details: { errors: result.errors, warnings: [] },
      });
    return { text: result.text, changed: result.text !== text };
  }

  /**
   * Writes `text` exactly, if the file is still at `version` and the text is valid. Saves run
   * one at a time and re-check the version inside the lock, so two saves of one version
   * cannot both win.
   */
  async save(text: string, version: string): Promise<SaveResult> {
    const target = await this.target();
    if (!target.enabled) throw new GatewayError('config_disabled', { message: target.reason });
    const expected = parseVersion(version);
    if (!expected) {
      throw new GatewayError('validation_failed', {
        details: [
          { path: '/version', message: 'must be the version string returned by GET /api/config (or by the last save)' },
        ],
      });
    }
    // Fetching a schema may take seconds: before taking the lock.
    const schema = await this.schemaFor(text, target.path);
    if (!schema.available)
      throw new GatewayError('schema_unavailable', { message: schema.reason, details: { schema: schemaView(schema) } });
    return this.exclusive(() => this.saveLocked(target, text, expected, schema));
  }

  /**
   * The outcome of the last save. `since`: only a save at or after it counts (the page passes
   * the `savedAt` of its own save). `waitMs`: wait up to that long while it is `pending`.
   */
  async reloadStatus(since?: Date, waitMs = 0): Promise<ReloadStatus> {
    const last = this.lastSave;
    if (!last)
      return {
        state: 'unknown',
        message: 'No config has been saved from Gatehouse since it started.',
        savedAt: null,
        settledAt: null,
      };
    if (since && last.savedAt.getTime() < since.getTime()) {
      return {
        state: 'unknown',
        message:
          `No config was saved at or after ${since.toISOString()}; the last save was at ` +
          `${last.savedAt.toISOString()}.`,
        savedAt: null,
        settledAt: null,
      };
    }
    if (!last.watcher) return last.status;
    return last.watcher.waitSettled(waitMs);
  }

  // ---- internals --------------------------------------------------------------------------

  private async saveLocked(
    target: Extract<ConfigTarget, { enabled: true }>,
    text: string,
    expected: FileVersion,
    schema: Extract<SchemaLookup, { available: true }>,
  ): Promise<SaveResult> {
    const current = await readSnapshot(target.realPath);
    const changed = versionDifferences(expected, current.version);
    if (changed.length > 0) {
      throw new GatewayError('config_conflict', {
        message:
          `${target.path} changed on disk since it was loaded (${changed.join(', ')} differ); nothing was ` +
          `written. Reload it, re-apply your edit, and save again.`,
        details: {
          changed,
          currentVersion: formatVersion(current.version),
          currentText: current.text,
          modifiedAt: isoFromNs(current.version.mtimeNs),
        },
      });
    }
    const [{ validateConfigText }] = await loadYamlTools();
    const result = validateConfigText(text, schema.validate);
    const warnings = withSchemaWarning(result.warnings, schema);
    if (result.errors.length > 0) {
      const count = result.errors.length;
      throw new GatewayError('config_invalid', {
        message: `The config has ${count} error${count === 1 ? '' : 's'}; nothing was written.`,
        details: { errors: result.errors, warnings, schema: schemaView(schema) },
      });
    }
    const bytes = Buffer.from(text, 'utf8');
    const base = {
      saved: true as const,
      path: target.path,
      realPath: target.realPath,
      warnings,
      schema: schemaView(schema),
    };
    if (bytes.equals(current.bytes)) {
      return {
        ...base,
        changed: false,
        version: formatVersion(current.version),
        size: current.version.size,
        modifiedAt: isoFromNs(current.version.mtimeNs),
        method: 'unchanged',
        notices: ['The text equals the file: nothing was written, so llama-swap does not reload.'],
        reload: {
          state: 'unknown',
          message: 'Nothing was written, so llama-swap has nothing to reload.',
          savedAt: null,
          settledAt: null,
        },
      };
    }
    const readOnly = await readOnlyReason(target.realPath, current.mode);
    if (readOnly) throw new GatewayError('config_read_only', { message: readOnly });

    const watcher = this.options.proxyLog
      ? await ReloadWatcher.arm({ source: this.options.proxyLog, now: this.now, ...this.options.reloadWatch })
      : undefined;
    let written: WriteResult;
    watcher?.writing();
    try {
      written = await replaceFileBytes(target.realPath, bytes, current, this.fileOps);
    } catch (error) {
      watcher?.cancel();
      if (error instanceof FileWriteError) {
        if (error.outcome === 'damaged')
          this.options.logger?.warn(
            {
              path: target.realPath,
              err: error.message,
              restore: error.restoreFailure,
              oldCopy: error.oldCopyPath ?? null,
            },
            'llama-swap config may be damaged: restoring it after a failed save failed',
          );
        const left = whatTheFileHas(error, target.realPath);
        if (error.readOnly)
          throw new GatewayError('config_read_only', {
            message:
              `${error.message}. Give Gatehouse write access to the file (and its directory, for an atomic ` +
              `replace). ${left}`,
            cause: error,
          });
        throw new GatewayError('config_write_failed', {
          message: `${error.message}. ${left}`,
          details: { code: error.code ?? null, file: error.outcome, oldCopyPath: error.oldCopyPath ?? null },
          cause: error,
        });
      }
      throw error;
    }
    const savedAt = new Date(this.now());
    this.lastSave?.watcher?.close();
    let status: ReloadStatus;
    if (watcher) {
      watcher.begin(savedAt);
      status = watcher.status();
    } else {
      status = ReloadWatcher.unwatched(
        savedAt,
        "Gatehouse is not connected to llama-swap's log, so the outcome of the reload is unknown; " +
          'look for "configuration reloaded" in llama-swap\'s log.',
      );
    }
    this.lastSave = { savedAt, watcher, status };
    const notices = [RELOAD_NOTICE];
    if (written.method === 'in-place') {
      notices.push(
        `The file was written in place, not replaced atomically ` +
          `(${written.fallbackReason ?? 'rename impossible'}); llama-swap may briefly have seen a partial ` +
          `file.`,
      );
    }
    this.options.logger?.info(
      { path: target.realPath, bytes: bytes.length, method: written.method },
      'llama-swap config saved',
    );
    return {
      ...base,
      changed: true,
      version: formatVersion(written.version),
      size: written.version.size,
      modifiedAt: isoFromNs(written.version.mtimeNs),
      method: written.method,
      notices,
      reload: status,
    };
  }

  private async schemaFor(text: string, configPath: string | undefined): Promise<SchemaLookup> {
    return this.schemas.get(this.schemas.wanted(text, configPath === undefined ? undefined : dirname(configPath)));
  }

  /** Runs `job` after every earlier one has finished (success or not). */
  private exclusive<T>(job: () => Promise<T>): Promise<T> {
    const run = this.queue.then(job, job);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

function schemaView(lookup: SchemaLookup): SchemaView {
  if (lookup.available) return { available: true, ...lookup.info, reason: null };
  return {
    available: false,
    source: lookup.wanted,
    origin: lookup.origin,
    fetchedAt: null,
    fromCache: false,
    warning: null,
    version: null,
    bundled: false,
    reason: lookup.reason,
  };
}

function withSchemaWarning(warnings: ConfigIssue[], schema: SchemaLookup): ConfigIssue[] {
  if (!schema.available || !schema.info.warning) return warnings;
  return [
    {
      kind: 'schema',
      message: schema.info.warning,
      path: '',
      line: null,
      column: null,
      endLine: null,
      endColumn: null,
      from: null,
      to: null,
    },
    ...warnings,
  ];
}

function unavailableIssue(reason: string): ConfigIssue {
  return {
    kind: 'schema_unavailable',
    message: reason,
    path: '',
    line: null,
    column: null,
    endLine: null,
    endColumn: null,
    from: null,
    to: null,
  };
}

function isoFromNs(ns: bigint): string {
  return new Date(Number(ns / 1_000_000n)).toISOString();
}

/** The truth about the file after a failed save, for the end of the error message. */
function whatTheFileHas(error: FileWriteError, realPath: string): string {
  switch (error.outcome) {
    case 'untouched':
      return 'The file still has its previous contents.';
    case 'restored':
      return (
        'The previous contents were put back, so the file is byte for byte as it was; its modification time ' +
        'changed, so llama-swap may reload it (which restarts every model).'
      );
    case 'damaged':
      return (
        `Writing the previous contents back failed too (${error.restoreFailure ?? 'unknown error'}), so ` +
        `the file may be damaged: ` +
        (error.oldCopyPath !== undefined
          ? `a copy of the previous contents is at ${error.oldCopyPath}; copy it over ${realPath}.`
          : `no copy of the previous contents could be kept; restore ${realPath} from a backup.`)
      );
  }
}
