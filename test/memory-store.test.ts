import { expect, test } from 'vitest';
import { memoryStore } from '../src/index.js';
import { sampleProfile, storeConformance } from './store-conformance.js';

storeConformance('memoryStore', async ({ maxCount, maxAgeMs }) => {
  let t = 1_000_000;
  const store = memoryStore({ maxCount, maxAgeMs, now: () => t });
  return {
    store,
    async expireAll() {
      t += maxAgeMs;
    },
  };
});

test('E2: 10,000 saves from many owners stay within the count and byte caps; past the TTL nothing is left', async () => {
  let t = 0;
  const store = memoryStore({ maxCount: 100, maxBytes: 200_000, maxAgeMs: 30 * 60_000, now: () => t });
  const last: string[] = [];
  for (let i = 0; i < 10_000; i++) {
    const p = sampleProfile({}, 1 + (i % 7));
    await store.save(`owner-${i % 13}`, p);
    last.push(p.id);
    t += 10;
    const s = store.stats();
    expect(s.count).toBeLessThanOrEqual(100);
    expect(s.bytes).toBeLessThanOrEqual(200_000);
  }
  const kept = store.stats();
  expect(kept.count).toBeGreaterThan(0);
  // Oldest first: what is left is exactly the newest `count` saves.
  const ids = new Set<string>();
  for (let o = 0; o < 13; o++) for (const s of await store.list(`owner-${o}`, 1000)) ids.add(s.id);
  expect(ids).toEqual(new Set(last.slice(-kept.count)));
  t += 30 * 60_000;
  expect(store.stats()).toEqual({ count: 0, bytes: 0 });
  for (let o = 0; o < 13; o++) expect(await store.list(`owner-${o}`, 1000)).toEqual([]);
});

test('the byte cap evicts the oldest to make room, and a profile larger than the cap is refused', async () => {
  const store = memoryStore({ maxBytes: 4096 });
  const ps = Array.from({ length: 20 }, () => sampleProfile());
  for (const p of ps) await store.save('a', p);
  expect(store.stats().bytes).toBeLessThanOrEqual(4096);
  expect(await store.get('a', ps[19]!.id)).toEqual(ps[19]);
  expect(await store.get('a', ps[0]!.id)).toBeUndefined();
  const huge = sampleProfile({ name: 'x'.repeat(5000) });
  await expect(store.save('a', huge)).rejects.toMatchObject({ code: 'MINIPROF_ERR_INVALID_ARGUMENT' });
  expect(await store.get('a', ps[19]!.id)).toEqual(ps[19]);
});

test('saving the same id again replaces it and moves it to the front', async () => {
  const store = memoryStore();
  const p = sampleProfile();
  const q = sampleProfile();
  await store.save('a', p);
  await store.save('a', q);
  await store.save('a', { ...p, durationMs: 1 });
  expect((await store.list('a', 10)).map((s) => s.id)).toEqual([p.id, q.id]);
  expect(store.stats().count).toBe(2);
});

test('bad options throw coded errors at setup', () => {
  expect(() => memoryStore({ maxCount: 0 })).toThrow(expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_OPTION' }));
  expect(() => memoryStore({ maxAgeMs: -1 })).toThrow(expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_OPTION' }));
  expect(() => memoryStore({ size: 3 } as never)).toThrow(expect.objectContaining({ code: 'MINIPROF_ERR_UNKNOWN_OPTION' }));
});

test('bytes are the exact UTF-8 size of each profile’s JSON, counted without serializing it', async () => {
  const store = memoryStore();
  const a = sampleProfile({ name: 'café ☕ "quoted" \n 😀' });
  const b = sampleProfile({}, 5);
  await store.save('a', a);
  await store.save('b', b);
  expect(store.stats().bytes).toBe(Buffer.byteLength(JSON.stringify(a)) + Buffer.byteLength(JSON.stringify(b)));
  // The list row is made on first listing, from the kept profile.
  expect((await store.list('b', 1))[0]).toMatchObject({ id: b.id, steps: 5, custom: 2 });
});
