import { describe, expect, test, vi } from 'vitest';
import { renderServerTiming, renderText, step, withProfile } from '../src/index.js';
import { loopSampling } from '../src/analysis/loop.js';
import { als, openProfiles } from '../src/core/context.js';
import { deferred, fakeClock, fixed, sleep, type FakeClock } from './helpers/clock.js';

/** Busy work measured on the injected clock: the loop spins until the clock has moved `ms`. */
function busy(c: FakeClock, ms: number): void {
  const until = c.clock() + ms;
  while (c.clock() < until) c.t += 0.5;
}

describe('blocking steps: the synchronous part of each callback step', () => {
  async function run(c: FakeClock, extra = {}) {
    return withProfile(
      'job',
      async () => {
        // 25 ms of work before the first await: the classic "async that is really sync".
        await step('parse body', async () => {
          busy(c, 25);
          await sleep(1);
          c.t += 100;
        });
        // Mostly waiting: 5 ms sync, then 100 ms of I/O.
        await step('query', async () => {
          busy(c, 5);
          await sleep(1);
          c.t += 100;
        });
        step('hash password', () => busy(c, 30));
        step('small', () => busy(c, 1));
      },
      fixed(c, extra),
    );
  }

  test('exact JSON: syncMs on async steps, blocking above the threshold (default 20 ms) only', async () => {
    const { profile } = await run(fakeClock());
    const steps = profile.toJSON().root.children.map(({ name, durationMs, syncMs, blocking }) => ({ name, durationMs, syncMs, blocking }));
    expect(steps).toEqual([
      { name: 'parse body', durationMs: 125, syncMs: 25, blocking: true },
      { name: 'query', durationMs: 105, syncMs: 5, blocking: undefined },
      { name: 'hash password', durationMs: 30, syncMs: undefined, blocking: true },
      { name: 'small', durationMs: 1, syncMs: undefined, blocking: undefined },
    ]);
  });

  test('text: blocking steps say how long they held the loop', async () => {
    const { profile } = await run(fakeClock());
    expect(renderText(profile)).toBe(
      [
        'web-1 at 2026-11-29T12:00:00.000Z',
        ' job = 261.0ms',
        '> parse body = 125.0ms (blocking: 25.0ms sync)',
        '> query = 105.0ms',
        '> hash password = 30.0ms (blocking: 30.0ms sync)',
        '> small = 1.0ms',
        '',
      ].join('\n'),
    );
  });

  test('Server-Timing: a blocking top-level step says so in its desc', async () => {
    const { profile } = await run(fakeClock());
    expect(renderServerTiming(profile)).toBe(
      'parse_body;dur=125.0;desc="parse body (blocking: 25.0ms sync)", query;dur=105.0, ' +
        'hash_password;dur=30.0;desc="hash password (blocking: 30.0ms sync)", small;dur=1.0, total;dur=261.0',
    );
  });

  test('blockingMs moves the threshold; it is strictly "above"', async () => {
    const { profile } = await run(fakeClock(), { blockingMs: 25 });
    expect(profile.toJSON().root.children.map((t) => t.blocking === true)).toEqual([false, false, true, false]);
  });

  test('a step that throws synchronously after blocking is flagged too', async () => {
    const c = fakeClock();
    const err = new Error('bad json');
    const { profile } = await withProfile(
      'job',
      () => {
        try {
          step('parse', () => {
            busy(c, 40);
            throw err;
          });
        } catch (e) {
          expect(e).toBe(err);
        }
      },
      fixed(c),
    );
    expect(profile.toJSON().root.children[0]).toMatchObject({ name: 'parse', durationMs: 40, error: true, blocking: true });
  });
});

describe('parallelism of concurrent children', () => {
  test('three branches that really overlap: 3.0; the same three taking turns: 2.0; sequential: not reported', async () => {
    const c = fakeClock();
    const parallel = await withProfile(
      'job',
      async () => {
        const gate = deferred();
        const all = Promise.all(['a', 'b', 'c'].map((n) => step(n, () => gate.promise)));
        c.t = 10;
        gate.resolve();
        await all;
      },
      fixed(c),
    );
    expect(parallel.profile.toJSON().root.parallelism).toBe(3);
    expect(renderText(parallel.profile).split('\n')[1]).toBe(' job = 10.0ms (parallel x3.0)');

    const d = fakeClock();
    const serial = await withProfile(
      'job',
      async () => {
        // One connection: the queries start together but the server answers one at a time.
        const gates = [deferred(), deferred(), deferred()];
        const all = Promise.all(gates.map((g, i) => step(`q${i}`, () => g.promise)));
        for (const [i, g] of gates.entries()) {
          d.t = 10 * (i + 1);
          g.resolve();
          await sleep(0);
        }
        await all;
      },
      fixed(d),
    );
    // (10 + 20 + 30) / 30
    expect(serial.profile.toJSON().root.parallelism).toBe(2);

    const e = fakeClock();
    const sequential = await withProfile(
      'job',
      async () => {
        for (const n of ['a', 'b']) {
          await step(n, async () => {
            e.t += 5;
          });
        }
      },
      fixed(e),
    );
    expect(sequential.profile.toJSON().root.parallelism).toBeUndefined();
  });
});

