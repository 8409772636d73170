import { afterEach, describe, expect, test } from 'vitest';
import fc from 'fast-check';
import { currentProfile, step, timing, withProfile, type Profile, type TimingJSON } from '../src/index.js';
import { als, openProfiles } from '../src/core/context.js';
import type { TimingNode } from '../src/core/timing.js';
import { deferred, fakeClock, fixed, sleep } from './helpers/clock.js';

/** The tree without numbers, to check shape alone. */
function shape(t: TimingJSON): unknown {
  return t.children.length === 0 ? t.name : { [t.name]: t.children.map(shape) };
}

function countNodes(t: TimingJSON): number {
  return 1 + t.children.reduce((n, c) => n + countNodes(c), 0);
}

/** No lone surrogate (String#isWellFormed is ES2024, above our lib). */
function wellFormed(s: string): boolean {
  return !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);
}

function depthOf(t: TimingJSON): number {
  return t.children.reduce((d, c) => Math.max(d, 1 + depthOf(c)), 0);
}

function only(profile: Profile): TimingJSON {
  const kids = profile.toJSON().root.children;
  expect(kids).toHaveLength(1);
  return kids[0]!;
}

describe('step(name, fn) returns and throws what fn does', () => {
  test('sync and async values are fn’s own', async () => {
    const obj = { a: 1 };
    const { result, profile } = await withProfile('job', async () => {
      const sync = step('sync', () => obj);
      const asyncV = await step('async', async () => obj);
      return [sync, asyncV];
    });
    expect(result[0]).toBe(obj);
    expect(result[1]).toBe(obj);
    expect(profile.toJSON().root.children.map((c) => c.name)).toEqual(['sync', 'async']);
  });

  class CustomError extends Error {
    code = 'E_CUSTOM';
    extra = { deep: true };
  }
  const thrown: [string, unknown][] = [
    ['an Error', new Error('boom')],
    ['an Error subclass with custom props', new CustomError('custom')],
    ['undefined', undefined],
    ['null', null],
    ['a string', 'just a string'],
    ['an object with custom props', { status: 418, reason: 'teapot' }],
    ['a frozen object', Object.freeze({ x: 1 })],
  ];

  for (const [what, err] of thrown) {
    test(`C10: a sync throw of ${what} is rethrown as the same value, step errored with a duration`, async () => {
      const c = fakeClock();
      const { profile } = await withProfile(
        'job',
        () => {
          c.t = 1;
          let caught: unknown = 'not caught';
          try {
            step('bad', () => {
              c.t = 4;
              throw err;
            });
          } catch (e) {
            caught = e;
          }
          expect(caught).toBe(err);
        },
        fixed(c),
      );
      const bad = only(profile);
      expect(bad).toEqual({ name: 'bad', startMs: 1, durationMs: 3, children: [], error: true });
    });

    test(`C10: an async rejection with ${what} is rethrown as the same value, step errored with a duration`, async () => {
      const c = fakeClock();
      const { profile } = await withProfile(
        'job',
        async () => {
          c.t = 1;
          const caught = await step('bad', async () => {
            await sleep(1);
            c.t = 6;
            throw err;
          }).then(
            () => 'resolved',
            (e: unknown) => ({ e }),
          );
          expect(caught).toEqual({ e: err });
          expect((caught as { e: unknown }).e).toBe(err);
        },
        fixed(c),
      );
      expect(only(profile)).toEqual({ name: 'bad', startMs: 1, durationMs: 5, children: [], error: true });
    });
  }

  test('C10: a promise returned (not async fn) that rejects keeps identity too', async () => {
    const err = new Error('r');
    await withProfile('job', async () => {
      await expect(step('p', () => Promise.reject(err))).rejects.toBe(err);
    });
  });
});

