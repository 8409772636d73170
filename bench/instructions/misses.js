// `node bench/instructions/misses.js <express|fastify> <configA> <configB> [--load] [--dist-b PATH]
// [--from 2000] [--to 6000] [--top 30] [--sort mis|I1|D1|Ir] [--node PATH]`: per request, the
// instruction-cache misses, data-cache misses and mispredicted branches of two rows of
// bench/instructions/run.js, in total and by function, JavaScript functions included.
//
// Why: two rows can execute the same number of instructions and still cost different CPU time.
// Run 32 (bench/RESULTS.md) found a Fastify developer request with the store off at the reference
// profiler's instruction count, 14-17% dearer under load, and this showed why: 9% more
// instruction-cache misses and 15% more mispredicted branches, spread over some 40 functions.
// functions.js cannot say which JavaScript function does it (JIT code has no symbols under
// valgrind); here callgrind keeps each instruction's address and V8's `--perf-basic-prof` map
// names the code at it.
//
// Callgrind with its cache and branch simulation (32 KB 8-way L1s, valgrind's model, not this
// CPU's), the harness's settings as run.js has them (`--load`: 25 in flight on the real clock).
// Each figure is (count at --to minus count at --from) / (to - from). V8's optimizing compiler
// still works between the default 2,000 and 6,000 requests, so its functions show; a wider
// window takes longer (the defaults take about 3.5 min per row here, two runs at a time).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { harnessEnv, needValgrind, option, run } from './cachegrind.js';

const argv = process.argv.slice(2);
const opt = (name, def) => option(argv, name, def);
const [framework, configA, configB] = argv;
if (!['express', 'fastify'].includes(framework) || configA === undefined || configB === undefined) {
  console.error('usage: node bench/instructions/misses.js <express|fastify> <configA> <configB> [--load] [--dist-b PATH] [--from N] [--to N] [--top N] [--sort mis|I1|D1|Bc|Ir]');
  process.exit(2);
}
// Resolved here: valgrind runs in a temporary directory (below), where a relative path finds nothing.
const givenNode = opt('--node', process.execPath);
const node = givenNode.includes('/') ? resolve(givenNode) : givenNode;
const from = Number(opt('--from', '2000'));
const to = Number(opt('--to', '6000'));
const top = Number(opt('--top', '30'));
const sortBy = opt('--sort', 'mis');
const distB = opt('--dist-b', undefined);
const load = argv.includes('--load');
// What each row shows, from callgrind's events: mispredictions are conditional and indirect together.
const SHOWN = ['Ir', 'I1', 'D1', 'Bc', 'mis'];
if (!(to > from && from > 0)) throw new Error(`--from and --to: need 0 < from < to, got ${from} and ${to}`);
if (!SHOWN.includes(sortBy)) throw new Error(`--sort: one of ${SHOWN.join(', ')}, got ${sortBy}`);
await needValgrind();

const harness = join(dirname(fileURLToPath(import.meta.url)), 'harness.js');
const dir = mkdtempSync(join(tmpdir(), 'miniprof-misses-'));

/** One callgrind run; resolves its output file and the perf map of the process it ran. */
async function callgrind(config, requests, dist) {
  const outFile = join(dir, `${config}-${requests}-${dist === undefined ? 'a' : 'b'}.out`);
  const { stderr } = await run(
    'valgrind',
    ['--tool=callgrind', '--cache-sim=yes', '--branch-sim=yes', '--dump-instr=yes', `--callgrind-out-file=${outFile}`,
      node, '--perf-basic-prof', '--predictable', '--predictable-gc-schedule', harness, framework, config, String(requests)],
    // In the temporary directory: with --perf-basic-prof, V8 also writes an isolate log to the cwd.
    { maxBuffer: 1 << 26, env: harnessEnv(load, dist), cwd: dir },
  );
  // Under valgrind the program keeps valgrind's process id, which names V8's map.
  const pid = /==(\d+)==/.exec(stderr)?.[1];
  if (pid === undefined) throw new Error(`no process id in valgrind's output for ${config}:\n${stderr.slice(-2000)}`);
  return { outFile, mapFile: `/tmp/perf-${pid}.map` };
}

