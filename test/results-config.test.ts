/**
 * Setup and faults of the results side: bad options are coded errors at setup; a store that
 * throws, rejects or hangs never changes the app's response, and its faults reach onInternalError.
 */
import express from 'express';
import Fastify from 'fastify';
import { afterEach, expect, test } from 'vitest';
import { miniprof as expressMiniprof } from '../adapters/express.js';
import { miniprof as fastifyMiniprof } from '../adapters/fastify.js';
import { memoryStore, type ProfileStore } from '../src/index.js';
import { readOptIn, signOptIn } from '../src/results/optin.js';
import { closeServers, raw, serve, waitFor, withoutDate } from './helpers/http.js';

const fastifies: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  await closeServers();
  for (const f of fastifies.splice(0)) await f.close();
});

const code = (c: string) => expect.objectContaining({ code: c });

test('bad results, secret and optInMaxAgeMs options throw coded errors at setup, naming what was given', () => {
  const bad: [unknown, string, RegExp][] = [
    [{ results: 'yes' }, 'MINIPROF_ERR_INVALID_OPTION', /"results" must be/],
    [{ results: { basePath: 'nope' } }, 'MINIPROF_ERR_INVALID_OPTION', /results\.basePath.*"nope"/],
    [{ results: { basePath: '/a/' } }, 'MINIPROF_ERR_INVALID_OPTION', /results\.basePath/],
    [{ results: { basePath: '/a/../b' } }, 'MINIPROF_ERR_INVALID_OPTION', /results\.basePath/],
    [{ results: { basePath: '/a b' } }, 'MINIPROF_ERR_INVALID_OPTION', /results\.basePath/],
    [{ results: { basePath: '/"><x' } }, 'MINIPROF_ERR_INVALID_OPTION', /results\.basePath/],
    [{ results: { store: {} } }, 'MINIPROF_ERR_INVALID_OPTION', /results\.store/],
    [{ results: { listLimit: 0 } }, 'MINIPROF_ERR_INVALID_OPTION', /listLimit/],
    [{ results: { timeoutMs: 0 } }, 'MINIPROF_ERR_INVALID_OPTION', /timeoutMs/],
    [{ results: { owner: 'user' } }, 'MINIPROF_ERR_INVALID_OPTION', /"owner" must be a function/],
    [{ results: { path: '/x' } }, 'MINIPROF_ERR_UNKNOWN_OPTION', /results\.path/],
    [{ secret: 'short' }, 'MINIPROF_ERR_INVALID_OPTION', /"secret" must be at least 32 bytes, got 5/],
    [{ secret: 42 }, 'MINIPROF_ERR_INVALID_OPTION', /"secret"/],
    [{ secret: 'x'.repeat(40), results: false }, 'MINIPROF_ERR_INVALID_OPTION', /"secret"/],
    [{ optInMaxAgeMs: 10 }, 'MINIPROF_ERR_INVALID_OPTION', /optInMaxAgeMs/],
  ];
  for (const [opts, c, message] of bad) {
    let err: unknown;
    try {
      expressMiniprof(opts as never);
    } catch (e) {
      err = e;
    }
    expect(err, JSON.stringify(opts)).toEqual(code(c));
    expect((err as Error).message).toMatch(message);
  }
  // The secret itself never appears in an error.
  try {
    expressMiniprof({ secret: 'hunter2-but-too-short' });
  } catch (e) {
    expect((e as Error).message).not.toContain('hunter2');
  }
});

test('Fastify refuses the same options at register time', async () => {
  await expect(Fastify().register(fastifyMiniprof, { results: { basePath: 'x' } } as never).ready()).rejects.toEqual(code('MINIPROF_ERR_INVALID_OPTION'));
  await expect(Fastify().register(fastifyMiniprof, { secret: 'short' } as never).ready()).rejects.toEqual(code('MINIPROF_ERR_INVALID_OPTION'));
});

