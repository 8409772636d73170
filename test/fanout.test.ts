import { describe, expect, test } from 'vitest';
import fc from 'fast-check';
import { renderText, step, timing, withProfile, type Profile } from '../src/index.js';
import { concurrencyOf } from '../src/analysis/fanout.js';
import { deferred, fakeClock, fixed, sleep } from './helpers/clock.js';
import { limiter } from './helpers/tree.js';

/**
 * N children started together by Promise.all, each waiting on its own gate; the gates open at
 * `ends` (ms on the injected clock), in that order. What the children "did" is only when they
 * ended, exactly as a queue, a pool or parallel work would show it.
 */
async function fanOut(ends: number[], kind: 'step' | 'sql' = 'step'): Promise<Profile> {
  const c = fakeClock();
  const { profile } = await withProfile(
    'job',
    async () => {
      const gates = ends.map(() => deferred());
      const all = Promise.all(
        gates.map((g, i) => (kind === 'step' ? step('load user', () => g.promise) : timing('sql', `select * from users where id = ${i + 1}`, () => g.promise))),
      );
      const order = ends.map((e, i) => [e, i] as const).sort((a, b) => a[0] - b[0]);
      for (const [e, i] of order) {
        c.t = e;
        gates[i]!.resolve();
        await sleep(0);
      }
      await all;
    },
    fixed(c),
  );
  return profile;
}

function analysis(p: Profile) {
  const { concurrency, serialized, fanOut, parallelism } = p.toJSON().root;
  return { concurrency, serialized, fanOut, parallelism };
}

describe('serialized fan-out: how many of N similar children started together ran at once', () => {
  test('behind a queue of 1 (ends 10, 20, 30, 40, 50): concurrency 1, serialized, and the text says so', async () => {
    const p = await fanOut([10, 20, 30, 40, 50]);
    // One verdict per step: parallelism (sum over wall time) would read 3.0 for calls that ran one
    // at a time, so the group's verdict replaces it (issue 59 item 2).
    expect(analysis(p)).toEqual({ concurrency: 1, serialized: true, fanOut: { name: 'load user', count: 5 }, parallelism: undefined });
    expect(renderText(p).split('\n')[1]).toBe(' job = 50.0ms (serialized: 5 × load user ran one at a time)');
    // For pages that are not UTF-8 the text stays ASCII.
    expect(renderText(p, { ascii: true }).split('\n')[1]).toBe(' job = 50.0ms (serialized: 5 x load user ran one at a time)');
  });

  test('a pool of 2 (ends 10, 10, 20, 20, 30): 2, whether N is even or odd', async () => {
    expect(analysis(await fanOut([10, 10, 20, 20, 30]))).toEqual({ concurrency: 2, serialized: undefined, fanOut: { name: 'load user', count: 5 }, parallelism: undefined });
    expect(analysis(await fanOut([10, 10, 20, 20])).concurrency).toBe(2);
    const p = await fanOut([10, 10, 20, 20, 30]);
    expect(renderText(p).split('\n')[1]).toBe(' job = 30.0ms (5 × load user: 2.0 at once)');
  });

  test('a first wave slowed (a stalled machine, a connection opened): the gaps between ends give one call\'s work', async () => {
    // 40 ms of work each, the first answers 15 ms late: read as 55 ms of work, calls 3 and 4 would
    // seem to have overlapped the first wave.
    expect(analysis(await fanOut([55, 55, 95, 95, 135])).concurrency).toBe(2);
    expect(analysis(await fanOut([55, 95, 135, 175])).concurrency).toBe(1);
  });

  test('a pool of 2 whose first pair had one call held up (a busy machine): still 2, not a queue', async () => {
    // Seen on a loaded machine with real PostgreSQL: the first window alone read 1 (serialized).
    expect(analysis(await fanOut([69.5, 125.9, 126.3, 166.7, 166.8])).concurrency).toBe(2.32);
  });

  test('truly parallel equal work: N', async () => {
    expect(analysis(await fanOut([10, 10, 10, 10, 10]))).toEqual({ concurrency: 5, serialized: undefined, fanOut: { name: 'load user', count: 5 }, parallelism: undefined });
  });

  test('lengths that vary less than one child apart read as partly parallel (the similar-work assumption)', async () => {
    // w = 10: the calls worked over [0,10], [1,11], [2,12], [5,15], [10,20]. The windows ending at
    // each end hold 3.2 ([0,10]: 1 + .9 + .8 + .5 + 0), 3.5, 3.6, 3.3 and 1.8: the median is 3.3.
    expect(analysis(await fanOut([10, 11, 12, 15, 20])).concurrency).toBe(3.3);
  });

  test('it abstains for children of very different lengths (ends further apart than one child takes)', async () => {
    // A 5 ms, a 50 ms and a 100 ms call in parallel: no queue of similar work ends like this.
    expect(analysis(await fanOut([5, 50, 100]))).toEqual({ concurrency: undefined, serialized: undefined, fanOut: undefined, parallelism: 1.55 });
  });

  test('fewer than 3, or children made one after another, get nothing', async () => {
    expect(analysis(await fanOut([10, 20])).concurrency).toBeUndefined();
    const c = fakeClock();
    const { profile } = await withProfile(
      'job',
      async () => {
        for (let i = 0; i < 5; i++) await step('load user', async () => void (c.t += 10));
      },
      fixed(c),
    );
    expect(profile.toJSON().root.concurrency).toBeUndefined();
  });

  test('custom timings: 3 similar queries started together and answered in turn', async () => {
    const p = await fanOut([10, 20, 30], 'sql');
    expect(analysis(p)).toEqual({
      concurrency: 1,
      serialized: true,
      fanOut: { name: 'select * from users where id = ?', count: 3, category: 'sql', similar: 1 },
      parallelism: undefined,
    });
    // The same three queries are the step's N+1: one mark says both (issue 59 items 2 and 5).
    expect(renderText(p).split('\n')[1]).toBe(' job = 30.0ms (N+1: 3 × select * from users where id = ?, one at a time)');
  });

  test('the estimate is on the step whose children they are, and errored children are left out', async () => {
    const c = fakeClock();
    const { profile } = await withProfile(
      'job',
      () =>
        step('page', async () => {
          const gates = [0, 1, 2, 3].map(() => deferred());
          const all = Promise.allSettled(gates.map((g) => step('fetch', () => g.promise)));
          c.t = 1;
          gates[3]!.reject(new Error('refused'));
          for (const [i, g] of gates.slice(0, 3).entries()) {
            c.t = 10 * (i + 1);
            g.resolve();
            await sleep(0);
          }
          await all;
        }),
      fixed(c),
    );
    const page = profile.toJSON().root.children[0]!;
    expect([page.concurrency, page.serialized, page.fanOut]).toEqual([1, true, { name: 'fetch', count: 3 }]);
    expect(profile.toJSON().root.concurrency).toBeUndefined();
  });
});