/** `addr size name` lines, sorted by address; later lines win where code was collected and its space reused. */
function perfMap(file) {
  const entries = readFileSync(file, 'utf8').trim().split('\n').map((line, order) => {
    const i = line.indexOf(' ');
    const j = line.indexOf(' ', i + 1);
    return { start: parseInt(line.slice(0, i), 16), size: parseInt(line.slice(i + 1, j), 16), name: line.slice(j + 1), order };
  });
  entries.sort((x, y) => x.start - y.start || x.order - y.order);
  return (addr) => {
    let lo = 0;
    let hi = entries.length - 1;
    let at = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (entries[mid].start <= addr) {
        at = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    let best = null;
    for (let k = at; k >= 0 && k > at - 64; k--) {
      const e = entries[k];
      if (addr < e.start + e.size && (best === null || e.order > best.order)) best = e;
    }
    // The address itself would split one function into as many rows as its copies.
    return best === null ? null : best.name.replace(/0x[0-9a-f]+/g, '');
  };
}

/**
 * Exclusive costs by function from a callgrind file written with `--dump-instr=yes` (positions
 * `instr line`; `+n`/`-n` relative to the last, `*` the same). The line after `calls=` is the
 * call's inclusive cost, skipped so that each instruction counts once.
 */
function costsOf({ outFile, mapFile }) {
  const nameAt = perfMap(mapFile);
  const names = { ob: new Map(), fn: new Map() };
  const named = (kind, v) => {
    const m = /^\((\d+)\)(?: (.*))?$/.exec(v);
    if (m === null) return v;
    if (m[2] !== undefined) names[kind].set(m[1], m[2]);
    return names[kind].get(m[1]);
  };
  let events = null;
  let ob = '';
  let fn = '';
  let addr = 0;
  let skip = false;
  const byFn = new Map();
  for (const line of readFileSync(outFile, 'utf8').split('\n')) {
    if (line.startsWith('events:')) events = line.slice(7).trim().split(/\s+/);
    else if (line.startsWith('ob=')) ob = named('ob', line.slice(3));
    else if (line.startsWith('fn=')) fn = named('fn', line.slice(3));
    else if (line.startsWith('cob=')) named('ob', line.slice(4));
    else if (line.startsWith('cfn=')) named('fn', line.slice(4));
    else if (line.startsWith('calls=')) skip = true;
    else if (/^(0x|[+*-])/.test(line)) {
      const parts = line.split(' ');
      const p = parts[0];
      if (p.startsWith('0x')) addr = parseInt(p, 16);
      else if (p[0] === '+') addr += parseInt(p.slice(1), 16);
      else if (p[0] === '-') addr -= parseInt(p.slice(1), 16);
      if (skip) {
        skip = false;
        continue;
      }
      // JIT code: callgrind names it by address, in no object file it knows.
      const jit = fn === '???' || /^0x[0-9a-f]+$/.test(fn) || ob.includes('???');
      const key = jit ? (nameAt(addr) ?? 'JIT code not in the map') : `${fn} [${ob.split('/').pop()}]`;
      let row = byFn.get(key);
      if (row === undefined) byFn.set(key, (row = new Float64Array(events.length)));
      // Two position columns (instr, line), then the events; trailing zeros are left out.
      for (let e = 0; e < events.length; e++) if (parts[2 + e]) row[e] += Number(parts[2 + e]);
    }
  }
  const at = (name) => events.indexOf(name);
  const pick = (r) => ({ Ir: r[at('Ir')], I1: r[at('I1mr')], D1: r[at('D1mr')] + r[at('D1mw')], Bc: r[at('Bc')], mis: r[at('Bcm')] + r[at('Bim')] });
  return new Map([...byFn].map(([k, r]) => [k, pick(r)]));
}

const ZERO = Object.fromEntries(SHOWN.map((e) => [e, 0]));

/** Per function, `b` minus `a` over `over`: a function missing from one side counts as zero there. */
function minus(b, a, over = 1) {
  const out = new Map();
  for (const k of new Set([...a.keys(), ...b.keys()])) {
    const x = a.get(k) ?? ZERO;
    const y = b.get(k) ?? ZERO;
    out.set(k, Object.fromEntries(SHOWN.map((e) => [e, (y[e] - x[e]) / over])));
  }
  return out;
}

async function perRequest(config, dist) {
  const runs = await Promise.all([callgrind(config, from, dist), callgrind(config, to, dist)]);
  const [a, b] = runs.map(costsOf);
  for (const r of runs) rmSync(r.mapFile, { force: true });
  return minus(b, a, to - from);
}

const sum = (rows) => Object.fromEntries(SHOWN.map((e) => [e, [...rows.values()].reduce((s, r) => s + r[e], 0)]));
const int = (x) => Math.round(x).toLocaleString('en-US');
try {
  const a = await perRequest(configA, undefined);
  const b = await perRequest(configB, distB);
  const ta = sum(a);
  const tb = sum(b);
  const labelB = distB === undefined ? configB : `${configB} on ${distB}`;
  console.log(`${framework}, per request between ${from} and ${to} requests${load ? ', under load (25 in flight, real clock)' : ''}:\n`);
  console.log(`| per request | ${configA} | ${labelB} | B over A |\n| --- | ---: | ---: | ---: |`);
  const what = { Ir: 'instructions', I1: 'I1 misses', D1: 'D1 misses (reads and writes)', Bc: 'conditional branches', mis: 'mispredicted branches' };
  for (const e of SHOWN) console.log(`| ${what[e]} | ${int(ta[e])} | ${int(tb[e])} | ${(((tb[e] - ta[e]) / ta[e]) * 100).toFixed(1)}% |`);
  const rows = [...minus(b, a)];
  rows.sort((x, y) => Math.abs(y[1][sortBy]) - Math.abs(x[1][sortBy]));
  console.log(`\nB minus A by function, the ${top} largest differences in ${sortBy}:\n`);
  console.log(`| function | ${SHOWN.join(' | ')} |\n| --- |${' ---: |'.repeat(SHOWN.length)}`);
  for (const [k, d] of rows.slice(0, top)) console.log(`| ${k.slice(0, 110).replaceAll('|', '\\|')} | ${SHOWN.map((e) => int(d[e])).join(' | ')} |`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
