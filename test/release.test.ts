import { describe, expect, test } from 'vitest';
import { step, withProfile } from '../src/index.js';
import { als, openProfiles, RELEASE_GRACE_MS } from '../src/context.js';
import { sleep } from './helpers/clock.js';

/**
 * Node <= 22 only (the async_hooks ALS, the one with `_enable`): the promise hooks are released
 * once no profile has been open for RELEASE_GRACE_MS, and a profile opened within that grace
 * finds them on (no disable/enable pair per request for requests that come one after another).
 */
const releases = typeof (als as unknown as { _enable?: unknown })._enable === 'function';
const enabled = (): boolean => (als as unknown as { enabled: boolean }).enabled;

describe.runIf(releases)('hook release after the last profile', () => {
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
