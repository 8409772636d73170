// `node bench/instructions/ic.js <express|fastify> <config> [--from 1500] [--to 3000] [--top 40]
// [--match REGEX]`: the inline-cache misses a harness row (harness.js) takes per request, by code
// site and property. It runs the harness for `from` and for `to` requests under `node --log-ic`
// (one request in flight, counter clock, a profile kept open, as run.js counts), and each row is
// the difference of the two logs' counts over `to - from`: the requests past the warm-up.
//
// Why: on Express every `req`/`res` gets new hidden classes per request (bench/RESULTS.md Run 7),
// so every property read of them is a megamorphic stub-cache miss, a trip into V8's runtime of
// ~1,000-3,000 instructions. functions.js shows that cost in total (LoadIC::Load,
// LookupIterator); this names the reads. `--match dist/` keeps miniprof's own sites.
//
// Each row: the IC kind, the property, the line and column of the access, and the compiled
// function it ran in. An access in a function inlined into another is listed under the function
// it was inlined into, with the line and column in its own file. States: 0 uninitialized,
// 1 premonomorphic, P polymorphic, N megamorphic (N->N: a stub-cache miss). Needs nothing beyond
// Node.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { harnessEnv, option, run } from './cachegrind.js';

const argv = process.argv.slice(2);
const [framework, config] = argv;
if (!['express', 'fastify'].includes(framework) || config === undefined) {
  console.error('usage: node bench/instructions/ic.js <express|fastify> <config> [--from 1500] [--to 3000] [--top N] [--match REGEX]');
  process.exit(2);
}
const from = Number(option(argv, '--from', '1500'));
const to = Number(option(argv, '--to', '3000'));
const top = Number(option(argv, '--top', '40'));
const match = new RegExp(option(argv, '--match', '.'));
const dir = mkdtempSync(join(tmpdir(), 'miniprof-ic-'));

/** IC events of a run of `requests`, by "kind .key at line:col in function file (states)". */
async function events(requests) {
  const sub = join(dir, String(requests));
  const harness = new URL('./harness.js', import.meta.url).pathname;
  mkdirSync(sub);
  await run(process.execPath, ['--log-ic', `--logfile=${join(sub, 'ic.log')}`, harness, framework, config, String(requests)], {
    env: harnessEnv(false, process.env.MINIPROF_BENCH_DIST),
    maxBuffer: 1 << 24,
  });
  // --logfile-per-isolate (the default) prefixes the name.
  const log = readdirSync(sub).find((f) => f.endsWith('ic.log'));
  const lines = readFileSync(join(sub, log), 'utf8').split('\n');

  // code-creation,<type>,<kind>,<time>,<address>,<size>,<name>,…: what each pc belongs to.
  const codes = [];
  for (const l of lines) {
    if (!l.startsWith('code-creation,')) continue;
    const p = l.split(',');
    codes.push([parseInt(p[4], 16), Number(p[5]), p[6]]);
  }
  codes.sort((a, b) => a[0] - b[0]);
  const fn = (pc) => {
    let lo = 0;
    let hi = codes.length - 1;
    let best;
    while (lo <= hi) {
      const m = (lo + hi) >> 1;
      if (codes[m][0] <= pc) {
        best = codes[m];
        lo = m + 1;
      } else hi = m - 1;
    }
    if (best === undefined || pc >= best[0] + best[1]) return '?';
    // "writeHead file:///…/dist/adapters/express.js:172:18": the function and its file.
    const m = /^(?:JS:)?[*~^+]?(\S*) (\S+?):\d+:\d+$/.exec(best[2]);
    return m === null ? best[2] : `${m[1] || '(anonymous)'} ${m[2].replace(/^file:\/\//, '').replace(/^.*\/(dist|node_modules)\//, '$1/')}`;
  };

  // <IC kind>,<pc>,<time>,<line>,<column>,<old state>,<new state>,<map>,<key>,…
  const counts = new Map();
  for (const l of lines) {
    const c = l.indexOf(',');
    if (c <= 0 || !l.slice(0, c).endsWith('IC')) continue;
    const p = l.split(',');
    const k = `${p[0]} .${p[8]} at ${p[3]}:${p[4]} in ${fn(parseInt(p[1], 16))} (${p[5]}->${p[6]})`;
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return counts;
}

try {
  const [a, b] = await Promise.all([events(from), events(to)]);
  // Sites seen in the warm-up only (compilation, first calls) difference to zero or below.
  const all = [...new Set([...a.keys(), ...b.keys()])]
    .map((k) => [k, ((b.get(k) ?? 0) - (a.get(k) ?? 0)) / (to - from)])
    .filter(([, d]) => d > 0.005);
  const rows = all.filter(([k]) => match.test(k)).sort((x, y) => y[1] - x[1]);
  const total = all.reduce((s, [, d]) => s + d, 0);
  const shown = rows.reduce((s, [, d]) => s + d, 0);
  console.log(`${framework}/${config}: ${total.toFixed(2)} IC events per request, ${shown.toFixed(2)} of them matching ${match} (requests ${from}..${to})\n`);
  console.log('| per request | IC, key, where (states) |\n| ---: | --- |');
  for (const [k, d] of rows.slice(0, top)) console.log(`| ${d.toFixed(2)} | \`${k}\` |`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
