// `node scripts/bundle.mjs [dir]` (run by `npm run build`, after tsc): the package's entries
// (`index`, `express`, `fastify`, `koa`, `hono`, `http`, `otel`), made from tsc's per-module output
// in `<dir>` (default `dist`). Give it a copy of dist/ to bundle that copy (bench/http's
// MINIPROF_BENCH_DIST).
//
// One implementation, CommonJS, for `require` and `import` alike:
// - `<dir>/bundle/cjs/<entry>.js`: the code, one CommonJS file per entry, with the code entries
//   share in `<dir>/bundle/cjs/chunks/` (`cjs/package.json` says `"type": "commonjs"`). Jest's
//   default configuration, and any CommonJS app, `require`s these.
// - `<dir>/bundle/<entry>.js`: a thin ES module per entry that re-exports its CommonJS file by name.
// An app (or a test runner) that loads miniprof by both `import` and `require` gets the same
// modules from Node's one CommonJS cache: one AsyncLocalStorage, one profile store, one set of
// channel subscriptions. (The reverse, ES modules that CommonJS loads with `require(esm)`, works on
// Node 20.19+ but not in Jest, whose module registry cannot `require` an ES module.)
//
// Why bundles at all: on Node 20, a server with tsc's 38 modules loaded spent 2-3% more CPU on
// every request it did not profile, with miniprof registered or with nothing of it running (an
// empty hook in a process that had only loaded the modules). The same code as one file cost nothing
// (bench/RESULTS.md Run 30). Node 22 and 24 showed no difference either way. The modules stay in
// dist/, unshipped, for the benches and tests that reach into internals.
//
// How: esbuild splits the entries into ES modules with shared chunks (written to a scratch
// directory), then converts each file, as is, to CommonJS (`bundle: false`: the `./chunks/…`
// imports become `require`s of the same files). Both steps read the previous step's source map, so
// a stack trace still maps to src/*.ts. `import.meta.url` (src/http/insert.ts's createRequire) is
// replaced by `__filename` in the CommonJS: nothing CommonJS loads uses `import.meta`.
import { build } from 'esbuild';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const dir = resolve(process.argv[2] ?? 'dist');
const entries = { index: 'src/index.js', express: 'adapters/express.js', fastify: 'adapters/fastify.js', koa: 'adapters/koa.js', hono: 'adapters/hono.js', http: 'adapters/http.js', otel: 'adapters/otel.js' };
const out = join(dir, 'bundle');
const esm = join(dir, 'bundle-esm');
const cjs = join(out, 'cjs');

rmSync(out, { recursive: true, force: true });
rmSync(esm, { recursive: true, force: true });

const common = {
  platform: 'node',
  // The oldest Node the package supports: no syntax is lowered for it.
  target: 'node20',
  // tsc's maps are read and chained, so a stack trace maps back to src/*.ts.
  sourcemap: 'linked',
  sourcesContent: false,
  legalComments: 'none',
  logLevel: 'warning',
};

// 1. The entries and their shared chunks, as ES modules.
const split = await build({
  ...common,
  entryPoints: Object.entries(entries).map(([name, input]) => ({ out: name, in: join(dir, input) })),
  outdir: esm,
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  // fastify-plugin, on-headers, parse5, @opentelemetry/api (otel only: an optional peer) and
  // node: builtins stay imports, resolved from the app as before.
  packages: 'external',
  metafile: true,
});

// 2. Each of those files converted to CommonJS, in place of one another.
const files = readdirSync(esm, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.js'));
await build({
  ...common,
  entryPoints: files.map((f) => join(esm, f)),
  outbase: esm,
  outdir: cjs,
  bundle: false,
  format: 'cjs',
  define: { 'import.meta.url': '__filename' },
});
writeFileSync(join(cjs, 'package.json'), `${JSON.stringify({ type: 'commonjs' })}\n`);

// 3. The ES module entries: each re-exports its CommonJS file's names, listed explicitly.
mkdirSync(out, { recursive: true });
for (const name of Object.keys(entries)) {
  const { exports } = outputOf(split.metafile, `${name}.js`);
  const named = exports.filter((e) => e !== 'default');
  const lines = [`// The ES module face of ./cjs/${name}.js (scripts/bundle.mjs says why).`, `import m from './cjs/${name}.js';`];
  if (named.length > 0) lines.push(`export const { ${named.join(', ')} } = m;`);
  if (exports.includes('default')) lines.push('export default m.default;');
  writeFileSync(join(out, `${name}.js`), `${lines.join('\n')}\n`);
}
rmSync(esm, { recursive: true, force: true });

/** The metafile's record of an entry's output, whatever the working directory was. */
function outputOf(metafile, file) {
  for (const [path, o] of Object.entries(metafile.outputs)) {
    if (path.endsWith(`bundle-esm/${file}`)) return o;
  }
  throw new Error(`bundle: esbuild made no ${file}`);
}
