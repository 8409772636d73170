import { performance } from 'node:perf_hooks';
import { monotonic } from '../core/clock.js';
import type { Profile } from '../core/profile.js';
import { LinkedSet } from '../core/linked.js';

/**
 * Event-loop delay per profile: how long the loop was stalled (by anyone's work) while the
 * profile was open. One unref'd 10 ms timer runs while at least one measured profile is open.
 * Each tick's lateness is the delay; it is credited to every profile open at that tick (no more
 * of it than the profile was open for), and once more when a profile closes (a stall right before
 * the response shows up before the next tick would).
 *
 * Why not `perf_hooks.monitorEventLoopDelay`: its histogram is process-wide, so a per-profile
 * maximum needs a `reset()` at every profile boundary, and both `reset()` and `enable()` drop the
 * interval in progress: a stall right after a request starts is never recorded (on Node 20, 50 ms
 * of busy work just after `reset()` left `max` near 10 ms). A JS timer has no such gap
 * and costs about 100 callbacks a second, only while a developer's request is open.
 *
 * Only profiles on the default clock are measured: the delay is real time, and a test's injected
 * clock must fully determine its output.
 *
 * The timer stops at the first tick that finds no profile open, not when the last one closes.
 * Under load the count of open profiles can touch zero between nearly every two requests, and a
 * stop at each close would start and stop an interval per developer request. It runs at most one
 * tick (10 ms) past the last profile.
 */
const RESOLUTION_MS = 10;

/** Linked through the profiles' own fields: a Set's table would churn once per request (src/core/linked.ts). */
const open = new LinkedSet<Profile>();
let timer: NodeJS.Timeout | null = null;
let last = 0;

/**
 * A late tick's delay, as far as `p` saw it: a profile opened after the tick was due (a request
 * that arrived right after someone's stall) was not there for all of it. Its `t0` is on this same
 * clock: only default-clock profiles are sampled.
 */
function creditOne(p: Profile, lag: number, now: number): void {
  const seen = Math.min(lag, now - p.t0);
  if (seen > p.loopDelayMs) p.loopDelayMs = seen;
}

function tick(): void {
  const now = performance.now();
  const lag = now - last - RESOLUTION_MS;
  if (lag > 0) for (const p of open) creditOne(p, lag, now);
  last = now;
  // A profile sealed without closeProfile (by hand) must not keep the timer going.
  for (const p of open) if (p.sealed) open.delete(p);
  if (open.size === 0) stop();
}

function stop(): void {
  if (timer !== null) clearInterval(timer);
  timer = null;
}

/** @internal A profile was entered. */
export function loopOpened(profile: Profile): void {
  if (profile.config.clock !== monotonic || !open.add(profile)) return;
  if (timer === null) {
    last = performance.now();
    timer = setInterval(tick, RESOLUTION_MS);
    timer.unref();
  }
}

/** @internal A profile is about to be sealed: credit the stall since the last tick, then let go. */
export function loopClosed(profile: Profile): void {
  if (!open.delete(profile)) return;
  const now = performance.now();
  creditOne(profile, now - last - RESOLUTION_MS, now);
}

/** @internal For tests: is the sampler running? */
export function loopSampling(): boolean {
  return timer !== null;
}
