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
import { fileURLToPath } from 'node:url';
import { direct, entry, servePage } from '../http/page.js';
import { OLD_SPACE_FLAGS, keepAliveClient, oldSpacePerRequest } from './old-space.js';

if (typeof globalThis.gc !== 'function') {
  // Re-run with the flags this needs, so the command line stays plain.
  const r = spawnSync(process.execPath, [...OLD_SPACE_FLAGS, fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
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

const client = keepAliveClient(server.address().port);
const every = Number(process.env.EVERY ?? 500);
const n = Number(count);
const { bytesPerRequest, markCompacts: mc } = await oldSpacePerRequest(client.get, { count: n, every });
console.log(`${framework} ${config}${process.env.MP_OPTS ? ` ${process.env.MP_OPTS}` : ''}: old space +${bytesPerRequest} bytes per request over ${n} requests, a minor GC every ${every}${mc > 0 ? ` (INVALID: ${mc} mark-compacts in the window)` : ''}`);
client.close();
server.close();
process.exit(mc > 0 ? 1 : 0);
