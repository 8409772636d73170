/**
 * A CPU-sampled profile through the Redis store (real redis-server, test/helpers): it fits the
 * store's default `maxBytes` (1 MiB) with its samples (kept up to 512 KiB), and the page and the
 * `.cpuprofile` read back from Redis as from memory.
 */
import express from 'express';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { miniprof } from '../adapters/express.js';
import { redisStore, step, type ProfileJSON, type RedisClientLike } from '../src/index.js';
import { closeServers, serve } from './helpers/http.js';
import { startRedis, type RedisServer } from './helpers/redis-server.js';
// @ts-expect-error plain JavaScript fixture, typed below
import * as work from './fixtures/cpu-work.mjs';

const { scoreRows, renderReport } = work as { scoreRows: (n: number) => unknown[]; renderReport: (n: number) => string };

let server: RedisServer;
let client: Redis;

beforeAll(async () => {
  server = await startRedis();
  client = new Redis(server.url, { maxRetriesPerRequest: 1 });
});

afterAll(async () => {
  await closeServers();
  client.disconnect();
  await server?.kill();
});

it('a sampled profile saved in Redis serves its page and its .cpuprofile to its developer', async () => {
  const faults: unknown[] = [];
  const app = express();
  app.use(miniprof({ isDeveloper: () => true, onInternalError: (e) => faults.push(e), results: { store: redisStore(client as unknown as RedisClientLike) } }));
  app.get('/report', async (_req, res) => {
    await step('score', async () => {
      await new Promise((r) => setTimeout(r, 1));
      scoreRows(20000);
    });
    res.type('html').send(`<html><body>${step('render', () => renderReport(3000)).length}</body></html>`);
  });
  const base = `http://127.0.0.1:${await serve(app)}`;
  const r = await fetch(`${base}/report`, { headers: { 'x-miniprof-cpu': '1' } });
  await r.text();
  const id = r.headers.get('x-miniprof-id')!;
  // Saved on close: poll until Redis has it.
  let json: ProfileJSON | undefined;
  for (let i = 0; i < 50 && json === undefined; i++) {
    const got = await fetch(`${base}/_miniprof/${id}.json`);
    if (got.status === 200) json = (await got.json()) as ProfileJSON;
    else await new Promise((res) => setTimeout(res, 100));
  }
  expect(faults).toEqual([]);
  expect(json?.cpu?.profile?.samples.length).toBeGreaterThan(0);
  const cp = await fetch(`${base}/_miniprof/${id}.cpuprofile`);
  expect(cp.status).toBe(200);
  expect(((await cp.json()) as { nodes: { callFrame: { functionName: string } }[] }).nodes.some((n) => n.callFrame.functionName === 'scoreRows')).toBe(true);
  expect(await (await fetch(`${base}/_miniprof/${id}`)).text()).toContain('<svg class="flame"');
});
