// Sums vitest JSON reports into the one closing line CI reads: "N passed, N failed".
import { readFileSync, existsSync } from 'node:fs';
let passed = 0;
let failed = 0;
let skipped = 0;
for (const file of process.argv.slice(2)) {
  if (!existsSync(file)) {
    console.error(`summary: no report at ${file}`);
    failed++;
    continue;
  }
  const r = JSON.parse(readFileSync(file, 'utf8'));
  passed += r.numPassedTests;
  failed += r.numFailedTests;
  skipped += r.numPendingTests + r.numTodoTests;
  // A file that fails outside its tests (an import, a beforeAll: a service that did not start)
  // reports its tests as skipped, not failed: it counts as one failure.
  for (const t of r.testResults) {
    if (t.status === 'failed' && !t.assertionResults.some((a) => a.status === 'failed')) {
      failed++;
      console.error(`summary: ${file}: ${t.name} failed before its tests: ${String(t.message).split('\n')[0]}`);
    }
  }
}
// No test may be skipped (a missing service is a failure, not a skip).
if (skipped > 0) console.error(`summary: ${skipped} tests skipped`);
console.log(`tests: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 || skipped > 0 || passed === 0 ? 1 : 0);
