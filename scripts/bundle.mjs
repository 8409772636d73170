// `node scripts/bundle.mjs [dir]` (run by `npm run build`, after tsc): the package's entries
// (`index`, `express`, `fastify`, `koa`, `hono`, `http`, `otel`), made from tsc's per-module output
// in `<dir>` (default `dist`). Give it a copy of dist/ to bundle that copy (bench/http's
// MINIPROF_BENCH_DIST).
//
// One implementation, CommonJS, for `require` and `import` alike:
// - `<dir>/bundle/cjs/miniprof.js`: the code of every entry but otel, one CommonJS file.
// - `<dir>/bundle/cjs/<entry>.js`: one line each, that entry's part of miniprof.js; `otel.js` is
//   its own bundle, which takes the modules it shares with the others from miniprof.js, so
//   OpenTelemetry's API is loaded only by an app that loads miniprof/otel.
//   (`cjs/package.json` says `"type": "commonjs"`.) Jest's default configuration, and any
//   CommonJS app, `require`s these.
// - `<dir>/bundle/<entry>.js`: a thin ES module per entry that re-exports its CommonJS file by name.
// An app (or a test runner) that loads miniprof by both `import` and `require` gets the same
// modules from Node's one CommonJS cache: one AsyncLocalStorage, one profile store, one set of
// channel subscriptions. (The reverse, ES modules that CommonJS loads with `require(esm)`, works on
// Node 20.19+ but not in Jest, whose module registry cannot `require` an ES module.)
//
// Why one file: on Node 20, a server with tsc's 38 modules loaded spent 2-3% more CPU on every
// request it did not profile (bench/RESULTS.md Run 30); and a call from one CommonJS file into
// another reads esbuild's export getter each time (split into chunks, a step inside a profile cost
// twice what it did: bench/micro). Inside one file the calls are direct. The modules stay in dist/,
// unshipped, for the benches and tests that reach into internals.
//
// `import.meta.url` (src/http/insert.ts's createRequire) becomes `__filename`: nothing CommonJS
// loads uses `import.meta`. tsc's source maps are read and chained, so a stack trace maps to src/.
import { build } from 'esbuild';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, resolve } from 'node:path';

const dir = resolve(process.argv[2] ?? 'dist');
const parts = { index: 'src/index.js', express: 'adapters/express.js', fastify: 'adapters/fastify.js', koa: 'adapters/koa.js', hono: 'adapters/hono.js', http: 'adapters/http.js' };
const out = join(dir, 'bundle');
const cjs = join(out, 'cjs');
const entryFile = join(dir, 'bundle-entry.js');

rmSync(out, { recursive: true, force: true });
mkdirSync(cjs, { recursive: true });

const common = {
  bundle: true,
  format: 'cjs',
  platform: 'node',
  // The oldest Node the package supports: no syntax is lowered for it.
  target: 'node20',
  // fastify-plugin, on-headers, parse5, @opentelemetry/api (otel only: an optional peer) and
  // node: builtins stay requires, resolved from the app as before.
  packages: 'external',
  define: { 'import.meta.url': '__filename' },
  sourcemap: 'linked',
  sourcesContent: false,
  legalComments: 'none',
  logLevel: 'warning',
};

// The modules of src/ that otel.js imports directly: miniprof.js exports them for it, by path.
// (As an ES module, for the metafile to list its export names too.)
const probe = await build({ ...common, format: 'esm', entryPoints: [join(dir, 'adapters/otel.js')], write: false, metafile: true, outdir: cjs });
const otelInput = Object.entries(probe.metafile.inputs).find(([p]) => p.endsWith('adapters/otel.js'))[1];
const shared = [...new Set(otelInput.imports.filter((i) => !i.external).map((i) => i.path.slice(i.path.indexOf('src/'))))];

// 1. miniprof.js: every part under its name, and otel's shared modules under `internal`.
const lines = Object.entries(parts).map(([name, path]) => `export * as ${name} from './${path}';`);
shared.forEach((path, n) => lines.push(`import * as m${n} from './${path}';`));
lines.push(`export const internal = { ${shared.map((path, n) => `${JSON.stringify(path)}: m${n}`).join(', ')} };`);
writeFileSync(entryFile, `${lines.join('\n')}\n`);
try {
  await build({ ...common, entryPoints: [entryFile], outfile: join(cjs, 'miniprof.js') });
} finally {
  rmSync(entryFile, { force: true });
}

// 2. otel.js: its own code; each shared module is read from miniprof.js.
await build({
  ...common,
  entryPoints: [join(dir, 'adapters/otel.js')],
  outfile: join(cjs, 'otel.js'),
  plugins: [
    {
      name: 'miniprof-shared',
      setup(b) {
        b.onResolve({ filter: /^\.\/miniprof\.js$/ }, () => ({ path: './miniprof.js', external: true }));
        b.onResolve({ filter: /\/src\// }, (args) => {
          const path = relative(dir, resolve(args.resolveDir, args.path));
          if (!shared.includes(path)) throw new Error(`bundle: otel imports ${path}, which miniprof.js does not export`);
          return { path, namespace: 'shared' };
        });
        b.onLoad({ filter: /.*/, namespace: 'shared' }, (args) => ({ contents: `module.exports = require('./miniprof.js').internal[${JSON.stringify(args.path)}];`, loader: 'js' }));
      },
    },
  ],
});
writeFileSync(join(cjs, 'package.json'), `${JSON.stringify({ type: 'commonjs' })}\n`);

// 3. The other CommonJS entries, and the ES module entries: each re-exports by name, listed here.
const miniprof = createRequire(import.meta.url)(join(cjs, 'miniprof.js'));
for (const name of [...Object.keys(parts), 'otel']) {
  if (name !== 'otel') writeFileSync(join(cjs, `${name}.js`), `'use strict';\n// miniprof/${name} (scripts/bundle.mjs says why).\nmodule.exports = require('./miniprof.js').${name};\n`);
  const names = name === 'otel' ? otelNames() : Object.keys(miniprof[name]);
  const named = names.filter((e) => e !== 'default');
  const esm = [`// The ES module face of ./cjs/${name}.js (scripts/bundle.mjs says why).`, `import m from './cjs/${name}.js';`];
  if (named.length > 0) esm.push(`export const { ${named.join(', ')} } = m;`);
  if (names.includes('default')) esm.push('export default m.default;');
  writeFileSync(join(out, `${name}.js`), `${esm.join('\n')}\n`);
}

/** otel.js's export names, from the metafile (loading it here would need @opentelemetry/api). */
function otelNames() {
  return Object.values(probe.metafile.outputs).flatMap((o) => o.exports ?? []);
}