describe('step(name): Timing', () => {
  test('stop() ends it and is idempotent', async () => {
    const c = fakeClock();
    const { profile } = await withProfile(
      'job',
      () => {
        c.t = 2;
        const t = step('manual');
        expect(t.name).toBe('manual');
        c.t = 5;
        t.stop();
        c.t = 9;
        t.stop();
        t[Symbol.dispose]();
      },
      fixed(c),
    );
    expect(only(profile)).toEqual({ name: 'manual', startMs: 2, durationMs: 3, children: [] });
  });

  test('using nests sequential code, then the cursor returns to the scope', async () => {
    const c = fakeClock();
    const { profile } = await withProfile(
      'job',
      () => {
        c.t = 1;
        {
          using _outer = step('outer');
          c.t = 2;
          {
            using _inner = step('inner');
            c.t = 3;
            step('leaf', () => {
              c.t = 4;
            });
          }
          c.t = 5;
        }
        step('after', () => {
          c.t = 6;
        });
        c.t = 7;
      },
      fixed(c),
    );
    expect(profile.toJSON().root).toEqual({
      name: 'job',
      startMs: 0,
      durationMs: 7,
      // Before the first step, and between the last and the end: 7 less 4 and 1.
      selfMs: 2,
      children: [
        {
          name: 'outer',
          startMs: 1,
          durationMs: 4,
          children: [
            {
              name: 'inner',
              startMs: 2,
              durationMs: 2,
              children: [{ name: 'leaf', startMs: 3, durationMs: 1, children: [] }],
            },
          ],
        },
        { name: 'after', startMs: 5, durationMs: 1, children: [] },
      ],
    });
    expect(profile.toJSON().warnings).toEqual([]);
  });

  test('when an inner using timing stops, the next step goes under the outer one still running', async () => {
    const { profile } = await withProfile('job', () => {
      using _outer = step('outer');
      {
        using _inner = step('inner');
        step('in inner', () => 0);
      }
      step('in outer', () => 0);
    });
    const names = (t: TimingJSON): unknown => [t.name, t.children.map(names)];
    expect(names(profile.toJSON().root)).toEqual(['job', [['outer', [['inner', [['in inner', []]]], ['in outer', []]]]]]);
    expect(profile.toJSON().warnings).toEqual([]);
  });

  test('using across awaits in sequential async code', async () => {
    const { profile } = await withProfile('job', async () => {
      using _t = step('load');
      await sleep(1);
      await step('query', async () => sleep(1));
      await sleep(1);
      step('parse', () => 1);
    });
    expect(shape(profile.toJSON().root)).toEqual({ job: [{ load: ['query', 'parse'] }] });
  });

  test('overlapping using timings (stopped out of order) give a warning and siblings, never a crash', async () => {
    const c = fakeClock();
    const { profile } = await withProfile(
      'job',
      () => {
        const a = step('a');
        c.t = 1;
        const b = step('b');
        c.t = 2;
        a.stop();
        c.t = 3;
        step('c', () => {
          c.t = 4;
        });
        b.stop();
        step('d', () => 0);
      },
      fixed(c),
    );
    const json = profile.toJSON();
    expect(json.root.children.map((x) => x.name)).toEqual(['a', 'b', 'd']);
    expect(json.root.children[0]).toEqual({ name: 'a', startMs: 0, durationMs: 2, children: [] });
    expect(json.root.children[1]).toEqual({
      name: 'b',
      startMs: 1,
      durationMs: 3,
      children: [{ name: 'c', startMs: 3, durationMs: 1, children: [] }],
    });
    expect(json.warnings).toHaveLength(1);
    expect(json.warnings[0]).toContain('"a"');
    expect(json.warnings[0]).toContain('"b"');
  });

  test('overlapping using in concurrent async branches sharing one scope: warning, siblings, no crash', async () => {
    async function branch(name: string, ms: number): Promise<void> {
      using _t = step(name);
      await sleep(ms);
      step(`${name}-child`, () => 0);
    }
    const { profile } = await withProfile('job', async () => {
      await Promise.all([branch('x', 1), branch('y', 40)]);
      step('end', () => 0);
    });
    const json = profile.toJSON();
    const top = json.root.children.map((t) => t.name);
    expect(top).toEqual(['x', 'y', 'end']);
    expect(json.warnings.length).toBeGreaterThanOrEqual(1);
    expect(json.root.children.every((t) => t.unfinished === undefined)).toBe(true);
  });

  test('random interleavings of using timings never throw and keep every timing exactly once', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.nat({ max: 5 }), { minLength: 1, maxLength: 8 }), async (delays) => {
        const { profile } = await withProfile('job', async () => {
          await Promise.all(
            delays.map(async (d, i) => {
              using _t = step(`u${i}`);
              for (let k = 0; k < d; k++) await Promise.resolve();
              step(`s${i}`, () => 0);
            }),
          );
        });
        const names: string[] = [];
        const walk = (t: TimingJSON): void => {
          names.push(t.name);
          t.children.forEach(walk);
          expect(t.unfinished).toBeUndefined();
        };
        walk(profile.toJSON().root);
        expect(names.sort()).toEqual(['job', ...delays.flatMap((_, i) => [`u${i}`, `s${i}`])].sort());
      }),
      { numRuns: 200 },
    );
  });
});

