// `node bench/http/amplify.js <express|fastify> [rounds]`: what an added cost of a known size does
// to the HTTP bench's figures. Rows: the unprofiled page, the same page burning n µs of plain
// JavaScript per request (SPIN_US, bench/http/server.js; SPINS=5,10,20,40 to choose), every request
// run inside an AsyncLocalStorage with nothing else (bench/http/als-store.js: what any ALS-based
// profiler pays before it does anything), the budget's reference profiler (bench/reference.js),
// and miniprof's developer request with its results store off and on (the default). Same
// setup as bench/http/decompose.js (servers pinned to CPU 0, autocannon on CPU 1, 50 connections,
// 2 s slices, medians over the rounds).
//
// Why: if n µs of spinning grows the server's CPU per request by more than n, the rest is the
// kernel's (a slower server finds the loader asleep more often, and waking it is charged to the
// server's write), and every added cost pays it, ours or anyone's. The spin rows show the ratio
// the budget's figures would be for work of that size with nothing of a profiler in it.
import { fileURLToPath } from 'node:url';
import { median, perRound, sideBySide } from './children.js';

const [framework = 'fastify', rounds = '5'] = process.argv.slice(2);
if (!['express', 'fastify'].includes(framework) || !(Number(rounds) > 0)) {
  throw new Error('usage: amplify.js <express|fastify> [rounds]');
}
const SPINS = (process.env.SPINS ?? '5,10,20,40').split(',').map(Number);
const alsStore = ['--import', fileURLToPath(new URL('./als-store.js', import.meta.url))];
const ROWS = [
  ['no profiler', 'none', 0],
  ...SPINS.map((us) => [`no profiler, + ${us} µs of JavaScript per request`, 'none', us]),
  // The floor of any AsyncLocalStorage-based profiler: on Node 20, the promise hooks.
  ['no profiler, every request inside `als.run` (no miniprof)', 'none', 0, alsStore],
  ['the reference profiler (bench/reference.js): comment + Server-Timing, nothing else', 'ref', 0],
  ['developer request (miniprof), results store off', 'dev-nostore', 0],
  // What reading the real clock costs (and the event-loop sampler, which runs only on it).
  ['developer request (miniprof), results store off, profiles on a counter clock', 'dev-nostore', 0, undefined, { MP_COUNTER_CLOCK: '1' }],
  ['developer request (miniprof, the default outputs and store)', 'dev', 0],
];

const slices = await sideBySide(
  framework,
  ROWS.map(([, config, spin, execArgv, env]) => ({ config, env: { SPIN_US: String(spin), ...env }, execArgv })),
  Number(rounds),
);
const servers = ROWS.map(([label, , spin], i) => ({ label, spin, rows: slices[i] }));
const seconds = Number(process.env.SLICE ?? 2);
const base = servers[0];
// Ratios per round (each row against the unprofiled server of the same round), then the median.
const ratio = (s) => perRound(s.rows, base.rows, (r, b) => r.rps / b.rps);
const cpu = (s) => median(s.rows.map((r) => r.cpuUs));
const sys = (s) => median(s.rows.map((r) => r.sysUs));
console.log(`${framework}, Node ${process.version}, ${rounds} rounds of ${seconds} s; medians\n`);
console.log('| server | req/s | ratio | CPU µs/request | of which kernel | CPU over no profiler | user CPU over no profiler | over the spin |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const s of servers) {
  // Differences per round, then the median: the VM's phase moves every server of a round alike.
  const over = perRound(s.rows, base.rows, (r, b) => r.cpuUs - b.cpuUs);
  // User CPU apart: the kernel's share grows with any added work (waking the loader, above), so
  // user time is the closer measure of the work a row's code adds.
  const userOver = perRound(s.rows, base.rows, (r, b) => r.cpuUs - r.sysUs - (b.cpuUs - b.sysUs));
  const cells = [
    s.label,
    median(s.rows.map((r) => r.rps)).toFixed(0),
    `×${ratio(s).toFixed(3)}`,
    cpu(s).toFixed(1),
    sys(s).toFixed(1),
    s === base ? '' : `${over >= 0 ? '+' : ''}${over.toFixed(1)}`,
    s === base ? '' : `${userOver >= 0 ? '+' : ''}${userOver.toFixed(1)}`,
    s.spin > 0 ? `×${(over / s.spin).toFixed(2)}` : '',
  ];
  console.log(`| ${cells.join(' | ')} |`);
}
