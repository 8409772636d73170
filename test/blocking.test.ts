import { describe, expect, test, vi } from 'vitest';
import { currentProfile, renderServerTiming, renderText, step, withProfile, type ProfileJSON, type TimingJSON } from '../src/index.js';
import { attributeStalls, notRunMs } from '../src/analysis/blocking.js';
import { loopSampling } from '../src/analysis/loop.js';
import { als, openProfiles } from '../src/core/context.js';
import { deferred, fakeClock, fixed, sleep, type FakeClock } from './helpers/clock.js';
import { work } from './helpers/cpu.js';
import { byName } from './helpers/tree.js';

/** What the blocking note adds for the GC pauses seen during a real-timer stall, if any. */
function gcText(t: TimingJSON): string {
  return t.gcMs === undefined ? '' : ` (GC ${t.gcMs.toFixed(1)}ms)`;
}

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
  // CPU time, not wall time: on a busy machine a loop timed by the clock does less work.
  const spin = work;

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

describe('blocking anywhere in a step: stalls after an await, attributed at seal (real timers)', () => {
  const spin = work;

  test('`await setTimeout(5); busyWait(60)` inside a step: flagged, with the loop held for at least 50 ms', async () => {
    const { profile } = await withProfile('job', async () => {
      await step('crunch', async () => {
        await sleep(5);
        spin(60);
      });
      await sleep(15);
    });
    const json = profile.toJSON();
    const crunch = byName(json.root, 'crunch');
    expect(crunch.blocking).toBe(true);
    // The monitor's tick was due at most 10 ms after the work began (its resolution), and a stall
    // is counted from the due time: at least 60 - 10 ms. One ms of slack for libuv's ms-rounded timers.
    expect(crunch.heldMs).toBeGreaterThanOrEqual(49);
    expect(crunch.heldMs).toBeLessThanOrEqual(crunch.durationMs);
    expect(crunch.blockingAmbiguous).toBeUndefined();
    // The root itself is not a step: its line is not flagged, and the delay line stays.
    expect(json.root.blocking).toBeUndefined();
    expect(json.eventLoopDelayMs).toBeGreaterThanOrEqual(49);
    const text = renderText(profile);
    // A collection during the busy wait is said too (src/analysis/gc.ts): `gcMs` decides the words.
    expect(text).toContain(`> crunch = ${crunch.durationMs.toFixed(1)}ms (blocking: ${crunch.syncMs!.toFixed(1)}ms sync + ${crunch.heldMs!.toFixed(1)}ms held${gcText(crunch)})\n`);
    expect(text).toContain('! event loop delayed up to ');
  });

  test('the innermost step open during the stall is named, not its parents; a step that ended before it is not', async () => {
    const { profile } = await withProfile('job', async () => {
      await step('page', async () => {
        await step('query', () => sleep(5));
        await step('render', async () => {
          await sleep(5);
          spin(50);
        });
        await sleep(15);
      });
    });
    const root = profile.toJSON().root;
    expect(['page', 'query', 'render'].map((n) => byName(root, n).blocking === true)).toEqual([false, false, true]);
    expect(byName(root, 'render').heldMs).toBeGreaterThanOrEqual(39);
  });

  test('work after an await in the parent itself (after its child ended) is the parent\'s', async () => {
    const { profile } = await withProfile('job', async () => {
      await step('page', async () => {
        await step('query', () => sleep(5));
        spin(50);
        await sleep(15);
      });
    });
    const root = profile.toJSON().root;
    expect(byName(root, 'page').blocking).toBe(true);
    expect(byName(root, 'page').heldMs).toBeGreaterThanOrEqual(39);
    expect(byName(root, 'query').blocking).toBeUndefined();
  });

  test('a synchronous step inside the stall keeps its own flag; its parent is not flagged for the same work', async () => {
    const { profile } = await withProfile('job', async () => {
      await step('page', async () => {
        await sleep(5);
        step('hash', () => spin(50));
        await sleep(15);
      });
    });
    const root = profile.toJSON().root;
    expect(byName(root, 'hash')).toMatchObject({ blocking: true });
    expect(byName(root, 'hash').heldMs).toBeUndefined();
    expect(byName(root, 'page').blocking).toBeUndefined();
  });

  test('two branches of a Promise.all open during the stall: both named, and marked ambiguous', async () => {
    const { profile } = await withProfile('job', async () => {
      await Promise.all([
        step('a', async () => {
          await sleep(5);
          spin(50);
        }),
        step('b', () => sleep(80)),
      ]);
    });
    const root = profile.toJSON().root;
    for (const name of ['a', 'b']) {
      expect(byName(root, name)).toMatchObject({ blocking: true, blockingAmbiguous: true });
      expect(byName(root, name).heldMs).toBeGreaterThanOrEqual(39);
    }
    const b = byName(root, 'b');
    expect(renderText(profile)).toContain(`> b = ${b.durationMs.toFixed(1)}ms (ambiguous blocking: ${b.syncMs!.toFixed(1)}ms sync + ${b.heldMs!.toFixed(1)}ms held${gcText(b)})\n`);
  });

  test('a stall just before the outputs are rendered is in them (no tick needed)', async () => {
    let frozen: ProfileJSON | undefined;
    await withProfile('job', async () => {
      await step('crunch', async () => {
        await sleep(5);
        spin(50);
      });
      frozen = currentProfile()!.freeze();
    });
    expect(byName(frozen!.root, 'crunch').heldMs).toBeGreaterThanOrEqual(39);
  });
});

