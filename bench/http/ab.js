// `node bench/http/ab.js <express|fastify> <build A> <build B> [rounds] [repeats]`: two builds of
// miniprof (directories laid out like `dist/`, inside the repository so that their imports find its
// node_modules: `cp -r dist scratch/a` before a change, `npm run build`, then `dist` as B) serving a
// developer request side by side, with the unprofiled page and the budget's reference profiler
// (bench/reference.js) for scale. Same setup as bench/http/decompose.js (servers pinned to CPU 0,
// autocannon on CPU 1, 50 connections, 2 s slices). MP_OPTS='{"results":false}' passes options.
//
// Why the repeats: on this VM the same server's ratio moves by 0.1-0.2 between runs a few minutes
// apart, but rows of one run share its phase. Each of reference, A and B is started `repeats`
// times (default 3) and the copies are interleaved (ref A B ref A B ...): copies of one build
// agreeing within a run is what tells a real difference of 3-5 µs from the phase (bench/RESULTS.md
// Run 13). Each row is the median over the rounds of its ratio to the unprofiled server in the
// same round, and of its server CPU µs per request over that server's.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { median, perRound, sideBySide } from './children.js';

const [framework, a, b, rounds = '7', repeats = '3'] = process.argv.slice(2);
if (!['express', 'fastify'].includes(framework) || a === undefined || b === undefined || !(Number(rounds) > 0) || !(Number(repeats) > 0)) {
  throw new Error('usage: ab.js <express|fastify> <build A> <build B> [rounds] [repeats]');
}
for (const dir of [a, b]) {
  if (!existsSync(resolve(dir, 'src/index.js'))) throw new Error(`${dir} is not a miniprof build (no src/index.js)`);
}
const dev = (dir) => ({ config: 'dev', env: { MINIPROF_BENCH_DIST: resolve(dir), MP_OPTS: process.env.MP_OPTS ?? '{}' } });
const ROWS = [['no profiler', { config: 'none' }]];
for (let i = 0; i < Number(repeats); i++) {
  ROWS.push(['the reference', { config: 'ref' }], [`A: ${a}`, dev(a)], [`B: ${b}`, dev(b)]);
}

const slices = await sideBySide(framework, ROWS.map(([, row]) => row), Number(rounds));
const none = slices[0];
console.log(`${framework}, Node ${process.version}, ${rounds} rounds, ${repeats} copies of each row, ${new Date().toISOString()}\n`);
console.log('| server | × unprofiled (median per round) | CPU µs per request over unprofiled | GC pause µs per request |\n| --- | ---: | ---: | ---: |');
ROWS.forEach(([label], i) => {
  const ratio = perRound(slices[i], none, (x, n) => x.rps / n.rps);
  const over = perRound(slices[i], none, (x, n) => x.cpuUs - n.cpuUs);
  const gc = median(slices[i].map((x) => x.gcUs));
  console.log(`| ${label} | ${ratio.toFixed(3)} | ${i === 0 ? '' : `+${over.toFixed(1)}`} | ${gc.toFixed(1)} |`);
});
