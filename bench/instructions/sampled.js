// `node bench/instructions/sampled.js <express|fastify> <row A> <row B> [--top 30] [--from 8000]
// [--to 38000]`: where row B's extra CPU time over row A goes, by kind of code and by function,
// from `perf record -e cpu-clock` samples (a software clock: it works on VMs without hardware
// counters) of bench/instructions/harness.js, run natively as cpu.js runs it (pinned to CPU 0).
//
// Each row is recorded twice, for --from and for --to requests, and the sample counts subtracted
// symbol by symbol, so start-up, module loading and most compilation cancel out (as in run.js).
// JIT-compiled functions are named through `node --perf-basic-prof`. A symbol's samples are its
// own time (builtins and runtime functions it calls are theirs), in µs per request: 4,000 samples
// a second, divided by the requests between the two runs.
//
// Read it for where time goes, not for small differences: one pair of runs moves a few µs with
// the VM, and a JIT address that V8 reused for other code late in a run can be credited to the
// wrong function (`JS:^` rows that make no sense, such as a module's top level, are that).
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { harnessEnv, option, pinToCpu0, run } from './cachegrind.js';

const here = dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const [framework, rowA, rowB] = argv;
const top = Number(option(argv, '--top', '30'));
const from = Number(option(argv, '--from', '8000'));
const to = Number(option(argv, '--to', '38000'));
const HZ = 4000;
if (!['express', 'fastify'].includes(framework) || rowA === undefined || rowB === undefined || !(to > from)) {
  console.error('usage: node bench/instructions/sampled.js <express|fastify> <row A> <row B> [--top N] [--from N] [--to M]');
  process.exit(2);
}
try {
  await run('perf', ['--version']);
} catch {
  console.error('bench/instructions/sampled.js needs perf (apt-get install -y linux-perf)');
  process.exit(2);
}

const work = mkdtempSync(join(tmpdir(), 'miniprof-sampled-'));
// On one core, as cpu.js times the rows, where taskset exists.
const pin = await pinToCpu0();

/** Samples per symbol of one harness run of `requests`. */
async function samples(config, requests) {
  const data = join(work, `${config}-${requests}.data`);
  const env = harnessEnv(false);
  // --perf-basic-prof writes /tmp/perf-<pid>.map, which perf report reads; removed after it.
  const maps = () => new Set(readdirSync('/tmp').filter((f) => /^perf-\d+\.map$/.test(f)));
  const before = maps();
  await run('perf', ['record', '-q', '-e', 'cpu-clock', '-F', String(HZ), '-o', data, '--', ...pin, process.execPath, '--perf-basic-prof', join(here, 'harness.js'), framework, config, String(requests)], {
    env,
    // --perf-basic-prof also writes V8's isolate-*.v8.log into the working directory.
    cwd: work,
    maxBuffer: 1 << 26,
  });
  const { stdout } = await run('perf', ['report', '-i', data, '--no-children', '--sort', 'sym', '--stdio', '-g', 'none', '-n'], { maxBuffer: 1 << 28 });
  for (const f of maps()) if (!before.has(f)) rmSync(join('/tmp', f), { force: true });
  const out = new Map();
  for (const line of stdout.split('\n')) {
    const m = /^\s*[\d.]+%\s+(\d+)\s+(.*)$/.exec(line);
    if (m === null) continue;
    // V8 writes addresses into some names; they differ between runs of the same code.
    const sym = m[2].trim().replace(/0x[0-9a-f]{6,}/g, 'ADDR');
    out.set(sym, (out.get(sym) ?? 0) + Number(m[1]));
  }
  return out;
}

/** Steady-state samples per symbol: the run of `to` requests minus the run of `from`. */
async function steady(config) {
  const a = await samples(config, from);
  const b = await samples(config, to);
  const d = new Map();
  for (const k of new Set([...a.keys(), ...b.keys()])) d.set(k, (b.get(k) ?? 0) - (a.get(k) ?? 0));
  return d;
}

/** A build under test outside `dist/` (MINIPROF_BENCH_DIST): its functions are miniprof's too. */
const buildDir = process.env.MINIPROF_BENCH_DIST === undefined ? null : `${resolve(process.env.MINIPROF_BENCH_DIST).replace(/\/$/, '')}/`;

function kind(sym) {
  if (sym.startsWith('[k]')) return 'kernel';
  const s = sym.replace(/^\[\.\]\s*/, '');
  if (s.startsWith('JS:')) {
    if (s.includes('/dist/') || (buildDir !== null && s.includes(buildDir))) return 'JavaScript: miniprof';
    if (s.includes('bench/reference.js')) return 'JavaScript: the reference profiler';
    if (s.includes('node_modules/')) return 'JavaScript: framework and dependencies';
    if (s.includes(' node:')) return 'JavaScript: Node';
    return 'JavaScript: bench page and client';
  }
  if (s.startsWith('Builtins_')) return /IC/.test(s) ? 'V8 builtins: inline caches' : 'V8 builtins: other';
  if (s.startsWith('RegExp:')) return 'regular expressions';
  if (/compiler::|maglev|Compil/i.test(s)) return 'V8 compiler';
  if (/Scaveng|Sweep|Mark|Heap|Evacuat|GC|Remembered/.test(s)) return 'V8 garbage collector';
  if (s.startsWith('v8::') || s.startsWith('Runtime_')) return 'V8 runtime: other';
  if (s.startsWith('node::')) return 'Node native';
  return 'other native (libc, llhttp, libuv)';
}

try {
  const A = await steady(rowA);
  const B = await steady(rowB);
  const us = (n) => (n / HZ / (to - from)) * 1e6;
  const sum = (m) => [...m.values()].reduce((x, y) => x + y, 0);
  const byKind = (m) => {
    const k = new Map();
    for (const [s, n] of m) k.set(kind(s), (k.get(kind(s)) ?? 0) + n);
    return k;
  };
  const [ka, kb] = [byKind(A), byKind(B)];
  const f = (x) => x.toFixed(2);
  console.log(`${framework}: ${rowA} ${f(us(sum(A)))} µs/request, ${rowB} ${f(us(sum(B)))} µs/request (cpu-clock samples at ${HZ} Hz, requests ${from}..${to})\n`);
  console.log(`| kind of code | ${rowA} | ${rowB} | difference |`);
  console.log('| --- | ---: | ---: | ---: |');
  for (const k of [...new Set([...ka.keys(), ...kb.keys()])].sort((x, y) => (kb.get(y) ?? 0) - (ka.get(y) ?? 0) - ((kb.get(x) ?? 0) - (ka.get(x) ?? 0)))) {
    const [a, b] = [ka.get(k) ?? 0, kb.get(k) ?? 0];
    console.log(`| ${k} | ${f(us(a))} | ${f(us(b))} | ${f(us(b - a))} |`);
  }
  console.log(`\nThe ${top} symbols with the most added time, µs per request:\n`);
  console.log(`| symbol | ${rowA} | ${rowB} | difference |`);
  console.log('| --- | ---: | ---: | ---: |');
  const syms = [...new Set([...A.keys(), ...B.keys()])].sort((x, y) => (B.get(y) ?? 0) - (A.get(y) ?? 0) - ((B.get(x) ?? 0) - (A.get(x) ?? 0)));
  for (const s of syms.slice(0, top)) {
    const [a, b] = [A.get(s) ?? 0, B.get(s) ?? 0];
    console.log(`| \`${s.replace(/\|/g, '\\|').slice(0, 100)}\` | ${f(us(a))} | ${f(us(b))} | ${f(us(b - a))} |`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
