// `node bench/http/contest.js <express|fastify|koa|hono|http> <configA> <configB> [pairs] [rounds] [--node PATH]
// [--keep N] [--env-a JSON] [--env-b JSON] [--flags-a JSON] [--flags-b JSON] [--idle-ms N]
// [--connections N] [--hold both]`: two bench servers (bench/http/server.js configurations, e.g. `hook nondev`)
// loaded at the same time, both pinned to CPU 0, each by its own autocannon loader on CPU 1
// (`--connections`, default 25 each, SLICE seconds, default 3). `pairs` (default 4) fresh pairs
// of server processes, each warmed by two unmeasured slices, then `rounds` (default 3) rounds.
// Each round reports, per server, req/s and CPU µs per request; the summary gives A's CPU per
// request over B's and B's throughput over A's, each as the median over all rounds and as each
// pair's own median.
//
// Why: loaded one server at a time, in turns, the same server's throughput on this shared VM
// moves 10-30% from one slice to the next, so a 3-5% difference (the non-developer targets) is
// below what that resolves: one such run gave miniprof's non-developer Fastify row ×0.87 with
// rounds from ×0.78 to ×1.13.
// Here both servers share every moment of the VM's phase: when the host steals time or slows
// the core, it does so to both. A's CPU µs per request over B's is the figure to read: it holds
// whichever side is the bottleneck. Throughput, B over A, equals it only while CPU 0 is saturated
// (the `CPU 0 busy` column near 100%); the kernel then shares the core between the two servers.
// Below that the loaders are part of the bottleneck and throughput drifts towards 1.
// The loaders swap servers every round, so neither loader's own speed favours one side.
// `contest.js <fw> none none` is the control: it shows the method's own spread. `--env-a` and
// `--env-b` add environment variables to one side's server only: two builds of the same
// configuration (`--env-b '{"MINIPROF_BENCH_DIST":"scratch/var-x"}'`), or one of server.js's
// switches (`MP_COUNTER_CLOCK`, `MP_OWN_CLOCK`, `MP_OPTS`). `--flags-a` and `--flags-b` (a JSON
// array) are node flags for one side, e.g. `'["--cpu-prof","--cpu-prof-dir=/tmp/prof"]'`, which
// NODE_OPTIONS does not take. `--idle-ms N` leaves both servers idle N ms after both have
// started, before the first load (default 0: the load starts once the second is up, so the first
// has idled through its twin's start-up, about 1 s). `--hold both` keeps one developer request
// in flight against each server at all times (bench/run.js's mixed-traffic rows; children.js `hold`).
//
// Why fresh pairs: a server process can run 10-20% slower than another of the same build and
// configuration, in every round of its life, while its rounds agree within 1-2%. Seen in about one
// Fastify non-developer process in six (`nondev nondev` pairs split up to ×0.87 and ×1.24), never
// beyond 6% in `none none`. Not where the memory landed (it still happens with address-space
// randomization off and V8's seeds fixed), nor GC or pretenuring; what differed in the slow
// processes was the order in which V8 optimized Node's own tick-queue functions. It comes with
// miniprof being loaded and registered, even with its hook and steps cut out. So the difference
// between pairs is the spread to quote, and the median over pairs the figure. The engine is `contest` in children.js, which bench/run.js uses
// for its HTTP rows.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { contest, median, pairMedians, startLoader, taskset } from './children.js';

