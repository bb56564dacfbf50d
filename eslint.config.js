// The direction of imports between the folders of src/ (docs/architecture.md, "The map").
import { readdirSync } from 'node:fs';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

/**
 * The layers of src/, lowest first: a folder (or top-level file) may import from the layers
 * below its own, never from its own layer or above, so no two folders can depend on each other.
 */
const LAYERS = [
  ['core', 'admin-api'],
  ['store', 'upstream', 'logging', 'config-editor', 'snippets'],
  ['auth', 'logger.ts'],
  ['proxy', 'usage', 'settings.ts'],
  ['http'],
  ['app.ts'],
  ['main.ts'],
  ['cli'],
];

// A new folder must be given its place, or the direction would not cover it.
const placed = new Set(LAYERS.flat());
const unplaced = readdirSync(new URL('./src', import.meta.url)).filter((entry) => !placed.has(entry) && !entry.endsWith('.md'));
if (unplaced.length > 0) throw new Error(`eslint.config.js: give ${unplaced.join(', ')} a layer in LAYERS`);

const path = (entry) => `./src/${entry}`;
const zones = LAYERS.flatMap((layer, rank) =>
  layer.map((entry) => ({
    target: path(entry),
    from: LAYERS.slice(rank).flat().filter((other) => other !== entry).map(path),
    message: `src/${entry} may import only from lower layers (LAYERS in eslint.config.js).`,
  })),
).filter((zone) => zone.from.length > 0);

export default tseslint.config(
  { ignores: ['dist/**', 'web/**', 'node_modules/**'] },
  {
    files: ['src/**/*.ts'],
    extends: [tseslint.configs.base],
    plugins: { 'import-x': importX },
    settings: {
      // Imports name the emitted `.js`; the source is the `.ts` beside it.
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js'], extensionAlias: { '.js': ['.ts', '.js'] } })],
    },
    rules: {
      'import-x/no-restricted-paths': ['error', { zones }],
    },
  },
);
