/**
 * `bin/gatehouse` from the TypeScript sources: test/helpers/process.ts runs this file with
 * `node --import tsx`, so the CLI tests need no build of dist/.
 */
import { main } from '../../src/cli/main.js';

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