describe('off path: outside a profile', () => {
  test('step(name) returns one shared frozen no-op', () => {
    const a = step('a');
    const b = step('b');
    expect(a).toBe(b);
    expect(Object.isFrozen(a)).toBe(true);
    a.stop();
    a[Symbol.dispose]();
    {
      using _c = step('c');
    }
    expect(step('d')).toBe(a);
  });

  test('step(name, fn) calls fn once and returns its exact value', () => {
    let calls = 0;
    const obj = {};
    const p = Promise.resolve(1);
    expect(
      step('x', () => {
        calls++;
        return obj;
      }),
    ).toBe(obj);
    expect(calls).toBe(1);
    // Not even a promise is wrapped: the caller gets the very same object.
    expect(step('p', () => p)).toBe(p);
    const err = new Error('off');
    expect(() =>
      step('t', () => {
        throw err;
      }),
    ).toThrow(err);
    expect(timing('sql', 'select 1', () => obj)).toBe(obj);
    expect(currentProfile()).toBeUndefined();
  });

  test('a step outside any profile leaves no trace in a later profile', async () => {
    step('outside', () => step('outside-inner', () => 0));
    step('outside-using').stop();
    const { profile } = await withProfile('job', () => step('inside', () => 0));
    expect(shape(profile.toJSON().root)).toEqual({ job: ['inside'] });
  });

  test('a step outside a profile while another is open elsewhere: fn called directly, nothing recorded there', async () => {
    // The off path skips the ALS lookup only while no profile is open anywhere (openProfiles()
    // === 0); with one open in another async context it must still find none here.
    const gate = deferred<void>();
    const job = withProfile('job', async () => {
      step('inside', () => 0);
      await gate.promise;
    });
    expect(openProfiles()).toBe(1);
    const obj = {};
    expect(step('outside', () => obj)).toBe(obj);
    expect(step('outside-using')).toBe(step('x'));
    expect(timing('sql', 'q', () => obj)).toBe(obj);
    expect(currentProfile()).toBeUndefined();
    gate.resolve();
    const { profile } = await job;
    expect(shape(profile.toJSON().root)).toEqual({ job: ['inside'] });
    expect(openProfiles()).toBe(0);
  });

  test('D4: steps run after a profile sealed never read its clock and do not change it', async () => {
    const c = fakeClock();
    let late: (() => unknown) | undefined;
    const { profile } = await withProfile(
      'job',
      () =>
        step('s', () => {
          // A closure that keeps this async context, like a timer the request leaked.
          late = () =>
            als.run(als.getStore()!, () => [step('late', () => 'v'), step('late-using'), timing('sql', 'q', () => 1)]);
        }),
      fixed(c),
    );
    const before = JSON.stringify(profile.toJSON());
    const calls = c.calls;
    const out = late!() as unknown[];
    expect(out[0]).toBe('v');
    expect(out[1]).toBe(step('anything'));
    expect(out[2]).toBe(1);
    expect(c.calls).toBe(calls);
    expect(JSON.stringify(profile.toJSON())).toBe(before);
  });
});

