import { performance } from 'node:perf_hooks';

/** Monotonic milliseconds. The default is `performance.now()`; tests inject their own. */
export type Clock = () => number;

export const monotonic: Clock = () => performance.now();

/** Epoch milliseconds for the profile's `started` stamp. */
export type WallClock = () => number;

export const wall: WallClock = () => Date.now();
