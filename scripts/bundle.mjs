// `node scripts/bundle.mjs [dir]` (run by `npm run build`, after tsc): the package's entries,
// `<dir>/bundle/index.js`, `express.js`, `fastify.js`, `koa.js`, `hono.js`, `http.js` and `otel.js`,
// each one ES module with the code they share in `<dir>/bundle/chunks/`, made from tsc's per-module output in `<dir>` (default
// `dist`). Give it a copy of dist/ to bundle that copy (bench/http's MINIPROF_BENCH_DIST).
//
// Why: on Node 20, a server with tsc's 38 modules loaded spent 2-3% more CPU on every request it
// did not profile, with miniprof registered or with nothing of it running (an empty hook in a
// process that had only loaded the modules). The same code as one file cost nothing
// (bench/RESULTS.md Run 30). Node 22 and 24 showed no difference either way. The modules stay in
// dist/, unshipped, for the benches and tests that reach into internals.
//
// The shared chunk holds the one AsyncLocalStorage: an app that imports `miniprof` and
// `miniprof/express` gets one instance, as with the modules.
import { build } from 'esbuild';
import { resolve } from 'node:path';

const dir = resolve(process.argv[2] ?? 'dist');
const entries = { index: 'src/index.js', express: 'adapters/express.js', fastify: 'adapters/fastify.js', koa: 'adapters/koa.js', hono: 'adapters/hono.js', http: 'adapters/http.js', otel: 'adapters/otel.js' };

await build({
  entryPoints: Object.entries(entries).map(([out, input]) => ({ out, in: `${dir}/${input}` })),
  outdir: `${dir}/bundle`,
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  // The oldest Node the package supports: no syntax is lowered for it.
  target: 'node20',
  // fastify-plugin, @opentelemetry/api (otel.js only: an optional peer) and node: builtins stay
  // imports, resolved from the app as before.
  packages: 'external',
  // tsc's maps are read and chained, so a stack trace maps back to src/*.ts.
  sourcemap: 'linked',
  sourcesContent: false,
  legalComments: 'none',
  logLevel: 'warning',
});
