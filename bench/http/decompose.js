// `node bench/http/decompose.js <express|fastify> [rounds]`: where a developer request's server
// CPU goes, part by part. One bench server per row, all started at once; autocannon (50
// connections, 2 s slices, SLICE=seconds to change) loads them in turn, round after round, and
// each row is the median CPU µs per request over the rounds, with its difference from the first
// (no profiler). On this shared VM a row moves by about ±5 µs between runs: compare rows of one
// run. Needs `npm run build` (MINIPROF_BENCH_DIST for another build).
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const [framework = 'fastify', rounds = '5'] = process.argv.slice(2);
if (!['express', 'fastify'].includes(framework) || !(Number(rounds) > 0)) {
  throw new Error('usage: decompose.js <express|fastify> [rounds]');
}
const bare = { results: false, htmlComment: false, serverTiming: false };
const ROWS = [
  ['no profiler', 'none', {}],
  ['promise hooks on, nothing else', 'none', {}, { execArgv: ['--import', fileURLToPath(new URL('./als-on.js', import.meta.url))] }],
  ['a profile, steps as plain calls, no outputs or store', 'dev', bare, { env: { MP_DIRECT: '1' } }],
  ['+ the 10 steps', 'dev', bare],
  ['+ Server-Timing', 'dev', { results: false, htmlComment: false }],
  ['+ the HTML comment', 'dev', { results: false }],
  ['+ the results store (the default developer request)', 'dev', {}],
];

const servers = [];
for (const [label, config, opts, extra = {}] of ROWS) {
  const cp = fork(fileURLToPath(new URL('./server.js', import.meta.url)), [framework, config], {
    env: { ...process.env, MP_OPTS: JSON.stringify(opts), ...extra.env },
    execArgv: extra.execArgv ?? [],
  });
  const { port } = await new Promise((resolve) => cp.once('message', resolve));
  servers.push({ label, cp, port, cpu: [] });
}
const stats = (cp) =>
  new Promise((resolve) => {
    cp.once('message', resolve);
    cp.send({ cmd: 'stats' });
  });
const load = (port, duration) => autocannon({ url: `http://127.0.0.1:${port}/`, connections: 50, duration });
for (const s of servers) await load(s.port, 1);
for (let r = 0; r < Number(rounds); r++) {
  for (const s of servers) {
    const a = await stats(s.cp);
    await load(s.port, Number(process.env.SLICE ?? 2));
    const b = await stats(s.cp);
    s.cpu.push((b.cpu.user + b.cpu.system - a.cpu.user - a.cpu.system) / (b.requests - a.requests));
  }
}
const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
const base = median(servers[0].cpu);
console.log(`${framework}, Node ${process.version}, ${rounds} rounds: server CPU µs per request (median), over no profiler\n`);
console.log('| server | CPU µs/request | over no profiler | rounds |\n| --- | ---: | ---: | --- |');
for (const s of servers) {
  const m = median(s.cpu);
  console.log(`| ${s.label} | ${m.toFixed(1)} | ${s === servers[0] ? '' : `+${(m - base).toFixed(1)}`} | ${s.cpu.map((x) => x.toFixed(0)).join(' ')} |`);
  s.cp.send({ cmd: 'exit' });
}