const argv = process.argv.slice(2);
const named = new Map();
const pos = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i].startsWith('--')) named.set(argv[i], argv[++i]);
  else pos.push(argv[i]);
}
const bin = named.get('--node') ?? process.execPath;
/** `--env-*` is a JSON object, `--flags-*` a JSON array of strings. */
const jsonOf = (name, array) => {
  const v = named.get(name);
  if (v === undefined) return undefined;
  const o = JSON.parse(v);
  const ok = array ? Array.isArray(o) && o.every((x) => typeof x === 'string') : o !== null && typeof o === 'object' && !Array.isArray(o);
  if (!ok) throw new Error(`${name} must be a JSON ${array ? 'array of strings' : 'object'}, got ${v}`);
  return o;
};
// `--keep N`: both servers keep N small objects from start-up (server.js KEEP_OBJECTS), as
// bench/run.js's rows do (20,000 by default there; here 0 unless given). --env-* go on top.
/** A named option that must be a whole number of `unit`, or undefined when not given. */
const wholeOf = (name, unit) => {
  const v = named.get(name);
  if (v !== undefined && !/^\d+$/.test(v)) throw new Error(`${name} must be a whole number of ${unit}, got ${v}`);
  return v;
};
const keepArg = wholeOf('--keep', 'objects');
const keepEnv = keepArg === undefined ? {} : { KEEP_OBJECTS: String(keepArg) };
const withKeep = (env) => (keepArg === undefined && env === undefined ? undefined : { ...keepEnv, ...env });
const envA = withKeep(jsonOf('--env-a', false));
const envB = withKeep(jsonOf('--env-b', false));
const flagsA = jsonOf('--flags-a', true);
const flagsB = jsonOf('--flags-b', true);
const idleArg = wholeOf('--idle-ms', 'milliseconds') ?? '0';
const holdArg = named.get('--hold');
if (holdArg !== undefined && holdArg !== 'both') throw new Error(`--hold takes 'both', got ${holdArg}`);
const held = holdArg === 'both';
const [framework, configA, configB, pairsArg = '4', roundsArg = '3'] = pos;
const pairs = Number(pairsArg);
const rounds = Number(roundsArg);
if (!['express', 'fastify', 'koa', 'hono', 'http'].includes(framework) || configA === undefined || configB === undefined || !(pairs > 0) || !(rounds > 0) || !existsSync(bin)) {
  console.error('usage: node bench/http/contest.js <express|fastify|koa|hono|http> <configA> <configB> [pairs] [rounds] [--node PATH] [--keep N] [--env-a JSON] [--env-b JSON] [--flags-a JSON] [--flags-b JSON] [--idle-ms N] [--connections N] [--hold both]');
  process.exit(2);
}
if (!taskset) console.error('[contest] no taskset: servers and loaders are not pinned, and the figures mean less');
const seconds = Number(process.env.SLICE ?? 3);
// Fewer connections mean fewer requests in flight at once, so less of each request's garbage is
// still live when a scavenge comes (2 against 25 did not move a developer request).
const CONNECTIONS = Number(wholeOf('--connections', 'connections') ?? '25');
if (!(CONNECTIONS > 0)) throw new Error(`--connections must be at least 1, got ${CONNECTIONS}`);

const loaders = [(await startLoader()).cp, (await startLoader()).cp];
let measured;
try {
  measured = await contest({
    bin,
    framework,
    a: { config: configA, env: envA, execArgv: flagsA, hold: held },
    b: { config: configB, env: envB, execArgv: flagsB, hold: held },
    pairs,
    rounds,
    seconds,
    connections: CONNECTIONS,
    loaders,
    idleMs: Number(idleArg),
  });
} finally {
  for (const l of loaders) l.send({ cmd: 'exit' });
}
const pairOf = measured.map((m) => m.pair);

