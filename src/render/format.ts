import type { TimingJSON } from '../core/types.js';

const DOT = ['.0', '.1', '.2', '.3', '.4', '.5', '.6', '.7', '.8', '.9'];

/** What follows {@link ms1}'s digits in a place that always adds the same text after them. */
export interface Tenths {
  readonly zero: string;
  /** `.0` to `.9`, each with the suffix after it. */
  readonly dots: readonly string[];
  readonly suffix: string;
}

/** The table for {@link ms1With}: `suffix` joined to each tenth once, here, not per call. */
export function tenths(suffix: string): Tenths {
  return { zero: `0.0${suffix}`, dots: DOT.map((d) => d + suffix), suffix };
}

const PLAIN = tenths('');

/** Milliseconds with exactly one decimal, without `toFixed` (this runs once per line). */
export function ms1(ms: number): string {
  return ms1With(ms, PLAIN);
}

/** `ms1(ms)` and then `t.suffix`, as one concatenation in the common case. */
export function ms1With(ms: number, t: Tenths): string {
  if (!(ms > 0)) return t.zero;
  const tenths = Math.round(ms * 10);
  // One number converted instead of two: this runs for every line of the comment and metric.
  const f = t.dots[tenths % 10];
  return f === undefined ? `${Math.floor(tenths / 10)}.${tenths % 10}${t.suffix}` : Math.floor(tenths / 10) + f;
}

/**
 * What a blocking step's line and metric say, inside the parentheses: `blocking: 25.0ms sync`
 * (its synchronous start, or all of a synchronous step), `blocking: 56.2ms held` (the loop held
 * later, after an await), `blocking: 0.3ms sync + 56.2ms held` for both, and `ambiguous blocking:`
 * when another step or request was running during that stall too. No comma: readers that split
 * a `Server-Timing` value at commas without minding quotes are common.
 */
export function blockingNote(t: TimingJSON): string {
  const sync = `${ms1(t.syncMs ?? t.durationMs)}ms sync`;
  if (t.heldMs === undefined) return `blocking: ${sync}`;
  const held = t.syncMs !== undefined ? `${sync} + ${ms1(t.heldMs)}ms held` : `${ms1(t.heldMs)}ms held`;
  return t.blockingAmbiguous === true ? `ambiguous blocking: ${held}` : `blocking: ${held}`;
}
