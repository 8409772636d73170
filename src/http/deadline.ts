import { als } from '../core/context.js';
import { LinkedSet, type Linked } from '../core/linked.js';

/** Something sealed when its time is up: a developer response still open after maxDurationMs. */
export interface Expiring extends Linked {
  /** `performance.now()` at which it is due; set by {@link watch}. */
  deadlineAt: number;
  expire(): void;
}

/**
 * Every open developer response's maxDurationMs, on one shared, unref'd timer: a request only
 * links and unlinks itself (src/core/linked.ts), and no Timeout per request is created, seen by
 * async_hooks users, and cleared again.
 *
 * The timer is armed for the earliest deadline it knows. New responses nearly always have a
 * later one (deadlines only differ when apps have different maxDurationMs), so it is rarely
 * re-armed; when it fires, it expires what is due and re-arms for the earliest left.
 */
const live = new LinkedSet<Expiring>();
let timer: NodeJS.Timeout | null = null;
let armedFor = Infinity;

/** Timers fire on whole milliseconds; a deadline this close is due now. */
const SLACK_MS = 1;

/** `now` is `performance.now()`, read by the caller when it has just read it anyway. */
export function watch(e: Expiring, ms: number, now = performance.now()): void {
  const at = now + ms;
  e.deadlineAt = at;
  live.add(e);
  if (at < armedFor) arm(at, ms);
}

export function unwatch(e: Expiring): void {
  live.delete(e);
}

/** Fire in `ms` (the time left until `at`). */
function arm(at: number, ms: number): void {
  if (timer !== null) clearTimeout(timer);
  armedFor = at;
  const delay = Math.max(1, Math.ceil(ms));
  // The timer outlives the request that armed it and must not carry (and keep) a store. Only
  // when there is one: run() would switch an idle ALS on (Node <= 22) with nothing to release it.
  timer = als.getStore() === undefined ? setTimeout(sweep, delay) : als.run(undefined as never, setTimeout, sweep, delay);
  timer.unref();
}

function sweep(): void {
  timer = null;
  armedFor = Infinity;
  const now = performance.now();
  let next = Infinity;
  // Collected first: expiring one response must not be able to cut the walk short.
  const due: Expiring[] = [];
  for (const e of live) {
    if (e.deadlineAt <= now + SLACK_MS) due.push(e);
    else if (e.deadlineAt < next) next = e.deadlineAt;
  }
  for (const e of due) {
    live.delete(e);
    e.expire();
  }
  if (next !== Infinity) arm(next, next - now);
}

/** @internal For tests: responses waiting for their deadline. */
export function watched(): number {
  return live.size;
}
