/**
 * The audit log's queries, for both dialects (portable SQL only). Entries are keyed by
 * (at, id) like the request log: newest-first pages are a keyset on that key, and retention
 * deletes from its old end.
 */
import type { Insertable, Kysely, Selectable } from 'kysely';
import type { AuditAction, AuditActor, AuditChanges, AuditOutcome, AuditTarget } from '../admin-api/types.js';
import type { AuditLogTable, Database } from './schema.js';
import type { AuditRecord } from './records.js';
import type { AuditStore } from './store.js';

export function createAuditStore(db: Kysely<Database>): AuditStore {
  return {
    async append(record) {
      await db.insertInto('audit_log').values(toRow(record)).execute();
    },

    async list(query) {
      let q = db.selectFrom('audit_log').selectAll();
      if (query.action !== undefined) q = q.where('action', '=', query.action);
      const before = query.before;
      if (before?.id !== undefined) {
        const { at, id } = before;
        q = q.where((eb) => eb.or([eb('at', '<', at), eb.and([eb('at', '=', at), eb('id', '<', id)])]));
      } else if (before !== undefined) {
        q = q.where('at', '<', before.at);
      }
      const rows = await q.orderBy('at', 'desc').orderBy('id', 'desc').limit(query.limit).execute();
      return rows.map(toRecord);
    },

    async prune(before, limit) {
      // Row values keep it one portable statement; the (at, id) key finds the oldest rows.
      const result = await db
        .deleteFrom('audit_log')
        .where(({ eb, refTuple, selectFrom }) =>
          eb(
            refTuple('at', 'id'),
            'in',
            selectFrom('audit_log')
              .select(['at', 'id'])
              .where('at', '<', before)
              .orderBy('at')
              .limit(limit)
              .$asTuple('at', 'id'),
          ),
        )
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}

function toRow(record: AuditRecord): Insertable<AuditLogTable> {
  return {
    id: record.id,
    at: record.at,
    actor_kind: record.actor.kind,
    actor_id: record.actor.id,
    actor_name: record.actor.name,
    client: record.client,
    action: record.action,
    target_kind: record.target?.kind ?? null,
    target_id: record.target?.id ?? null,
    target_name: record.target?.name ?? null,
    target_version: record.target?.version ?? null,
    outcome: record.outcome,
    reason: record.reason,
    changes: record.changes === null ? null : JSON.stringify(record.changes),
  };
}

function toRecord(row: Selectable<AuditLogTable>): AuditRecord {
  return {
    id: row.id,
    at: Number(row.at),
    actor: { kind: row.actor_kind as AuditActor['kind'], id: row.actor_id, name: row.actor_name },
    client: row.client,
    action: row.action as AuditAction,
    target:
      row.target_kind === null
        ? null
        : {
            kind: row.target_kind as AuditTarget['kind'],
            id: row.target_id ?? '',
            name: row.target_name,
            version: row.target_version,
          },
    outcome: row.outcome as AuditOutcome,
    reason: row.reason,
    changes: row.changes === null ? null : (JSON.parse(row.changes) as AuditChanges),
  };
}
