// `node bench/instructions/steps.js [--rows ours.sync,ref.sync,...] [--dist-b DIR] [--node PATH]
// [--from 20000] [--to 60000]`: instructions per call of a step, counted by valgrind (cachegrind,
// no cache simulation) under `node --predictable`, beside the floor it stands on (`als.run`, two
// clock reads) and the reference profiler's step (bench/reference.js), all on Node's real clock.
// The `render.*` rows render the bench page's profile (bench/http/page.js, on a counter clock) as
// the HTML comment and as the Server-Timing value, each read to its last character so that the
// count includes making the string flat, as sending it does.
// With --dist-b, a second build (a copy of dist/) is counted beside the first.
//
// Why: bench/micro times a step to ±5-10% on this VM in a calm minute and far worse in a slow
// one, so a change of a few ns cannot be seen there. These counts repeat to a few instructions.
// Each figure is the difference of two runs (--to minus --from calls) over the calls between
// them, so start-up and JIT compilation cancel out. Instructions are not time (a clock read is
// ~440 of them under valgrind, ~44 ns natively): read them for a change, not as nanoseconds.
// A row's count also depends on this file's own code around it, which decides what V8 inlines
// into the row (reshaping the loop's helpers moved the sync step by ~150): compare builds within
// one run (`--dist-b`), not against a figure taken with another version of this file.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cachegrindScript, instructionCount, needValgrind, option } from './cachegrind.js';

const here = fileURLToPath(import.meta.url);
const argv = process.argv.slice(2);
const ROWS = ['bare.sync', 'als.sync', 'floor.sync', 'ref.sync', 'ours.sync', 'ours.using', 'bare.async', 'als.async', 'floor.async', 'ref.async', 'ours.async', 'ours.nested3', 'ours.page', 'render.comment', 'render.header'];

if (argv[0] === '--child') await child(argv[1], Number(argv[2]));
else await main();

async function main() {
  const rows = option(argv, '--rows', ROWS.join(',')).split(',');
  const node = option(argv, '--node', process.execPath);
  const from = Number(option(argv, '--from', '20000'));
  const to = Number(option(argv, '--to', '60000'));
  const distB = option(argv, '--dist-b', undefined);
  // The build under test (MINIPROF_BENCH_DIST or dist/), then --dist-b's.
  const builds = [process.env.MINIPROF_BENCH_DIST];
  if (distB !== undefined) builds.push(distB);
  await needValgrind();
  const count = async (row, n, dist) => {
    const env = { ...process.env };
    if (dist !== undefined) env.MINIPROF_BENCH_DIST = resolve(dist);
    return instructionCount(await cachegrindScript({ node, script: here, args: ['--child', row, String(n)], env }), row);
  };
  console.log(`${node === process.execPath ? process.version : node}, instructions per call, calls ${from}..${to}, \`node bench/instructions/steps.js\`\n`);
  console.log(distB === undefined ? '| row | instructions |\n| --- | ---: |' : `| row | this build (A) | ${distB} (B) | B − A |\n| --- | ---: | ---: | ---: |`);
  for (const row of rows) {
    const cells = [];
    for (const dist of builds) {
      // Two valgrind processes at once, one per core.
      const [a, b] = await Promise.all([count(row, from, dist), count(row, to, dist)]);
      cells.push(Math.round((b - a) / (to - from)));
    }
    if (cells.length === 2) cells.push(cells[1] - cells[0]);
    console.log(`| ${row} | ${cells.map((c) => c.toLocaleString('en-US')).join(' | ')} |`);
  }
}

/** `n` calls of one row, awaited one at a time, inside one open profile emptied every 512 steps. */
async function child(row, n) {
  const { dist, page } = await import(join(dirname(here), '../http/page.js'));
  const { floorSteps, referenceStep } = await import(join(dirname(here), '../reference.js'));
  const { step, withProfile, renderHtmlComment, renderServerTiming } = await import(dist('src/index.js'));
  const { als, runInProfile, closeProfile } = await import(dist('src/context.js'));
  const { Profile } = await import(dist('src/profile.js'));
  const { resolveCore } = await import(dist('src/options.js'));
  let sink = 0;
  const work = () => ++sink;
  const aw = async () => {
    await undefined;
    return ++sink;
  };
  const cfg = resolveCore({ maxSteps: 1_000_000, machine: 'bench' });
  const profile = new Profile('bench', cfg);
  const fresh = () => {
    profile.root.children = null;
    profile.count = 0;
  };
  let k = 0;
  const tick = () => {
    if (++k === 512) {
      k = 0;
      fresh();
    }
  };
  if (row.startsWith('render.')) {
    let t = 0;
    const { profile: pageProfile } = await withProfile('GET /', () => page(step), { clock: () => (t += 0.013), machine: 'bench' });
    const json = pageProfile.data();
    const render = row === 'render.comment' ? renderHtmlComment : renderServerTiming;
    for (let i = 0; i < n; i++) {
      const v = render(json);
      sink ^= v.charCodeAt(v.length - 1);
    }
    return;
  }
  const refRoot = { children: null };
  const ref = referenceStep(als);
  await runInProfile(profile, async () => {
    // The floor runs `als.run` into another store: with the current one, `run` is a shortcut.
    const store = new Profile('other', cfg).root;
    const floor = floorSteps(als, store);
    const rows = {
      'bare.sync': work,
      'bare.async': aw,
      'als.sync': () => als.run(store, work),
      'als.async': () => als.run(store, aw),
      'floor.sync': () => floor.sync(work),
      'floor.async': () => floor.async(aw),
      'ours.sync': () => (tick(), step('s', work)),
      'ours.async': () => (tick(), step('s', aw)),
      'ours.using': () => {
        tick();
        const t = step('s');
        work();
        t.stop();
      },
      'ours.nested3': () => (fresh(), step('a', () => step('b', () => step('c', work)))),
      'ours.page': () => (fresh(), page(step)),
    };
    if (row === 'ref.sync' || row === 'ref.async') {
      const fn = row === 'ref.sync' ? work : aw;
      // The reference finds its parent with getStore(): its own root, as a profile would be.
      await als.run(refRoot, async () => {
        for (let i = 0; i < n; i++) {
          if (i % 512 === 0) refRoot.children = null;
          const r = ref('s', fn);
          if (r instanceof Promise) await r;
        }
      });
      return;
    }
    const fn = rows[row];
    if (fn === undefined) throw new Error(`unknown row ${row}; rows: ${ROWS.join(', ')}`);
    for (let i = 0; i < n; i++) {
      const r = fn();
      if (r instanceof Promise) await r;
    }
  });
  closeProfile(profile);
}
