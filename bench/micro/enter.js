// `node bench/micro/enter.js [--stores N]` (needs `npm run build`; MINIPROF_BENCH_DIST for a copy
// of dist/): what entering a callback step's store costs on the running Node, `als.run` against
// the way miniprof's steps enter (src/context.ts's runStep: `als.run` on Node <= 22, one frame
// copy on Node 24+, src/frame.ts), sync and async, in ns per call and in bytes allocated per
// call, with N AsyncLocalStorage stores in the context frame (default 1: miniprof's alone; an app
// with OpenTelemetry has at least 2). Why: on Node 24 `als.run` copies the frame twice, and that
// was most of a step's cost there (bench/RESULTS.md Run 37). Runs itself again with the flags it
// needs (a large fixed young generation, so the byte count sees no scavenge, and --expose-gc).
import { AsyncLocalStorage } from 'node:async_hooks';
import { spawnSync } from 'node:child_process';
import v8 from 'node:v8';
import { fileURLToPath } from 'node:url';
import { dist } from '../http/page.js';

const FLAGS = ['--expose-gc', '--min-semi-space-size=64', '--max-semi-space-size=64'];
const args = process.argv.slice(2);
const i = args.indexOf('--stores');
const stores = i === -1 ? 1 : Number(args[i + 1]);
if (!Number.isInteger(stores) || stores < 1 || stores > 8) throw new Error(`--stores must be a whole number from 1 to 8, got ${args[i + 1]}`);

if (typeof globalThis.gc !== 'function') {
  const r = spawnSync(process.execPath, [...FLAGS, fileURLToPath(import.meta.url), ...args], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}

const { als, runStep, stepEntering } = await import(dist('src/context.js'));
const { TimingNode } = await import(dist('src/timing.js'));

let sink = 0;
const work = () => ++sink;
const aw = async () => {
  await undefined;
  return ++sink;
};
const store = new TimingNode('bench', null, null, 0);
const ways = { 'als.run': (fn) => als.run(store, fn), "miniprof's step entering": (fn) => runStep(store, fn) };

async function timeIt(enter, fn, isAsync) {
  const batch = isAsync ? 128 : 4096;
  const samples = [];
  for (let r = 0; r < 300; r++) {
    const t0 = process.hrtime.bigint();
    if (isAsync) {
      const ps = [];
      for (let k = 0; k < batch; k++) ps.push(enter(fn));
      await Promise.all(ps);
    } else for (let k = 0; k < batch; k++) enter(fn);
    samples.push(Number(process.hrtime.bigint() - t0) / batch);
  }
  samples.sort((a, b) => a - b);
  return samples[samples.length >> 1];
}

function bytesPerCall(enter) {
  const n = 20_000;
  globalThis.gc();
  const before = v8.getHeapStatistics().used_heap_size;
  for (let k = 0; k < n; k++) enter(work);
  return (v8.getHeapStatistics().used_heap_size - before) / n;
}

// The other stores of the frame, each entered around everything below, as an app's would be.
const others = Array.from({ length: stores - 1 }, () => new AsyncLocalStorage());
const inFrames = (k, fn) => (k === others.length ? als.run(new TimingNode('root', null, null, 0), fn) : others[k].run({ k }, () => inFrames(k + 1, fn)));

await inFrames(0, async () => {
  const rows = [];
  for (const [name, enter] of Object.entries(ways)) {
    for (let w = 0; w < 3; w++) await timeIt(enter, aw, true), await timeIt(enter, work, false);
    rows.push({ name, sync: await timeIt(enter, work, false), async: await timeIt(enter, aw, true), bytes: bytesPerCall(enter) });
  }
  console.log(`Node ${process.version}, ${stores} store(s) in the frame; miniprof's steps enter with: ${stepEntering}`);
  console.log('\n| entering | sync, ns | async, ns | bytes per call (sync) |\n| --- | ---: | ---: | ---: |');
  for (const r of rows) console.log(`| ${r.name} | ${r.sync.toFixed(1)} | ${r.async.toFixed(1)} | ${r.bytes.toFixed(0)} |`);
});
