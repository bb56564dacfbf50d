// Prints "N passed, N failed" from vitest's JSON report (written by vitest.config.ts).
import { existsSync, readFileSync } from 'node:fs';

if (!existsSync(process.argv[2])) {
  // No report: the run stopped before the tests (install, build or lint failed); that is one failure.
  console.error(`no test report at ${process.argv[2]}: the run stopped before the tests (see above)`);
  console.log('0 passed, 1 failed');
  process.exit(0);
}
const report = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const passed = report.numPassedTests ?? 0;
// A file that failed without a failing test (it did not load, or a hook failed and its tests were
// skipped) counts as one failure: its tests never ran.
const failed =
  (report.numFailedTests ?? 0) +
  (report.testResults ?? []).filter(
    (f) => f.status === 'failed' && !(f.assertionResults ?? []).some((a) => a.status === 'failed'),
  ).length;
// A run that failed with no failed test or file (an unhandled error between tests, or the lint
// that runs beside the tests) is one failure.
const commandFailed = process.argv[3] !== undefined && process.argv[3] !== '0';
const counted = failed === 0 && (report.success === false || commandFailed) ? 1 : failed;
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
console.log(`${passed} passed, ${counted} failed${skipped ? `, ${skipped} skipped` : ''}`);
