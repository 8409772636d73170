// `node bench/baseline.js <git-rev>`: builds that revision of miniprof into a temporary directory
// (git archive, then the revision's own `tsc -p tsconfig.build.json` and `scripts/bundle.mjs`,
// with this checkout's node_modules) and prints the path of its dist/. Built once per commit and
// reused. bench/run.js --baseline <rev> uses it to run "today's build" beside this one; for one
// row by hand: `node bench/http/contest.js fastify dev dev --env-a '{"MINIPROF_BENCH_DIST":"<dist>"}'`.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Builds `rev` (once per commit); resolves `{ sha, dist }`, dist holding bundle/index.js. */
export function buildBaseline(rev) {
  const sha = execFileSync('git', ['rev-parse', '--verify', `${rev}^{commit}`], { cwd: root }).toString().trim();
  const dir = join(tmpdir(), `miniprof-baseline-${sha.slice(0, 12)}`);
  const dist = join(dir, 'dist');
  if (existsSync(join(dist, 'bundle/index.js'))) return { sha, dist };
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const archive = spawnSync('bash', ['-c', `git archive ${sha} | tar -x -C "${dir}"`], { cwd: root, stdio: 'inherit' });
  if (archive.status !== 0) throw new Error(`git archive ${sha} failed`);
  symlinkSync(realpathSync(join(root, 'node_modules')), join(dir, 'node_modules'));
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: dir, stdio: 'inherit' });
  execFileSync(process.execPath, ['scripts/bundle.mjs'], { cwd: dir, stdio: 'inherit' });
  if (!existsSync(join(dist, 'bundle/index.js'))) throw new Error(`${rev}: the build made no dist/bundle/index.js`);
  return { sha, dist };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const rev = process.argv[2];
  if (rev === undefined) {
    console.error('usage: node bench/baseline.js <git-rev>');
    process.exit(2);
  }
  console.log(buildBaseline(rev).dist);
}
