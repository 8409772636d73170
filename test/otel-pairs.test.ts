/**
 * The other order of one pair, and concurrent calls: miniprof subscribes to undici's channels
 * before the OpenTelemetry undici instrumentation does (its `create` handler then runs first), and
 * several calls of each library run at once under one step. Each call still appears once.
 * In a file of its own: instrumentations patch at require time, and subscriptions are per process.
 */
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import type * as HttpModule from 'node:http';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import type { Redis as RedisClient } from 'ioredis';
import { MiniprofSpanProcessor } from '../adapters/otel.js';
import { instrument, step, withProfile, type TimingJSON } from '../src/index.js';
import { startRedis, type RedisServer } from './helpers/redis-server.js';

// miniprof first: its undici handler is called before OpenTelemetry's for every request.
instrument();
const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new MiniprofSpanProcessor(), new SimpleSpanProcessor(exporter)] });
provider.register({ contextManager: new AsyncLocalStorageContextManager() });
registerInstrumentations({ tracerProvider: provider, instrumentations: [new UndiciInstrumentation(), new HttpInstrumentation(), new IORedisInstrumentation()] });
const require = createRequire(import.meta.url);
const http = require('http') as typeof HttpModule;
const Redis = (require('ioredis') as { default: typeof RedisClient }).default;

let redisServer: RedisServer;
let redis: RedisClient;
let backend: HttpModule.Server;
let base = '';

beforeAll(async () => {
  redisServer = await startRedis();
  redis = new Redis(redisServer.port, '127.0.0.1', { lazyConnect: true });
  await redis.connect();
  backend = http.createServer((req, res) => setTimeout(() => res.end(`ok ${req.url}`), 5));
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`;
});

afterAll(async () => {
  redis?.disconnect();
  await new Promise((r) => backend?.close(r));
  await redisServer?.kill();
  await provider.shutdown();
});

function calls(t: TimingJSON): string[] {
  return (t.custom ?? []).map((c) => `[${c.category}] ${c.command}${c.traced ? ' traced' : ''}`);
}

function get(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    http.get(url, (res) => res.resume().on('end', resolve)).on('error', reject);
  });
}

test('fetch with miniprof subscribed first, and concurrent calls of fetch, http and ioredis under one step: each once, miniprof\'s own', async () => {
  const { profile } = await trace.getTracer('test').startActiveSpan('job', async (s) => {
    try {
      return await withProfile('job', () =>
        Promise.all([fetch(`${base}/f1`).then((r) => r.text()), fetch(`${base}/f2`).then((r) => r.text()), redis.get('k1'), redis.get('k2'), get(`${base}/h1`), get(`${base}/h2`)]),
      );
    } finally {
      s.end();
    }
  });
  expect(calls(profile.toJSON().root).sort()).toEqual(
    [`[http] GET ${base}/f1 traced`, `[http] GET ${base}/f2 traced`, '[redis] GET k1 traced', '[redis] GET k2 traced', `[http] GET ${base}/h1 traced`, `[http] GET ${base}/h2 traced`].sort(),
  );
  // OpenTelemetry saw all six too: they are in the trace, so the profile says `traced`.
  const clients = exporter.getFinishedSpans().filter((x) => x.kind === SpanKind.CLIENT);
  expect(clients.map((x) => x.instrumentationScope.name).sort()).toEqual([
    '@opentelemetry/instrumentation-http',
    '@opentelemetry/instrumentation-http',
    '@opentelemetry/instrumentation-ioredis',
    '@opentelemetry/instrumentation-ioredis',
    '@opentelemetry/instrumentation-undici',
    '@opentelemetry/instrumentation-undici',
  ]);
});

test('calls inside an internal span (a GraphQL resolver, an ORM operation) are counted once, under the step made from that span, whichever side saw them first', async () => {
  const tracer = trace.getTracer('test');
  const { profile } = await withProfile('job', () =>
    step('load', () =>
      tracer.startActiveSpan('resolver', async (s) => {
        try {
          // fetch: miniprof's handler first; ioredis and http: the span first.
          await Promise.all([fetch(`${base}/f3`).then((r) => r.text()), redis.get('k3'), get(`${base}/h3`)]);
        } finally {
          s.end();
        }
      }),
    ),
  );
  const load = profile.toJSON().root.children[0]!;
  expect(load.name).toBe('load');
  expect(calls(load)).toEqual([]);
  expect(load.children.map((c) => c.name)).toEqual(['resolver']);
  expect(calls(load.children[0]!).sort()).toEqual([`[http] GET ${base}/f3 traced`, '[redis] GET k3 traced', `[http] GET ${base}/h3 traced`].sort());
});
