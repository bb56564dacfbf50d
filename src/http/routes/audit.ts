/** The audit log: who changed what, newest first; like exports, it lists everyone, so not for members. */
import type { FastifyPluginAsync } from 'fastify';
import { createAuditHandler } from '../admin/audit-handlers.js';
import type { AdminServices } from '../admin-services.js';

export const auditRoutes =
  ({ admin, access }: AdminServices): FastifyPluginAsync =>
  async (app) => {
    app.get('/api/audit', access.readers, createAuditHandler(admin.store.audit));
  };
