import type { CoreOptions } from '../../src/index.js';

/** A clock the test moves by hand; `calls` counts reads so tests can prove when it was not read. */
export interface FakeClock {
  t: number;
  calls: number;
  clock: () => number;
}

export function fakeClock(start = 0): FakeClock {
  const c: FakeClock = {
    t: start,
    calls: 0,
    clock: () => {
      c.calls++;
      return c.t;
    },
  };
  return c;
}

/** Options that make a profile's JSON fully determined by the test (the id aside). */
export function fixed(c: FakeClock, extra: CoreOptions = {}): CoreOptions {
  return { clock: c.clock, now: () => Date.UTC(2026, 10, 29, 12, 0, 0), machine: 'web-1', ...extra };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
