// `node bench/instructions/cpu.js [--frameworks fastify,express] [--configs none,ref,outputs,dev]
// [--rounds 5] [--from 8000] [--to 38000] [--node PATH] [--builds A,B]`: CPU time per request of
// bench/instructions/harness.js rows, the time beside run.js's instruction counts.
//
// Each row runs the harness as run.js does (one request in flight, counter clock, a profile kept
// open), natively, pinned to CPU 0 where `taskset` exists, so the server, the client and V8's
// helper threads share one core. The harness reports its own CPU time (all threads, user and
// system) from response --from to --to: the steady state. Rounds are interleaved, and each cell
// is the median over them with the range.
//
// Why next to the counts: instructions are not time, and not alike. Divided by run.js's count
// over the `none` row, a row's added CPU time says what its added instructions cost each
// (bench/RESULTS.md Run 15: the reference profiler's added work ran at about half the time per
// instruction of miniprof's). What it cannot do: resolve a change of a few µs. Copies of one build
// in one run differ by up to 5 µs a request on this VM, so use it for layers, not for tweaks.
//
// `--builds A,B` runs every row against each of these copies of dist/ (MINIPROF_BENCH_DIST),
// interleaved, with rows named `config@A`.
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { harnessEnv, option, pinToCpu0, run } from './cachegrind.js';

const here = dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const opt = (name, def) => option(argv, name, def);
const frameworks = opt('--frameworks', 'fastify').split(',');
const configs = opt('--configs', 'none,ref,outputs,dev').split(',');
const rounds = Number(opt('--rounds', '5'));
const from = Number(opt('--from', '8000'));
const to = Number(opt('--to', '38000'));
const node = opt('--node', process.execPath);
const builds = opt('--builds', '').split(',').filter((b) => b !== '');

if (!(rounds >= 1 && from >= 1 && to > from)) {
  console.error('usage: cpu.js [--rounds N >= 1] [--from N >= 1] [--to M > N] ...');
  process.exit(2);
}
for (const d of builds.length === 0 ? [join(here, '../../dist')] : builds) {
  if (!existsSync(join(d, 'src/index.js'))) {
    console.error(`bench/instructions/cpu.js measures a built package: ${join(d, 'src/index.js')} is missing (npm run build first)`);
    process.exit(2);
  }
}
const pin = await pinToCpu0();
const pinned = pin.length > 0;

/** One harness run; resolves its CPU µs per request from response `from` to `to`. */
async function cpuPerRequest(framework, config, build) {
  const env = { ...harnessEnv(false, build === undefined ? undefined : resolve(build)), CPU_FROM: String(from) };
  const args = [join(here, 'harness.js'), framework, config, String(to)];
  const [cmd, ...rest] = [...pin, node, ...args];
  const { stdout } = await run(cmd, rest, { env });
  const r = JSON.parse(stdout.trim().split('\n').at(-1));
  return (r.userUs + r.systemUs) / r.requests;
}

const rows = frameworks.flatMap((f) => configs.flatMap((c) => (builds.length === 0 ? [[f, c, undefined]] : builds.map((b) => [f, c, b]))));
const name = ([f, c, b]) => `${f}/${c}${b === undefined ? '' : `@${b}`}`;
const got = new Map(rows.map((r) => [name(r), []]));
for (let i = 0; i < rounds; i++) {
  for (const r of rows) {
    const v = await cpuPerRequest(...r);
    got.get(name(r)).push(v);
    console.error(`[cpu] round ${i + 1}/${rounds} ${name(r)}: ${v.toFixed(1)} µs/request`);
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const version = (await run(node, ['--version'])).stdout.trim();
console.log(
  `Node ${version}, CPU µs per request over requests ${from}..${to}, one in flight, counter clock, ${pinned ? 'pinned to CPU 0' : 'not pinned (no taskset)'}, median of ${rounds} interleaved rounds (range)\n`,
);
console.log('| row | CPU µs/request | over `none` |');
console.log('| --- | ---: | ---: |');
for (const r of rows) {
  const xs = got.get(name(r));
  const m = median(xs);
  const none = got.get(name([r[0], 'none', r[2]]));
  const over = none === undefined ? '' : `${m - median(none) >= 0 ? '+' : ''}${(m - median(none)).toFixed(1)}`;
  console.log(`| ${name(r)} | ${m.toFixed(1)} (${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)}) | ${over} |`);
}
