/** Small readers and fixtures for profile trees, shared by the tests. */
import type { CustomTimingJSON, Profile, TimingJSON } from '../../src/index.js';

/** Every custom timing of the profile, in tree order. */
export function customs(profile: Profile): CustomTimingJSON[] {
  const out: CustomTimingJSON[] = [];
  const walk = (t: TimingJSON): void => {
    if (t.custom !== undefined) out.push(...t.custom);
    t.children.forEach(walk);
  };
  walk(profile.toJSON().root);
  return out;
}

/** The step of that name anywhere under `t`; throws when there is none. */
export function byName(t: TimingJSON, name: string): TimingJSON {
  const stack = [t];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.name === name) return n;
    stack.push(...n.children);
  }
  throw new Error(`no step ${name}`);
}

/**
 * At most `slots` callers inside at once; the rest wait their turn (as behind a connection pool,
 * handing over the moment a call ends).
 */
export function limiter(slots: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (fn) => {
    if (running >= slots) await new Promise<void>((r) => waiting.push(r));
    else running++;
    try {
      return await fn();
    } finally {
      const next = waiting.shift();
      if (next !== undefined) next();
      else running--;
    }
  };
}
