// `node bench/cpu.js [--rounds N] [--pairs N] [--requests N]` (after `npm run build`): what CPU
// sampling on request (x-miniprof-cpu: 1, issue 62) costs, on Express, Node running this script.
//
// 1. The sampled request itself: one developer GET / (the bench's 10-step page) at a time, with and
//    without `x-miniprof-cpu: 1`, alternating on the same server (pinned to CPU 0), `--requests`
//    of each; the medians of the client's latency, and their ratio.
// 2. Everyone else while samplings run back to back: the `mixed` row's method (bench/run.js): two
//    servers side by side under autocannon, each with one developer request always in flight
//    (GET /slow, ~80 ms in two steps), A's not sampled, B's sampled (a new sampling every ~80 ms,
//    the worst case a developer can cause); B's non-developer req/s over A's.
// Nothing when no one asks is bench/run.js's `before-nondev` row against the build before this
// feature (`--only express:before-nondev --baseline REV`).
import { contest, median, pairMedians, startLoader, startServer, ask, taskset } from './http/children.js';
import { DEVELOPER_HEADER } from './http/page.js';

const argv = process.argv.slice(2);
const opt = (name, def) => {
  const i = argv.indexOf(name);
  return i === -1 ? def : Number(argv[i + 1]);
};
const rounds = opt('--rounds', 3);
const pairs = opt('--pairs', 2);
const requests = opt('--requests', 40);

async function latency(port, headers) {
  const t = process.hrtime.bigint();
  const res = await fetch(`http://127.0.0.1:${port}/`, { headers });
  const body = await res.text();
  if (res.status !== 200) throw new Error(`GET / answered ${res.status}`);
  return { ms: Number(process.hrtime.bigint() - t) / 1e6, sampled: body.includes('\ncpu: ') };
}

async function sampledRequest() {
  const { cp, first } = await startServer(process.execPath, 'express', 'nondev');
  try {
    const dev = { [DEVELOPER_HEADER]: '1' };
    const cpu = { ...dev, 'x-miniprof-cpu': '1' };
    for (let i = 0; i < 10; i++) await latency(first.port, i % 2 ? dev : cpu);
    const plain = [];
    const sampled = [];
    for (let i = 0; i < requests; i++) {
      plain.push((await latency(first.port, dev)).ms);
      const s = await latency(first.port, cpu);
      if (!s.sampled) throw new Error('a request with x-miniprof-cpu: 1 was not sampled');
      sampled.push(s.ms);
    }
    return { plain: median(plain), sampled: median(sampled) };
  } finally {
    cp.send({ cmd: 'exit' });
  }
}

const started = new Date();
const one = await sampledRequest();
const loaders = [(await startLoader()).cp, (await startLoader()).cp];
let m;
try {
  m = await contest({
    framework: 'express',
    a: { config: 'nondev', hold: true },
    b: { config: 'nondev', hold: true, holdHeaders: { 'x-miniprof-cpu': '1' } },
    pairs,
    rounds,
    seconds: 3,
    connections: 25,
    loaders,
  });
} finally {
  for (const l of loaders) l.send({ cmd: 'exit' });
}
const ratios = m.map((r) => r.b.rps / r.a.rps);
const perPair = pairMedians(m, ratios);
const fmt = (x) => x.toFixed(3);
console.log(`${started.toISOString()} - node bench/cpu.js --rounds ${rounds} --pairs ${pairs} --requests ${requests} - Node ${process.version} - taskset ${taskset ? 'yes' : 'no'}`);
console.log('');
console.log('| CPU sampling (Express) | measured |');
console.log('| --- | --- |');
console.log(`| a developer's GET / (10 steps), sampled over not sampled: median latency, one at a time, ${requests} each | ${one.sampled.toFixed(2)} / ${one.plain.toFixed(2)} ms, ×${(one.sampled / one.plain).toFixed(2)} |`);
console.log(`| non-developer req/s while a developer request is always in flight, sampled (a new sampling every ~80 ms) over not sampled (\`mixed\` method, ${pairs} pairs × ${rounds} rounds) | ×${fmt(median(ratios))} (pairs ${perPair.map(fmt).join(', ')}; req/s ${Math.round(median(m.map((r) => r.b.rps)))} / ${Math.round(median(m.map((r) => r.a.rps)))}) |`);
process.exit(0);