describe('real timers: a queue, a pool, parallel work', () => {
  // Each call sleeps 40 ms behind a limiter: long enough that a timer run late by a busy machine
  // does not swamp the pattern.
  async function run(slots: number, n = 5) {
    const limit = limiter(slots);
    const { profile } = await withProfile('job', () =>
      Promise.all(Array.from({ length: n }, () => step('load user', () => limit(() => sleep(40))))),
    );
    return profile.toJSON().root;
  }

  test('behind a queue of 1: below 1.6, serialized', async () => {
    const root = await run(1);
    expect(root.concurrency).toBeLessThan(1.6);
    expect(root.serialized).toBe(true);
  });

  test('a pool of 2: about 2', async () => {
    const root = await run(2);
    expect(root.concurrency).toBeGreaterThanOrEqual(1.7);
    expect(root.concurrency).toBeLessThanOrEqual(2.3);
    expect(root.serialized).toBeUndefined();
  });

  test('truly parallel equal work: more than 3 of 5', async () => {
    const root = await run(5);
    expect(root.concurrency).toBeGreaterThan(3);
    expect(root.concurrency).toBeLessThanOrEqual(5);
  });
});

describe('properties', () => {
  const pairs = fc
    .array(fc.tuple(fc.double({ min: 0, max: 1000, noNaN: true }), fc.double({ min: 0, max: 1000, noNaN: true })), { minLength: 3, maxLength: 30 })
    .map((xs) => xs.flatMap(([s, d]) => [s, s + d]));

  test('concurrency is never above the number of children, and never below 1', () => {
    fc.assert(
      fc.property(pairs, (p) => {
        const c = concurrencyOf(p);
        if (c === undefined) return;
        expect(c).toBeGreaterThanOrEqual(1);
        expect(c).toBeLessThanOrEqual(p.length / 2);
      }),
      { numRuns: 2000 },
    );
  });

  test('the same through a profile: children started together, ending whenever', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 200 }), { minLength: 3, maxLength: 12 }), async (ends) => {
        const root = (await fanOut(ends)).toJSON().root;
        if (root.concurrency === undefined) return;
        expect(root.concurrency).toBeGreaterThanOrEqual(1);
        expect(root.concurrency).toBeLessThanOrEqual(root.fanOut!.count);
        expect(root.fanOut!.count).toBeLessThanOrEqual(ends.length);
        expect(root.serialized === true).toBe(root.concurrency < 1.5);
      }),
      { numRuns: 200 },
    );
  });
});
