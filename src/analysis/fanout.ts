import type { CustomTimingJSON, FanOutJSON, SimilarGroupJSON, TimingJSON } from '../core/types.js';

/**
 * Serialized fan-out: `Promise.all` over N calls that a queue behind them (one pg `Client`, a
 * pool of one, a mutex) serves one at a time. Each call's timing starts when `Promise.all` makes
 * it and ends in turn, so the timings all overlap, and "sum of durations over the wall time"
 * (`parallelism`) reads (N+1)/2 where one ran at a time. What actually ran at once has to be
 * inferred.
 *
 * The estimator assumes the calls do similar work, `w`: the shortest call's duration (the first
 * one served did not wait), or the typical gap between their ends when that is shorter (see
 * workOf). Each call is then taken to have worked only during the last `w` of its timing,
 * `[max(start, end - w), end]`, having waited in a queue before that. How many ran at once is
 * the number of those working intervals in progress during a call's last `w`, averaged over it
 * (that call counts 1, every other one the fraction of its working interval that falls inside),
 * taken at the end of each call, and the median of those. So a queue of 1 gives 1, a pool of 2
 * gives 2 (whatever N), N truly parallel calls of equal length give N, and the value is never
 * below 1 nor above N. The median, not the first window alone: on a busy machine one call of a
 * pool's first pair can be held up, and the first window then reads a pool of 2 as a queue.
 *
 * It abstains when the ends say the work was not similar: behind a queue that is never idle
 * while calls wait, each call ends about one call's work (`w`) after the one before it, or with it.
 * When the gaps between consecutive ends exceed `w` (each less {@link GAP_SLACK_MS} of scheduling
 * noise) by more than `w / 2` per gap on average, the calls differ in length in a way queueing
 * cannot explain (a 5 ms, a 50 ms and a 100 ms fetch in parallel), and no estimate is given.
 * Averaged rather than per gap, so that one late timer on a busy machine does not silence a clear
 * queue. Calls whose lengths vary by less than that may read lower than the number really in
 * flight (10, 25 and 40 ms in parallel read as a queue of similar calls). Errored and unfinished
 * calls are left out (an error can end a call early), and so are groups of fewer than
 * {@link MIN_GROUP}.
 *
 * "Started together": sorted by start, a batch takes each call that started before any call in
 * the batch ended; calls made one after another (an awaited loop) form batches of one and get
 * nothing. Each batch of at least three is estimated; the parent keeps the lowest estimate.
 */
export const MIN_GROUP = 3;
/** Below this the calls are said to have run one at a time (`serialized`). */
export const SERIALIZED_BELOW = 1.5;
export const GAP_SLACK_MS = 1;

/** `[start, end, start, end, …]` of the members of one batch. */
type Pairs = number[];

/**
 * How many of the intervals ran at once under the similar-work model above, or undefined when it
 * abstains. `pairs` are `[start, end]` in ms; at least {@link MIN_GROUP} of them.
 */
export function concurrencyOf(pairs: Pairs): number | undefined {
  const n = pairs.length / 2;
  if (n < MIN_GROUP) return undefined;
  let shortest = Infinity;
  const ends: number[] = [];
  for (let i = 0; i < n; i++) {
    const d = pairs[2 * i + 1]! - pairs[2 * i]!;
    if (d < shortest) shortest = d;
    ends.push(pairs[2 * i + 1]!);
  }
  if (!(shortest > 0)) return undefined;
  ends.sort((a, b) => a - b);
  const w = workOf(ends, shortest);
  let unexplained = 0;
  for (let k = 1; k < n; k++) {
    const excess = ends[k]! - ends[k - 1]! - w - GAP_SLACK_MS;
    if (excess > 0) unexplained += excess;
  }
  if (unexplained > ((n - 1) * w) / 2) return undefined;
  // The median over the windows that end where a call ends (see atEnd): one call held up once
  // (a slow connection, a busy machine) changes one or two windows, not the verdict.
  const step = n > MAX_WINDOWS ? n / MAX_WINDOWS : 1;
  const at: number[] = [];
  for (let k = 0; k < n; k += step) at.push(atEnd(pairs, ends[Math.floor(k)]!, w));
  at.sort((a, b) => a - b);
  const m = at.length >> 1;
  const median = at.length % 2 === 1 ? at[m]! : (at[m - 1]! + at[m]!) / 2;
  const c = Math.round(median * 100) / 100;
  return c < 1 ? 1 : c > n ? n : c;
}

/** At most this many windows are looked at per batch (evenly spread over the ends). */
const MAX_WINDOWS = 64;

/**
 * How many calls were working in the window `[to - w, to]`, where a call ends at `to`: that call
 * worked all of it and counts 1, each other the share of its working interval that falls inside.
 */
function atEnd(pairs: Pairs, to: number, w: number): number {
  const from = to - w;
  let sum = 0;
  for (let i = 0; i < pairs.length; i += 2) {
    const e = pairs[i + 1]!;
    const s = Math.max(pairs[i]!, e - w);
    const overlap = Math.min(e, to) - Math.max(s, from);
    if (overlap > 0) sum += overlap;
  }
  return sum / w;
}

/**
 * One call's work, `w`: the shortest call's duration, or less when the ends say so. Behind a
 * queue each gap of more than half the shortest call between consecutive ends is one call's work
 * too; their median is taken when smaller, so that a first call slowed by the machine (or by
 * opening a connection) does not stretch every working interval. Never more than the shortest.
 */
