import type { CustomTimingJSON, ProfileJSON, TimingJSON } from '../core/types.js';
import { escapeHtml, msText, num } from './html.js';
import { isPlumbing } from '../analysis/plumbing.js';

/** The bars are drawn in a 1000-unit-wide viewBox stretched to the column: they scale with it. */
export const BAR_UNITS = 1000;

/** One row of the combined timeline and tree: a step or a custom timing, in tree order. */
export interface Row {
  kind: 'step' | 'custom';
  depth: number;
  /** Index just past this row's subtree in the row list: its descendants are the rows between. */
  end: number;
  /** A step's name, or a custom timing's command. */
  name: string;
  /** A custom timing's category. */
  category: string;
  startMs: number;
  durationMs: number;
  /** A step's time outside its child steps (the union of their intervals); a custom timing's own. */
  selfMs: number;
  error: boolean;
  unfinished: boolean;
  /** Same category, command and values as another timing of the profile (the JSON's `duplicate`). */
  duplicate: boolean;
  /** The step held the event loop (`blocking`): how long, and where. */
  blocking: Mark | undefined;
  /** The id of the custom timing's group of similar commands (N+1), if any. */
  similar: number | undefined;
  /** A step whose children overlapped: their summed durations over its own (only without a fan-out verdict). */
  parallelism: number | undefined;
  /** `serialized ×N`, or how many of a fan-out ran at once. */
  fanOut: Mark | undefined;
  /** The N+1 the step ran (`nPlusOne`): `N+1 ×12`. */
  nPlusOne: Mark | undefined;
  /** A custom timing that is plumbing (a pool checkout): never folded, never breaks a fold. */
  plumbing: boolean;
}

/**
 * Fields the analysis may add to a step (see src/core/types.ts where they are declared): the loop
 * held after an await, whether that stall is ambiguous, and the group a `concurrency` is about.
 * Read through this view so the pages show them whenever a profile carries them.
 */
interface Analysed {
  heldMs?: number;
  blockingAmbiguous?: true;
  fanOut?: { name: string; count: number; category?: string };
}

/** The blocking mark: the synchronous start (or all of a synchronous step), and the loop held after an await. */
function blockingMark(t: TimingJSON & Analysed): Mark | undefined {
  if (t.blocking !== true) return undefined;
  const sync = msText(t.syncMs ?? t.durationMs);
  if (t.heldMs === undefined) return { cls: 'blocking', text: `blocking ${sync}`, title: `held the event loop for ${sync} before its first await` };
  const held = msText(t.heldMs);
  const text = t.syncMs !== undefined ? `${sync} + ${held}` : held;
  if (t.blockingAmbiguous === true) {
    return { cls: 'blocking', text: `blocking? ${text}`, title: `the loop was held for ${held} while this and other steps or requests were running: any of them may have held it` };
  }
  return { cls: 'blocking', text: `blocking ${text}`, title: `held the event loop for ${held} after an await` };
}

/** The serialized or concurrency mark, naming the children it is about when the JSON does. */
function fanOutMark(t: TimingJSON & Analysed): Mark | undefined {
  if (t.serialized !== true && t.concurrency === undefined) return undefined;
  const f = t.fanOut;
  const n = f !== undefined ? f.count : largestGroup(t);
  const group = f === undefined ? '' : `${f.count} × ${f.category === undefined ? '' : `[${f.category}] `}${f.name}`;
  const c = t.concurrency === undefined ? '' : `concurrency ${(Math.round(t.concurrency * 10) / 10).toFixed(1)}`;
  const title = [group === '' ? '' : t.serialized === true ? `${group} ran one at a time` : `${group}`, c].filter((x) => x !== '').join('; ');
  if (t.serialized === true) return { cls: 'serialized', text: n >= 2 ? `serialized ×${n}` : 'serialized', title };
  return { cls: 'concurrency', text: `${times(t.concurrency!)} at once`, title };
}

/**
 * Pre-order rows: each step, then what happened inside it (its custom timings and its child
 * steps) in order of start. Iterative, so no tree shape can overflow the stack. `p` must have
 * passed readProfile.
 */
