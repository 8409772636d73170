// `node bench/instructions/functions.js <express|fastify> <configA> <configB> [--dist-b PATH]
// [--top 40] [--node PATH] [--from 2000] [--to 5000]`: where the instructions between two rows
// of bench/instructions/run.js go, by native function (V8's runtime, builtins, GC, libc).
// `--dist-b` compares two builds instead: configB then runs on the build at PATH (a copy of
// `dist/` with a change).
//
// Why: JIT-compiled JavaScript has no symbols under valgrind, but what it costs the engine does.
// This is how Express's per-request map transitions were found (bench/RESULTS.md Run 7):
// `JSObject::MigrateToMap`, `DescriptorArray::CopyFrom` and `LoadIC` misses appeared in the
// Express developer rows and not in Fastify's. `node --log-maps` then named the properties.
//
// Same settings as run.js (one request in flight, counter clock, a profile kept open). Each
// figure is (count at --to minus count at --from) / (to - from) per function. Needs valgrind's
// `cg_annotate`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cachegrind, harnessEnv, option, run } from './cachegrind.js';

const argv = process.argv.slice(2);
const opt = (name, def) => option(argv, name, def);
const [framework, configA, configB] = argv;
if (!['express', 'fastify'].includes(framework) || configA === undefined || configB === undefined) {
  console.error('usage: node bench/instructions/functions.js <express|fastify> <configA> <configB> [--dist-b PATH] [--top N]');
  process.exit(2);
}
const node = opt('--node', process.execPath);
const from = Number(opt('--from', '2000'));
const to = Number(opt('--to', '5000'));
const top = Number(opt('--top', '40'));
const distB = opt('--dist-b', undefined);
const dir = mkdtempSync(join(tmpdir(), 'miniprof-fn-'));

async function counts(config, requests, dist) {
  const out = join(dir, `${config}-${requests}-${dist === undefined ? 'a' : 'b'}`);
  await cachegrind({ node, framework, config, requests, env: harnessEnv(false, dist), outFile: out });
  const { stdout } = await run('cg_annotate', ['--threshold=0', '--auto=no', out], { maxBuffer: 1 << 28 });
  const byFn = new Map();
  for (const line of stdout.split('\n')) {
    const m = /^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*\S)\s*$/.exec(line);
    if (m === null || m[2].includes('PROGRAM TOTALS')) continue;
    byFn.set(m[2], (byFn.get(m[2]) ?? 0) + Number(m[1].replaceAll(',', '')));
  }
  return byFn;
}

async function perRequest(config, dist) {
  const [a, b] = await Promise.all([counts(config, from, dist), counts(config, to, dist)]);
  const out = new Map();
  for (const k of new Set([...a.keys(), ...b.keys()])) out.set(k, ((b.get(k) ?? 0) - (a.get(k) ?? 0)) / (to - from));
  return out;
}

try {
  const a = await perRequest(configA, undefined);
  const b = await perRequest(configB, distB);
  const rows = [...new Set([...a.keys(), ...b.keys()])].map((k) => [k, (b.get(k) ?? 0) - (a.get(k) ?? 0)]);
  const total = rows.reduce((s, [, d]) => s + d, 0);
  rows.sort((x, y) => y[1] - x[1]);
  const label = distB === undefined ? `${framework}/${configB} - ${framework}/${configA}` : `${framework}/${configB} on ${distB} - on dist/`;
  console.log(`${label}: ${Math.round(total).toLocaleString('en-US')} instructions per request (requests ${from}..${to})\n`);
  console.log('| instructions/request | function |');
  console.log('| ---: | --- |');
  for (const [k, d] of rows.slice(0, top)) console.log(`| ${Math.round(d).toLocaleString('en-US')} | \`${k.slice(0, 140)}\` |`);
  console.log(`\nLargest decreases:\n`);
  for (const [k, d] of rows.slice(-8).reverse()) console.log(`| ${Math.round(d).toLocaleString('en-US')} | \`${k.slice(0, 140)}\` |`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
