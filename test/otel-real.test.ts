/**
 * miniprof/otel with OpenTelemetry's own instrumentations of real libraries, on real servers:
 * `@opentelemetry/instrumentation-pg` against PostgreSQL, `-ioredis` against redis-server, `-http`
 * and `-undici` against a local HTTP server, in Express and Fastify apps. miniprof's own
 * instrumentation (diagnostics_channel, instrumentPg) is on as well, so every call both see is
 * checked to appear once.
 *
 * Instrumentations patch modules as they are required: they are registered first, and pg, ioredis,
 * http, Express and Fastify are required after (vitest runs each file in its own process).
 */
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import type * as HttpModule from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-node';
import type { Express } from 'express';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import type { Redis as RedisClient } from 'ioredis';
import { MiniprofSpanProcessor } from '../adapters/otel.js';
import { miniprof as expressMiniprof } from '../adapters/express.js';
import { miniprof as fastifyMiniprof } from '../adapters/fastify.js';
import { currentProfile, instrumentPg, step, type Profile, type ProfileJSON, type TimingJSON } from '../src/index.js';
import { startPostgres, type PostgresServer } from './helpers/postgres.js';
import { startRedis, type RedisServer } from './helpers/redis-server.js';

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new MiniprofSpanProcessor({ exportProfiles: true }), new SimpleSpanProcessor(exporter)] });
provider.register({ contextManager: new AsyncLocalStorageContextManager() });
registerInstrumentations({
  tracerProvider: provider,
  instrumentations: [new HttpInstrumentation(), new UndiciInstrumentation(), new PgInstrumentation({ enhancedDatabaseReporting: true }), new IORedisInstrumentation()],
});
const require = createRequire(import.meta.url);
const http = require('http') as typeof HttpModule;
const pg = require('pg') as typeof import('pg');
const Redis = (require('ioredis') as { default: typeof RedisClient }).default;
const express = require('express') as typeof import('express');
const Fastify = require('fastify') as typeof import('fastify').default;

let postgres: PostgresServer;
let redisServer: RedisServer;
/** Seen by OpenTelemetry alone. */
let plainPool: Pool;
/** Seen by OpenTelemetry and by miniprof's instrumentPg. */
let wrappedPool: Pool;
let redis: RedisClient;
/** The service the apps call out to. */
let backend: HttpModule.Server;
let backendUrl = '';
const servers: { close(): unknown }[] = [];

beforeAll(async () => {
  [postgres, redisServer] = await Promise.all([startPostgres(), startRedis()]);
  const conn = { host: '127.0.0.1', port: postgres.port, user: 'postgres', database: 'postgres', max: 2 };
  plainPool = new pg.Pool(conn);
  wrappedPool = instrumentPg(new pg.Pool(conn));
  for (const p of [plainPool, wrappedPool]) p.on('error', () => {});
  redis = new Redis(redisServer.port, '127.0.0.1', { lazyConnect: true });
  await redis.connect();
  await redis.set('user:1', 'ada');
  backend = http.createServer((req, res) => res.end(`backend ${req.url}`));
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
  backendUrl = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const s of servers) await s.close();
  await new Promise((r) => backend?.close(r));
  redis?.disconnect();
  await plainPool?.end();
  await wrappedPool?.end();
  await redisServer?.kill();
  await postgres?.stop();
  await provider.shutdown();
});

afterEach(() => exporter.reset());

/** What a route does: one call per library, each through OpenTelemetry and miniprof alike where both can see it. */
async function work(): Promise<void> {
  await step('N+1', async () => {
    for (const id of [1, 2, 1]) await plainPool.query('select $1::int as id', [id]);
  });
  await wrappedPool.query('select $1::int + 1 as next', [41]);
  await redis.get('user:1');
  await (await fetch(`${backendUrl}/via-fetch?token=secret`)).text();
  await new Promise<void>((resolve, reject) => {
    http.get(`${backendUrl}/via-http`, (res) => res.resume().on('end', resolve)).on('error', reject);
  });
}