export function rows(p: ProfileJSON): Row[] {
  const out: Row[] = [];
  const stack: (TimingJSON | CustomTimingJSON)[] = [p.root];
  const depths: number[] = [0];
  /** Rows whose subtree is still open, innermost last, to set `end` when it closes. */
  const open: Row[] = [];
  while (stack.length > 0) {
    const t = stack.pop()!;
    const depth = depths.pop()!;
    while (open.length > 0 && open[open.length - 1]!.depth >= depth) open.pop()!.end = out.length;
    if (!('children' in t)) {
      out.push(customRow(t, depth, out.length));
      continue;
    }
    const row: Row = {
      kind: 'step',
      depth,
      end: out.length + 1,
      name: t.name,
      category: '',
      startMs: t.startMs,
      durationMs: t.durationMs,
      selfMs: selfOf(t),
      error: t.error === true,
      unfinished: t.unfinished === true,
      duplicate: false,
      blocking: blockingMark(t),
      similar: undefined,
      // One verdict on concurrency: the fan-out's, where there is one (stored JSON may have both).
      parallelism: t.concurrency !== undefined ? undefined : t.parallelism,
      fanOut: fanOutMark(t),
      nPlusOne: nPlusOneMark(t),
      plumbing: false,
    };
    out.push(row);
    open.push(row);
    const inside: (TimingJSON | CustomTimingJSON)[] = [...(t.custom ?? []), ...t.children];
    inside.sort((a, b) => a.startMs - b.startMs);
    for (let i = inside.length - 1; i >= 0; i--) {
      stack.push(inside[i]!);
      depths.push(depth + 1);
    }
  }
  for (const r of open) r.end = out.length;
  return out;
}

function customRow(c: CustomTimingJSON, depth: number, at: number): Row {
  return {
    kind: 'custom',
    depth,
    end: at + 1,
    name: c.command,
    category: c.category,
    startMs: c.startMs,
    durationMs: c.durationMs,
    selfMs: c.durationMs,
    error: c.error === true,
    unfinished: c.unfinished === true,
    duplicate: c.duplicate === true,
    blocking: undefined,
    similar: c.similar,
    parallelism: undefined,
    fanOut: undefined,
    nPlusOne: undefined,
    plumbing: isPlumbing(c.category),
  };
}

/** `N+1 ×12`, the group named on hover. */
function nPlusOneMark(t: TimingJSON): Mark | undefined {
  const n = t.nPlusOne;
  if (n === undefined) return undefined;
  return { cls: 'n1', text: `N+1 ×${n.count}`, title: `${n.count} × [${n.category}] ${n.command}: one query per item, where one query for all would do` };
}

/** A step's duration less the time covered by at least one child step (clipped to the step). */
function selfOf(t: TimingJSON): number {
  if (t.children.length === 0) return t.durationMs;
  const from = t.startMs;
  const to = t.startMs + t.durationMs;
  const spans = t.children.map((c) => [Math.max(from, c.startMs), Math.min(to, c.startMs + c.durationMs)] as const).filter(([a, b]) => b > a);
  spans.sort((a, b) => a[0] - b[0]);
  let covered = 0;
  let runStart = -Infinity;
  let runEnd = -Infinity;
  for (const [a, b] of spans) {
    if (a > runEnd) {
      if (runEnd > runStart) covered += runEnd - runStart;
      runStart = a;
      runEnd = b;
    } else runEnd = Math.max(runEnd, b);
  }
  if (runEnd > runStart) covered += runEnd - runStart;
  return Math.max(0, t.durationMs - covered);
}

/** The largest set of same-named children or similar custom timings: what `serialized ×N` counts without a `fanOut`. */
function largestGroup(t: TimingJSON): number {
  let most = 0;
  const count = (m: Map<string | number, number>, k: string | number) => {
    const n = (m.get(k) ?? 0) + 1;
    m.set(k, n);
    if (n > most) most = n;
  };
  const names = new Map<string | number, number>();
  for (const c of t.children) count(names, c.name);
  const similar = new Map<string | number, number>();
  for (const c of t.custom ?? []) if (c.similar !== undefined) count(similar, c.similar);
  return most;
}

/** A run of sibling rows that read as one: the same similar group, or steps of the same name. */
export interface Fold {
  /** First row of the run, and the index just past its last subtree. */
  start: number;
  end: number;
  /** The sibling rows themselves (not their descendants). */
  heads: number[];
}

/** Runs shorter than this stay unfolded. */
export const FOLD_MIN = 2;

function foldKey(r: Row): string {
  if (r.kind === 'custom') return r.similar === undefined ? '' : `c${r.similar}\u0000${r.category}`;
  return `s${r.name}`;
}

