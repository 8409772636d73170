// `node bench/gc/promotion.js <express|fastify> <none|nondev|dev> [requests]`: how many bytes
// each request leaves in V8's old generation, the garbage a request gets promoted.
//
// The app (the bench page, the profiler as configured) and a keep-alive client run in one
// process: one request at a time, a minor GC every EVERY requests (default 500: more than twice
// the results store's 200 profiles, which it keeps alive on purpose), and a heap large enough
// that no mark-compact falls in the window (checked; the run fails if one does). With one
// request in flight, nothing else of a request should live through two minor GCs: what the old
// space grows by is what something kept alive too long (bench/RESULTS.md Run 8). Repeatable
// enough to bisect with patched copies of dist/ (MINIPROF_BENCH_DIST), where CPU time is not.
//
// MP_OPTS (JSON) adds miniprof options; MP_DIRECT=1 makes the page's steps plain calls.
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { direct, entry, servePage } from '../http/page.js';

if (typeof globalThis.gc !== 'function') {
  // Re-run with the flags this needs, so the command line stays plain.
  const r = spawnSync(process.execPath, ['--expose-gc', '--initial-old-space-size=1024', fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}

const [framework = 'fastify', config = 'dev', count = '20000'] = process.argv.slice(2);
if (!['express', 'fastify'].includes(framework) || !['none', 'nondev', 'dev'].includes(config) || !(Number(count) > 0)) {
  throw new Error('usage: promotion.js <express|fastify> <none|nondev|dev> [requests]');
}
const opts = { isDeveloper: () => config === 'dev', machine: 'bench', ...JSON.parse(process.env.MP_OPTS || '{}') };
const s = config === 'none' || process.env.MP_DIRECT === '1' ? direct : (await import(entry('index'))).step;

const server = await servePage(framework, s, async (app) => {
  if (config === 'none') return;
  const { miniprof } = await import(entry(framework));
  if (framework === 'express') app.use(miniprof(opts));
  else await app.register(miniprof, opts);
});

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const { port } = server.address();
const get = () =>
  new Promise((resolve, reject) => {
    http
      .get({ port, host: '127.0.0.1', path: '/', agent }, (res) => {
        res.resume();
        res.on('end', resolve);
      })
      .on('error', reject);
  });
const oldSpace = () => v8.getHeapSpaceStatistics().find((x) => x.space_name === 'old_space').space_used_size;

let majors = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++;
}).observe({ entryTypes: ['gc'] });

for (let i = 0; i < 3000; i++) await get();
globalThis.gc();
globalThis.gc();
// The observer hears of those two a little later; they must not count as in the window.
await new Promise((r) => setTimeout(r, 50));
const n = Number(count);
const every = Number(process.env.EVERY ?? 500);
const majorsBefore = majors;
const before = oldSpace();
for (let i = 0; i < n; i++) {
  await get();
  if (i % every === 0) globalThis.gc({ type: 'minor' });
}
const grown = oldSpace() - before;
await new Promise((r) => setTimeout(r, 50));
const mc = majors - majorsBefore;
console.log(`${framework} ${config}${process.env.MP_OPTS ? ` ${process.env.MP_OPTS}` : ''}: old space +${Math.round(grown / n)} bytes per request over ${n} requests, a minor GC every ${every}${mc > 0 ? ` (INVALID: ${mc} mark-compacts in the window)` : ''}`);
agent.destroy();
server.close();
process.exit(mc > 0 ? 1 : 0);