describe('nesting under concurrency', () => {
  test('Promise.all with the callback form: each branch is its own parent (exact tree)', async () => {
    const c = fakeClock();
    const { profile } = await withProfile(
      'job',
      async () => {
        c.t = 1;
        const pa = step('a', async () => {
          await sleep(1);
          c.t = 2;
          await step('a1', async () => {
            await sleep(1);
            c.t = 3;
          });
          c.t = 4;
        });
        const pb = step('b', async () => {
          // Runs on only once `a` has ended, so the clock moves in a known order.
          await pa;
          c.t = 10;
          step('b1', () => {
            c.t = 12;
          });
          c.t = 13;
        });
        await Promise.all([pa, pb]);
        c.t = 20;
      },
      fixed(c),
    );
    expect(profile.toJSON().root).toEqual({
      name: 'job',
      startMs: 0,
      durationMs: 20,
      // a and b both start at 1; b ends at 13: 20 less 12.
      selfMs: 8,
      children: [
        {
          name: 'a',
          startMs: 1,
          durationMs: 3,
          children: [{ name: 'a1', startMs: 2, durationMs: 1, children: [] }],
        },
        {
          name: 'b',
          startMs: 1,
          durationMs: 12,
          children: [{ name: 'b1', startMs: 10, durationMs: 2, children: [] }],
        },
      ],
      // a and b overlapped, but (3 + 12) / 20 = 0.75 would say nothing: no parallelism.
    });
  });

  test('many random concurrent branches each keep only their own children', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(fc.nat({ max: 4 }), { maxLength: 4 }), { minLength: 1, maxLength: 6 }), async (plan) => {
        const { profile } = await withProfile('job', () =>
          Promise.all(
            plan.map((kids, i) =>
              step(`b${i}`, () =>
                Promise.all(
                  kids.map((ticks, k) =>
                    step(`b${i}.${k}`, async () => {
                      for (let n = 0; n < ticks; n++) await Promise.resolve();
                    }),
                  ),
                ),
              ),
            ),
          ),
        );
        expect(shape(profile.toJSON().root)).toEqual({
          job: plan.map((kids, i) => (kids.length === 0 ? `b${i}` : { [`b${i}`]: kids.map((_, k) => `b${i}.${k}`) })),
        });
      }),
      { numRuns: 100 },
    );
  });

  test('D5: fast-check scheduler permuting N profiles at the ALS level: each tree holds only its own steps', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(fc.array(fc.nat({ max: 3 }), { minLength: 1, maxLength: 4 }), { minLength: 2, maxLength: 5 }),
        async (s, plans) => {
          const runs = plans.map((plan, i) =>
            withProfile(`r${i}`, async () => {
              await s.schedule(Promise.resolve(), `start r${i}`);
              // Sequential steps, each with a concurrent fan-out of `n` children.
              for (const [k, n] of plan.entries()) {
                await step(`r${i}.${k}`, async () => {
                  await s.schedule(Promise.resolve(), `r${i}.${k}`);
                  await Promise.all(
                    Array.from({ length: n }, (_, j) =>
                      step(`r${i}.${k}.${j}`, () => s.schedule(Promise.resolve(), `r${i}.${k}.${j}`)),
                    ),
                  );
                });
              }
              return currentProfile()?.name;
            }),
          );
          const done = await s.waitFor(Promise.all(runs));
          done.forEach(({ result, profile }, i) => {
            expect(result).toBe(`r${i}`);
            expect(shape(profile.toJSON().root)).toEqual({
              [`r${i}`]: plans[i]!.map((n, k) =>
                n === 0 ? `r${i}.${k}` : { [`r${i}.${k}`]: Array.from({ length: n }, (_, j) => `r${i}.${k}.${j}`) },
              ),
            });
          });
        },
      ),
      { numRuns: 200 },
    );
  });

  test('a withProfile nested in another is its own profile, and the outer one resumes after it', async () => {
    const { profile: outer } = await withProfile('outer', async () => {
      step('o1', () => 0);
      const { profile: inner } = await withProfile('inner', async () => {
        step('i1', () => 0);
        await sleep(1);
        step('i2', () => 0);
      });
      expect(shape(inner.toJSON().root)).toEqual({ inner: ['i1', 'i2'] });
      expect(currentProfile()?.name).toBe('outer');
      step('o2', () => 0);
    });
    expect(shape(outer.toJSON().root)).toEqual({ outer: ['o1', 'o2'] });
  });

  test('a step started after its parent stopped attaches to the nearest running ancestor', async () => {
    const c = fakeClock();
    const fired = deferred();
    const { profile } = await withProfile(
      'job',
      async () => {
        await step('outer', async () => {
          step('parent', () => {
            setTimeout(() => {
              c.t = 5;
              step('late', () => {
                c.t = 6;
              });
              fired.resolve();
            }, 1);
          });
          await fired.promise;
          c.t = 7;
        });
      },
      fixed(c),
    );
    expect(profile.toJSON().root.children).toEqual([
      {
        name: 'outer',
        startMs: 0,
        durationMs: 7,
        children: [
          { name: 'parent', startMs: 0, durationMs: 0, children: [] },
          { name: 'late', startMs: 5, durationMs: 1, children: [] },
        ],
      },
    ]);
    // Said, not hidden (issue 59 item 11), once however many late steps there are.
    expect(profile.toJSON().warnings).toEqual([
      'work was recorded after its step "parent" had ended, and is shown under "outer": the step did not await it, ' +
        'or a library lost the async context on the way (a promise library without async hooks). Await the work inside its step.',
    ]);
  });
});

