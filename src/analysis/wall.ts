import type { CategorySummaryJSON, TimingJSON } from '../core/types.js';

/**
 * The length of the union of intervals given as flat `[start, end, start, end, …]` pairs (sorted
 * here), each clipped to `[floor, limit]`. Four parallel fetches of 100 ms give 100, not
 * 400: the time during which at least one of them was running.
 */
export function unionMs(pairs: number[], limit: number, floor = 0): number {
  const n = pairs.length / 2;
  const order: number[] = [];
  for (let i = 0; i < n; i++) order.push(i);
  order.sort((a, b) => pairs[2 * a]! - pairs[2 * b]!);
  let total = 0;
  let from = 0;
  let to = -Infinity;
  for (const i of order) {
    const s = Math.max(floor, pairs[2 * i]!);
    const e = Math.min(limit, pairs[2 * i + 1]!);
    if (e <= s) continue;
    if (s > to) {
      if (to > from) total += to - from;
      from = s;
      to = e;
    } else if (e > to) to = e;
  }
  if (to > from) total += to - from;
  return Math.round(total * 1000) / 1000;
}

/**
 * Per category, in tree order: count, summed and wall time, duplicates and similar as the custom
 * timings' own flags say. For JSON that has no `customSummary` with `wallMs` (made by hand, or
 * stored by an older version); profiles miniprof seals carry it.
 */
export function summarize(root: TimingJSON): CategorySummaryJSON[] {
  const cats = new Map<string, { s: CategorySummaryJSON; pairs: number[] }>();
  const stack: TimingJSON[] = [root];
  while (stack.length > 0) {
    const t = stack.pop()!;
    const custom = t.custom;
    if (custom !== undefined) {
      for (let i = 0; i < custom.length; i++) {
        const c = custom[i]!;
        let cat = cats.get(c.category);
        if (cat === undefined) {
          cat = { s: { category: c.category, count: 0, durationMs: 0, wallMs: 0, duplicate: 0, similar: 0 }, pairs: [] };
          cats.set(c.category, cat);
        }
        cat.s.count++;
        cat.s.durationMs += c.durationMs;
        if (c.duplicate === true) cat.s.duplicate++;
        if (c.similar !== undefined) cat.s.similar++;
        cat.pairs.push(c.startMs, c.startMs + c.durationMs);
      }
    }
    for (let i = t.children.length - 1; i >= 0; i--) stack.push(t.children[i]!);
  }
  const out: CategorySummaryJSON[] = [];
  for (const { s, pairs } of cats.values()) {
    s.durationMs = Math.round(s.durationMs * 1000) / 1000;
    s.wallMs = unionMs(pairs, root.durationMs);
    out.push(s);
  }
  return out;
}
