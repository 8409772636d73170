/**
 * The list is not filled with `/favicon.ico` (issue 47.6): a request the app answered 404 with
 * nothing timed is not saved, on Express and Fastify over real sockets; `results.keepNotFound`
 * keeps them, and is checked at setup like the other results options.
 */
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, expect, test } from 'vitest';
import { miniprof as expressMiniprof } from '../adapters/express.js';
import { miniprof as fastifyMiniprof } from '../adapters/fastify.js';
import { memoryStore, step, type ProfileJSON, type ProfileStore } from '../src/index.js';
import { resolveResults } from '../src/results/config.js';
import { saveProfile, worthKeeping } from '../src/results/save.js';
import { closeServers, raw, serve, waitFor } from './helpers/http.js';

const fastifies: FastifyInstance[] = [];
afterEach(async () => {
  await closeServers();
  for (const f of fastifies.splice(0)) await f.close();
});

function watched(): ProfileStore & { saved: string[] } {
  const inner = memoryStore();
  const saved: string[] = [];
  return { saved, save: async (o, p) => (await inner.save(o, p), void saved.push(p.request!.path)), get: inner.get, list: inner.list };
}

async function app(kind: 'express' | 'fastify', store: ProfileStore, keepNotFound = false): Promise<number> {
  const opts = { isDeveloper: () => true, results: { store, keepNotFound } };
  if (kind === 'express') {
    const a = express();
    a.use(expressMiniprof(opts));
    a.get('/ok', (_req, res) => void res.send('ok'));
    // A 404 that did some work (a lookup that found nothing) says something: kept.
    a.get('/users/:id', async (_req, res) => {
      await step('find user', async () => {});
      res.status(404).send('no such user');
    });
    return serve(a);
  }
  const f = Fastify();
  fastifies.push(f);
  await f.register(fastifyMiniprof, opts);
  f.get('/ok', async () => 'ok');
  f.get('/users/:id', async (_req, reply) => {
    await step('find user', async () => {});
    return reply.code(404).send('no such user');
  });
  await f.listen({ port: 0, host: '127.0.0.1' });
  return (f.server.address() as { port: number }).port;
}

for (const kind of ['express', 'fastify'] as const) {
  test(`${kind}: /favicon.ico and other bare 404s are not saved; a 404 with a step is`, async () => {
    const store = watched();
    const port = await app(kind, store);
    for (const path of ['/favicon.ico', '/users/7', '/.env', '/ok']) {
      const r = await raw(port, { path });
      expect(r.status).toBe(path === '/ok' ? 200 : 404);
    }
    // Saves happen in request order once each response closes: /ok's comes last.
    await waitFor(() => store.saved.includes('/ok'));
    expect(store.saved).toEqual(['/users/7', '/ok']);
    const list = (await raw(port, { path: '/_miniprof/' })).payload.toString();
    expect(list).not.toContain('favicon');
    expect(list).toContain('/users/7');
  });

  test(`${kind}: with results.keepNotFound the bare 404s are saved too`, async () => {
    const store = watched();
    const port = await app(kind, store, true);
    for (const path of ['/favicon.ico', '/ok']) await raw(port, { path });
    await waitFor(() => store.saved.includes('/ok'));
    expect(store.saved).toEqual(['/favicon.ico', '/ok']);
  });
}

const profile = (status: number, children: number): ProfileJSON => ({
  v: 1,
  id: '00000000-0000-4000-8000-000000000000',
  name: 'GET /favicon.ico',
  machine: 'web-1',
  started: '2026-12-01T00:00:00.000Z',
  durationMs: 1,
  droppedSteps: 0,
  warnings: [],
  request: { method: 'GET', path: '/favicon.ico', status },
  root: { name: 'GET /favicon.ico', startMs: 0, durationMs: 1, children: Array.from({ length: children }, () => ({ name: 's', startMs: 0, durationMs: 1, children: [] })) },
});

test('the rule: only a 404 with no step, no custom timing and nothing dropped is left out, unless keepNotFound', async () => {
  expect(worthKeeping(profile(404, 0), false)).toBe(false);
  expect(worthKeeping(profile(404, 0), true)).toBe(true);
  expect(worthKeeping(profile(404, 1), false)).toBe(true);
  expect(worthKeeping(profile(200, 0), false)).toBe(true);
  expect(worthKeeping(profile(500, 0), false)).toBe(true);
  expect(worthKeeping({ ...profile(404, 0), droppedSteps: 3 }, false)).toBe(true);
  const custom = profile(404, 0);
  custom.root.custom = [{ category: 'sql', command: 'select 1', startMs: 0, durationMs: 1 }];
  expect(worthKeeping(custom, false)).toBe(true);
  // Through saveProfile into a real store: kept only when asked.
  for (const keep of [false, true]) {
    const store = memoryStore();
    saveProfile(store, 'o', profile(404, 0), () => undefined, -1, keep);
    expect((await store.list('o', 10)).length).toBe(keep ? 1 : 0);
  }
});

test('results.keepNotFound: a boolean, default false, anything else a coded error at setup naming it', () => {
  expect(resolveResults({})!.keepNotFound).toBe(false);
  expect(resolveResults({ results: { keepNotFound: true } })!.keepNotFound).toBe(true);
  for (const bad of ['yes', 1, null]) {
    expect(() => expressMiniprof({ results: { keepNotFound: bad as never } })).toThrow(
      expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_OPTION', message: expect.stringMatching(/option "results\.keepNotFound" must be a boolean, got/) }),
    );
  }
});