const fmt = (x, d = 3) => x.toFixed(d);
const rps = measured.map(({ a, b }) => b.rps / a.rps);
const cpu = measured.map(({ a, b }) => a.cpuUs / b.cpuUs);
const busy = measured.map(({ a, b, wallUs }) => (a.cpuTotal + b.cpuTotal) / wallUs);
const errors = measured.reduce((n, { a, b }) => n + a.errors + b.errors, 0);
const version = bin === process.execPath ? process.version : execFileSync(bin, ['--version']).toString().trim();
const label = (config, env, flags) => [config, env && JSON.stringify(env), flags?.join(' ')].filter(Boolean).join(' ');
console.log(`${framework}, Node ${version}, ${label(configA, envA, flagsA)} (A) and ${label(configB, envB, flagsB)} (B) under load at once, ${pairs} pairs of processes, ${rounds} rounds of ${seconds} s each, ${CONNECTIONS} connections each${idleArg !== '0' ? `, ${idleArg} ms idle before load` : ''}${held ? ', one developer request held open against each' : ''}, ${new Date().toISOString()}\n`);
// The young generation's size is there because V8 grows it under load, each process on its own
// schedule (on Node 24 for tens of seconds, to 128 MB here). On Node 24 two identical miniprof
// servers of one pair differed by up to 27% in CPU per request, and only a fixed GC schedule
// (a fixed young generation, `--predictable-gc-schedule`) made them agree (Run 27).
const mb = (bytes) => (bytes === undefined ? '?' : String(Math.round(bytes / 1048576)));
// GC pauses per request as the servers' PerformanceObserver saw them (main thread only), all and
// mark-compact's alone, with the round's count of mark-compacts (and, below, scavenges per 1,000
// requests), so that a row's difference can be set against what its GC took.
console.log('| pair | round | A req/s | B req/s | A CPU µs/req | B CPU µs/req | B/A req/s | A/B CPU per request | CPU 0 busy | young gen. A / B, MB | GC µs/req A / B | of it mark-compact A / B (count) |');
console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
measured.forEach(({ a, b }, i) => {
  console.log(
    `| ${pairOf[i] + 1} | ${(i % rounds) + 1} | ${Math.round(a.rps)} | ${Math.round(b.rps)} | ${fmt(a.cpuUs, 1)} | ${fmt(b.cpuUs, 1)} | ${fmt(rps[i])} | ${fmt(cpu[i])} | ${Math.round(busy[i] * 100)}% | ${mb(a.youngBytes)} / ${mb(b.youngBytes)} | ` +
      `${fmt(a.gcUs, 2)} / ${fmt(b.gcUs, 2)} | ${fmt(a.majorGcUs, 2)} / ${fmt(b.majorGcUs, 2)} (${a.majorGcs} / ${b.majorGcs}) |`,
  );
});
const perPair = (xs) => pairMedians(measured, xs).map((x) => fmt(x)).join(', ');
console.log(
  `\nB against A: CPU per request ×${fmt(median(cpu))} (A's CPU µs per request over B's, below 1 when B costs more; median of ${measured.length} rounds; each pair's median: ${perPair(cpu)}), ` +
    `throughput ×${fmt(median(rps))} (each pair's median: ${perPair(rps)})${errors > 0 ? `; ${errors} errors or non-2xx` : ''}`,
);
const gcOf = (side, key) => fmt(median(measured.map((m) => m[side][key])), 2);
console.log(
  `GC µs per request, median of rounds: A ${gcOf('a', 'gcUs')} (mark-compact ${gcOf('a', 'majorGcUs')}), B ${gcOf('b', 'gcUs')} (mark-compact ${gcOf('b', 'majorGcUs')}); ` +
    `scavenges per 1,000 requests: A ${gcOf('a', 'scavengesPer1000')}, B ${gcOf('b', 'scavengesPer1000')}`,
);
// The kernel's share (system time: the socket reads and the response's writev, which on loopback
// carries the TCP work of both ends) apart from the rest, so that a difference in CPU per request
// can be put on the server's own code or on the bytes and syscalls it asks for.
const userOf = (side) => fmt(median(measured.map((m) => m[side].cpuUs - m[side].sysUs)), 2);
console.log(
  `System CPU µs per request, median of rounds: A ${gcOf('a', 'sysUs')}, B ${gcOf('b', 'sysUs')}; ` +
    `the rest (user): A ${userOf('a')}, B ${userOf('b')}; ` +
    `minor page faults per 1,000 requests: A ${gcOf('a', 'faultsPer1000')}, B ${gcOf('b', 'faultsPer1000')}`,
);
