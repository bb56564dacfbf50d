/** Gatehouse's settings: the table (`table.ts`), its parsers and the loader. */
export { FILE_INDIRECTIONS, loadSettings, settingsFor, type FlagValues } from './load.js';
export { parseDuration, parsePort, parseSize } from './parsers.js';
export { SETTINGS } from './table.js';
export { SettingsError, type Settings } from './types.js';
