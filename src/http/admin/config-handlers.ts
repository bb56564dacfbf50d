/**
 * Admin API for llama-swap's config.yaml: `GET/PUT /api/config`, `POST /api/config/validate`,
 * `POST /api/config/format`, `GET /api/config/reload-status`. Routes and the admin chain are
 * declared in the route table; these are only the handlers. The work is in
 * `src/config-editor/`; here bodies are checked and answers shaped. Save and format are audited
 * (`audited.ts`): the entry names the file and the version written, never the text.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type {
  ConfigFormatted,
  ConfigLoad,
  ConfigSaved,
  ConfigValidation,
  ReloadStatus,
} from '../../admin-api/types.js';
import type { ConfigEditor } from '../../config-editor/config-editor.js';
import { GatewayError } from '../../core/errors.js';
import type { AuditedHandler, AuditScope } from './audited.js';

export interface ConfigHandlerDeps {
  editor: Pick<ConfigEditor, 'load' | 'validate' | 'format' | 'save' | 'reloadStatus' | 'target'>;
  /** Told after a save and after a reload was seen, so the dashboards' model list is read again. */
  onConfigChanged?: () => void;
}

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

export interface ConfigHandlers {
  load: Handler;
  save: AuditedHandler;
  validate: Handler;
  format: AuditedHandler;
  reloadStatus: Handler;
}

/** A long-poll on reload-status waits at most this long. */
const RELOAD_STATUS_MAX_WAIT_MS = 25_000;

export function createConfigHandlers({ editor, onConfigChanged }: ConfigHandlerDeps): ConfigHandlers {
  /** The file as configured (no target when the editor is off and no path is set). */
  const configTarget = async (audit: AuditScope) => {
    const target = await editor.target();
    audit.target = target.path === null ? null : { kind: 'config', id: target.path, name: null, version: null };
  };

  return {
    async load(_request, reply) {
      void reply.header('cache-control', 'no-store');
      return editor.load() satisfies Promise<ConfigLoad>;
    },

    async save(request, _reply, audit) {
      await configTarget(audit);
      const body = readBody(request.body, ['text', 'version']);
      const saved = await (editor.save(body.text, body.version) satisfies Promise<ConfigSaved>);
      audit.target = { kind: 'config', id: saved.path, name: null, version: saved.version };
      onConfigChanged?.();
      return saved;
    },

    async validate(request) {
      const body = readBody(request.body, ['text']);
      return editor.validate(body.text) satisfies Promise<ConfigValidation>;
    },

    async format(request, _reply, audit) {
      await configTarget(audit);
      const body = readBody(request.body, ['text']);
      return editor.format(body.text) satisfies Promise<ConfigFormatted>;
    },

    async reloadStatus(request, reply) {
      const query = (request.query ?? {}) as Record<string, unknown>;
      const issues: Array<{ path: string; message: string }> = [];
      let since: Date | undefined;
      if (query.since !== undefined) {
        since =
          typeof query.since === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(query.since)
            ? new Date(query.since)
            : undefined;
        if (!since || Number.isNaN(since.getTime())) {
          issues.push({ path: '/since', message: 'must be an ISO 8601 timestamp, e.g. the savedAt of a save' });
          since = undefined;
        }
      }
      let waitMs = 0;
      if (query.wait !== undefined) {
        waitMs = typeof query.wait === 'string' && /^\d{1,6}$/.test(query.wait) ? Number(query.wait) : NaN;
        if (!(waitMs >= 0 && waitMs <= RELOAD_STATUS_MAX_WAIT_MS))
          issues.push({
            path: '/wait',
            message: `must be a number of milliseconds from 0 to ${RELOAD_STATUS_MAX_WAIT_MS}`,
          });
      }
      if (issues.length > 0) throw new GatewayError('validation_failed', { details: issues });
      void reply.header('cache-control', 'no-store');
      const status = await (editor.reloadStatus(since, waitMs) satisfies Promise<ReloadStatus>);
      if (status.state === 'reloaded') onConfigChanged?.();
      return status;
    },
  };
}

function readBody<K extends string>(body: unknown, fields: readonly K[]): Record<K, string> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new GatewayError('validation_failed', {
      message: 'The body must be a JSON object.',
      details: [{ path: '', message: `must be an object with ${fields.join(', ')}` }],
    });
  }
  const record = body as Record<string, unknown>;
  const issues = fields
    .filter((f) => typeof record[f] !== 'string')
    .map((f) => ({ path: `/${f}`, message: record[f] === undefined ? 'is required' : 'must be a string' }));
  if (issues.length > 0) throw new GatewayError('validation_failed', { details: issues });
  return Object.fromEntries(fields.map((f) => [f, record[f] as string])) as Record<K, string>;
}
