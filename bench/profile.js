// `node bench/profile.js <express|fastify> <config> [seconds] [--node PATH]`: run one bench server
// under `--cpu-prof`, load it with autocannon, and print the top functions by self time (the
// .cpuprofile is kept in bench/results/prof/ for DevTools).
import { fork } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const ni = args.indexOf('--node');
const bin = ni === -1 ? process.execPath : args.splice(ni, 2)[1];
const [framework = 'express', config = 'dev', seconds = '5'] = args;
const dir = join(here, 'results', 'prof');
mkdirSync(dir, { recursive: true });
const before = new Set(readdirSync(dir));
const cp = fork(join(here, 'http/server.js'), [framework, config], {
  execPath: bin,
  execArgv: ['--cpu-prof', `--cpu-prof-dir=${dir}`, ...(process.env.PRELOAD ? ['--import', process.env.PRELOAD] : [])],
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
const { port } = await new Promise((resolve) => cp.once('message', resolve));
const stats = () =>
  new Promise((resolve) => {
    cp.once('message', resolve);
    cp.send({ cmd: 'stats' });
  });
const a = await stats();
await autocannon({ url: `http://127.0.0.1:${port}/`, connections: Number(process.env.CONNS ?? 50), duration: Number(seconds) });
const b = await stats();
const n = b.requests - a.requests;
const cpuUs = b.cpu.user + b.cpu.system - a.cpu.user - a.cpu.system;
console.log(`${framework}/${config}: ${n} requests, ${(cpuUs / n).toFixed(1)} us server CPU per request (profiler on)`);
await new Promise((resolve) => {
  cp.once('exit', resolve);
  cp.send({ cmd: 'exit' });
});
const file = readdirSync(dir)
  .filter((f) => f.endsWith('.cpuprofile') && !before.has(f))
  .sort((a, b) => statSync(join(dir, a)).mtimeMs - statSync(join(dir, b)).mtimeMs)
  .pop();
const prof = JSON.parse(readFileSync(join(dir, file), 'utf8'));
const dt = new Map();
for (let i = 0; i < prof.samples.length; i++) dt.set(prof.samples[i], (dt.get(prof.samples[i]) ?? 0) + (prof.timeDeltas[i] ?? 0));
const self = new Map();
let total = 0;
for (const n of prof.nodes) {
  const t = dt.get(n.id) ?? 0;
  total += t;
  const cf = n.callFrame;
  const key = `${cf.functionName || '(anonymous)'} ${cf.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/miniprof\//, '').replace(/^file:\/\/\/work\/main\//, '')}:${cf.lineNumber + 1}`;
  self.set(key, (self.get(key) ?? 0) + t);
}
console.log(`${file}: ${(total / 1e3).toFixed(0)} ms sampled`);
for (const [k, t] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.TOP ?? 30))) {
  console.log(`${((100 * t) / total).toFixed(1).padStart(5)}%  ${k}`);
}
