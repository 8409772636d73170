/**
 * `npm pack` from a clean clone, as a newcomer tries a checkout before the package is published:
 * `git clone`, install, `npm pack` (the `prepack` script builds dist/ first), then the tarball
 * installed by npm into an app of its own, imported and required by plain node. Without the build
 * before packing, the tarball held no code and every import failed with ERR_MODULE_NOT_FOUND.
 *
 * The clone is of this checkout's HEAD (commit what you want tested). Its node_modules is a link
 * to this checkout's (the same lockfile's tree: `npm ci` again would only cost time); the app
 * installs the tarball and its three runtime dependencies from npm's cache or the registry.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');
let dir = '';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'miniprof-pack-'));
});

afterAll(() => {
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

test('npm pack of a clean git clone builds first; the tarball installs into an app that imports and requires every entry', () => {
  const clone = join(dir, 'clone');
  execFileSync('git', ['clone', '--quiet', ROOT, clone]);
  expect(existsSync(join(clone, 'dist'))).toBe(false);
  symlinkSync(join(ROOT, 'node_modules'), join(clone, 'node_modules'), 'dir');
  const pack = spawnSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: clone, encoding: 'utf8', timeout: 120_000 });
  expect(pack.status, pack.stderr).toBe(0);
  // npm prints the build's own output before its JSON.
  const [info] = JSON.parse(pack.stdout.slice(pack.stdout.indexOf('[\n'))) as [{ filename: string; files: { path: string }[] }];
  const files = info.files.map((f) => f.path);
  expect(files).toContain('dist/bundle/index.js');
  expect(files).toContain('dist/bundle/cjs/index.js');
  expect(files).toContain('dist/src/index.d.ts');

  const app = join(dir, 'app');
  execFileSync('mkdir', [app]);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true }));
  const install = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', join(dir, info.filename)], { cwd: app, encoding: 'utf8', timeout: 120_000 });
  expect(install.status, install.stderr).toBe(0);
  expect(readdirSync(join(app, 'node_modules')).sort()).toEqual(expect.arrayContaining(['fastify-plugin', 'miniprof', 'on-headers']));

  const script = `const load = async (id) => [Object.keys(await import(id)).filter((k) => k !== 'default').sort().join(), Object.keys(require(id)).filter((k) => k !== 'default' && k !== '__esModule').sort().join()];
(async () => {
  const out = {};
  for (const id of ['miniprof', 'miniprof/express', 'miniprof/fastify', 'miniprof/koa', 'miniprof/hono', 'miniprof/http']) {
    const [esm, cjs] = await load(id);
    out[id] = esm === cjs ? esm : 'import: ' + esm + ' / require: ' + cjs;
  }
  const { withProfile, step, renderText } = require('miniprof');
  const { profile } = await (await import('miniprof')).withProfile('job', () => step('packed', () => {}));
  out.text = renderText(profile).split('\\n').slice(1).map((l) => l.replace(/[0-9.]+ms/, 'Nms')).join('|');
  console.log(JSON.stringify(out));
})();`;
  writeFileSync(join(app, 'run.cjs'), script);
  const run = spawnSync(process.execPath, ['run.cjs'], { cwd: app, encoding: 'utf8', timeout: 30_000 });
  expect(run.status, run.stderr).toBe(0);
  const out = JSON.parse(run.stdout) as Record<string, string>;
  expect(out).toMatchObject({
    miniprof: 'currentProfile,instrument,instrumentPg,memoryStore,redisStore,renderHtmlComment,renderServerTiming,renderText,step,timing,withProfile',
    'miniprof/express': 'miniprof',
    'miniprof/fastify': 'miniprof',
    'miniprof/koa': 'miniprof',
    'miniprof/hono': 'miniprof',
    'miniprof/http': 'miniprof,wrap',
  });
  expect(out.text).toContain('> packed = Nms');
}, 240_000);
