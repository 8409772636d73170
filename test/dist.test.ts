/**
 * The artifact as users get it: `dist/` built by `npm run build` (which `npm test` runs first),
 * loaded by NAME from a directory outside the repo, by plain `node` (the Node running this suite:
 * 20 under `npm test`, 22, 24 and 26 in `.ci/run`). Nothing here imports the sources.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
// What the package's exports point at: the bundles scripts/bundle.mjs makes of tsc's modules.
const ENTRY_FILES = ['dist/bundle/index.js', 'dist/bundle/express.js', 'dist/bundle/fastify.js', 'dist/bundle/koa.js', 'dist/bundle/hono.js', 'dist/bundle/http.js', 'dist/bundle/otel.js'];

/** Exact, sorted export names of each entry: adding or losing a public name must be deliberate. */
const EXPORTS: Record<string, string[]> = {
  miniprof: ['currentProfile', 'instrument', 'instrumentPg', 'memoryStore', 'redisStore', 'renderHtmlComment', 'renderServerTiming', 'renderText', 'step', 'timing', 'withProfile'],
  'miniprof/express': ['default', 'miniprof'],
  'miniprof/fastify': ['default', 'miniprof'],
  'miniprof/otel': ['MiniprofSampler', 'MiniprofSpanProcessor', 'exportProfile'],
  'miniprof/koa': ['default', 'miniprof'],
  'miniprof/hono': ['default', 'miniprof'],
  'miniprof/http': ['default', 'miniprof', 'wrap'],
};

let dir = '';

