/**
 * The Redis store against a real `redis-server` (Debian's, started here on a free loopback
 * port), through both clients an app may pass: node-redis and ioredis.
 */
import { randomUUID } from 'node:crypto';
import express from 'express';
import Fastify from 'fastify';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { miniprof as expressMiniprof } from '../adapters/express.js';
import { miniprof as fastifyMiniprof } from '../adapters/fastify.js';
import { redisStore, step, type RedisClientLike } from '../src/index.js';
import { startRedis, type RedisServer } from './helpers/redis-server.js';
import { sampleProfile, storeConformance } from './store-conformance.js';

let server: RedisServer;
const clients: { close(): Promise<void> | void }[] = [];

beforeAll(async () => {
  server = await startRedis();
});

afterAll(async () => {
  for (const c of clients) await c.close();
  await server?.kill();
});

async function nodeRedis(url: string) {
  const c = createClient({ url, socket: { reconnectStrategy: 50 } });
  c.on('error', () => {}); // the app's job; the store reports its own faults
  await c.connect();
  clients.push({ close: () => c.destroy() });
  return c;
}

async function ioredis(url: string) {
  const c = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 50 });
  c.on('error', () => {});
  await c.connect();
  clients.push({ close: () => c.disconnect() });
  return c;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const [name, connect] of [
  ['node-redis', nodeRedis],
  ['ioredis', ioredis],
] as const) {
  storeConformance(`redisStore (${name})`, async ({ maxCount, maxAgeMs }) => {
    const client = await connect(server.url);
    const store = redisStore(client as RedisClientLike, { prefix: `t:${randomUUID()}:`, maxCount, maxAgeMs });
    return {
      store,
      async expireAll() {
        await sleep(maxAgeMs + 150);
      },
    };
  });

  describe(`redisStore (${name})`, () => {
    test('E2: the per-developer list is trimmed and the profiles cut off are deleted with it', async () => {
      const client = await connect(server.url);
      const prefix = `bound:${randomUUID()}:`;
      const store = redisStore(client as RedisClientLike, { prefix, maxCount: 4, maxAgeMs: 60_000 });
      for (let i = 0; i < 40; i++) await store.save(i % 2 === 0 ? 'a' : 'b', sampleProfile());
      const keys = (await run(client as RedisClientLike, ['KEYS', `${prefix}*`])) as string[];
      // Two owners: per owner 4 profiles + 1 list.
      expect(keys.length).toBe(10);
      for (const k of keys) expect(Number(await run(client as RedisClientLike, ['PTTL', k]))).toBeGreaterThan(0);
      expect((await store.list('a', 100)).length).toBe(4);
    });

    test('no identity appears in a key name', async () => {
      const client = await connect(server.url);
      const prefix = `names:${randomUUID()}:`;
      await redisStore(client as RedisClientLike, { prefix }).save('optin:secret-token-127.0.0.1', sampleProfile());
      const keys = (await run(client as RedisClientLike, ['KEYS', `${prefix}*`])) as string[];
      expect(keys.length).toBe(2);
      for (const k of keys) expect(k).toMatch(new RegExp(`^${prefix}[pl]:[0-9a-f]{32}(?::[0-9a-f-]{36})?$`));
    });
  });
}

function run(client: RedisClientLike, args: string[]): Promise<unknown> {
  if ('call' in client && typeof client.call === 'function') return client.call(args[0]!, ...args.slice(1));
  return (client as { sendCommand(a: string[]): Promise<unknown> }).sendCommand(args);
}

test('setup: a client that is neither node-redis nor ioredis is refused with a coded error', () => {
  expect(() => redisStore({} as never)).toThrow(expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_ARGUMENT' }));
  expect(() => redisStore(null as never)).toThrow(expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_ARGUMENT' }));
});

describe('C11: the Redis server goes away in the middle of a developer request', () => {
  // Each case has a server of its own, killed by the request's handler.
  test('Express + node-redis: the response is the app’s, the fault goes to onInternalError, the page says 503', async () => {
    const own = await startRedis();
    try {
      const client = await nodeRedis(own.url);
      const faults: unknown[] = [];
      const app = express();
      app.use(expressMiniprof({ isDeveloper: () => true, onInternalError: (e) => faults.push(e), results: { store: redisStore(client, { timeoutMs: 300 }) } }));
      app.get('/', async (_req, res) => {
        await step('kill redis', () => own.kill());
        res.type('text').send('still here');
      });
      const http = app.listen(0, '127.0.0.1');
      await new Promise((r) => http.once('listening', r));
      const base = `http://127.0.0.1:${(http.address() as { port: number }).port}`;
      try {
        const res = await fetch(`${base}/`);
        expect(res.status).toBe(200);
        expect(await res.text()).toBe('still here');
        expect(res.headers.get('x-miniprof-id')).toMatch(/^[0-9a-f-]{36}$/);
        for (let i = 0; i < 100 && faults.length === 0; i++) await sleep(50);
        expect(faults.map(String)).toHaveLength(1);
        expect(faults[0]).toBeInstanceOf(Error);
        const page = await fetch(`${base}/_miniprof/`);
        expect(page.status).toBe(503);
        expect(page.headers.get('cache-control')).toBe('private, no-store');
        // The save timed out and opened the store's breaker: the list is skipped, not reported again.
        expect(faults.map(String)).toEqual([expect.stringMatching(/^Error: miniprof redis store: EVAL took longer than 300 ms; the store is skipped/)]);
      } finally {
        await new Promise((r) => http.close(r));
      }
    } finally {
      await own.kill();
    }
  });

  test('Fastify + ioredis: the response is the app’s, the fault goes to onInternalError', async () => {
    const own = await startRedis();
    try {
      const client = await ioredis(own.url);
      const faults: unknown[] = [];
      const app = Fastify();
      await app.register(fastifyMiniprof, { isDeveloper: () => true, onInternalError: (e) => faults.push(e), results: { store: redisStore(client, { timeoutMs: 300 }) } });
      app.get('/', async () => {
        await step('kill redis', () => own.kill());
        return { ok: true };
      });
      await app.listen({ port: 0, host: '127.0.0.1' });
      try {
        const port = (app.server.address() as { port: number }).port;
        const res = await fetch(`http://127.0.0.1:${port}/`);
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual({ ok: true });
        for (let i = 0; i < 100 && faults.length === 0; i++) await sleep(50);
        expect(faults.map(String)).toHaveLength(1);
        expect(faults[0]).toBeInstanceOf(Error);
      } finally {
        await app.close();
      }
    } finally {
      await own.kill();
    }
  });
});