/**
 * The runs of FOLD_MIN or more consecutive siblings with one fold key, outermost first; a run
 * inside a folded run is not folded again (its rows are already behind the fold). Plumbing rows
 * between members (a pool checkout before each query) are taken into the run, never as heads;
 * those after its last member are left out of it.
 */
export function folds(list: readonly Row[]): Fold[] {
  const out: Fold[] = [];
  let i = 1; // the root is never folded
  while (i < list.length) {
    const r = list[i]!;
    const key = foldKey(r);
    const heads = [i];
    let j = r.end;
    if (key !== '') {
      for (;;) {
        let k = j;
        while (k < list.length && list[k]!.depth === r.depth && list[k]!.plumbing) k = list[k]!.end;
        if (k >= list.length || list[k]!.depth !== r.depth || foldKey(list[k]!) !== key) break;
        heads.push(k);
        j = list[k]!.end;
      }
    }
    if (heads.length >= FOLD_MIN) {
      out.push({ start: i, end: j, heads });
      i = j;
    } else i++;
  }
  return out;
}

/** Milliseconds to viewBox units: the whole span (root, or anything running past it) fills BAR_UNITS. */
export function scaleOf(list: readonly Row[]): number {
  let end = 0;
  for (const r of list) end = Math.max(end, r.startMs + r.durationMs);
  return end > 0 ? BAR_UNITS / end : 0;
}

/** The class of a row's bar: its colour in the stylesheet (no inline style under the CSP). */
function barClass(r: Row): string {
  if (r.error) return 'b-error';
  if (r.kind === 'custom') return r.duplicate ? 'b-duplicate' : r.similar !== undefined ? 'b-similar' : 'b-custom';
  if (r.blocking !== undefined) return 'b-blocking';
  return r.fanOut?.cls === 'serialized' ? 'b-serialized' : 'b-step';
}

/**
 * A row's bar (or a fold's bars, one per member) as inline SVG: presentation attributes and
 * classes only, so it draws under `default-src 'none'` without script. Every bar's `x` and
 * `width` are `startMs` and `durationMs` × scale exactly, and carry `data-start-ms` and
 * `data-duration-ms` so a test can check the drawing against the JSON.
 */
export function bars(members: readonly Row[], scale: number): string {
  let out = `<svg class="bar" viewBox="0 0 ${BAR_UNITS} 10" preserveAspectRatio="none" width="100%" height="10" aria-hidden="true" focusable="false">`;
  for (const r of members) {
    out +=
      `<rect class="${barClass(r)}" x="${num(r.startMs * scale)}" y="0" width="${num(r.durationMs * scale)}" height="10" ` +
      `data-start-ms="${num(r.startMs)}" data-duration-ms="${num(r.durationMs)}"/>`;
  }
  return out + '</svg>';
}

/** A mark on a row: its class (fixed words) and its text (numbers formatted here). */
export interface Mark {
  cls: string;
  text: string;
  /** Said on hover. */
  title?: string;
}

/** The marks of a row, in a fixed order. */
export function marksOf(r: Row): Mark[] {
  const m: Mark[] = [];
  if (r.error) m.push({ cls: 'error', text: 'error' });
  if (r.unfinished) m.push({ cls: 'unfinished', text: 'unfinished' });
  if (r.blocking !== undefined) m.push(r.blocking);
  if (r.nPlusOne !== undefined) m.push(r.nPlusOne);
  if (r.duplicate) m.push({ cls: 'duplicate', text: 'duplicate' });
  if (r.similar !== undefined) m.push({ cls: 'similar', text: `similar #${num(r.similar)}` });
  if (r.fanOut !== undefined) m.push(r.fanOut);
  if (r.parallelism !== undefined) m.push({ cls: 'parallel', text: `parallel ${times(r.parallelism)}` });
  return m;
}

function times(n: number): string {
  return `×${(Math.round(n * 10) / 10).toFixed(1)}`;
}

/** Marks as badges; every text is escaped, though only numbers vary in it. */
export function markHtml(list: readonly Mark[]): string {
  return list.map((k) => `<span class="flag ${escapeHtml(k.cls)}"${k.title === undefined || k.title === '' ? '' : ` title="${escapeHtml(k.title)}"`}>${escapeHtml(k.text)}</span>`).join('');
}
