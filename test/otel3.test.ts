/**
 * The built package with OpenTelemetry's SDK 3 line, installed as users install it: test/otel3 is
 * an app of its own (api 1.10, NodeSDK, sdk-trace 3, the instrumentations that go with them; its
 * node_modules installed by `npm test`'s pretest, as the two lines cannot share the root's
 * install). The built miniprof is copied into it, and test/otel3/app.mjs runs under plain `node`
 * against a real PostgreSQL and redis-server. Nothing here imports the sources.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve, sep } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startPostgres, type PostgresServer } from './helpers/postgres.js';
import { startRedis, type RedisServer } from './helpers/redis-server.js';

const ROOT = resolve(import.meta.dirname, '..');
const APP = join(ROOT, 'test', 'otel3');
const COPY = join(APP, 'node_modules', 'miniprof');

/** What app.mjs prints (one JSON line). */
interface Got {
  status: number;
  body: string;
  comment: string | null;
  serverTiming: string | null;
  miniprofId: string | null;
}
interface Custom {
  category: string;
  command: string;
  startMs: number;
  durationMs: number;
  traced?: true;
  error?: true;
  duplicate?: true;
  similar?: number;
}
interface Step {
  name: string;
  startMs: number;
  durationMs: number;
  children: Step[];
  custom?: Custom[];
  traced?: true;
}
interface Profile {
  id: string;
  machine: string;
  started: string;
  durationMs: number;
  warnings: string[];
  traceId?: string;
  root: Step;
  similar?: { id: number; category: string; command: string; count: number; durationMs: number }[];
}
interface ExportedSpan {
  name: string;
  scope: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
}
interface Output {
  /** The app's own URL (`http://127.0.0.1:<port>`). */
  base: string;
  developer: Got & { profile: Profile | null };
  other: Got;
  seen: { developer: boolean; profiled: boolean }[];
  spans: ExportedSpan[];
}

const SERVER = 1;
const PAGE = '<!doctype html><html><body><p>ada grace edsger ada true</p></body></html>';
const N1 = 'select name from users where id = $1';

let postgres: PostgresServer | undefined;
let redis: RedisServer | undefined;
let out: Output;
let profile: Profile;
/** The developer's request span, made by the http instrumentation. */
let server: ExportedSpan;

