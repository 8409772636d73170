import type { TimingJSON } from '../core/types.js';
import { unionMs } from './wall.js';

/**
 * Blocking anywhere in a step. A step's synchronous start is timed exactly (`syncMs`), but work
 * after an `await` runs in callbacks miniprof does not wrap. The event-loop monitor
 * (src/analysis/loop.ts) sees such work as a late tick: a tick due at `last + 10 ms` that ran at
 * `now` means the loop was busy without a break from the due time to `now`. That stretch is the
 * stall, kept on every profile open then ({@link Stalls}), and attributed here at snapshot time,
 * when the tree is final.
 *
 * Each stall is split along the tree: the part of it inside a step, less the parts inside its
 * children and inside its own synchronous start (already counted by `syncMs`, or by the whole of
 * a synchronous step), is that step's. A step whose part exceeds `blockingMs` gets `blocking`, and
 * `heldMs` adds the part up. The root's own part is not a step's: it stays in the profile's
 * `eventLoopDelayMs`. When two of the steps so flagged were open over the same moment of the
 * stall (concurrent branches of a `Promise.all`), or another profile was open during it (another
 * request's work can stall this one), any of them may have held the loop: each gets
 * `blockingAmbiguous`.
 *
 * The due time is a lower bound of the stall's start, so `heldMs` may read up to the monitor's
 * resolution (10 ms) short, never long. The split assumes a step's code runs while none of its
 * children is open, which holds when a parent awaits its children (`await step(…)`,
 * `Promise.all`); a parent that works while a child is still pending has that work counted as the
 * child's.
 *
 * Only the app's own work is blamed. A busy machine (or a paused process) makes the loop late
 * too, without any work of the app's: each stall carries the CPU time the process had across it
 * (src/analysis/loop.ts), and each part is counted at that share (a 150 ms stall in which the
 * process ran 50 ms counts 50 ms, spread over the steps open during it). The rest, the time the
 * process did not run, is nobody's: {@link notRunMs} sums it for the profile's notes.
 *
 * Other explanations of a stall (garbage collection pauses, say) belong in modules of their own
 * beside this one, reading the same `Stalls`: this one only splits the CPU share along the tree.
 */

/**
 * Flat `[startUs, endUs, shared, cpuUs, …]` on the profile's clock; `shared` 1 when another
 * profile was open; `cpuUs` the CPU time the process had across the stall (at most its length).
 */
export type Stalls = number[];
/** Numbers per stall in {@link Stalls}. */
export const STALL = 4;

/** At most this many stalls are kept per profile (each a held loop of more than `blockingMs`). */
export const MAX_STALLS = 32;

interface Part {
  t: TimingJSON;
  from: number;
  to: number;
  ms: number;
}

function end(t: TimingJSON): number {
  return t.startMs + t.durationMs;
}

/**
 * The end of `t`'s own synchronous start: `syncMs`, or all of a synchronous step that was flagged
 * for it (`blocking` without `syncMs`, unless a stall flagged it: then `heldMs` is there).
 */
function syncEnd(t: TimingJSON): number {
  if (t.syncMs !== undefined) return t.startMs + t.syncMs;
  return t.blocking === true && t.heldMs === undefined ? end(t) : t.startMs;
}

/**
 * The parts of the stall `[a, b]` (ms) inside each step under `t`, each counted at `share` (the
 * part of the stall the process was running), added to `out` when they exceed `blockingMs`.
 * Iterative over an explicit stack: no tree shape can overflow it.
 */
function split(root: TimingJSON, a: number, b: number, share: number, blockingMs: number, out: Part[], parents: Map<TimingJSON, TimingJSON>): void {
  const stack: TimingJSON[] = [root];
  while (stack.length > 0) {
    const t = stack.pop()!;
    const from = Math.max(a, t.startMs);
    const to = Math.min(b, end(t));
    if (to <= from) continue;
    const covered: number[] = [];
    const children = t.children;
    for (let i = 0; i < children.length; i++) {
      const c = children[i]!;
      if (c.startMs < to && end(c) > from) {
        covered.push(c.startMs, end(c));
        stack.push(c);
        parents.set(c, t);
      }
    }
    if (t === root) continue;
    covered.push(t.startMs, syncEnd(t));
    const own = (to - from - unionMs(covered, to, from)) * share;
    if (own > blockingMs) out.push({ t, from, to, ms: own });
  }
}

/**
 * Set `blocking`, `heldMs` and `blockingAmbiguous` on the steps of `root` from the profile's
 * stalls (in microseconds since its start). Returns at least the UTF-8 bytes it added.
 */
export function attributeStalls(root: TimingJSON, stalls: Stalls, blockingMs: number): number {
  let bound = 0;
  for (let k = 0; k + STALL - 1 < stalls.length; k += STALL) {
    const parts: Part[] = [];
    const parents = new Map<TimingJSON, TimingJSON>();
    const length = stalls[k + 1]! - stalls[k]!;
    const share = length > 0 ? Math.min(1, stalls[k + 3]! / length) : 0;
    if (share * length <= blockingMs * 1000) continue;
    split(root, stalls[k]! / 1000, stalls[k + 1]! / 1000, share, blockingMs, parts, parents);
    const shared = stalls[k + 2] === 1;
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i]!;
      let ambiguous = shared;
      // A step and its ancestor split the stall between them; two branches open at once share it.
      for (let j = 0; j < parts.length && !ambiguous; j++) {
        const q = parts[j]!;
        if (j !== i && q.from < p.to && q.to > p.from && !related(p.t, q.t, parents)) ambiguous = true;
      }
      const t = p.t;
      if (t.heldMs === undefined) bound += 10 + 24 + (t.blocking === true ? 0 : 16);
      t.heldMs = Math.round(((t.heldMs ?? 0) + p.ms) * 1000) / 1000;
      t.blocking = true;
      if (ambiguous && t.blockingAmbiguous === undefined) {
        t.blockingAmbiguous = true;
        bound += 25;
      }
    }
  }
  return bound;
}

/** Whether one of `x`, `y` is an ancestor of the other. */
function related(x: TimingJSON, y: TimingJSON, parents: Map<TimingJSON, TimingJSON>): boolean {
  for (let p = parents.get(x); p !== undefined; p = parents.get(p)) if (p === y) return true;
  for (let p = parents.get(y); p !== undefined; p = parents.get(p)) if (p === x) return true;
  return false;
}

/**
 * How long, in ms, the process did not run during the stalls (each stall's length less the CPU
 * time it had): a busy machine or a pause, not the app. Rounded to 0.1 ms.
 */
export function notRunMs(stalls: Stalls): number {
  let us = 0;
  for (let k = 0; k + STALL - 1 < stalls.length; k += STALL) {
    const off = stalls[k + 1]! - stalls[k]! - stalls[k + 3]!;
    if (off > 0) us += off;
  }
  return Math.round(us / 100) / 10;
}