describe('event-loop delay while a profile is open (real time)', () => {
  function spin(ms: number): void {
    const until = performance.now() + ms;
    while (performance.now() < until);
  }

  test("someone else's 80 ms of sync work stalls the profile, and it says so; the sampler stops at the next tick", async () => {
    expect(loopSampling()).toBe(false);
    // Scheduled outside the profile: another request's work, not ours.
    const other = new Promise<void>((resolve) =>
      setTimeout(() => {
        spin(80);
        resolve();
      }, 30),
    );
    const { profile } = await withProfile('victim', async () => {
      expect(loopSampling()).toBe(true);
      await other;
      await sleep(30);
    });
    expect(openProfiles()).toBe(0);
    // Not at the close itself: under load the open count touches zero between most requests, and a
    // timer stopped and started each time cost more than the ticks it saved.
    expect(loopSampling()).toBe(true);
    await sleep(25);
    expect(loopSampling()).toBe(false);
    const json = profile.toJSON();
    expect(json.eventLoopDelayMs).toBeGreaterThanOrEqual(50);
    expect(json.root.children).toEqual([]);
    expect(renderText(profile)).toContain(`! event loop delayed up to ${json.eventLoopDelayMs!.toFixed(1)}ms while this profile was open\n`);
    expect(renderServerTiming(profile)).toContain(`event-loop;dur=${json.eventLoopDelayMs!.toFixed(1)};desc="largest event-loop delay", total;dur=`);
  });

  test('back-to-back profiles (the open count touching zero between them) do not restart the sampler each time', async () => {
    const setIntervalSpy = vi.spyOn(globalThis, 'setInterval');
    try {
      const started = performance.now();
      for (let i = 0; i < 50; i++) await withProfile(`request ${i}`, async () => {});
      const ticks = Math.ceil((performance.now() - started) / 10);
      // At most one start per tick that found nothing open; it was one start per profile.
      expect(setIntervalSpy.mock.calls.length).toBeLessThanOrEqual(ticks + 1);
    } finally {
      setIntervalSpy.mockRestore();
    }
  });

  test('a profile opened right after a stall is not credited with it, while one open through it is', async () => {
    let late: Promise<{ profile: { toJSON(): { eventLoopDelayMs?: number } } }> | undefined;
    const { profile: through } = await withProfile('through', async () => {
      await new Promise<void>((resolve) =>
        // Outside both profiles: the stall is someone else's. The late profile opens right after it,
        // before the sampler's overdue tick runs.
        setTimeout(() => {
          spin(60);
          late = als.run(undefined as never, () => withProfile('late', () => sleep(5)));
          resolve();
        }, 25),
      );
      await late;
    });
    expect(through.toJSON().eventLoopDelayMs).toBeGreaterThanOrEqual(40);
    const { profile } = await late!;
    expect(profile.toJSON().eventLoopDelayMs).toBeUndefined();
  });

  test('a stall right before the profile closes is still credited (no tick needed)', async () => {
    const { profile } = await withProfile('job', async () => {
      await sleep(15);
      spin(60);
    });
    expect(profile.toJSON().eventLoopDelayMs).toBeGreaterThanOrEqual(40);
  });

  test('with an injected clock nothing is sampled, so exact outputs stay exact', async () => {
    // The tests above leave the sampler to stop at its next tick.
    await sleep(25);
    expect(loopSampling()).toBe(false);
    const c = fakeClock();
    const { profile } = await withProfile(
      'job',
      async () => {
        expect(loopSampling()).toBe(false);
        spin(40);
        await sleep(5);
      },
      fixed(c),
    );
    expect(profile.toJSON().eventLoopDelayMs).toBeUndefined();
  });
});
