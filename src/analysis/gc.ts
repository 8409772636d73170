import { PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { monotonic, type Clock } from '../core/clock.js';
import type { TimingJSON } from '../core/types.js';

/**
 * Garbage-collection pauses per profile, for the blocking explanation: `held 56.0ms (GC 31.0ms)`.
 * One `PerformanceObserver` for `gc` entries (documented in perf_hooks) is connected while at least
 * one profile on the default clock is open, and disconnected when the last one closes: a process
 * with no developer request open observes nothing. A pause is credited to every profile open then
 * (GC stops the whole thread, whoever allocated), and at snapshot time to the innermost blocking
 * step open at its middle.
 *
 * Entries reach an observer on a later turn of the event loop; `takeRecords()` at the freeze and
 * at the close collects those already queued. A collection in the very last synchronous stretch
 * before the response is rendered is queued only after it: it shows in the stored profile (sealed
 * at close), not in the HTML comment.
 */

/** What this module needs of a profile (declared here so that core/profile.ts can call in). */
export interface GcWatched {
  readonly t0: number;
  readonly config: { readonly clock: Clock };
  /** A pause of `durUs` starting `fromUs` after the profile's start. */
  addGc(fromUs: number, durUs: number): void;
}

/** Profiles open now (an array, not a Set: few at a time, and no hash table outlives a request). */
const open: GcWatched[] = [];
let observer: PerformanceObserver | null = null;

function credit(entries: readonly PerformanceEntry[]): void {
  for (const e of entries) {
    for (const p of open) {
      const from = e.startTime - p.t0;
      if (from + e.duration <= 0) continue;
      p.addGc(Math.floor(from * 1000 + 0.5), Math.floor(e.duration * 1000 + 0.5));
    }
  }
}

/** @internal A profile was entered. */
export function gcOpened(p: GcWatched): void {
  if (p.config.clock !== monotonic || open.includes(p)) return;
  open.push(p);
  if (observer !== null) return;
  observer = new PerformanceObserver((list) => credit(list.getEntries()));
  observer.observe({ entryTypes: ['gc'] });
}

/** @internal Credit the pauses queued so far (the profile's outputs are about to be rendered). */
export function gcFlush(): void {
  if (observer !== null) credit(observer.takeRecords());
}

/** @internal A profile is about to be sealed. */
export function gcClosed(p: GcWatched): void {
  const i = open.indexOf(p);
  if (i === -1) return;
  gcFlush();
  open.splice(i, 1);
  if (open.length === 0 && observer !== null) {
    observer.disconnect();
    observer = null;
  }
}

/** @internal For tests: is the observer connected? */
export function gcObserving(): boolean {
  return observer !== null;
}

/** At most this many pauses are kept per profile. */
export const MAX_GC = 256;

/**
 * Set `gcMs` on the blocking steps of `root` from the profile's pauses (flat `[fromUs, durUs, …]`):
 * each pause goes to the innermost blocking step open at its middle. Returns at least the UTF-8
 * bytes it added.
 */
export function attributeGc(root: TimingJSON, pauses: number[]): number {
  const sums = new Map<TimingJSON, number>();
  for (let i = 0; i + 1 < pauses.length; i += 2) {
    const mid = (pauses[i]! + pauses[i + 1]! / 2) / 1000;
    const t = innermostBlocking(root, mid);
    if (t !== null) sums.set(t, (sums.get(t) ?? 0) + pauses[i + 1]! / 1000);
  }
  let bound = 0;
  for (const [t, ms] of sums) {
    t.gcMs = Math.round(ms * 1000) / 1000;
    bound += 9 + 24;
  }
  return bound;
}

/** The deepest blocking step whose span holds `at` (ms), the last opened among siblings. */
function innermostBlocking(root: TimingJSON, at: number): TimingJSON | null {
  let found: TimingJSON | null = null;
  let level: TimingJSON[] = root.children;
  for (;;) {
    let next: TimingJSON | null = null;
    for (const c of level) if (c.startMs <= at && at <= c.startMs + c.durationMs) next = c;
    if (next === null) return found;
    if (next.blocking === true) found = next;
    level = next.children;
  }
}
