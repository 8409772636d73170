import { AsyncLocalStorage, AsyncResource, createHook } from 'node:async_hooks';
import { describe, expect, test } from 'vitest';
import fc from 'fast-check';
import { step, withProfile } from '../src/index.js';
import { stepEntering } from '../src/context.js';

// A callback step on Node 24+ copies the context frame once instead of als.run's twice
// (src/frame.ts). These check that an app's own AsyncLocalStorage sees what it would see with
// no step at all, on every Node.

const major = Number(process.versions.node.split('.')[0]);

/** `fn()` in a scope of its own, so what one case enters does not reach the next. */
function scoped<T>(fn: () => T): T {
  const r = new AsyncResource('TEST_SCOPE', { requireManualDestroy: true });
  try {
    return r.runInAsyncScope(fn);
  } finally {
    r.emitDestroy();
  }
}

type Op = { enter: number; value: string | undefined } | { disable: number } | { step: Op[]; fails: boolean };

const others = [new AsyncLocalStorage<string>(), new AsyncLocalStorage<string>(), new AsyncLocalStorage<string>()];

/** Run `plan` with `s` as the step, noting every store of the app's after each operation. */
function play(plan: Op[], s: (name: string, fn: () => void) => void, seen: (string | undefined)[][]): void {
  const note = () => seen.push(others.map((o) => o.getStore()));
  for (const op of plan) {
    if ('enter' in op) others[op.enter]!.enterWith(op.value as string);
    else if ('disable' in op) others[op.disable]!.disable();
    else {
      try {
        s('step', () => {
          play(op.step, s, seen);
          if (op.fails) throw new Error('app');
        });
      } catch {
        // the app's own error, rethrown by the step as by a direct call
      }
    }
    note();
  }
}

const opArb: fc.Memo<Op> = fc.memo((n) =>
  n <= 1
    ? fc.oneof(
        fc.record({ enter: fc.nat({ max: 2 }), value: fc.constantFrom('a', 'b', undefined) }),
        fc.record({ disable: fc.nat({ max: 2 }) }),
      )
    : fc.oneof(
        fc.record({ enter: fc.nat({ max: 2 }), value: fc.constantFrom('a', 'b', undefined) }),
        fc.record({ disable: fc.nat({ max: 2 }) }),
        fc.record({ step: fc.array(opArb(n - 1), { maxLength: 4 }), fails: fc.boolean() }),
      ),
);

describe('a callback step leaves the app’s own AsyncLocalStorage as a direct call would', () => {
  test(`steps enter with ${major >= 24 ? 'one frame copy' : 'als.run'} on Node ${major} (by default; the frame path wherever AsyncContextFrame is on)`, () => {
    // AsyncContextFrame: the default on Node 24, behind --experimental-async-context-frame on 22.
    // The async_hooks implementation is the one with `_enable`.
    const frames = typeof (AsyncLocalStorage.prototype as unknown as Record<string, unknown>)._enable !== 'function';
    const flagged = `${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS ?? ''}`.includes('async-context-frame');
    if (!flagged) expect(frames).toBe(major >= 24);
    // With frames, a failure here means a new Node changed what src/frame.ts relies on and steps
    // fell back to als.run (correct, but slower).
    expect(stepEntering).toBe(frames ? 'frame' : 'run');
  });

  test('enterWith and disable in other stores, in nested and failing steps (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb(4), { minLength: 1, maxLength: 6 }), async (plan) => {
        const direct: (string | undefined)[][] = [];
        scoped(() => {
          others[0]!.enterWith('start');
          play(plan, (_name, fn) => fn(), direct);
        });
        const profiled: (string | undefined)[][] = [];
        const { profile } = await withProfile('job', () =>
          scoped(() => {
            others[0]!.enterWith('start');
            play(plan, step, profiled);
          }),
        );
        expect(profiled).toEqual(direct);
        // The steps were real ones, not pass-throughs.
        const steps = JSON.stringify(plan).split('"step"').length - 1;
        expect(profile.toJSON().root.children.length > 0 || steps === 0).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  test('what an async step enters before its first await reaches the caller after it, as without a step', async () => {
    const app = new AsyncLocalStorage<string>();
    const seen: (string | undefined)[] = [];
    const body = async () => {
      app.enterWith('user');
      await null;
    };
    await scoped(async () => {
      await body();
      seen.push(app.getStore());
    });
    await withProfile('job', () =>
      scoped(async () => {
        await step('auth', body);
        seen.push(app.getStore());
      }),
    );
    expect(seen).toEqual(['user', 'user']);
  });

  test('the step’s own store is its timing inside, and the caller’s again after, also when fn throws', async () => {
    const app = new AsyncLocalStorage<string>();
    const { profile } = await withProfile('job', () => {
      app.enterWith('before');
      const err = new Error('app');
      let thrown: unknown;
      try {
        step('fails', () => {
          app.enterWith('inside');
          step('inner', () => undefined);
          throw err;
        });
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBe(err);
      expect(app.getStore()).toBe('inside');
      step('after', () => undefined);
    });
    const names = profile.toJSON().root.children.map((c) => [c.name, c.children.map((g) => g.name)]);
    expect(names).toEqual([
      ['fails', ['inner']],
      ['after', []],
    ]);
  });

  test('a store disabled in a step is gone after it, and for what the caller scheduled before, as without a step', async () => {
    const app = new AsyncLocalStorage<string>();
    const run = async (s: (name: string, fn: () => void) => void) => {
      const seen: (string | undefined)[] = [];
      app.enterWith('kept');
      const earlier = Promise.resolve().then(() => seen.push(app.getStore()));
      s('drop', () => app.disable());
      seen.push(app.getStore());
      await earlier;
      return seen;
    };
    const direct = await scoped(() => run((_name, fn) => fn()));
    const { result: profiled } = await withProfile('job', () => scoped(() => run(step)));
    expect(profiled).toEqual(direct);
    expect(profiled[0]).toBeUndefined();
  });

  test('an app store whose enterWith throws when done again: the step returns fn’s value and the fault goes to onInternalError', async () => {
    class Once<T> extends AsyncLocalStorage<T> {
      calls = 0;
      override enterWith(store: T): void {
        if (++this.calls > 1) throw new Error('entered twice');
        super.enterWith(store);
      }
    }
    const app = new Once<string>();
    const faults: unknown[] = [];
    const { result } = await withProfile(
      'job',
      () => scoped(() => step('sign in', () => (app.enterWith('user'), 'signed in'))),
      { onInternalError: (err) => faults.push(err) },
    );
    expect(result).toBe('signed in');
    // Only the frame path does the change again (on Node ≤ 22, als.run never needs to).
    expect(faults.map((e) => (e as Error).message)).toEqual(stepEntering === 'frame' ? ['entered twice'] : []);
  });

  test('every async resource a step makes is destroyed, for apps with async_hooks', async () => {
    const made = new Set<number>();
    const destroyed = new Set<number>();
    const hook = createHook({
      init(id, type) {
        if (type === 'MINIPROF_STEP') made.add(id);
      },
      destroy(id) {
        destroyed.add(id);
      },
    }).enable();
    try {
      await withProfile('job', async () => {
        for (let i = 0; i < 20; i++) {
          step('sync', () => undefined);
          await step('async', async () => undefined);
        }
      });
      await new Promise((r) => setImmediate(r));
    } finally {
      hook.disable();
    }
    if (stepEntering === 'frame') expect(made.size).toBeGreaterThanOrEqual(80);
    else expect(made.size).toBe(0);
    expect([...made].filter((id) => !destroyed.has(id))).toEqual([]);
  });
});