function run(env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const p = spawn(process.execPath, ['app.mjs'], { cwd: APP, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    p.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), 30_000);
    p.once('error', fail);
    p.once('close', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}

function version(pkg: string): string {
  return (JSON.parse(readFileSync(join(APP, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;
}

beforeAll(async () => {
  if (!existsSync(join(APP, 'node_modules', '@opentelemetry', 'sdk-node'))) {
    throw new Error('test/otel3/node_modules is missing: run `npm test`, its pretest installs it (or `npm ci --prefix test/otel3`)');
  }
  if (!existsSync(join(ROOT, 'dist', 'bundle', 'otel.js'))) throw new Error('dist/ is not built: run `npm run build` first (`npm test` does)');
  // The package as npm installs it, a copy: a symlink would resolve its imports from the repo's
  // node_modules (api 1.9) instead of the app's. The .d.ts files are not needed to run.
  rmSync(COPY, { recursive: true, force: true });
  mkdirSync(COPY);
  cpSync(join(ROOT, 'package.json'), join(COPY, 'package.json'));
  cpSync(join(ROOT, 'dist', 'bundle'), join(COPY, 'dist', 'bundle'), { recursive: true });
  [postgres, redis] = await Promise.all([startPostgres(), startRedis()]);
  const r = await run({ PG_PORT: String(postgres.port), REDIS_PORT: String(redis.port) });
  expect(r.code, r.stderr).toBe(0);
  out = JSON.parse(r.stdout) as Output;
  expect(out.developer.profile).not.toBeNull();
  profile = out.developer.profile!;
  const servers = out.spans.filter((s) => s.kind === SERVER && s.attributes['url.path'] === '/page' && s.traceId === profile.traceId);
  expect(servers).toHaveLength(1);
  server = servers[0]!;
}, 60_000);

afterAll(async () => {
  await redis?.kill();
  await postgres?.stop();
});

/** A step as names and marks: custom timings as `[category] command` with theirs. */
interface Shape {
  name: string;
  traced?: true;
  custom: string[];
  children: Shape[];
}
function shape(t: Step): Shape {
  const custom = (t.custom ?? []).map((c) => `[${c.category}] ${c.command}${c.traced ? ' traced' : ''}${c.error ? ' error' : ''}${c.duplicate ? ' duplicate' : ''}${c.similar !== undefined ? ` similar#${c.similar}` : ''}`);
  return { name: t.name, ...(t.traced ? { traced: true as const } : {}), custom, children: t.children.map(shape) };
}

/** Every step and custom timing starts no earlier than the step it is under. */
function startsInOrder(t: Step): void {
  for (const c of [...t.children, ...(t.custom ?? [])]) expect(c.startMs, `${'name' in c ? c.name : c.command} under ${t.name}`).toBeGreaterThanOrEqual(t.startMs);
  for (const c of t.children) startsInOrder(c);
}

/** `(scope) name` of a trace's spans, sorted, without miniprof's. */
function otelSpans(traceId: string): string[] {
  return out.spans.filter((s) => s.traceId === traceId && s.scope !== 'miniprof').map((s) => `(${s.scope}) ${s.name}`).sort();
}

describe('miniprof/otel with OpenTelemetry SDK 3 (NodeSDK, api 1.10) as an app installs them', () => {
  test('the app runs the SDK 3 line, and the copied miniprof resolves @opentelemetry/api from the app', () => {
    expect(version('@opentelemetry/api')).toMatch(/^1\.10\./);
    expect(version('@opentelemetry/sdk-trace')).toMatch(/^3\./);
    expect(version('@opentelemetry/sdk-node')).toMatch(/^0\.30\d\./);
    const api = join(APP, 'node_modules', '@opentelemetry', 'api') + sep;
    expect(createRequire(join(COPY, 'dist', 'bundle', 'otel.js')).resolve('@opentelemetry/api').startsWith(api)).toBe(true);
    expect(createRequire(join(APP, 'app.mjs')).resolve('@opentelemetry/api').startsWith(api)).toBe(true);
  });

  test('the developer\'s profile: the N+1 as similar sql timings, redis and the fetch once each, traced, the fetch under the resolver\'s step', () => {
    const inner = `${out.base}/inner`;
    expect(shape(profile.root)).toEqual({
      name: 'GET /page',
      custom: ['[redis] GET user:? traced', '[connect] pg-pool.connect traced', '[sql] select name from no_such_table traced error'],
      children: [
        {
          name: 'load users',
          // A pool checkout is plumbing: its own category, never similar (it stays out of the
          // N+1 count), each before the query it served (issue 59 item 7).
          custom: [1, 2, 3].flatMap(() => ['[connect] pg-pool.connect traced', `[sql] ${N1} traced similar#1`]),
          children: [],
        },
        {
          name: 'resolve',
          custom: [],
          children: [{ name: 'resolver', traced: true, custom: [`[http] GET ${inner} traced`], children: [] }],
        },
      ],
    });
    expect(profile.similar).toEqual([{ id: 1, category: 'sql', command: N1, count: 3, durationMs: expect.any(Number) }]);
    expect(profile.warnings).toEqual([]);
    startsInOrder(profile.root);
    // Each of those calls is one span of the trace: three pg queries, one redis GET, one fetch.
    const spans = out.spans.filter((s) => s.traceId === profile.traceId);
    expect(spans.filter((s) => s.scope === '@opentelemetry/instrumentation-pg' && s.attributes['db.query.text'] === 'select name from users where id = $1')).toHaveLength(3);
    expect(spans.filter((s) => s.scope === '@opentelemetry/instrumentation-ioredis').map((s) => s.name)).toEqual(['get']);
    expect(spans.filter((s) => s.scope === '@opentelemetry/instrumentation-undici').map((s) => s.attributes['url.full'])).toEqual([inner]);
  });

  test('the profile is in the request\'s trace, and the comment and Server-Timing say what the profile says', () => {
    const dev = out.developer;
    expect(dev.status).toBe(200);
    expect(profile.traceId).toBe(server.traceId);
    expect(profile.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(dev.miniprofId).toBe(profile.id);
    expect(dev.body).toMatch(new RegExp(`^${esc(PAGE.slice(0, PAGE.indexOf('</body>')))}${esc(dev.comment!)}<script src="/_miniprof/badge\\.js\\?v=[\\w-]+" data-position="bottom-right" defer data-id="${profile.id}"></script></body></html>$`));
    const ms = (s: string): string => s.replace(/\d+(\.\d+)?ms/g, 'Nms');
    expect(ms(dev.comment!).split('\n')).toEqual([
      '<!--',
      `${profile.machine} at ${profile.started} trace ${profile.traceId}`,
      'Path: GET /page',
      ' GET /page = Nms (Nms in no step)',
      '> [redis] GET user:? = Nms',
      '> [connect] pg-pool.connect = Nms',
      '> [sql] select name from no_such_table = Nms (error)',
      `> load users = Nms (N+1: 3 × ${N1})`,
      ...[1, 2, 3].flatMap(() => ['>> [connect] pg-pool.connect = Nms', `>> [sql] ${N1} = Nms (similar #1)`]),
      '> resolve = Nms',
      '>> resolver = Nms',
      `>>> [http] GET ${out.base}/inner = Nms`,
      '[redis] 1 x Nms summed, Nms wall',
      '[connect] 4 x Nms summed, Nms wall',
      '[sql] 4 x Nms summed, Nms wall, 3 similar',
      '[http] 1 x Nms summed, Nms wall',
      `#1 [sql] 3 x Nms similar: ${N1}`,
      "miniprof's own time: Nms (not in the times above)",
      '-->',
    ]);
    expect(ms(dev.serverTiming!).replace(/dur=\d+(\.\d+)?/g, 'dur=N')).toBe(
      `load_users;dur=N;desc="load users (N+1: 3 x sql)", resolve;dur=N, redis;dur=N;desc="redis (1 x Nms summed)", sql;dur=N;desc="sql (4 x Nms summed)", http;dur=N;desc="http (1 x Nms summed)", miniprof-self;dur=N, miniprof;desc="${profile.id}", total;dur=N`,
    );
  });

  test('the exported steps: miniprof\'s own only, children of the request\'s span, within its times, at the profile\'s times', () => {
    const exported = out.spans.filter((s) => s.scope === 'miniprof');
    // The resolver's span and every call are in the trace already: only the two steps miniprof made.
    expect(exported.map((s) => [s.name, s.kind, s.traceId, s.parentSpanId])).toEqual([
      ['load users', 0, server.traceId, server.spanId],
      ['resolve', 0, server.traceId, server.spanId],
    ]);
    const started = Date.parse(profile.started);
    for (const s of exported) {
      const step = profile.root.children.find((c) => c.name === s.name)!;
      expect(Math.abs(s.startMs - (started + step.startMs))).toBeLessThan(0.002);
      expect(Math.abs(s.endMs - (started + step.startMs + step.durationMs))).toBeLessThan(0.002);
      expect(s.startMs).toBeGreaterThanOrEqual(server.startMs);
      // Both sides are anchored on a whole-millisecond Date.now() (the SDK's span start and the
      // profile's `started`), so an end may read up to 1 ms past the request span's.
      expect(s.endMs).toBeLessThanOrEqual(server.endMs + 1);
    }
    // The trace holds every span the instrumentations made, as for a request nobody profiled.
    expect(otelSpans(server.traceId)).toEqual(otelSpans(otherTrace()));
  });

  test('someone else\'s request: the page as the app sent it, nothing profiled, nothing exported by miniprof', () => {
    expect(out.other).toEqual({ status: 200, body: PAGE, comment: null, serverTiming: null, miniprofId: null });
    expect(out.seen).toEqual([
      { developer: true, profiled: true },
      { developer: false, profiled: false },
    ]);
    const trace = otherTrace();
    expect(out.spans.filter((s) => s.traceId === trace && s.scope === 'miniprof')).toEqual([]);
    expect(otelSpans(trace)).toEqual([
      '(@opentelemetry/instrumentation-http) GET',
      '(@opentelemetry/instrumentation-http) GET',
      '(@opentelemetry/instrumentation-ioredis) get',
      '(@opentelemetry/instrumentation-pg) pg-pool.connect',
      '(@opentelemetry/instrumentation-pg) pg-pool.connect',
      '(@opentelemetry/instrumentation-pg) pg-pool.connect',
      '(@opentelemetry/instrumentation-pg) pg-pool.connect',
      '(@opentelemetry/instrumentation-pg) pg.query:SELECT postgres',
      '(@opentelemetry/instrumentation-pg) pg.query:SELECT postgres',
      '(@opentelemetry/instrumentation-pg) pg.query:SELECT postgres',
      '(@opentelemetry/instrumentation-pg) pg.query:SELECT postgres',
      '(@opentelemetry/instrumentation-undici) GET',
      '(otel3-app) resolver',
    ]);
  });
});

/** The trace of the request that was not a developer's. */
function otherTrace(): string {
  const others = out.spans.filter((s) => s.kind === SERVER && s.attributes['url.path'] === '/page' && s.traceId !== profile.traceId);
  expect(others).toHaveLength(1);
  return others[0]!.traceId;
}

function esc(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