test('opt-in cookies: valid round-trips; expired, tampered, forged, malformed, other-generation and wrongly named ones are null', () => {
  const secret = Buffer.from('k'.repeat(32));
  const now = 1_800_000_000_000;
  const { value, optIn } = signOptIn(secret, now, 3_600_000);
  for (const [name, secure] of [['miniprof', false], ['__Host-miniprof', true]] as const) {
    expect(readOptIn(secret, `a=1; ${name}=${value}; b=2`, now, secure)).toEqual(optIn);
    expect(readOptIn(secret, `${name}=${value}`, now + 3_600_000, secure)).toBeNull();
    expect(readOptIn(Buffer.from('j'.repeat(32)), `${name}=${value}`, now, secure)).toBeNull();
    expect(readOptIn(secret, `${name}=${value}`, now, secure, 1)).toBeNull();
    const [v, token, exp, gen, mac] = value.split('.');
    expect(readOptIn(secret, `${name}=${v}.${token}.${Number(exp) + 1}.${gen}.${mac}`, now, secure)).toBeNull();
    expect(readOptIn(secret, `${name}=${v}.${token}.${exp}.1.${mac}`, now, secure, 1)).toBeNull();
    expect(readOptIn(secret, `${name}=${v}.${token!.replace(/^./, (c) => (c === 'a' ? 'b' : 'a'))}.${exp}.${gen}.${mac}`, now, secure)).toBeNull();
    expect(readOptIn(secret, `${name}=${v}.${token}.${exp}.${gen}.${mac!.slice(0, -2)}`, now, secure)).toBeNull();
    expect(readOptIn(secret, `x${name}=${value}`, now, secure)).toBeNull();
    expect(readOptIn(secret, undefined, now, secure)).toBeNull();
  }
  // F5: each kind of request reads only its own name.
  expect(readOptIn(secret, `miniprof=${value}`, now, true)).toBeNull();
  expect(readOptIn(secret, `__Host-miniprof=${value}`, now, false)).toBeNull();
  const g = signOptIn(secret, now, 3_600_000, 7);
  expect(readOptIn(secret, `miniprof=${g.value}`, now, false, 7)).toEqual(g.optIn);
  expect(readOptIn(secret, `miniprof=${g.value}`, now, false, 0)).toBeNull();
});

function faulty(kind: 'throws' | 'rejects' | 'hangs'): ProfileStore {
  const fail = () => {
    if (kind === 'throws') throw new Error('store down');
    if (kind === 'hangs') return new Promise<never>(() => {});
    return Promise.reject(new Error('store down'));
  };
  return { save: fail, get: fail, list: fail } as unknown as ProfileStore;
}

for (const kind of ['throws', 'rejects'] as const) {
  test(`C11: a store that ${kind} leaves the app's response alone and reports once per call (Express and Fastify)`, async () => {
    const faults: unknown[] = [];
    const opts = { isDeveloper: () => true, onInternalError: (e: unknown) => faults.push(e), results: { store: faulty(kind) } };
    const good = { isDeveloper: () => true, results: { store: memoryStore() } };
    const ex = (o: object) => {
      const a = express();
      a.use(expressMiniprof(o));
      a.get('/', (_req, res) => void res.type('text').send('ok'));
      return serve(a);
    };
    const fa = async (o: object) => {
      const f = Fastify();
      await f.register(fastifyMiniprof, o);
      f.get('/', async () => 'ok');
      await f.listen({ port: 0, host: '127.0.0.1' });
      fastifies.push(f);
      return (f.server.address() as { port: number }).port;
    };
    for (const make of [ex, fa]) {
      faults.length = 0;
      const port = await make(opts);
      const ref = await make(good);
      const r = await raw(port, { path: '/' });
      const want = await raw(ref, { path: '/' });
      const norm = (b: Buffer) => withoutDate(b).toString('latin1').replace(/[0-9a-f-]{36}/g, 'ID').replace(/Server-Timing: [^\r]*/i, '');
      expect(norm(r.bytes)).toBe(norm(want.bytes));
      await waitFor(() => faults.length === 1);
      expect((faults[0] as Error).message).toBe('store down');
      const page = await raw(port, { path: '/_miniprof/' });
      expect(page.status).toBe(503);
      expect(page.headers['cache-control']).toEqual(['private, no-store']);
      expect(faults.length).toBe(2);
    }
  });
}

test('C11: a store that never answers: the app is unaffected and the developer page answers 503 after results.timeoutMs', async () => {
  const faults: unknown[] = [];
  const a = express();
  a.use(expressMiniprof({ isDeveloper: () => true, onInternalError: (e) => faults.push(e), results: { store: faulty('hangs'), timeoutMs: 100 } }));
  a.get('/', (_req, res) => void res.type('text').send('ok'));
  const port = await serve(a);
  const r = await raw(port, { path: '/' });
  expect(r.status).toBe(200);
  expect(r.payload.toString()).toBe('ok');
  const page = await raw(port, { path: '/_miniprof/' });
  expect(page.status).toBe(503);
  expect(faults.map(String)).toEqual(['Error: miniprof: the profile store took longer than 100 ms; the store is skipped for 10000 ms, then tried again (reported once until it answers)']);
  // Skipped now (store-breaker.test.ts): 503 again, and the outage is not reported a second time.
  const one = await raw(port, { path: `/_miniprof/${r.headers['x-miniprof-id']![0]}` });
  expect(one.status).toBe(503);
  expect(faults).toHaveLength(1);
});
