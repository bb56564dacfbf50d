/**
 * `GET /api/usage/export`: the request log (`group=call`) or its sums per key, model or day, as
 * a CSV or JSON download, streamed from the store page by page. The route and its admin chain
 * are in the route table; the rows and formats in `usage/export-*.ts`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Static } from 'typebox';
import type { UsageExportQuery } from '../../admin-api/usage.js';
import type { UsageStore } from '../../store/store.js';
import { EXPORT_CONTENT_TYPES, csvStream, jsonStream } from '../../usage/export-format.js';
import { exportColumns, exportRows, type ExportGroup } from '../../usage/export-rows.js';
import type { UsageAccounting } from '../../usage/usage-accounting.js';
import { parseStatus, parseTime } from './query-params.js';

export interface UsageExportDeps {
  usage: Pick<UsageAccounting, 'flush'>;
  store: Pick<UsageStore, 'list'>;
  now: () => number;
}

export function createUsageExportHandler({ usage, store, now }: UsageExportDeps) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    // The route schema (`UsageExportQuery`) and its refinement checked each parameter.
    const query = request.query as Static<typeof UsageExportQuery>;
    const format = query.format || 'csv';
    const group = query.group || 'call';
    const keyId = query.key || undefined;
    const model = query.model || undefined;
    const status = parseStatus(query.status);
    const from = parseTime(query.from);
    const to = parseTime(query.to);
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
