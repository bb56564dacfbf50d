/**
 * Every setting, declared once (env name, CLI flag, default, parser, description), in the order
 * `--help` and `docs/configuration.md` list them; a test checks the doc against this table.
 */
import { ADMIN_SETTINGS } from './table-admin.js';
import { PROXY_SETTINGS } from './table-proxy.js';
import type { Settings, SettingSpec } from './types.js';

export const SETTINGS: ReadonlyArray<SettingSpec<keyof Settings>> = [...PROXY_SETTINGS, ...ADMIN_SETTINGS];