describe('stall attribution, exact (attributeStalls on given JSON)', () => {
  const node = (name: string, startMs: number, durationMs: number, children: TimingJSON[] = [], extra: Partial<TimingJSON> = {}): TimingJSON => ({
    name,
    startMs,
    durationMs,
    children,
    ...extra,
  });

  test('split along the tree, less each step\'s synchronous start; the root\'s own part is nobody\'s', () => {
    // One stall over [10, 90] ms.
    const root = node('GET /', 0, 100, [
      node('page', 0, 95, [node('query', 2, 8), node('render', 40, 50, [node('partial', 60, 5, [], { blocking: true })], { syncMs: 1 })], { syncMs: 2 }),
    ]);
    attributeStalls(root, [10_000, 90_000, 0, 80_000], 20);
    const page = root.children[0]!;
    const render = page.children[1]!;
    // page: [10, 40] is its own (query ended at 10): 30 ms.
    expect([page.blocking, page.heldMs, page.blockingAmbiguous]).toEqual([true, 30, undefined]);
    // render: [40, 90] less its sync start [40, 41] and the synchronous partial [60, 65]: 44 ms.
    expect([render.blocking, render.heldMs]).toEqual([true, 44]);
    expect(render.children[0]!.heldMs).toBeUndefined();
    expect(page.children[0]!.blocking).toBeUndefined();
    expect(root.blocking).toBeUndefined();
  });

  test('below blockingMs nothing is flagged; two stalls add up; another profile open makes it ambiguous', () => {
    const root = node('job', 0, 200, [node('s', 0, 200)]);
    attributeStalls(root, [0, 15_000, 0, 15_000], 20);
    expect(root.children[0]!.blocking).toBeUndefined();
    attributeStalls(root, [20_000, 45_000, 0, 25_000, 100_000, 130_000, 1, 30_000], 20);
    expect(root.children[0]).toMatchObject({ blocking: true, heldMs: 55, blockingAmbiguous: true });
  });

  test('only the CPU share of a stall is counted: the process ran 50 of 150 ms, the step held 50 ms', () => {
    const root = node('job', 0, 300, [node('crunch', 0, 250)]);
    attributeStalls(root, [50_000, 200_000, 0, 50_000], 20);
    expect(root.children[0]).toMatchObject({ blocking: true, heldMs: 50 });
    expect(notRunMs([50_000, 200_000, 0, 50_000])).toBe(100);
  });

  test('a stall the process did not run in is nobody\'s: no step is flagged, and it is all "did not run"', () => {
    const root = node('job', 0, 300, [node('a', 0, 250), node('b', 0, 250)]);
    attributeStalls(root, [50_000, 200_000, 1, 900], 20);
    expect(root.children.map((c) => c.blocking)).toEqual([undefined, undefined]);
    expect(notRunMs([50_000, 200_000, 1, 900, 210_000, 230_000, 0, 20_000])).toBe(149.1);
  });

  test('a share is spread over the steps the stall covered, each judged on its own share', () => {
    // 100 ms stall, 30 ms CPU: page's own 60 ms counts 18 (below 20), render's 40 ms counts 12.
    const root = node('job', 0, 200, [node('page', 0, 150, [node('render', 60, 40)])]);
    attributeStalls(root, [0, 100_000, 0, 30_000], 20);
    expect([root.children[0]!.blocking, root.children[0]!.children[0]!.blocking]).toEqual([undefined, undefined]);
  });
});
