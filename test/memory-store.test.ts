import fc from 'fast-check';
import { expect, test } from 'vitest';
import { memoryStore, step, timing, withProfile, type ProfileJSON } from '../src/index.js';
import { saveProfile } from '../src/results/save.js';
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

/** A profile miniprof sealed itself, as the adapters hand it to the store at close. */
async function sealed(name: string, more = 0): Promise<ProfileJSON> {
  const { profile } = await withProfile(name, async () => {
    step('a', () => 1);
    await step('b', async () => step('c', () => 2));
    for (let i = 0; i < more; i++) step(`more ${i}`, () => i);
  });
  return (profile as unknown as { data(): ProfileJSON }).data();
}

test('miniprof’s own save of a sealed profile is synchronous and sized exactly; a fault there is reported, never thrown', async () => {
  const store = memoryStore({ maxBytes: 1024 });
  const faults: unknown[] = [];
  const p = await sealed('GET /x');
  saveProfile(store, 'a', p, (e) => faults.push(e));
  // No await: the store already has it, and no promise was made for it.
  expect(store.stats()).toEqual({ count: 1, bytes: Buffer.byteLength(JSON.stringify(p)) });
  const big = await sealed('GET /big', 40);
  expect(() => saveProfile(store, 'a', big, (e) => faults.push(e))).not.toThrow();
  expect(faults).toHaveLength(1);
  expect(faults[0]).toMatchObject({ code: 'MINIPROF_ERR_INVALID_ARGUMENT' });
  expect(await store.get('a', p.id)).toEqual(p);
});

test('a profile saved by miniprof comes back whole, as a copy that shares nothing with what is kept', async () => {
  const store = memoryStore();
  const { profile } = await withProfile('GET /sql', async () => {
    await step('load', async () => {
      timing('sql', 'select 1', () => 1);
      timing('sql', 'select 1', () => 1);
    });
    step('dropped', () => 1);
  }, { maxSteps: 3 });
  const p = (profile as unknown as { data(): ProfileJSON }).data();
  const text = JSON.stringify(p);
  saveProfile(store, 'a', p, () => {});
  const got = (await store.get('a', p.id))!;
  expect(JSON.stringify(got)).toBe(text);
  got.root.children[0]!.custom![0]!.command = 'changed';
  got.customSummary![0]!.count = 99;
  got.warnings.push('changed');
  got.root.children.pop();
  expect(JSON.stringify(await store.get('a', p.id))).toBe(text);
  expect((await store.list('a', 1))[0]).toMatchObject({ id: p.id, steps: 1, custom: 2, flags: ['dropped', 'duplicate', 'n+1'] });
});

test('a store whose save was replaced (a spread with its own save) sees every save', async () => {
  const inner = memoryStore();
  const seen: string[] = [];
  const wrapped = {
    ...inner,
    async save(owner: string, profile: ProfileJSON) {
      seen.push(profile.id);
      await inner.save(owner, profile);
    },
  };
  const p = await sealed('GET /y');
  saveProfile(wrapped, 'a', p, () => {});
  expect(seen).toEqual([p.id]);
  await Promise.resolve();
  expect((await inner.list('a', 5)).map((s) => s.id)).toEqual([p.id]);
});

/**
 * The store links its entries by hand (save order over all owners, and per owner), so it is held
 * to a plain model: an array in save order, filtered and spliced. miniprof's own saves (`seal`)
 * skip the id lookup and reuse the last owner, and the id index is built at the first public
 * save, wherever that falls in the sequence: all of them must agree with the model.
 */
