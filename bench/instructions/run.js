// `node bench/instructions/run.js [--frameworks fastify,express] [--configs none,hooks,...]
// [--node PATH] [--from 2000] [--to 5000] [--load]`: instructions per request of each
// configuration, counted by valgrind (cachegrind, no cache simulation) on
// bench/instructions/harness.js.
//
// By default one request is in flight at a time, the profiles run on a counter clock and one
// profile is kept open all run (see harness.js): repeated runs then agree to about 1%, so a change
// of 5,000 instructions per request can be seen. Not the `dev` row over the default window: the
// profiles its results store keeps bring a major GC every few thousand requests, and whether one
// falls between --from and --to moved it by up to 30,000; with `--to 14000` runs agree within
// ~4,000 (Run 14). `--load` has 25 in flight on the real clock, as
// under load, but two identical runs can differ by 50,000 (sockets are batched differently and
// valgrind stretches every duration, and with it the profiles' shapes).
//
// Why: on a shared 2-vCPU VM, CPU time per request swings 30-60% from one minute to the next, so
// a 5% change cannot be seen in req/s. Instruction counts under `node --predictable` (no
// concurrent compiler or GC threads) repeat to within 0.1%. Each figure is the difference of two
// runs (--to minus --from requests) divided by the requests between them: start-up, module
// loading and most JIT compilation cancel out, leaving the steady state. Instructions are not
// time (cache misses and syscalls are not in them), so read them next to bench/run.js's ratios,
// not instead of them. Two valgrind processes run at once (one per core).
//
// On Node 24 count from 14,000 on (`--from 14000 --to 24000`): its V8 moves code through one tier
// more (Maglev), a function run once a request climbs slowly, and over 4,000-14,000 every row was
// still 34-49% above its later count (Run 19).
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cachegrind, harnessEnv, instructionCount, needValgrind, option, run } from './cachegrind.js';

const here = dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const opt = (name, def) => option(argv, name, def);
const frameworks = opt('--frameworks', 'fastify,express').split(',');
const configs = opt('--configs', 'none,hooks,open,steps,outputs,dev').split(',');
const node = opt('--node', process.execPath);
const from = Number(opt('--from', '2000'));
const to = Number(opt('--to', '5000'));
const load = argv.includes('--load');
const env = harnessEnv(load);

const distIndex = join(process.env.MINIPROF_BENCH_DIST ?? join(here, '../../dist'), 'bundle/index.js');
if (!existsSync(distIndex)) {
  console.error(`bench/instructions measures the built package: ${distIndex} is missing (npm run build first)`);
  process.exit(2);
}
await needValgrind();

async function instructions(framework, config, requests) {
  return instructionCount(await cachegrind({ node, framework, config, requests, env }), `${framework}/${config}`);
}

async function perRequest(framework, config) {
  const [a, b] = [await instructions(framework, config, from), await instructions(framework, config, to)];
  return Math.round((b - a) / (to - from));
}

const jobs = frameworks.flatMap((f) => configs.map((c) => [f, c]));
const results = new Map();
for (let i = 0; i < jobs.length; i += 2) {
  const batch = jobs.slice(i, i + 2);
  const got = await Promise.all(batch.map(([f, c]) => perRequest(f, c)));
  batch.forEach(([f, c], k) => {
    results.set(`${f}/${c}`, got[k]);
    console.error(`[instructions] ${f}/${c}: ${got[k]}`);
  });
}

const LABELS = {
  none: 'no profiler',
  hook: 'an empty hook of the same kind (the framework\'s share)',
  nondev: 'miniprof installed, request not a developer\'s',
  visited: 'the same, after one developer request',
  hooks: 'promise hooks on, nothing else',
  open: 'a profile per request, plain calls, no outputs, no store',
  steps: '+ the 10 steps',
  outputs: '+ comment and Server-Timing',
  dev: '+ results store (the default developer request)',
  ref: 'the reference profiler (bench/reference.js): comment + Server-Timing, nothing else',
};
const version = (await run(node, ['--version'])).stdout.trim();
const mode = load ? '25 in flight, real clock (`--load`)' : 'one request in flight, counter clock, a profile kept open';
console.log(`Node ${version}, requests ${from}..${to}, ${mode}, \`node bench/instructions/run.js${load ? ' --load' : ''}\`\n`);
console.log('| framework | configuration | instructions/request | vs no profiler | step from the row above |');
console.log('| --- | --- | ---: | ---: | ---: |');
for (const f of frameworks) {
  let prev;
  const base = results.get(`${f}/none`);
  for (const c of configs) {
    const v = results.get(`${f}/${c}`);
    const vsBase = base === undefined ? '' : `${v - base >= 0 ? '+' : ''}${(v - base).toLocaleString('en-US')}`;
    const step = prev === undefined ? '' : `${v - prev >= 0 ? '+' : ''}${(v - prev).toLocaleString('en-US')}`;
    console.log(`| ${f} | ${LABELS[c]} | ${v.toLocaleString('en-US')} | ${vsBase} | ${step} |`);
    prev = v;
  }
}
