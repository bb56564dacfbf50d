// ESLint for every TypeScript, JavaScript and Svelte file, and the direction of imports between
// the folders of src/. Prettier owns the layout, so the only style rule is max-len: Prettier wraps
// code at 120 columns but not comments or long strings.
import { readdirSync } from 'node:fs';
import js from '@eslint/js';
import stylistic from '@stylistic/eslint-plugin';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import svelte from 'eslint-plugin-svelte';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/**
 * The layers of src/, lowest first: a folder (or top-level file) may import from the layers
 * below its own, never from its own layer or above, so no two folders can depend on each other.
 */
const LAYERS = [
  ['core', 'admin-api', 'upstream-pools.ts'],
  ['store', 'management-client', 'logging', 'config-editor', 'snippets', 'queue'],
  ['auth', 'logger.ts', 'live'],
  ['proxy', 'limits', 'settings', 'audit', 'oidc'],
  ['budgets'],
  ['usage'],
  ['ollama'],
  ['http'],
  ['app.ts'],
  ['main.ts'],
  ['cli'],
];

// A new folder must be given its place, or the direction would not cover it.
const placed = new Set(LAYERS.flat());
const unplaced = readdirSync(new URL('./src', import.meta.url)).filter(
  (entry) => !placed.has(entry) && !entry.endsWith('.md'),
);
if (unplaced.length > 0) throw new Error(`eslint.config.js: give ${unplaced.join(', ')} a layer in LAYERS`);

const srcPath = (entry) => `./src/${entry}`;
const zones = LAYERS.flatMap((layer, rank) =>
  layer.map((entry) => ({
    target: srcPath(entry),
    from: LAYERS.slice(rank)
      .flat()
      .filter((other) => other !== entry)
      .map(srcPath),
    message: `src/${entry} may import only from lower layers (LAYERS in eslint.config.js).`,
  })),
).filter((zone) => zone.from.length > 0);

export default tseslint.config(
  { ignores: ['dist/', 'web/dist/', 'node_modules/', 'test-results/', 'coverage/', 'data/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  svelte.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2023, sourceType: 'module', globals: globals.node },
    plugins: { '@stylistic': stylistic },
    rules: {
      // Test titles are exempt: Prettier keeps `it('...', () => {` on one line, and a title is a sentence.
      '@stylistic/max-len': [
        'error',
        {
          code: 120,
          tabWidth: 2,
          ignoreUrls: true,
          ignoreRegExpLiterals: true,
          ignorePattern: String.raw`^\s*(it|test|describe)(\.\w+)*\(`,
        },
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // The direction of imports between the folders of src/ (docs/architecture.md, "The map").
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      // Imports name the emitted `.js`; the source is the `.ts` beside it.
      'import-x/resolver-next': [
        createNodeResolver({ extensions: ['.ts', '.js'], extensionAlias: { '.js': ['.ts', '.js'] } }),
      ],
    },
    rules: {
      'import-x/no-restricted-paths': ['error', { zones }],
      // web/'s alias for server code; node resolves no such name at run time.
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['@gatehouse/*'], message: 'src/ imports by relative path.' }] },
      ],
      // No import cycle among the files of src/, not only among its folders. Type-only imports
      // count too: a cycle of types is still two files that cannot be read one after the other.
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      // A file past 600 lines holds more than one job; split it (house style aims below ~400).
      'max-lines': ['error', { max: 600 }],
    },
  },
  {
    // The type-aware rules that catch real bugs: a promise nobody awaits or catches, and casts or
    // throws that lie about types. The rest of the type-checked set mostly flags JSON read in tests.
    files: ['**/*.ts'],
    ignores: ['web/vite.config.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',
      '@typescript-eslint/only-throw-error': 'error',
      // Passing on a caught error is fine; inventing a non-Error reason is not.
      '@typescript-eslint/prefer-promise-reject-errors': [
        'error',
        { allowThrowingAny: true, allowThrowingUnknown: true },
      ],
    },
  },
  {
    files: ['web/src/**', 'web/public/**'],
    languageOptions: { globals: globals.browser },
  },
  {
    // Components get the rules that need no type information: nothing type-checks .svelte files.
    files: ['**/*.svelte', '**/*.svelte.ts'],
    languageOptions: { parserOptions: { parser: tseslint.parser, extraFileExtensions: ['.svelte'] } },
    rules: {
      // Wrong for this code: the Maps, Sets and URLs it flags are temporaries built inside a
      // function or a $derived, never state that is mutated in place.
      'svelte/prefer-svelte-reactivity': 'off',
    },
  },
  {
    // Prettier fills markup text past 120 columns around inline elements; this check would fight it.
    files: ['**/*.svelte'],
    rules: { '@stylistic/max-len': 'off' },
  },
);
