/**
 * What a leaked timer retains, measured on the built package (dist/, which `npm test` builds
 * first) in a child process with --expose-gc. Its own file so that `npm run test:quick`, which
 * does not build, can leave it out with the other suites that need dist/ (vitest.config.ts).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, test } from 'vitest';

describe('seal and retention', () => {
  const dist = resolve(import.meta.dirname, '../dist/bundle/index.js');
  test(
    'D4: 500 requests each leaking a setInterval retain < 1 MB (child process, --expose-gc, built dist/)',
    () => {
      expect(existsSync(dist), 'run `npm run build` first: this test measures the built package').toBe(true);
      const dir = mkdtempSync(join(tmpdir(), 'miniprof-heap-'));
      const script = join(dir, 'heap.mjs');
      // `keep` is the control: holding the profiles themselves must show up, so the measure can fail.
      writeFileSync(
        script,
        `
import { withProfile, step } from ${JSON.stringify(dist)};
const keep = process.argv[2] === 'keep';
const timers = [];
const kept = [];
const heap = () => { gc(); gc(); return process.memoryUsage().heapUsed; };
const request = (i) => withProfile('GET /page/' + i, () => {
  for (let k = 0; k < 200; k++) step('a step with a fairly ordinary name number ' + k, () => 0);
  step('leaky', () => {
    timers.push(setInterval(() => step('tick', () => 0), 3_600_000));
  });
});
// Warm up on the measured requests themselves, so one-time allocations (modules, the code the JIT
// makes for this very loop) are not counted; their timers are cleared.
for (let i = 0; i < 100; i++) await request(i);
for (const t of timers.splice(0)) clearInterval(t);
const before = heap();
for (let i = 0; i < 500; i++) {
  const { profile } = await request(i);
  if (keep) kept.push(profile);
}
const after = heap();
for (const t of timers) clearInterval(t);
console.log(JSON.stringify({ retained: after - before, kept: kept.length }));
`,
      );
      try {
        const run = (mode: string): number => {
          const r = spawnSync(process.execPath, ['--expose-gc', script, mode], { encoding: 'utf8', timeout: 60_000 });
          expect(r.stderr).toBe('');
          expect(r.status).toBe(0);
          return (JSON.parse(r.stdout) as { retained: number }).retained;
        };
        const leaked = run('drop');
        const control = run('keep');
        expect(leaked).toBeLessThan(1024 * 1024);
        expect(control).toBeGreaterThan(5 * 1024 * 1024);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
