/**
 * CPU sampling as a user gets it: the built package (`dist/`, from `npm run build`) in a plain
 * Node process, no test transform in between, so that V8's file and line are the app's own. The
 * app's work is TypeScript compiled with a source map: with `--enable-source-maps` the step line
 * names the `.ts` file and line the developer wrote; without, the compiled file's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildSync } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { performance } from 'node:perf_hooks';
import { startCpu } from '../src/analysis/cpu-sampler.js';

const ROOT = resolve(import.meta.dirname, '..');
const SOURCE = join(ROOT, 'test/fixtures/cpu-burn.ts');
/** The line of `export function burnTyped` in the TypeScript source, from 1. */
const TS_LINE = readFileSync(SOURCE, 'utf8').split('\n').findIndex((l) => l.startsWith('export function burnTyped')) + 1;

let dir = '';
const children: ChildProcess[] = [];

beforeAll(() => {
  expect(existsSync(join(ROOT, 'dist/bundle/http.js')), 'run npm run build first').toBe(true);
  dir = mkdtempSync(join(tmpdir(), 'miniprof-cpu-'));
  buildSync({ entryPoints: [SOURCE], outfile: join(dir, 'burn.js'), format: 'esm', sourcemap: 'inline', platform: 'node', logLevel: 'silent' });
  const http = pathToFileURL(join(ROOT, 'dist/bundle/http.js')).href;
  writeFileSync(
    join(dir, 'app.mjs'),
    `import http from 'node:http';
import { wrap } from ${JSON.stringify(http)};
import { step } from ${JSON.stringify(pathToFileURL(join(ROOT, 'dist/bundle/index.js')).href)};
import { burnTyped } from './burn.js';
const server = http.createServer(wrap(async (req, res) => {
  await step('burn', async () => {
    await new Promise((r) => setTimeout(r, 5));
    burnTyped({ ms: 120, seed: 1 });
  });
  res.setHeader('content-type', 'text/html');
  res.end('<html><body>ok</body></html>');
}));
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`,
  );
});

afterAll(() => {
  for (const c of children) c.kill();
  rmSync(dir, { recursive: true, force: true });
});

/** Start the app with `flags`; resolves to its port. */
function start(flags: string[]): Promise<number> {
  const c = spawn(process.execPath, [...flags, 'app.mjs'], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(c);
  return new Promise((res, rej) => {
    c.stdout!.once('data', (d: Buffer) => res(Number(String(d).trim())));
    c.once('exit', (code) => rej(new Error(`app exited with ${code}`)));
  });
}

describe('CPU sampling in a plain Node process (dist)', () => {
  it('names the function at the TypeScript line with --enable-source-maps', async () => {
    const port = await start(['--enable-source-maps']);
    const text = await (await fetch(`http://127.0.0.1:${port}/`, { headers: { 'x-miniprof-cpu': '1' } })).text();
    const line = text.split('\n').find((l) => l.startsWith('> burn = '))!;
    expect(line, text).toMatch(new RegExp(`; cpu: burnTyped [^ ]*test/fixtures/cpu-burn\\.ts:${TS_LINE} \\d+\\.\\dms`));
  });

  it('and at the compiled file and line without it', async () => {
    const port = await start([]);
    const text = await (await fetch(`http://127.0.0.1:${port}/`, { headers: { 'x-miniprof-cpu': '1' } })).text();
    const js = readFileSync(join(dir, 'burn.js'), 'utf8').split('\n').findIndex((l) => l.startsWith('function burnTyped')) + 1;
    expect(js).toBeGreaterThan(0);
    expect(js).not.toBe(TS_LINE);
    expect(text.split('\n').find((l) => l.startsWith('> burn = ')), text).toMatch(new RegExp(`; cpu: burnTyped burn\\.js:${js} \\d+\\.\\dms`));
  });
});

describe("V8's sample times on the profile's clock", () => {
  it('the profile starts within the Profiler.start call, and ends within the stop, once mapped', () => {
    const before = performance.now();
    const s = startCpu(null)!;
    const after = performance.now();
    const until = performance.now() + 30;
    while (performance.now() < until);
    const stopBefore = performance.now();
    const c = s.stop();
    const stopAfter = performance.now();
    const startMs = (c.profile.startTime - c.offsetUs) / 1000;
    const endMs = (c.profile.endTime - c.offsetUs) / 1000;
    // Whole-microsecond rounding on both sides: a few µs of slack, no more.
    expect(startMs).toBeGreaterThanOrEqual(before - 0.01);
    expect(startMs).toBeLessThanOrEqual(after + 0.01);
    expect(endMs).toBeGreaterThanOrEqual(stopBefore - 0.01);
    expect(endMs).toBeLessThanOrEqual(stopAfter + 0.01);
  });
});
