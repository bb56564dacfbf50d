import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { SlowFirstSequencer } from './test/slow-first-sequencer.js';

/**
 * `npm test` runs every project; `npm run test:quick` only `in-process`, the inner loop between
 * commits. A new file under test/ lands in `in-process` (or `browser`) unless listed below.
 *
 * Test files that start other programs: gateway replicas and CLI processes, the coding-agent
 * CLIs, the demo, deployment scripts, and the snippets run by curl, bash, node and python3.
 * They run in the `processes` project; `npm run test:quick` leaves them out.
 */
const PROCESSES = [
  'test/replicas/**/*.test.ts',
  'test/demo/**/*.test.ts',
  'test/deploy/**/*.test.ts',
  'test/clients/cli-matrix.test.ts',
  'test/gateway/process.test.ts',
  'test/gateway/cli-keys-live.test.ts',
  'test/snippets/{curl,python,shell,typescript}.test.ts',
];
const BROWSER = ['test/browser/**/*.test.ts'];
/** In-process files that replace a module (`vi.mock`): a module shared by a worker's files would ignore it. */
const MOCKING = ['test/auth/sign-in-timing.test.ts'];
/** In-process files that push volume (10,000 calls, 100,000-row exports): the `load` project. */
const LOAD = ['test/usage/burst.test.ts', 'test/usage/usage-export-memory.test.ts'];

export default defineConfig({
  // The dashboard's modules (web/src/lib, tested here) import server code by web/'s alias.
  resolve: { alias: { '@gatehouse': fileURLToPath(new URL('./src', import.meta.url)) } },
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Files run in parallel processes, tests inside a file run in order. Vitest's default is
    // cores - 1, one worker on two cores; most files wait on I/O, so three keep both cores busy.
    pool: 'forks',
    maxWorkers: 3,
    sequence: { sequencer: SlowFirstSequencer },
    reporters: ['default', ['json', { outputFile: 'test-results/vitest.json' }]],
    projects: [
      {
        extends: true,
        test: {
          // Everything that runs in the test's own process: one import of the gateway per worker,
          // not per file (the tests build their own apps, stores and servers).
          name: 'in-process',
          include: ['test/**/*.test.ts'],
          exclude: [...PROCESSES, ...BROWSER, ...LOAD, ...MOCKING],
          isolate: false,
        },
      },
      { extends: true, test: { name: 'mocking', include: MOCKING } },
      { extends: true, test: { name: 'load', include: LOAD, isolate: false } },
      {
        extends: true,
        test: {
          name: 'processes',
          include: PROCESSES,
          isolate: false,
          // Each file starts gateways, replicas or CLIs from source while the lint runs beside the
          // suite on two cores: bounds for a stuck start, not a pace.
          testTimeout: 90_000,
          hookTimeout: 90_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'browser',
          include: BROWSER,
          isolate: false,
          // A page step on a loaded two-core machine can take seconds: bounds for a stuck test, not a pace.
          testTimeout: 90_000,
          hookTimeout: 90_000,
          // One Chromium for the run; each file connects to it (test/browser/helpers.ts).
          globalSetup: ['test/browser/chromium-server.ts'],
        },
      },
    ],
  },
});