function workOf(ends: number[], shortest: number): number {
  const gaps: number[] = [];
  for (let k = 1; k < ends.length; k++) {
    const g = ends[k]! - ends[k - 1]!;
    if (g > shortest / 2) gaps.push(g);
  }
  if (gaps.length === 0) return shortest;
  gaps.sort((a, b) => a - b);
  const m = gaps.length >> 1;
  const median = gaps.length % 2 === 1 ? gaps[m]! : (gaps[m - 1]! + gaps[m]!) / 2;
  return median < shortest ? median : shortest;
}

/** The batches of calls that started together (see above), each of at least MIN_GROUP. */
function batches(pairs: Pairs): Pairs[] {
  const n = pairs.length / 2;
  const order: number[] = [];
  for (let i = 0; i < n; i++) order.push(i);
  order.sort((a, b) => pairs[2 * a]! - pairs[2 * b]!);
  const out: Pairs[] = [];
  let cur: Pairs = [];
  let minEnd = Infinity;
  for (const i of order) {
    const s = pairs[2 * i]!;
    const e = pairs[2 * i + 1]!;
    if (cur.length > 0 && s >= minEnd) {
      if (cur.length >= 2 * MIN_GROUP) out.push(cur);
      cur = [];
      minEnd = Infinity;
    }
    cur.push(s, e);
    if (e < minEnd) minEnd = e;
  }
  if (cur.length >= 2 * MIN_GROUP) out.push(cur);
  return out;
}

interface Best {
  c: number;
  fan: FanOutJSON;
}

function consider(best: Best | undefined, pairs: Pairs, fan: (count: number) => FanOutJSON): Best | undefined {
  for (const b of batches(pairs)) {
    const c = concurrencyOf(b);
    if (c !== undefined && (best === undefined || c < best.c)) best = { c, fan: fan(b.length / 2) };
  }
  return best;
}

function measurable(t: { error?: true; unfinished?: true }): boolean {
  return t.error !== true && t.unfinished !== true;
}

/**
 * Whether some name comes back MIN_GROUP times: most steps with several children have distinct
 * names (load, render, …), and then no Map is made. Past 32 children the Map is made anyway.
 */
function repeats(children: TimingJSON[]): boolean {
  const n = children.length;
  if (n > 32) return true;
  for (let i = 0; i < n - 2; i++) {
    let seen = 1;
    for (let j = i + 1; j < n && seen < MIN_GROUP; j++) if (children[j]!.name === children[i]!.name) seen++;
    if (seen >= MIN_GROUP) return true;
  }
  return false;
}

/** Groups of a step's children by name, each as its pairs; only names seen at least MIN_GROUP times. */
function stepGroups(children: TimingJSON[]): Map<string, Pairs> {
  const groups = new Map<string, Pairs>();
  for (let i = 0; i < children.length; i++) {
    const c = children[i]!;
    if (!measurable(c)) continue;
    const g = groups.get(c.name);
    if (g === undefined) groups.set(c.name, [c.startMs, c.startMs + c.durationMs]);
    else g.push(c.startMs, c.startMs + c.durationMs);
  }
  return groups;
}

function customGroups(custom: CustomTimingJSON[]): Map<number, Pairs> {
  const groups = new Map<number, Pairs>();
  for (let i = 0; i < custom.length; i++) {
    const c = custom[i]!;
    if (c.similar === undefined || !measurable(c)) continue;
    const g = groups.get(c.similar);
    if (g === undefined) groups.set(c.similar, [c.startMs, c.startMs + c.durationMs]);
    else g.push(c.startMs, c.startMs + c.durationMs);
  }
  return groups;
}

/**
 * Set `concurrency`, `serialized` and `fanOut` on every step (the root included) with a group of
 * at least three same-named children, or similar custom timings, that started together, and take
 * its `parallelism` away: the group's verdict is the step's one verdict on concurrency. Runs on
 * the JSON at snapshot time (seal, freeze), never per step. `similar`: the profile's groups, for
 * the shared shape of custom timings. Returns at least the UTF-8 bytes it added (jsonBound).
 */
export function analyseFanOut(root: TimingJSON, similar: SimilarGroupJSON[] | undefined): number {
  let bound = 0;
  const stack: TimingJSON[] = [root];
  while (stack.length > 0) {
    const t = stack.pop()!;
    const children = t.children;
    for (let i = 0; i < children.length; i++) stack.push(children[i]!);
    let best: Best | undefined;
    if (children.length >= MIN_GROUP && repeats(children)) {
      for (const [name, pairs] of stepGroups(children)) {
        if (pairs.length >= 2 * MIN_GROUP) best = consider(best, pairs, (count) => ({ name, count }));
      }
    }
    const custom = t.custom;
    if (custom !== undefined && custom.length >= MIN_GROUP && similar !== undefined) {
      for (const [id, pairs] of customGroups(custom)) {
        const g = similar[id - 1];
        if (g === undefined || pairs.length < 2 * MIN_GROUP) continue;
        best = consider(best, pairs, (count) => ({ name: g.command, count, category: g.category, similar: id }));
      }
    }
    if (best === undefined) continue;
    // One verdict per step: the group's says what ran at once, where the summed durations over
    // the wall time (`parallelism`) would read (N+1)/2 for calls that ran one at a time.
    delete t.parallelism;
    t.concurrency = best.c;
    if (best.c < SERIALIZED_BELOW) t.serialized = true;
    t.fanOut = best.fan;
    // Keys, punctuation and numbers of at most 24 characters; 6 bytes per unit of each string.
    bound += 160 + 6 * (best.fan.name.length + (best.fan.category?.length ?? 0));
  }
  return bound;
}
