// `node bench/http/decompose.js <express|fastify> [rounds]`: where a developer request's server
// CPU goes, part by part, and the budget's reference profiler (bench/reference.js) split alike.
// One bench server per row, all started at once and pinned to CPU 0, the autocannon loader on
// CPU 1 (bench/http/children.js, as bench/run.js does); it loads them in turn (50 connections, 2 s
// slices, SLICE=seconds to change), round after round, and each row is the median CPU µs per
// request over the rounds, with its difference from the first (no profiler). On this shared VM a
// row moves by about ±5 µs between runs: compare rows of one run. Needs `npm run build`
// (MINIPROF_BENCH_DIST for another build).
import { fileURLToPath } from 'node:url';
import { median, perRound, sideBySide } from './children.js';

const [framework = 'fastify', rounds = '5'] = process.argv.slice(2);
if (!['express', 'fastify'].includes(framework) || !(Number(rounds) > 0)) {
  throw new Error('usage: decompose.js <express|fastify> [rounds]');
}
const bare = { results: false, htmlComment: false, serverTiming: false };
const ROWS = [
  ['no profiler', 'none', {}],
  ['promise hooks on, nothing else', 'none', {}, { execArgv: ['--import', fileURLToPath(new URL('./als-on.js', import.meta.url))] }],
  ['promise hooks on, a store entered per request (no miniprof)', 'none', {}, { execArgv: ['--import', fileURLToPath(new URL('./als-store.js', import.meta.url))] }],
  ['a profile, steps as plain calls, no outputs or store', 'dev', bare, { env: { MP_DIRECT: '1' } }],
  ['+ the 10 steps', 'dev', bare],
  ['+ Server-Timing', 'dev', { results: false, htmlComment: false }],
  ['+ the HTML comment', 'dev', { results: false }],
  ['+ the results store (the default developer request)', 'dev', {}],
  // The budget's reference profiler (bench/reference.js), split the same way.
  ['the reference: every request in a root, steps as plain calls, no outputs', 'ref', {}, { env: { MP_DIRECT: '1', REF_OUTPUTS: '0' } }],
  ['the reference: + the 10 steps', 'ref', {}, { env: { REF_OUTPUTS: '0' } }],
  ['the reference: + comment and Server-Timing (all of it)', 'ref', {}],
];

const slices = await sideBySide(
  framework,
  ROWS.map(([, config, opts, extra = {}]) => ({ config, env: { MP_OPTS: JSON.stringify(opts), ...extra.env }, execArgv: extra.execArgv })),
  Number(rounds),
);
const servers = ROWS.map(([label], i) => ({ label, cpu: slices[i].map((x) => x.cpuUs) }));
const base = median(servers[0].cpu);
// Also per round: every server of a round shares the VM's phase of that minute.
const overPerRound = (s) => perRound(s.cpu, servers[0].cpu, (c, b) => c - b);
console.log(`${framework}, Node ${process.version}, ${rounds} rounds: server CPU µs per request (median), over no profiler\n`);
console.log('| server | CPU µs/request | over no profiler | over it, per round | rounds |\n| --- | ---: | ---: | ---: | --- |');
for (const s of servers) {
  const m = median(s.cpu);
  const first = s === servers[0];
  console.log(
    `| ${s.label} | ${m.toFixed(1)} | ${first ? '' : `+${(m - base).toFixed(1)}`} | ${first ? '' : `+${overPerRound(s).toFixed(1)}`} | ${s.cpu.map((x) => x.toFixed(0)).join(' ')} |`,
  );
}
