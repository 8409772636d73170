/**
 * The contract every ProfileStore keeps, run against a factory so the memory store, the Redis
 * store (node-redis and ioredis) and any store someone writes later are held to the same tests.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import type { ProfileJSON } from '../src/index.js';
import type { ProfileStore } from '../src/results/store.js';

export interface StoreHarness {
  store: ProfileStore;
  /** Let everything saved so far pass the store's `maxAgeMs` (move a fake clock, or wait). */
  expireAll(): Promise<void>;
  close?(): Promise<void>;
}

/** `maxCount` is per owner for Redis and over all owners for memory: the tests use one owner when it matters. */
export type StoreFactory = (opts: { maxCount: number; maxAgeMs: number }) => Promise<StoreHarness>;

let seq = 0;

/** A v1 profile with `steps` children, one of them with two identical custom timings. */
export function sampleProfile(over: Partial<ProfileJSON> = {}, steps = 2): ProfileJSON {
  const n = ++seq;
  const children = Array.from({ length: steps }, (_, i) => ({
    name: `step ${i} «ü» </script>`,
    startMs: i,
    durationMs: 1.5,
    children: [],
    ...(i === 0
      ? {
          custom: [
            // The same query with the same values, twice, as miniprof's JSON marks it.
            { category: 'sql', command: 'select * from t where id = ?', startMs: 0.1, durationMs: 0.2, duplicate: true as const, similar: 1 },
            { category: 'sql', command: 'select * from t where id = ?', startMs: 0.4, durationMs: 0.3, duplicate: true as const, similar: 1 },
          ],
        }
      : {}),
  }));
  return {
    v: 1,
    id: randomUUID(),
    name: `GET /p/${n}`,
    machine: 'web-1',
    started: new Date(Date.UTC(2026, 10, 29, 12, 0, n % 60)).toISOString(),
    durationMs: 12.345,
    droppedSteps: 0,
    warnings: [],
    request: { method: 'GET', path: `/p/${n}`, status: 200 },
    root: { name: `GET /p/${n}`, startMs: 0, durationMs: 12.345, children },
    ...(steps > 0 ? { similar: [{ id: 1, category: 'sql', command: 'select * from t where id = ?', count: 2, durationMs: 0.5 }] } : {}),
    ...over,
  };
}

export function storeConformance(name: string, make: StoreFactory): void {
  const big = { maxCount: 50, maxAgeMs: 3_600_000 };

  async function using<T>(opts: { maxCount: number; maxAgeMs: number }, fn: (h: StoreHarness) => Promise<T>): Promise<T> {
    const h = await make(opts);
    try {
      return await fn(h);
    } finally {
      await h.close?.();
    }
  }

  describe(`${name}: ProfileStore conformance`, () => {
    test('save then get gives the same JSON back, as a copy', () =>
      using(big, async ({ store }) => {
        const p = sampleProfile();
        await store.save('alice', p);
        const got = await store.get('alice', p.id);
        expect(got).toEqual(p);
        got!.root.children.length = 0;
        expect(await store.get('alice', p.id)).toEqual(p);
      }));

    test('A3: get never returns another owner’s profile, nor an unknown or malformed id', () =>
      using(big, async ({ store }) => {
        const p = sampleProfile();
        await store.save('alice', p);
        expect(await store.get('bob', p.id)).toBeUndefined();
        expect(await store.get('alice', randomUUID())).toBeUndefined();
        for (const bad of ['', '*', '../' + p.id, p.id + '*', p.id.toUpperCase(), `${p.id}\n`]) {
          expect(await store.get('alice', bad)).toBeUndefined();
        }
      }));

    test('list: newest first, at most `limit`, only the owner’s, with the summary fields', () =>
      using(big, async ({ store }) => {
        const mine = [sampleProfile(), sampleProfile(), sampleProfile({ request: { method: 'POST', path: '/x', status: 500 } })];
        for (const p of mine) {
          await store.save('alice', p);
          await store.save('bob', sampleProfile());
        }
        const list = await store.list('alice', 10);
        expect(list.map((s) => s.id)).toEqual(mine.map((p) => p.id).reverse());
        expect((await store.list('alice', 2)).map((s) => s.id)).toEqual([mine[2]!.id, mine[1]!.id]);
        expect(await store.list('carol', 10)).toEqual([]);
        const top = list[0]!;
        expect(top).toMatchObject({ id: mine[2]!.id, method: 'POST', path: '/x', status: 500, durationMs: 12.345, steps: 2, custom: 2, started: mine[2]!.started });
        expect(top.flags).toEqual(['duplicate', 'n+1']);
        expect(typeof top.savedAt).toBe('number');
      }));

    test('E2: the count bound drops the oldest first', () =>
      using({ maxCount: 5, maxAgeMs: 3_600_000 }, async ({ store }) => {
        const ps = Array.from({ length: 12 }, () => sampleProfile());
        for (const p of ps) await store.save('alice', p);
        const list = await store.list('alice', 100);
        expect(list.map((s) => s.id)).toEqual(ps.slice(-5).map((p) => p.id).reverse());
        for (const p of ps.slice(0, 7)) expect(await store.get('alice', p.id)).toBeUndefined();
        for (const p of ps.slice(-5)) expect(await store.get('alice', p.id)).toEqual(p);
      }));

    test('E2: past maxAgeMs a profile is gone from get and list', () =>
      using({ maxCount: 50, maxAgeMs: 300 }, async (h) => {
        const p = sampleProfile();
        await h.store.save('alice', p);
        expect(await h.store.get('alice', p.id)).toEqual(p);
        await h.expireAll();
        expect(await h.store.get('alice', p.id)).toBeUndefined();
        expect(await h.store.list('alice', 10)).toEqual([]);
        const q = sampleProfile();
        await h.store.save('alice', q);
        expect((await h.store.list('alice', 10)).map((s) => s.id)).toEqual([q.id]);
      }));

    test('concurrent saves all land', () =>
      using(big, async ({ store }) => {
        const ps = Array.from({ length: 30 }, () => sampleProfile());
        await Promise.all(ps.map((p) => store.save('alice', p)));
        const ids = (await store.list('alice', 100)).map((s) => s.id);
        expect(new Set(ids)).toEqual(new Set(ps.map((p) => p.id)));
      }));

    test('owners are opaque strings: separators and unicode do not collide', () =>
      using(big, async ({ store }) => {
        const p = sampleProfile();
        const q = sampleProfile();
        await store.save('peer:127.0.0.1', p);
        await store.save('peer:127.0.0.1:', q);
        await store.save('optin:é☕', q);
        expect((await store.list('peer:127.0.0.1', 10)).map((s) => s.id)).toEqual([p.id]);
        expect(await store.get('peer:127.0.0.1', q.id)).toBeUndefined();
        expect(await store.get('optin:é☕', q.id)).toEqual(q);
      }));
  });
}
