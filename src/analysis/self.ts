import type { TimingJSON } from '../core/types.js';

/**
 * A step's self time: its duration less the time covered by at least one of its child steps
 * (their intervals' union, clipped to the step), in ms. Custom timings are not steps: a query
 * run outside any step counts as self time, and is listed under the step it ran in. On the root
 * this is the request's time that no step accounts for: "where did the other 20 ms go".
 * Counted in whole microseconds, as the profile measures, so that it is exact.
 */
export function selfMs(t: TimingJSON): number {
  const from = us(t.startMs);
  const to = from + us(t.durationMs);
  const spans: [number, number][] = [];
  for (const c of t.children) {
    const a = Math.max(from, us(c.startMs));
    const b = Math.min(to, us(c.startMs) + us(c.durationMs));
    if (b > a) spans.push([a, b]);
  }
  spans.sort((x, y) => x[0] - y[0]);
  let covered = 0;
  let end = from;
  for (const [a, b] of spans) {
    if (b <= end) continue;
    covered += b - Math.max(a, end);
    end = b;
  }
  return (to - from - covered) / 1000;
}

function us(ms: number): number {
  return Math.round(ms * 1000);
}
