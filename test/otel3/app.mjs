// An Express app set up as OpenTelemetry's SDK 3 line documents it (NodeSDK, api 1.10), with
// miniprof's processor among its span processors, run by test/otel3.test.ts with plain `node`.
// miniprof is the built package, copied into ./node_modules/miniprof by the test (as npm installs
// it), so `miniprof/otel` resolves @opentelemetry/api from this app, as it does for users.
//
// It serves one page, makes a developer's request and someone else's over real sockets, and
// prints one JSON line: what each got, the developer's profile (from the results store's JSON
// route) and every span the SDK exported. Env: PG_PORT, REDIS_PORT.
import { createRequire } from 'node:module';
import { context, trace } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { MiniprofSpanProcessor } from 'miniprof/otel';

const exporter = new InMemorySpanExporter();
const sdk = new NodeSDK({
  serviceName: 'miniprof-otel3',
  spanProcessors: [new MiniprofSpanProcessor({ exportProfiles: true }), new SimpleSpanProcessor({ exporter })],
  instrumentations: [new HttpInstrumentation(), new UndiciInstrumentation(), new PgInstrumentation({ enhancedDatabaseReporting: true }), new IORedisInstrumentation()],
  // Without these NodeSDK would start OTLP metric and log exporters to a collector that is not here.
  metricReaders: [],
  logRecordProcessors: [],
});
sdk.start();

// Instrumentations patch modules as they are required: express, pg and ioredis (CommonJS) are
// required after sdk.start(), as the SDK's docs say.
const require = createRequire(import.meta.url);
const express = require('express');
const pg = require('pg');
const { Redis } = require('ioredis');
const { currentProfile, step } = await import('miniprof');
const { miniprof } = await import('miniprof/express');

const pool = new pg.Pool({ host: '127.0.0.1', port: Number(process.env.PG_PORT), user: 'postgres', database: 'postgres', max: 1 });
const redis = new Redis(Number(process.env.REDIS_PORT), '127.0.0.1', { lazyConnect: true });
await redis.connect();
await pool.query('create table if not exists users (id int primary key, name text not null)');
await pool.query("insert into users values (1, 'ada'), (2, 'grace'), (3, 'edsger') on conflict do nothing");
await redis.set('user:1', 'ada');

const tracer = trace.getTracer('otel3-app');
/** Per request to /page: whether it was a developer's and whether a profile was current in the route. */
const seen = [];
let base = '';

const app = express();
// blockingMs: the test reads the comment line by line; a loaded machine must not add a mark.
app.use(miniprof({ isDeveloper: (req) => req.headers['x-dev'] === '1', blockingMs: 10_000 }));
app.get('/inner', (_req, res) => {
  res.json({ inner: true });
});
app.get('/page', async (req, res) => {
  seen.push({ developer: req.headers['x-dev'] === '1', profiled: currentProfile() !== undefined });
  const names = await step('load users', async () => {
    // The N+1: one query per id, through the pg instrumentation only.
    const out = [];
    for (const id of [1, 2, 3]) out.push((await pool.query('select name from users where id = $1', [id])).rows[0].name);
    return out;
  });
  const cached = await redis.get('user:1');
  // A query that fails: its span ends with an error status. On a client of its own, released
  // without the error (pool.query would discard the connection, and the next request open one).
  const client = await pool.connect();
  try {
    await client.query('select name from no_such_table').catch(() => null);
  } finally {
    client.release();
  }
  // A resolver's span, as GraphQL or an ORM makes one, around a call miniprof also times itself.
  const inner = await step('resolve', () =>
    tracer.startActiveSpan('resolver', async (span) => {
      try {
        return await (await fetch(`${base}/inner`)).json();
      } finally {
        span.end();
      }
    }),
  );
  res.type('html').send(`<!doctype html><html><body><p>${names.join(' ')} ${cached} ${inner.inner}</p></body></html>`);
});

const server = app.listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
base = `http://127.0.0.1:${server.address().port}`;

/** The test's own requests, as a browser's would be: not traced (no span, no `traceparent`). */
const untraced = (fn) => context.with(suppressTracing(context.active()), fn);
const settle = () => new Promise((resolve) => setTimeout(resolve, 100));

async function get(path, headers) {
  return untraced(async () => {
    const res = await fetch(`${base}${path}`, { headers });
    const body = await res.text();
    const comment = /<!--[\s\S]*?-->/.exec(body);
    return {
      status: res.status,
      body,
      comment: comment === null ? null : comment[0],
      serverTiming: res.headers.get('server-timing'),
      miniprofId: res.headers.get('x-miniprof-id'),
    };
  });
}

/** The developer's profile from the results store: saved as the response closes, so polled. */
async function profileJson(id) {
  for (let i = 0; i < 50; i++) {
    const res = await untraced(() => fetch(`${base}/_miniprof/${id}.json`, { headers: { 'x-dev': '1' } }));
    if (res.status === 200) return res.json();
    await res.arrayBuffer();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return null;
}

const ms = (t) => t[0] * 1e3 + t[1] / 1e6;
const out = { base };
try {
  const developer = await get('/page', { 'x-dev': '1' });
  developer.profile = developer.miniprofId === null ? null : await profileJson(developer.miniprofId);
  // The steps are exported one turn after the profile is sealed.
  await settle();
  const other = await get('/page', {});
  await settle();
  out.developer = developer;
  out.other = other;
  out.seen = seen;
  out.spans = exporter.getFinishedSpans().map((s) => ({
    name: s.name,
    scope: s.instrumentationScope.name,
    kind: s.kind,
    traceId: s.spanContext().traceId,
    spanId: s.spanContext().spanId,
    parentSpanId: s.parentSpanContext?.spanId ?? null,
    startMs: ms(s.startTime),
    endMs: ms(s.endTime),
    attributes: s.attributes,
  }));
  // After the read: shutting down empties the in-memory exporter.
  await sdk.shutdown();
} finally {
  server.close();
  server.closeAllConnections();
  redis.disconnect();
  await pool.end();
}
process.stdout.write(`${JSON.stringify(out)}\n`);