function write(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

/** Plain node, no loader, no flags, in the consumer directory. */
function node(file: string): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [file], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function ok(file: string): string {
  const r = node(file);
  expect(r.code, `${file} failed:\n${r.stderr}`).toBe(0);
  return r.stdout;
}

async function waitForDist(): Promise<string[]> {
  // Other builds (`rm -rf dist && tsc`) may be mid-way on a shared checkout; CI builds once.
  for (let i = 0; i < 20; i++) {
    const missing = ENTRY_FILES.filter((f) => !existsSync(join(ROOT, f)));
    if (missing.length === 0) return [];
    await new Promise((r) => setTimeout(r, 500));
  }
  return ENTRY_FILES.filter((f) => !existsSync(join(ROOT, f)));
}

beforeAll(async () => {
  const missing = await waitForDist();
  if (missing.length > 0) {
    throw new Error(`dist/ is not built (missing ${missing.join(', ')}): run \`npm run build\` first (\`npm test\` does)`);
  }
  dir = mkdtempSync(join(tmpdir(), 'miniprof-consumer-'));
  mkdirSync(join(dir, 'node_modules', '@types'), { recursive: true });
  // The package is linked the way `npm link` would; its own dependencies resolve from its real path.
  symlinkSync(ROOT, join(dir, 'node_modules', 'miniprof'), 'dir');
  for (const dep of ['express', 'fastify', 'typescript', 'koa', 'hono', '@hono', 'connect', 'polka']) {
    symlinkSync(join(ROOT, 'node_modules', dep), join(dir, 'node_modules', dep), 'dir');
  }
  for (const types of ['node', 'express', 'express-serve-static-core', 'serve-static', 'qs', 'range-parser', 'send', 'http-errors', 'body-parser', 'connect', 'mime']) {
    const from = join(ROOT, 'node_modules', '@types', types);
    if (existsSync(from)) symlinkSync(from, join(dir, 'node_modules', '@types', types), 'dir');
  }
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
});

afterAll(() => {
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

describe('dist: the package by name from plain node', () => {
  test('import: every entry resolves and has exactly its public names', () => {
    const file = write(
      'exports.mjs',
      `const out = {};
for (const id of ${JSON.stringify(Object.keys(EXPORTS))}) out[id] = Object.keys(await import(id)).sort();
const pkg = await import('miniprof/package.json', { with: { type: 'json' } });
out.pkg = [pkg.default.name, pkg.default.type];
console.log(JSON.stringify(out));`,
    );
    expect(JSON.parse(ok(file))).toEqual({ ...EXPORTS, pkg: ['miniprof', 'module'] });
  });

  test('require(): every entry resolves (require of ESM) with the same names', () => {
    const file = write(
      'exports.cjs',
      `const out = {};
for (const id of ${JSON.stringify(Object.keys(EXPORTS))}) {
  const m = require(id);
  // Node marks a required ES module that has a default export with __esModule, for transpiled callers.
  out[id] = Object.keys(m).filter((k) => k !== '__esModule').sort();
}
const ex = require('miniprof/express');
const fa = require('miniprof/fastify');
out.defaults = [ex.default === ex.miniprof, fa.default === fa.miniprof, typeof ex.miniprof, typeof fa.miniprof];
out.pkg = require('miniprof/package.json').name;
console.log(JSON.stringify(out));`,
    );
    expect(JSON.parse(ok(file))).toEqual({
      ...EXPORTS,
      defaults: [true, true, 'function', 'function'],
      pkg: 'miniprof',
    });
  });

  test('the entries are bundles: each ES module entry re-exports its CommonJS file; those are one line into miniprof.js, the implementation, or otel.js; they require node: builtins and the runtime dependencies, never tsc\'s modules', () => {
    // The package ships the bundles only (scripts/bundle.mjs says why); an entry that loaded
    // ../src/… would need tsc's modules, which are not published.
    const bundle = join(ROOT, 'dist', 'bundle');
    const files = readdirSync(bundle, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.js'));
    const esm = files.filter((f) => !f.includes('/')).sort();
    expect(esm).toEqual(['express.js', 'fastify.js', 'hono.js', 'http.js', 'index.js', 'koa.js', 'otel.js']);
    expect(files.filter((f) => f.startsWith('cjs/')).sort()).toEqual([...esm.map((f) => `cjs/${f}`), 'cjs/miniprof.js'].sort());
    for (const f of esm) {
      const text = readFileSync(join(bundle, f), 'utf8');
      expect([...text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s*'([^']+)'/gm)].map((m) => m[1])).toEqual([`./cjs/${f}`]);
    }
    const requires: Record<string, string[]> = {};
    for (const f of files.filter((f) => f.startsWith('cjs/'))) {
      const text = readFileSync(join(bundle, f), 'utf8');
      // Nothing that CommonJS loads may use import.meta (a SyntaxError there), nor import/export.
      expect(text, f).not.toMatch(/\bimport\.meta\b|^(?:import|export)\b/m);
      requires[f] = [...new Set([...text.matchAll(/\brequire\("([^"]+)"\)|\brequire\('([^']+)'\)/g)].map((m) => m[1] ?? m[2]!))].sort();
    }
    for (const name of ['index', 'express', 'fastify', 'koa', 'hono', 'http']) expect(requires[`cjs/${name}.js`]).toEqual(['./miniprof.js']);
    expect(requires['cjs/miniprof.js']).toEqual([
      'fastify-plugin',
      'node:async_hooks',
      'node:crypto',
      'node:diagnostics_channel',
      // validateHeaderName/Value: a writeHead Node will refuse is not run through on-headers (src/http/head.ts).
      'node:http',
      // findSourceMap (src/analysis/cpu-source.ts) and createRequire(…).cache (src/core/lost-context.ts).
      'node:module',
      'node:os',
      'node:perf_hooks',
      // fileURLToPath, for the files CPU samples name (src/analysis/cpu-source.ts).
      'node:url',
      'node:util',
      'on-headers',
    ]);
    // OpenTelemetry is required by the otel entry alone, which takes everything else from miniprof.js.
    expect(requires['cjs/otel.js']).toEqual(['./miniprof.js', '@opentelemetry/api']);
    expect(JSON.parse(readFileSync(join(bundle, 'cjs', 'package.json'), 'utf8'))).toEqual({ type: 'commonjs' });
  });

  test('one implementation per process: an app that loads miniprof by import and by require gets the same functions, and a profile opened through one is current through the other', () => {
    const file = write(
      'both.mjs',
      `import { createRequire } from 'node:module';
import * as imported from 'miniprof';
import * as importedExpress from 'miniprof/express';
const require = createRequire(import.meta.url);
const required = require('miniprof');
const requiredExpress = require('miniprof/express');
const out = {
  same: ['step', 'withProfile', 'currentProfile', 'instrument'].map((k) => imported[k] === required[k]),
  express: [importedExpress.miniprof === requiredExpress.miniprof, importedExpress.default === requiredExpress.default],
};
const { profile } = await imported.withProfile('job', async () => {
  out.seen = required.currentProfile() !== undefined;
  await required.step('through require', async () => {});
});
out.steps = profile.toJSON().root.children.map((t) => t.name);
// The modules Node loaded for both: each CommonJS file of the package once, and no other copy.
const files = Object.keys(require.cache).filter((f) => f.includes('/dist/bundle/'));
out.loaded = files.map((f) => f.slice(f.indexOf('/dist/bundle/') + 13)).sort();
out.roots = [...new Set(files.map((f) => f.slice(0, f.indexOf('/dist/bundle/'))))].length;
console.log(JSON.stringify(out));`,
    );
    const out = JSON.parse(ok(file));
    expect(out.same).toEqual([true, true, true, true]);
    expect(out.express).toEqual([true, true]);
    expect(out.seen).toBe(true);
    expect(out.steps).toEqual(['through require']);
    expect(out.loaded).toEqual(['cjs/express.js', 'cjs/index.js', 'cjs/miniprof.js']);
    // One copy: every file from the same package directory.
    expect(out.roots).toBe(1);
  });

  test('npm publishes the bundles and the type declarations, not tsc\'s modules', () => {
    const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    const paths: string[] = JSON.parse(r.stdout)[0].files.map((f: { path: string }) => f.path);
    const js = paths.filter((p) => p.endsWith('.js'));
    expect(js.filter((p) => !p.startsWith('dist/bundle/'))).toEqual([]);
    expect(js.sort()).toEqual([...ENTRY_FILES, ...ENTRY_FILES.map((f) => f.replace('bundle/', 'bundle/cjs/')), 'dist/bundle/cjs/miniprof.js'].sort());
    expect(paths).toContain('dist/bundle/cjs/package.json');
    // Every declaration the three entries' types reach, and nothing of tsc's JavaScript.
    for (const d of ['dist/src/index.d.ts', 'dist/adapters/express.d.ts', 'dist/adapters/fastify.d.ts', 'dist/adapters/koa.d.ts', 'dist/adapters/hono.d.ts', 'dist/adapters/http.d.ts', 'dist/adapters/otel.d.ts', 'dist/src/http/config.d.ts', 'dist/src/http/fetch.d.ts', 'dist/src/core/profile.d.ts']) {
      expect(paths).toContain(d);
    }
  });

  test('miniprof, miniprof/express and miniprof/fastify load no OpenTelemetry module; miniprof/otel loads @opentelemetry/api (Node\'s CommonJS cache lists every file)', async () => {
    // The implementation is CommonJS (scripts/bundle.mjs), so what it loads is in require.cache,
    // whether the app imported it or required it.
    write(
      'list.mjs',
      `import { createRequire } from 'node:module';
const cache = createRequire(import.meta.url).cache;
const otel = () => [...new Set(Object.keys(cache).filter((f) => f.includes('@opentelemetry')).map((f) => f.slice(f.lastIndexOf('node_modules/') + 13).split('/').slice(0, 2).join('/')))];
const out = {};
await import('miniprof');
await import('miniprof/express');
await import('miniprof/fastify');
out.others = { urls: Object.keys(cache).some((f) => f.includes('/dist/bundle/cjs/')), otel: otel() };
await import('miniprof/otel');
out.withOtel = otel();
console.log(JSON.stringify(out));`,
    );
    const out = JSON.parse(ok(join(dir, 'list.mjs')));
    expect(out.others).toEqual({ urls: true, otel: [] });
    expect(out.withOtel).toEqual(['@opentelemetry/api']);
  });

  test('miniprof/otel from plain node, by import and by require: a span started in a profile joins it', () => {
    const body = (load: string) => `${load}
const { NodeTracerProvider } = sdk;
const provider = new NodeTracerProvider({ spanProcessors: [new otel.MiniprofSpanProcessor()] });
provider.register();
const tracer = api.trace.getTracer('consumer');
const run = async () => {
  const { profile } = await tracer.startActiveSpan('request', async (s) => {
    const r = await core.withProfile('job', async () => {
      tracer.startSpan('q', { kind: api.SpanKind.CLIENT, attributes: { 'db.system.name': 'postgresql', 'db.query.text': 'select 1' } }).end();
    });
    s.end();
    return r;
  });
  const json = profile.toJSON();
  console.log(JSON.stringify({ traceId: /^[0-9a-f]{32}$/.test(json.traceId), custom: json.root.custom.map((c) => [c.category, c.command, c.traced]), exported: otel.exportProfile(profile) }));
};`;
    const expected = { traceId: true, custom: [['sql', 'select ?', true]], exported: 0 };
    for (const dep of ['@opentelemetry/api', '@opentelemetry/sdk-trace-node']) {
      const to = join(dir, 'node_modules', dep);
      if (!existsSync(to)) {
        mkdirSync(join(dir, 'node_modules', '@opentelemetry'), { recursive: true });
        symlinkSync(join(ROOT, 'node_modules', dep), to, 'dir');
      }
    }
    const esm = write('otel.mjs', body(`import * as otel from 'miniprof/otel';
import * as core from 'miniprof';
import * as api from '@opentelemetry/api';
import * as sdk from '@opentelemetry/sdk-trace-node';`) + '\nawait run();');
    expect(JSON.parse(ok(esm))).toEqual(expected);
    const cjs = write('otel.cjs', body(`const otel = require('miniprof/otel');
const core = require('miniprof');
const api = require('@opentelemetry/api');
const sdk = require('@opentelemetry/sdk-trace-node');`) + '\nrun();');
    expect(JSON.parse(ok(cjs))).toEqual(expected);
  });

  test('issue 58: under NODE_DEBUG=miniprof a page above htmlComment.maxBytes, and one the scan cannot follow, each say why they got no comment', () => {
    const file = write('page-bound.mjs', `import http from 'node:http';
import { miniprof } from 'miniprof/http';
const pages = { '/big': '<body>' + 'x'.repeat(2000) + '</body>', '/svg': '<body><svg><div></body>' };
const mw = miniprof({ isDeveloper: () => true, htmlComment: { maxBytes: 1000 }, results: false });
const server = http.createServer((req, res) => mw(req, res, () => { res.setHeader('content-type', 'text/html'); res.end(pages[req.url]); }));
server.listen(0, '127.0.0.1', async () => {
  for (const path of Object.keys(pages)) {
    const body = await (await fetch('http://127.0.0.1:' + server.address().port + path)).text();
    console.log(path, body === pages[path]);
  }
  server.close();
});
`);
    const r = spawnSync(process.execPath, [file], { cwd: dir, encoding: 'utf8', timeout: 30_000, env: { ...process.env, NODE_DEBUG: 'miniprof' } });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe('/big true\n/svg true\n');
    expect(r.stderr).toMatch(/MINIPROF \d+: no comment: the page is 2013 bytes, above htmlComment\.maxBytes \(1000\)\n/);
    expect(r.stderr).toMatch(/MINIPROF \d+: no comment: a <div> inside <svg>\n/);
  });

  test('internals are not reachable: only the entries and package.json are exported', () => {
    const file = write(
      'private.mjs',
      `const out = [];
for (const id of ['miniprof/dist/src/core/context.js', 'miniprof/src/index.ts', 'miniprof/adapters/express']) {
  try { await import(id); out.push('loaded ' + id); } catch (e) { out.push(e.code); }
}
console.log(JSON.stringify(out));`,
    );
    expect(JSON.parse(ok(file))).toEqual(Array(3).fill('ERR_PACKAGE_PATH_NOT_EXPORTED'));
  });

  test('Koa, Hono, node:http, connect and polka from plain node, by import and by require: a developer request gets the comment and Server-Timing', () => {
    const app = (load: string) => `${load}
const fixed = { clock: () => 0, now: () => Date.UTC(2026, 10, 29, 12), machine: 'ci' };
const page = '<html><body>hi</body></html>';
const listen = (server) => new Promise((r) => server.listen(0, '127.0.0.1', () => r(server)));
const ask = async (server) => {
  const res = await fetch('http://127.0.0.1:' + server.address().port + '/');
  const body = await res.text();
  server.close();
  // The badge is on by default: its tag after the comment, and the profile's id in Server-Timing and in the tag.
  const timing = res.headers.get('server-timing');
  const id = /miniprof;desc="([0-9a-f-]{36})"/.exec(timing)?.[1];
  const tag = /--><script src="\\/_miniprof\\/badge\\.js\\?v=[\\w-]+" data-position="bottom-right" defer data-id="([0-9a-f-]{36})"><\\/script><\\/body><\\/html>$/.exec(body);
  return [timing.replace(id, 'ID'), body.includes('<!--\\nci at 2026-11-29T12:00:00.000Z') && tag !== null && tag[1] === id];
};
(async () => {
  const out = {};
  const k = new Koa();
  k.use(koa.miniprof(fixed));
  k.use((ctx) => { step('koa', () => {}); ctx.body = page; });
  out.koa = await ask(await listen(http.createServer(k.callback())));
  const h = new Hono();
  h.use(hono.miniprof(fixed));
  h.get('/', (c) => { step('hono', () => {}); return c.html(page); });
  out.hono = await ask(await listen(http.createServer(getRequestListener(h.fetch))));
  const handler = (_req, res) => { step('node', () => {}); res.setHeader('content-type', 'text/html'); res.end(page); };
  out.wrap = await ask(await listen(http.createServer(nodeHttp.wrap(handler, fixed))));
  const c = connect();
  c.use(nodeHttp.miniprof(fixed));
  c.use(handler);
  out.connect = await ask(await listen(http.createServer(c)));
  const p = polka();
  p.use(nodeHttp.miniprof(fixed));
  p.use(handler);
  out.polka = await ask(await listen(http.createServer((req, res) => p.handler(req, res))));
  console.log(JSON.stringify(out));
})();`;
    const esm = write(
      'frameworks.mjs',
      app(`import http from 'node:http';
import Koa from 'koa';
import { Hono } from 'hono';
import { getRequestListener } from '@hono/node-server';
import connect from 'connect';
import polka from 'polka';
import { step } from 'miniprof';
import * as koa from 'miniprof/koa';
import * as hono from 'miniprof/hono';
import * as nodeHttp from 'miniprof/http';`),
    );
    const cjs = write(
      'frameworks.cjs',
      app(`const http = require('node:http');
const Koa = require('koa');
const { Hono } = require('hono');
const { getRequestListener } = require('@hono/node-server');
const connect = require('connect');
const polka = require('polka');
const { step } = require('miniprof');
const koa = require('miniprof/koa');
const hono = require('miniprof/hono');
const nodeHttp = require('miniprof/http');`),
    );
    const expected = Object.fromEntries(
      ['koa', 'hono', 'wrap', 'connect', 'polka'].map((n) => [n, [`${n === 'wrap' || n === 'connect' || n === 'polka' ? 'node' : n};dur=0.0, miniprof;desc="ID", total;dur=0.0`, true]]),
    );
    expect(JSON.parse(ok(esm))).toEqual(expected);
    expect(JSON.parse(ok(cjs))).toEqual(expected);
  });

  test('node:http: an exception the app throws surfaces as it would without miniprof, after a synchronous or an async isDeveloper and on a results URL', () => {
    // Without miniprof a listener's throw is an uncaught exception in the process: the app's
    // handler (or Node's default, a crash) decides. miniprof must not swallow it.
    const file = write(
      'throws.mjs',
      `import http from 'node:http';
import { wrap } from 'miniprof/http';
const seen = [];
process.on('uncaughtException', (err) => seen.push(err.message));
const boom = (tag) => () => { throw new Error('app ' + tag); };
const answers = { bare: null, no: () => false, yes: () => true, asyncNo: async () => false, asyncYes: async () => true };
const get = (server, path) => new Promise((resolve) => {
  const req = http.get('http://127.0.0.1:' + server.address().port + path, (res) => res.resume().on('end', resolve));
  req.on('error', resolve);
  // The app never answers (it threw): the request is given up once the throw was seen.
  setTimeout(() => { req.destroy(); resolve(); }, 300);
});
for (const [tag, isDeveloper] of Object.entries(answers)) {
  const listener = isDeveloper === null ? boom(tag) : wrap(boom(tag), { isDeveloper, onInternalError: (e) => seen.push('internal ' + e.message) });
  const server = http.createServer(listener);
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  await get(server, '/');
  // The results pages' base, for a developer: a path that is no page of them goes on to the app.
  if (tag === 'asyncYes') await get(server, '/_miniprof/nothing-here');
  server.close();
}
console.log(JSON.stringify(seen));`,
    );
    expect(JSON.parse(ok(file))).toEqual(['app bare', 'app no', 'app yes', 'app asyncNo', 'app asyncYes', 'app asyncYes']);
  });

  test('import and require share one module instance: a step recorded via require lands in a profile opened via import', () => {
    const cjs = write(
      'shared.cjs',
      `const viaRequire = require('miniprof');
const expressRequired = require('miniprof/express');
(async () => {
  const viaImport = await import('miniprof');
  const expressImported = await import('miniprof/express');
  const { result, profile } = await viaImport.withProfile('shared', async () => {
    viaRequire.step('required step', () => {});
    await viaRequire.step('required async step', async () => {
      viaImport.step('imported child', () => {});
    });
    return viaRequire.currentProfile() === viaImport.currentProfile();
  });
  const tree = (t) => ({ name: t.name, children: t.children.map(tree) });
  console.log(JSON.stringify({
    sameFunctions: viaRequire.step === viaImport.step && expressRequired.miniprof === expressImported.miniprof,
    sameProfile: result,
    tree: tree(profile.toJSON().root),
  }));
})();`,
    );
    const expected = {
      sameFunctions: true,
      sameProfile: true,
      tree: {
        name: 'shared',
        children: [
          { name: 'required step', children: [] },
          { name: 'required async step', children: [{ name: 'imported child', children: [] }] },
        ],
      },
    };
    expect(JSON.parse(ok(cjs))).toEqual(expected);
    // The other way round: an ES module that imports first and requires second.
    const esm = write(
      'shared.mjs',
      `import { createRequire } from 'node:module';
import * as viaImport from 'miniprof';
const viaRequire = createRequire(import.meta.url)('miniprof');
const { profile } = await viaRequire.withProfile('other way', () => { viaImport.step('imported step', () => {}); });
console.log(JSON.stringify(profile.toJSON().root.children.map((c) => c.name)));`,
    );
    expect(JSON.parse(ok(esm))).toEqual(['imported step']);
  });

  test('callback steps keep an app\'s own AsyncLocalStorage visible inside them and create no async resources of their own', () => {
    const file = write(
      'frames.mjs',
      `import { AsyncLocalStorage, createHook } from 'node:async_hooks';
import { step, withProfile } from 'miniprof';
const app = new AsyncLocalStorage();
const types = new Set();
const { profile } = await withProfile('job', async () => {
  const hook = createHook({ init(_id, type) { types.add(type); } }).enable();
  const seen = [];
  app.run('request', () => step('sign in', () => seen.push(app.getStore())));
  await app.run('request', () =>
    step('load', async () => {
      await null;
      step('inner', () => seen.push(app.getStore()));
    }),
  );
  hook.disable();
  console.log(JSON.stringify({ seen, miniprof: [...types].filter((t) => /miniprof/i.test(t)) }));
});
console.log(JSON.stringify(profile.toJSON().root.children.map((c) => c.name)));`,
    );
    const [first, second] = ok(file).trim().split('\n');
    expect(JSON.parse(first!)).toEqual({ seen: ['request', 'request'], miniprof: [] });
    expect(JSON.parse(second!)).toEqual(['sign in', 'load']);
  });

  test('a TypeScript consumer (tsc, module nodenext, target ES2022) using `using` and the adapters\' types runs on plain node', () => {
    write(
      'tsconfig.json',
      JSON.stringify({
        compilerOptions: {
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'ES2022',
          lib: ['ES2022', 'ESNext.Disposable'],
          strict: true,
          esModuleInterop: true,
          skipLibCheck: true,
          types: ['node'],
          outDir: 'out',
          rootDir: '.',
        },
        files: ['consumer.ts'],
      }),
    );
    write(
      'consumer.ts',
      `import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import Fastify from 'fastify';
import { renderServerTiming, renderText, step, timing, withProfile, type Profile, type Timing } from 'miniprof';
import { miniprof as expressMiniprof, type MiniprofOptions } from 'miniprof/express';
import fastifyMiniprof from 'miniprof/fastify';

let t = 0;
const fixed = { clock: () => t, now: () => Date.UTC(2026, 10, 29, 12), machine: 'ci' };

const { result, profile } = await withProfile('job', async () => {
  {
    using outer: Timing = step('x');
    t += 1.5;
    step('inner', () => {
      t += 2;
    });
    void outer.name;
  }
  await step('async', async () => {
    await timing('sql', 'select 1', async () => {
      t += 3;
    });
  });
  return 42 as const;
}, fixed);
const answer: 42 = result;
const p: Profile = profile;
console.log(answer);
process.stdout.write(renderText(p));
console.log(renderServerTiming(p));

// @ts-expect-error options are typed: a string is not a step limit
void (() => expressMiniprof({ maxSteps: 'many' }));

const expressOptions: MiniprofOptions<IncomingMessage> = {
  ...fixed,
  isDeveloper: (req) => req.headers['x-dev'] === '1',
  badge: { position: 'top-left', nonce: (req) => (req.headers['x-nonce'] as string | undefined) },
};
// @ts-expect-error the badge's corners are typed
void (() => expressMiniprof({ badge: { position: 'middle' } }));
const app = express();
app.use(expressMiniprof(expressOptions));
app.get('/', (_req, res) => {
  {
    using _page = step('page');
    t += 4;
  }
  res.type('html').send('<html><body>hi</body></html>');
});
const server = app.listen(0, '127.0.0.1');
await new Promise((r) => server.once('listening', r));
const { port } = server.address() as AddressInfo;
const res = await fetch(\`http://127.0.0.1:\${port}/\`, { headers: { 'x-dev': '1', 'x-nonce': 'bm9uY2U=' } });
// The id is random: shown as ID, once checked to be the same in the header, the tag and X-Miniprof-Id.
const id = res.headers.get('x-miniprof-id')!;
console.log(res.headers.get('server-timing')!.replace(id, 'ID'));
console.log((await res.text()).replace(id, 'ID').replace(/badge\\.js\\?v=[\\w-]+/, 'badge.js?v=V'));
server.close();

const fastify = Fastify();
await fastify.register(fastifyMiniprof, { ...fixed, badge: false, isDeveloper: (req) => req.headers['x-dev'] === '1' });
fastify.get('/', async (_req, reply) => {
  await step('handler', async () => {
    t += 5;
  });
  return reply.type('text/html').send('<body>ok</body>');
});
const reply = await fastify.inject({ url: '/', headers: { 'x-dev': '1' } });
console.log(reply.headers['server-timing']);
console.log(reply.body);
await fastify.close();
`,
    );
    const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(tsc.status, `tsc failed:\n${tsc.stdout}${tsc.stderr}`).toBe(0);
    // ES2022 has no native `using`, so tsc lowered it: Node 20 cannot parse the syntax itself.
    expect(readFileSync(join(dir, 'out', 'consumer.js'), 'utf8')).not.toMatch(/\busing\s+\w+\s*=/);
    const out = ok(join(dir, 'out', 'consumer.js'));
    expect(out).toBe(
      [
        '42',
        'ci at 2026-11-29T12:00:00.000Z',
        ' job = 6.5ms',
        '> x = 3.5ms',
        '>> inner = 2.0ms',
        '> async = 3.0ms',
        // Literals in commands are masked by default (redact), and categories are summed below the tree.
        '>> [sql] select ? = 3.0ms',
        '[sql] 1 x 3.0ms summed, 3.0ms wall',
        'x;dur=3.5, async;dur=3.0, sql;dur=3.0;desc="sql (1 x 3.0ms summed)", total;dur=6.5',
        'page;dur=4.0, miniprof;desc="ID", total;dur=4.0',
        '<html><body>hi<!--',
        'ci at 2026-11-29T12:00:00.000Z',
        'Path: GET /',
        ' GET / = 4.0ms',
        '> page = 4.0ms',
        '--><script src="/_miniprof/badge.js?v=V" data-position="top-left" defer data-id="ID" nonce="bm9uY2U="></script></body></html>',
        'handler;dur=5.0, total;dur=5.0',
        '<body>ok<!--',
        'ci at 2026-11-29T12:00:00.000Z',
        'Path: GET /',
        ' GET / = 5.0ms',
        // Fastify's route handler as a step of its own (autoSteps), the app's step inside.
        '> handler GET / = 5.0ms',
        '>> handler = 5.0ms',
        '--></body>',
        '',
      ].join('\n'),
    );
  });
});
