import { describe, expect, test, vi } from 'vitest';
import { currentProfile, step, withProfile } from '../src/index.js';
import { als, openProfiles, RELEASE_GRACE_MS, usesContextFrame } from '../src/core/context.js';
import { sleep } from './helpers/clock.js';

/**
 * Node <= 22 only (the async_hooks ALS, the one with `_enable`): the promise hooks are released
 * once no profile has been open for RELEASE_GRACE_MS, and a profile opened within that grace
 * finds them on (no disable/enable pair per request for requests that come one after another).
 */
const releases = typeof (als as unknown as { _enable?: unknown })._enable === 'function';
const enabled = (): boolean => (als as unknown as { enabled: boolean }).enabled;

describe('which AsyncLocalStorage runs, as Node documents it', () => {
  test('AsyncContextFrame by default from Node 24 (unless --no-async-context-frame), behind a flag before', () => {
    expect(usesContextFrame(20, '')).toBe(false);
    expect(usesContextFrame(22, '')).toBe(false);
    expect(usesContextFrame(22, ' --experimental-async-context-frame')).toBe(true);
    expect(usesContextFrame(24, '')).toBe(true);
    expect(usesContextFrame(26, '--no-async-context-frame ')).toBe(false);
  });

  test('the rule agrees with the implementation this Node runs (the async_hooks one has `_enable`)', () => {
    const flags = `${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS ?? ''}`;
    expect(usesContextFrame(Number(process.versions.node.split('.')[0]), flags)).toBe(!releases);
  });
});

describe('hook release after the last profile', () => {
  if (!releases) {
    // Node 24+ (AsyncContextFrame): there is no promise-hook tax to release, and disable() would
    // mutate the current frame, so miniprof must never call it; a closed profile leaves nothing.
    test('Node 24+: the ALS is never disabled, and steps after the last profile are pass-throughs', async () => {
      const original = als.disable;
      let calls = 0;
      als.disable = function (this: typeof als) {
        calls++;
        return original.call(this);
      };
      try {
        await withProfile('one', async () => {
          await step('a', async () => {});
        });
        await withProfile('two', async () => {});
        await sleep(RELEASE_GRACE_MS * 3 + 20);
        expect(calls).toBe(0);
        expect(openProfiles()).toBe(0);
        expect(currentProfile()).toBeUndefined();
        expect(step('x', () => 42)).toBe(42);
      } finally {
        als.disable = original;
      }
    });
    return;
  }

  test('released within the grace once no profile is open', async () => {
    await withProfile('one', async () => {
      await step('a', async () => {});
    });
    expect(openProfiles()).toBe(0);
    expect(RELEASE_GRACE_MS).toBeLessThanOrEqual(50);
    await sleep(RELEASE_GRACE_MS * 3 + 20);
    expect(enabled()).toBe(false);
  });

  test('back-to-back profiles keep the hooks on between them, then release', async () => {
    await withProfile('first', async () => {});
    expect(enabled()).toBe(true);
    const { profile } = await withProfile('second', async () => {
      await step('b', async () => {});
    });
    expect(profile.toJSON().root.children.map((t) => t.name)).toEqual(['b']);
    expect(enabled()).toBe(true);
    await sleep(RELEASE_GRACE_MS * 3 + 20);
    expect(enabled()).toBe(false);
  });

  test('a last profile closed while the timer was pending still gets a whole grace', async () => {
    await withProfile('first', async () => {});
    // The timer armed at that close is due in RELEASE_GRACE_MS; this close comes before it fires.
    await sleep(RELEASE_GRACE_MS * 0.75);
    await withProfile('second', async () => {});
    await sleep(RELEASE_GRACE_MS / 2);
    // Past the first close's grace, within the second's.
    expect(enabled()).toBe(true);
    await sleep(RELEASE_GRACE_MS * 3 + 20);
    expect(enabled()).toBe(false);
  });

  test('back-to-back profiles do not re-arm the release timer at each close', async () => {
    const timeoutProto = Object.getPrototypeOf(setTimeout(() => {}, 0)) as { refresh(): unknown };
    const refresh = vi.spyOn(timeoutProto, 'refresh');
    try {
      const started = performance.now();
      for (let i = 0; i < 50; i++) await withProfile(`request ${i}`, async () => {});
      // Armed once, then at most once per grace that passed; it was once per profile.
      expect(refresh.mock.calls.length).toBeLessThanOrEqual(Math.ceil((performance.now() - started) / RELEASE_GRACE_MS) + 1);
    } finally {
      refresh.mockRestore();
    }
    await sleep(RELEASE_GRACE_MS * 3 + 20);
    expect(enabled()).toBe(false);
  });

  test('a profile open at the timer does not lose its hooks', async () => {
    await withProfile('closed', async () => {});
    await withProfile('long', async () => {
      await sleep(RELEASE_GRACE_MS * 3 + 20);
      expect(enabled()).toBe(true);
      await step('after the timer', async () => {});
    });
    await sleep(RELEASE_GRACE_MS * 3 + 20);
    expect(enabled()).toBe(false);
  });
});
