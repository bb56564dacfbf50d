// Prints "N passed, N failed" from vitest's JSON report (written by vitest.config.ts).
import { readFileSync } from 'node:fs';

const report = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const passed = report.numPassedTests ?? 0;
// A file that failed without a failing test (it did not load, or a hook failed and its tests were
// skipped) counts as one failure: its tests never ran.
const failed =
  (report.numFailedTests ?? 0) +
  (report.testResults ?? []).filter(
    (f) => f.status === 'failed' && !(f.assertionResults ?? []).some((a) => a.status === 'failed'),
  ).length;
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
