/** llama-swap's config.yaml editor; admins only: the file may hold upstream API keys viewers must not see. */
import type { FastifyPluginAsync } from 'fastify';
import type { ConfigEditor } from '../../config-editor/config-editor.js';
import { createConfigHandlers } from '../admin/config-handlers.js';
import type { AdminServices } from '../admin-services.js';

/** Largest body of the config editor's routes: llama-swap's config.yaml travels whole. */
const CONFIG_BODY_LIMIT_BYTES = 4 * 1024 * 1024;

export const configRoutes =
  ({ view, audited, access }: AdminServices, editor: ConfigEditor): FastifyPluginAsync =>
  async (app) => {
    const config = createConfigHandlers({ editor, onConfigChanged: () => void view.refresh() });
    const adminConfigText = { ...access.admins, bodyLimit: CONFIG_BODY_LIMIT_BYTES };
    app.get('/api/config', access.admins, config.load);
    app.put('/api/config', adminConfigText, audited('config.save', config.save));
    app.post('/api/config/validate', adminConfigText, config.validate);
    app.post('/api/config/format', adminConfigText, audited('config.format', config.format));
    app.get('/api/config/reload-status', access.admins, config.reloadStatus);
  };
