import type { TimingJSON } from '../core/types.js';
import { unionMs } from '../analysis/wall.js';
import { blockingNote, ms1 } from './format.js';
import type { NoteStyle } from './marks.js';

/**
 * What a top-level step's Server-Timing metric says beyond its name (server-timing.ts builds the
 * metric): one metric per metric name, so steps whose names reduce to one token share it.
 */

/** Server-Timing's notes: ASCII, and no command (its commas would read as metric boundaries). */
export const NOTES: NoteStyle = { times: 'x', text: (x) => x, commands: false };

/** `name (blocking: …) (N+1: …) (serialized: …)`: the step's line after its duration. */
export function describedStep(t: TimingJSON, notes: string[]): string {
  let d = t.blocking === true ? `${t.name} (${blockingNote(t)})` : t.name;
  for (let i = 0; i < notes.length; i++) d += ` (${notes[i]})`;
  return d;
}

/**
 * The top-level steps whose metric name (`token`) comes back, by that name, each group in tree
 * order; null when none does (most requests: a Set, no Map).
 */
export function sameNamed(top: TimingJSON[], token: (name: string) => string): Map<string, TimingJSON[]> | null {
  const seen = new Set<string>();
  let again: Set<string> | null = null;
  for (let i = 0; i < top.length; i++) {
    const t = token(top[i]!.name);
    if (seen.has(t)) (again ??= new Set()).add(t);
    else seen.add(t);
  }
  if (again === null) return null;
  const groups = new Map<string, TimingJSON[]>();
  for (let i = 0; i < top.length; i++) {
    const c = top[i]!;
    const t = token(c.name);
    if (!again.has(t)) continue;
    const g = groups.get(t);
    if (g === undefined) groups.set(t, [c]);
    else g.push(c);
  }
  return groups;
}

/** Several steps' wall time: the union of their intervals (ten parallel 8 ms steps took 8 ms, not 80). */
export function wallOf(group: TimingJSON[]): number {
  const pairs: number[] = [];
  for (const t of group) pairs.push(t.startMs, t.startMs + t.durationMs);
  return unionMs(pairs, Infinity);
}

/**
 * A group's `desc`: the count and the first step's name, the root's verdict on them when it has
 * one (`10 x article toJSON (8.1 at once)`), and how many of them blocked.
 */
export function groupDesc(group: TimingJSON[], root: TimingJSON, token: (name: string) => string): string {
  const first = group[0]!;
  let desc = `${group.length} x ${first.name}`;
  const f = root.fanOut;
  if (root.concurrency !== undefined && f !== undefined && f.category === undefined && token(f.name) === token(first.name)) {
    desc += root.serialized === true ? ' (ran one at a time)' : ` (${ms1(root.concurrency)} at once)`;
  }
  let blocked = 0;
  for (const t of group) if (t.blocking === true) blocked++;
  if (blocked > 0) desc += ` (${blocked} blocking)`;
  return desc;
}