/** Custom timings of a step as `[category] command`, with their marks. */
function calls(t: TimingJSON): string[] {
  return (t.custom ?? []).map((c) => `[${c.category}] ${c.command}${c.traced ? ' traced' : ''}${c.duplicate ? ' duplicate' : ''}${c.similar !== undefined ? ` similar#${c.similar}` : ''}`);
}

/**
 * Custom timings and child steps, but for connection spans (a new pool client: `pg.connect`): plumbing, in
 * their own category (issue 59 item 7).
 */
function queries(t: TimingJSON): string[] {
  return [...calls(t), ...t.children.map((c) => `${c.name}${c.traced ? ' traced' : ''}`)].filter((c) => !c.startsWith('[connect] '));
}

const EXPECTED_N1 = [
  '[sql] select $1::int as id traced duplicate similar#1',
  '[sql] select $1::int as id traced similar#1',
  '[sql] select $1::int as id traced duplicate similar#1',
];
/** Each call once: miniprof's own timing (its command), marked as traced by OpenTelemetry. */
function expectedRoot(): string[] {
  return [
    '[sql] select $1::int + ? as next traced',
    '[redis] GET user:? traced',
    `[http] GET ${backendUrl}/via-fetch?token=? traced`,
    `[http] GET ${backendUrl}/via-http traced`,
  ];
}

async function sealed(get: () => Profile | undefined): Promise<ProfileJSON> {
  for (let i = 0; i < 200; i++) {
    const p = get();
    if (p?.sealed) return p.toJSON();
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('profile not sealed');
}

async function listen(app: { listen: (port: number, host: string, cb: () => void) => { address(): unknown; close(): unknown } }): Promise<string> {
  let server!: { address(): unknown; close(): unknown };
  await new Promise<void>((r) => (server = app.listen(0, '127.0.0.1', r)));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The request's span, made by the http instrumentation. */
function serverSpan(): ReadableSpan {
  const found = exporter.getFinishedSpans().filter((x) => x.kind === SpanKind.SERVER && (x.attributes['url.path'] ?? x.attributes['http.target']) === '/page');
  expect(found).toHaveLength(1);
  return found[0]!;
}

describe.each(['express', 'fastify'] as const)('%s app with the OpenTelemetry instrumentations and miniprof', (kind) => {
  let url = '';
  let last: Profile | undefined;

  beforeAll(async () => {
    const isDeveloper = (req: HttpModule.IncomingMessage | { headers: HttpModule.IncomingHttpHeaders }) => req.headers['x-dev'] === '1';
    if (kind === 'express') {
      const app: Express = express();
      app.use(expressMiniprof({ isDeveloper }));
      app.get('/page', async (_req, res) => {
        last = currentProfile();
        await work();
        res.type('html').send('<html><body>page</body></html>');
      });
      url = await listen(app);
    } else {
      const app: FastifyInstance = Fastify();
      await app.register(fastifyMiniprof, { isDeveloper });
      app.get('/page', async (_req, reply) => {
        last = currentProfile();
        await work();
        return reply.type('text/html').send('<html><body>page</body></html>');
      });
      await app.listen({ port: 0, host: '127.0.0.1' });
      servers.push(app);
      url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    }
  });

  test('a developer request: every span joins the tree once, N+1 over the pg instrumentation is similar, the trace id is the request span\'s', async () => {
    last = undefined;
    const res = await fetch(`${url}/page`, { headers: { 'x-dev': '1' } });
    const body = await res.text();
    const json = await sealed(() => last);
    const server = serverSpan();
    expect(json.traceId).toBe(server.spanContext().traceId);
    expect(body).toContain(`<!--\n${json.machine} at ${json.started} trace ${json.traceId}\nPath: GET /page\n`);
    // On Fastify the route handler is a step of its own (autoSteps): the request's work is inside it.
    if (kind === 'fastify') expect(json.root.children.map((c) => c.name)).toEqual(['handler GET /page']);
    const frame = kind === 'fastify' ? json.root.children[0]! : json.root;
    const n1 = frame.children.find((c) => c.name === 'N+1')!;
    expect(queries(n1)).toEqual(EXPECTED_N1);
    expect(calls(frame).filter((c) => !c.startsWith('[connect] '))).toEqual(expectedRoot());
    // A connection span is a custom timing of category `connect`, never a step.
    for (const c of [frame, n1].flatMap((t) => t.custom ?? []).filter((x) => x.category === 'connect')) expect([c.command, c.traced]).toEqual(['pg.connect', true]);
    expect(json.similar).toEqual([{ id: 1, category: 'sql', command: 'select $1::int as id', count: 3, durationMs: expect.any(Number) }]);
    // No step made from the server span: the root is the request.
    expect(frame.children.map((c) => c.name)).toEqual(['N+1']);
  });

  test('the developer\'s steps reach the trace after the response: children of the request span, within its times; nothing exported twice', async () => {
    last = undefined;
    await (await fetch(`${url}/page`, { headers: { 'x-dev': '1' } })).text();
    const json = await sealed(() => last);
    await new Promise((r) => setTimeout(r, 20));
    const server = serverSpan();
    const exported = exporter.getFinishedSpans().filter((s) => s.instrumentationScope.name === 'miniprof');
    // The N+1 step only: every custom timing was already in the trace (as its own span).
    expect(exported.map((s) => [s.name, s.parentSpanContext?.spanId, s.spanContext().traceId])).toEqual([['N+1', server.spanContext().spanId, json.traceId]]);
    const ms = (t: [number, number]): number => t[0] * 1e3 + t[1] / 1e6;
    const start = Date.parse(json.started);
    expect(ms(exported[0]!.startTime)).toBeGreaterThanOrEqual(start);
    expect(ms(exported[0]!.endTime)).toBeLessThanOrEqual(start + json.durationMs + 0.001);
    // The pg spans of the N+1 are in the trace already, under the request.
    expect(exporter.getFinishedSpans().filter((s) => s.instrumentationScope.name === '@opentelemetry/instrumentation-pg' && s.attributes['db.query.text'] === 'select $1::int as id')).toHaveLength(3);
  });

  test('a request that is not a developer\'s records nothing: no profile, no comment, its spans exported as without miniprof', async () => {
    last = undefined;
    const res = await fetch(`${url}/page`);
    expect(await res.text()).toBe('<html><body>page</body></html>');
    expect(res.headers.get('server-timing')).toBeNull();
    expect(last).toBeUndefined();
    await new Promise((r) => setTimeout(r, 20));
    expect(exporter.getFinishedSpans().filter((s) => s.instrumentationScope.name === 'miniprof')).toEqual([]);
    expect(exporter.getFinishedSpans().filter((s) => s.attributes['db.query.text'] === 'select $1::int as id')).toHaveLength(3);
  });
});

describe('pairs outside an app (withProfile under an active span)', () => {
  // pg: instrumentPg's wrapper runs first, the pg span starts once a client is checked out;
  // ioredis and http: the instrumentation's wrapper starts the span, then the library publishes;
  // undici: OpenTelemetry subscribed first here (see otel-pairs.test.ts for the other order).
  test('every pair appears once, whichever side saw the call first', async () => {
    const { withProfile } = await import('../src/index.js');
    const tracer = trace.getTracer('test');
    const { profile } = await tracer.startActiveSpan('job', async (s) => {
      try {
        return await withProfile('job', work);
      } finally {
        s.end();
      }
    });
    const json = profile.toJSON();
    expect(queries(json.root.children[0]!)).toEqual(EXPECTED_N1);
    expect(calls(json.root).filter((c) => !c.startsWith('[connect] '))).toEqual(expectedRoot());
  });
});