describe('bounds', () => {
  test('E1: maxSteps (default 1000): 100,001 calls, fn runs every time, the rest counted', async () => {
    const N = 100_001;
    let runs = 0;
    const { profile } = await withProfile('job', () => {
      for (let i = 0; i < N; i++) {
        step('s', () => {
          runs++;
        });
      }
    });
    const json = profile.toJSON();
    expect(runs).toBe(N);
    expect(json.root.children).toHaveLength(1000);
    expect(json.droppedSteps).toBe(N - 1000);
  });

  test('E1: maxSteps counts nested steps, using timings and custom timings alike', async () => {
    let runs = 0;
    const { profile } = await withProfile(
      'job',
      () => {
        for (let i = 0; i < 20; i++) {
          step('outer', () => {
            runs++;
            timing('sql', 'q', () => runs++);
            using _u = step('u');
            step('inner', () => runs++);
          });
        }
      },
      { maxSteps: 10 },
    );
    const json = profile.toJSON();
    let recorded = countNodes(json.root) - 1;
    const walk = (t: TimingJSON): void => {
      recorded += t.custom?.length ?? 0;
      t.children.forEach(walk);
    };
    walk(json.root);
    expect(runs).toBe(60);
    expect(recorded).toBe(10);
    expect(json.droppedSteps).toBe(80 - 10);
  });

  test('E1: maxDepth: deeper steps run but are only counted', async () => {
    let runs = 0;
    const dive = (n: number): number => (n === 0 ? 0 : step(`d${n}`, () => (runs++, 1 + dive(n - 1))));
    const { result, profile } = await withProfile('job', () => dive(100), { maxDepth: 10 });
    const json = profile.toJSON();
    expect(result).toBe(100);
    expect(runs).toBe(100);
    expect(depthOf(json.root)).toBe(10);
    expect(json.droppedSteps).toBe(90);
  });

  test('E1: default maxDepth is 64', async () => {
    const dive = (n: number): number => (n === 0 ? 0 : step('d', () => 1 + dive(n - 1)));
    const { profile } = await withProfile('job', () => dive(100));
    expect(depthOf(profile.toJSON().root)).toBe(64);
    expect(profile.toJSON().droppedSteps).toBe(36);
  });

  test('E1: names are cut at 200 characters by default, marked with ...', async () => {
    const { profile } = await withProfile('job', () => step('x'.repeat(500), () => 0));
    const name = only(profile).name;
    expect(name).toBe('x'.repeat(197) + '...');
    expect(name).toHaveLength(200);
  });

  test('names are cut without splitting a surrogate pair', async () => {
    const { profile } = await withProfile('job', () => {
      step('a'.repeat(196) + '😀'.repeat(10), () => 0);
      step('a'.repeat(195) + '😀'.repeat(10), () => 0);
      step('a'.repeat(200), () => 0);
    });
    expect(profile.toJSON().root.children.map((t) => t.name)).toEqual([
      'a'.repeat(196) + '...',
      'a'.repeat(195) + '😀' + '...',
      'a'.repeat(200),
    ]);
  });

  test('property: a cut name is at most maxNameLength units and well-formed when the input is', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'grapheme', maxLength: 300 }), fc.integer({ min: 8, max: 300 }), async (name, max) => {
        const { profile } = await withProfile('job', () => step(name, () => 0), { maxNameLength: max });
        const got = only(profile).name;
        expect(got.length).toBeLessThanOrEqual(max);
        expect(wellFormed(got)).toBe(true);
        if (name.length <= max) expect(got).toBe(name);
        else expect(name.startsWith(got.slice(0, -3))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  test('any value as a name is recorded as text and never throws', async () => {
    const hostile = {
      toString() {
        throw new Error('no');
      },
    };
    const names: unknown[] = [Symbol('sym'), 42, null, undefined, hostile, Object.create(null), { a: 1 }, 10n];
    const { profile } = await withProfile('job', () => {
      for (const n of names) {
        step(n as string, () => 0);
        step(n as string).stop();
        timing(n as string, n as string, () => 0);
      }
    });
    const recorded = profile.toJSON().root.children.map((t) => t.name);
    const expected = ['Symbol(sym)', '42', 'null', 'undefined', '[unprintable]', '[unprintable]', '[object Object]', '10'];
    expect(recorded).toEqual(expected.flatMap((n) => [n, n]));
    const customs = profile.toJSON().root.custom!.map((c) => [c.category, c.command]);
    // Commands are redacted by default: the numbers become `?`, categories stay.
    expect(customs).toEqual(expected.map((n) => [n, /^\d+$/.test(n) ? '?' : n]));
    expect(() => JSON.stringify(profile.toJSON())).not.toThrow();
  });
});

describe('thenables and promises', () => {
  test('a lazy thenable runs exactly once', async () => {
    let runs = 0;
    const lazy = {
      then(ok: (v: number) => void) {
        runs++;
        ok(42);
      },
    };
    const { result, profile } = await withProfile('job', async () => step('q', () => lazy));
    expect(result).toBe(42);
    expect(runs).toBe(1);
    expect(only(profile).error).toBeUndefined();
  });

  test('a lazy thenable that rejects keeps the error identity', async () => {
    const err = { not: 'an Error' };
    const lazy = {
      then(_ok: unknown, fail: (e: unknown) => void) {
        fail(err);
      },
    };
    const { profile } = await withProfile('job', async () => {
      await expect(step('q', () => lazy)).rejects.toBe(err);
    });
    expect(only(profile).error).toBe(true);
  });

  test('a custom Promise subclass (also one whose constructor takes other arguments) resolves to its value', async () => {
    class Sub<T> extends Promise<T> {}
    // Shaped like OpenAI's APIPromise: the constructor is not an executor.
    class ApiPromise<T> extends Promise<T> {
      constructor(private readonly inner: Promise<T>) {
        super((resolve) => resolve(undefined as T));
      }
      override then<A = T, B = never>(
        ok?: ((v: T) => A | PromiseLike<A>) | null,
        fail?: ((e: unknown) => B | PromiseLike<B>) | null,
      ): Promise<A | B> {
        return this.inner.then(ok, fail);
      }
    }
    const c = fakeClock();
    const { result, profile } = await withProfile(
      'job',
      async () => {
        const a = await step('sub', () => new Sub<number>((r) => setTimeout(() => r(1), 1)));
        const b = await step('api', () => new ApiPromise(sleep(1).then(() => 2)));
        return [a, b];
      },
      fixed(c),
    );
    expect(result).toEqual([1, 2]);
    expect(profile.toJSON().root.children.map((t) => [t.name, t.error])).toEqual([
      ['sub', undefined],
      ['api', undefined],
    ]);
  });

  test('a thenable whose then throws: step rejects with that error and is errored', async () => {
    const err = new Error('then threw');
    const bad = {
      then() {
        throw err;
      },
    };
    const { profile } = await withProfile('job', async () => {
      await expect(step('t', () => bad)).rejects.toBe(err);
    });
    expect(only(profile).error).toBe(true);
  });

  test('a then getter that throws: the value comes back as is and the fault goes to onInternalError', async () => {
    const err = new Error('getter');
    const odd = {
      get then(): never {
        throw err;
      },
    };
    const faults: unknown[] = [];
    const { profile } = await withProfile(
      'job',
      () => {
        expect(step('g', () => odd)).toBe(odd);
        expect(timing('x', 'y', () => odd)).toBe(odd);
      },
      { onInternalError: (e) => faults.push(e) },
    );
    expect(faults).toEqual([err, err]);
    expect(only(profile).unfinished).toBeUndefined();
  });

  describe('unhandled rejections', () => {
    let saved: NodeJS.UnhandledRejectionListener[] = [];
    const seen: unknown[] = [];
    const listener = (reason: unknown): void => {
      seen.push(reason);
    };
    function listen(): void {
      // The test runner treats any unhandled rejection as a failure; this one is expected.
      saved = process.listeners('unhandledRejection');
      process.removeAllListeners('unhandledRejection');
      process.on('unhandledRejection', listener);
    }
    afterEach(() => {
      process.off('unhandledRejection', listener);
      for (const l of saved) process.on('unhandledRejection', l);
      saved = [];
      seen.length = 0;
    });

    test('C10: an un-awaited rejected step still surfaces as an unhandledRejection (promise and thenable)', async () => {
      listen();
      const err1 = new Error('nobody awaits me');
      const err2 = new Error('nor me');
      await withProfile('job', async () => {
        void step('p', () => Promise.reject(err1));
        void step('t', () => ({ then: (_: unknown, fail: (e: unknown) => void) => fail(err2) }));
        await sleep(20);
      });
      await sleep(20);
      expect(seen).toContain(err1);
      expect(seen).toContain(err2);
      expect(seen).toHaveLength(2);
    });

    test('C10: an awaited rejected step causes no unhandledRejection', async () => {
      listen();
      const err = new Error('handled');
      await withProfile('job', async () => {
        await step('p', () => Promise.reject(err)).catch(() => 0);
        await step('a', async () => {
          throw err;
        }).catch(() => 0);
        // At runtime step returns a native promise for any thenable.
        await (step('t', () => ({ then: (_: unknown, fail: (e: unknown) => void) => fail(err) })) as unknown as Promise<unknown>).catch(() => 0);
        await timing('sql', 'q', () => Promise.reject(err)).catch(() => 0);
      });
      await sleep(20);
      expect(seen).toEqual([]);
    });
  });
});

describe('timing(category, command, fn)', () => {
  test('recorded on the current step, sync and async, errors flagged', async () => {
    const c = fakeClock();
    const err = new Error('db down');
    const { profile } = await withProfile(
      'job',
      async () => {
        await step('load', async () => {
          c.t = 1;
          const v = timing('sql', 'select 1', () => {
            c.t = 2;
            return 'row';
          });
          expect(v).toBe('row');
          const w = await timing('redis', 'GET k', async () => {
            await sleep(1);
            c.t = 5;
            return 'val';
          });
          expect(w).toBe('val');
          await expect(
            timing('sql', 'select boom', async () => {
              c.t = 7;
              throw err;
            }),
          ).rejects.toBe(err);
          expect(() =>
            timing('http', 'GET /x', () => {
              c.t = 8;
              throw err;
            }),
          ).toThrow(err);
        });
      },
      fixed(c),
    );
    expect(only(profile)).toEqual({
      name: 'load',
      startMs: 0,
      durationMs: 8,
      children: [],
      // Redacted by default; `load` ran synchronously up to the second timing's first await.
      syncMs: 2,
      custom: [
        { category: 'sql', command: 'select ?', startMs: 1, durationMs: 1 },
        { category: 'redis', command: 'GET k', startMs: 2, durationMs: 3 },
        { category: 'sql', command: 'select boom', startMs: 5, durationMs: 2, error: true },
        { category: 'http', command: 'GET /x', startMs: 7, durationMs: 1, error: true },
      ],
    });
  });

  test('recorded on the open using timing, and on the root outside any step', async () => {
    const { profile } = await withProfile('job', () => {
      timing('sql', 'a', () => 0);
      using _u = step('u');
      timing('sql', 'b', () => 0);
    });
    const root = profile.toJSON().root;
    expect(root.custom!.map((c) => c.command)).toEqual(['a']);
    expect(root.children[0]!.custom!.map((c) => c.command)).toEqual(['b']);
  });

  test('commands are cut at maxCommandLength (default 2000)', async () => {
    const { profile } = await withProfile('job', () => {
      timing('sql', 'q'.repeat(5000), () => 0);
    });
    const cmd = profile.toJSON().root.custom![0]!.command;
    expect(cmd).toHaveLength(2000);
    expect(cmd.endsWith('...')).toBe(true);
    const small = await withProfile('job', () => timing('sql', 'q'.repeat(50), () => 0), { maxCommandLength: 10 });
    expect(small.profile.toJSON().root.custom![0]!.command).toBe('qqqqqqq...');
  });
});

describe('currentProfile and withProfile', () => {
  test('currentProfile() is the live profile inside, in nested steps and after awaits', async () => {
    let seen: (Profile | undefined)[] = [];
    const { profile } = await withProfile('job', async () => {
      seen.push(currentProfile());
      await step('s', async () => {
        await sleep(1);
        seen.push(currentProfile());
      });
      seen.push(currentProfile());
    });
    expect(seen).toEqual([profile, profile, profile]);
    expect(profile.sealed).toBe(true);
    seen = [];
    expect(currentProfile()).toBeUndefined();
  });

  test('concurrent withProfile calls are isolated', async () => {
    const runs = await Promise.all(
      [0, 1, 2, 3].map((i) =>
        withProfile(`job${i}`, async () => {
          await sleep(4 - i);
          await step(`s${i}`, () => sleep(i));
          return currentProfile()!.name;
        }),
      ),
    );
    runs.forEach(({ result, profile }, i) => {
      expect(result).toBe(`job${i}`);
      expect(shape(profile.toJSON().root)).toEqual({ [`job${i}`]: [`s${i}`] });
    });
  });

  test('withProfile returns {result, profile} for sync and async fn', async () => {
    const a = await withProfile('sync', () => 7);
    expect(a.result).toBe(7);
    expect(a.profile.name).toBe('sync');
    const b = await withProfile('async', async () => 'x');
    expect(b.result).toBe('x');
    expect(a.profile.sealed && b.profile.sealed).toBe(true);
  });

  test('C10: withProfile rejects with fn’s own error (sync throw and rejection), root errored', async () => {
    const err = { custom: true };
    let captured: Profile | undefined;
    await expect(
      withProfile('sync', () => {
        captured = currentProfile();
        throw err;
      }),
    ).rejects.toBe(err);
    expect(captured!.sealed).toBe(true);
    expect(captured!.toJSON().root.error).toBe(true);
    await expect(
      withProfile('async', async () => {
        captured = currentProfile();
        await sleep(1);
        throw err;
      }),
    ).rejects.toBe(err);
    expect(captured!.toJSON().root.error).toBe(true);
  });

  test('D4: after seal a step from a leaked timer is a pass-through, the JSON does not change, nodes are detached', async () => {
    let node: TimingNode | undefined;
    const fired = deferred<unknown[]>();
    const { profile } = await withProfile('job', () => {
      step('s', () => {
        node = als.getStore();
        setTimeout(() => {
          let calls = 0;
          const v = step('late', () => {
            calls++;
            return 'late';
          });
          fired.resolve([v, calls, step('late-using'), currentProfile()]);
        }, 20);
      });
    });
    const before = JSON.stringify(profile.toJSON());
    const [v, calls, t, cur] = await fired.promise;
    expect(v).toBe('late');
    expect(calls).toBe(1);
    expect(t).toBe(step('off'));
    expect(cur).toBeUndefined();
    expect(JSON.stringify(profile.toJSON())).toBe(before);
    expect(node!.name).toBe('s');
    expect(node!.profile).toBeNull();
    expect(node!.parent).toBeNull();
    expect(node!.children).toBeNull();
  });
});