test('behaves as the array model under any sequence of saves, miniprof’s own saves (with or without a size bound), re-saves, lists, gets, stats and passing time', async () => {
  const owners = ['a', 'b', 'c'];
  const op = fc.oneof(
    fc.record({ k: fc.constant('save' as const), owner: fc.integer({ min: 0, max: 2 }), size: fc.integer({ min: 0, max: 12 }) }),
    // `slack`: the bound miniprof passes (Profile.jsonBound) is the size plus this, or unknown.
    fc.record({ k: fc.constant('seal' as const), owner: fc.integer({ min: 0, max: 2 }), size: fc.integer({ min: 0, max: 12 }), slack: fc.option(fc.integer({ min: 0, max: 4000 })) }),
    fc.record({ k: fc.constant('resave' as const), back: fc.nat(), owner: fc.integer({ min: 0, max: 2 }) }),
    fc.record({ k: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 40 }) }),
    fc.record({ k: fc.constant('list' as const), owner: fc.integer({ min: 0, max: 2 }), limit: fc.integer({ min: 1, max: 6 }) }),
    fc.record({ k: fc.constant('get' as const), back: fc.nat(), owner: fc.integer({ min: 0, max: 2 }) }),
    fc.record({ k: fc.constant('stats' as const) }),
  );
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1024, max: 6000 }), fc.array(op, { maxLength: 40 }), async (maxCount, maxBytes, ops) => {
      let t = 0;
      const maxAgeMs = 100;
      const store = memoryStore({ maxCount, maxBytes, maxAgeMs, now: () => t });
      type M = { id: string; owner: string; bytes: number; savedAt: number; p: ProfileJSON };
      let model: M[] = [];
      const made: ProfileJSON[] = [];
      const expire = () => (model = model.filter((e) => t - e.savedAt < maxAgeMs));
      const save = async (owner: string, p: ProfileJSON, own = false, slack: number | null = null) => {
        const bytes = Buffer.byteLength(JSON.stringify(p));
        const tooBig = bytes > maxBytes;
        if (own) {
          // A fault is reported, never thrown: collected here, since a throwing handler is swallowed.
          const faults: unknown[] = [];
          saveProfile(store, owner, p, (e) => faults.push(e), slack === null ? -1 : bytes + slack);
          expect(faults).toEqual(tooBig ? [expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_ARGUMENT' })] : []);
        } else if (tooBig) {
          await expect(store.save(owner, p)).rejects.toMatchObject({ code: 'MINIPROF_ERR_INVALID_ARGUMENT' });
        } else {
          await store.save(owner, p);
        }
        if (tooBig) return;
        model = model.filter((e) => e.id !== p.id);
        expire();
        while (model.length > 0 && (model.length >= maxCount || model.reduce((s, e) => s + e.bytes, 0) + bytes > maxBytes)) model.shift();
        model.push({ id: p.id, owner, bytes, savedAt: t, p });
      };
      for (const o of ops) {
        if (o.k === 'save' || o.k === 'seal') {
          const p = sampleProfile({}, o.size);
          made.push(p);
          await save(owners[o.owner]!, p, o.k === 'seal', o.k === 'seal' ? o.slack : null);
        } else if (o.k === 'resave' && made.length > 0) {
          await save(owners[o.owner]!, made[made.length - 1 - (o.back % made.length)]!);
        } else if (o.k === 'tick') {
          t += o.ms;
        } else if (o.k === 'list') {
          const got = (await store.list(owners[o.owner]!, o.limit)).map((s) => s.id);
          expire();
          const want = model.filter((e) => e.owner === owners[o.owner]).reverse().slice(0, o.limit).map((e) => e.id);
          expect(got).toEqual(want);
        } else if (o.k === 'get' && made.length > 0) {
          const p = made[made.length - 1 - (o.back % made.length)]!;
          const e = model.find((m) => m.id === p.id && m.owner === owners[o.owner] && t - m.savedAt < maxAgeMs);
          expect(await store.get(owners[o.owner]!, p.id)).toEqual(e === undefined ? undefined : JSON.parse(JSON.stringify(e.p)));
        } else if (o.k === 'stats') {
          // stats() sizes every entry saved with a bound only: checked now and then, not after
          // every step, so that unsized entries pile up between checks as they do in a server.
          const s = store.stats();
          expire();
          expect(s).toEqual({ count: model.length, bytes: model.reduce((n, e) => n + e.bytes, 0) });
        }
        // What is kept, after every step: lists read no sizes.
        for (const owner of owners) {
          const got = (await store.list(owner, 1000)).map((x) => x.id);
          expire();
          expect(got).toEqual(model.filter((e) => e.owner === owner).reverse().map((e) => e.id));
        }
      }
    }),
    { numRuns: 300 },
  );
});
