/**
 * `GET /api/usage/export`: the request log (`group=call`) or its sums per key, model or day, as
 * a CSV or JSON download, streamed from the store page by page. The route and its admin chain
 * are in the route table; the rows and formats in `usage/export-*.ts`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { UsageStore } from '../../store/store.js';
import { EXPORT_CONTENT_TYPES, EXPORT_FORMATS, csvStream, jsonStream } from '../../usage/export-format.js';
import { EXPORT_GROUPS, exportColumns, exportRows, type ExportGroup } from '../../usage/export-rows.js';
import type { UsageAccounting } from '../../usage/usage-accounting.js';
import { checkKnown, Issues, oneOf, optionalString, parseStatus, parseTime } from './query-params.js';

const PARAMETERS = ['from', 'to', 'format', 'group', 'key', 'model', 'status'];

export interface UsageExportDeps {
  usage: Pick<UsageAccounting, 'flush'>;
  store: Pick<UsageStore, 'list'>;
  now: () => number;
}

export function createUsageExportHandler({ usage, store, now }: UsageExportDeps) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const query = request.query as Record<string, unknown>;
    const issues = new Issues();
    checkKnown(query, PARAMETERS, issues);
    const format = oneOf(query, 'format', EXPORT_FORMATS, 'csv', issues);
    const group = oneOf(query, 'group', EXPORT_GROUPS, 'call', issues);
    const keyId = optionalString(query, 'key', issues);
    const model = optionalString(query, 'model', issues);
    const status = parseStatus(query.status, issues);
    const from = parseTime(query, 'from', issues);
    const to = parseTime(query, 'to', issues);
    if (from !== undefined && to !== undefined && to <= from) issues.add('/to', 'must be later than from');
    issues.throwIfAny();
    // So the calls of the last half second are in (rows are written in batches); without `to`,
    // the export ends now, not wherever the last page happens to be read.
    await usage.flush();
    const end = to ?? now();
    reply
      .header('content-type', EXPORT_CONTENT_TYPES[format])
      .header('content-disposition', `attachment; filename="${fileName(group, from, end)}.${format}"`)
      .header('cache-control', 'no-store');
    // Fastify's HEAD would drain a stream to nowhere: the whole log read for no body.
    if (request.method === 'HEAD') return reply.send();
    const rows = exportRows(store, group, { keyId, model, status, from, to: end });
    return reply.send(format === 'csv' ? csvStream(exportColumns(group), rows) : jsonStream(rows));
  };
}

/** `gatehouse-usage-day-20300101T000000Z-20300201T000000Z`: what and which range, safe in any file system. */
function fileName(group: ExportGroup, from: number | undefined, to: number): string {
  const stamp = (at: number) => new Date(at).toISOString().replace(/[-:]|\.\d+/g, '');
  return `gatehouse-usage-${group}-${from === undefined ? 'until' : stamp(from)}-${stamp(to)}`;
}
