/**
 * The OpenTelemetry instrumentations alone (miniprof's own diagnostics_channel timing never
 * subscribed: `instrument: false`): their ioredis, http and undici client spans become the custom
 * timings, with commands in miniprof's shape and its redaction. A file of its own: subscriptions
 * are per process.
 */
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import type * as HttpModule from 'node:http';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { Redis as RedisClient } from 'ioredis';
import { MiniprofSpanProcessor } from '../adapters/otel.js';
import { renderText, withProfile } from '../src/index.js';
import { startRedis, type RedisServer } from './helpers/redis-server.js';

const provider = new NodeTracerProvider({ spanProcessors: [new MiniprofSpanProcessor()] });
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
  backend = http.createServer((req, res) => res.end(`ok ${req.url}`));
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`;
});

afterAll(async () => {
  redis?.disconnect();
  await new Promise((r) => backend?.close(r));
  await redisServer?.kill();
  await provider.shutdown();
});

test('ioredis, fetch and http client spans become redis and http custom timings, redacted', async () => {
  const { profile } = await trace.getTracer('test').startActiveSpan('job', async (s) => {
    try {
      return await withProfile(
        'job',
        async () => {
          await redis.set('user:1', 'secret-value');
          await redis.get('user:1');
          await (await fetch(`${base}/a?token=tokZQXsecret`)).text();
          await new Promise<void>((resolve) => http.get(`${base}/b?id=7`, (res) => res.resume().on('end', resolve)));
        },
        { instrument: false },
      );
    } finally {
      s.end();
    }
  });
  const custom = profile.toJSON().root.custom!.map((c) => [c.category, c.command, c.traced]);
  expect(custom).toEqual([
    ['redis', 'set user:? ?', true],
    ['redis', 'get user:?', true],
    ['http', `GET ${base}/a?token=?`, true],
    ['http', `GET ${base}/b?id=?`, true],
  ]);
  expect(renderText(profile)).not.toContain('secret-value');
  // A marker no trace id (hex) can hold: `abc` was in about one in 140 of them.
  expect(renderText(profile)).not.toContain('ZQX');
});
