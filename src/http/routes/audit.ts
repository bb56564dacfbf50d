/** The audit log: who changed what, newest first; like exports, it lists everyone, so not for members. */
import type { FastifyPluginAsync } from 'fastify';
import { AuditPage, AuditQuery } from '../../admin-api/audit.js';
import { ErrorBody } from '../../admin-api/common.js';
import { refined } from '../../core/schema-validator.js';
import { createAuditHandler } from '../admin/audit-handlers.js';
import { auditQueryIssues } from '../admin/query-params.js';
import type { AdminServices } from '../admin-services.js';
import { invalidQueryMessage } from '../route-schemas.js';

const schema = { querystring: refined(AuditQuery, auditQueryIssues), response: { 200: AuditPage, '4XX': ErrorBody } };

export const auditRoutes =
  ({ admin, access }: AdminServices): FastifyPluginAsync =>
  async (app) => {
    const config = { invalidInputMessage: invalidQueryMessage };
    app.get('/api/audit', { ...access.readers, config, schema }, createAuditHandler(admin.store.audit));
  };
