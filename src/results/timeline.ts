import type { CustomTimingJSON, ProfileJSON, TimingJSON } from '../core/types.js';
import { escapeHtml, msText, num } from './html.js';
import { hasDuplicate } from './store.js';

/** Layout of the timeline, in SVG user units (= CSS pixels: the SVG has no viewBox scaling). */
export const LABEL_WIDTH = 320;
export const BAR_WIDTH = 640;
const ROW = 20;
const BAR = 14;
const TOP = 24;
const RIGHT = 220;
const INDENT = 12;

/** One row of the waterfall: a step or a custom timing, in tree order. */
export interface Row {
  kind: 'step' | 'custom';
  depth: number;
  label: string;
  startMs: number;
  durationMs: number;
  error: boolean;
  unfinished: boolean;
  duplicate: boolean;
  /** A step whose synchronous part held the event loop longer than `blockingMs`. */
  blocking: boolean;
  /** The id of the custom timing's group of similar commands (N+1), if any. */
  similar: number | undefined;
  /** A step whose children overlapped: their summed durations over its own. */
  parallelism: number | undefined;
}

/**
 * Pre-order rows: each step, then what happened inside it (its custom timings and its child
 * steps) in order of start. Iterative, so no tree shape can overflow the stack.
 */
export function rows(p: ProfileJSON): Row[] {
  const out: Row[] = [];
  const stack: (TimingJSON | Row)[] = [p.root];
  const depths: number[] = [0];
  while (stack.length > 0) {
    const t = stack.pop()!;
    const depth = depths.pop()!;
    if ('kind' in t) {
      out.push(t);
      continue;
    }
    out.push({
      kind: 'step',
      depth,
      label: t.name,
      startMs: t.startMs,
      durationMs: t.durationMs,
      error: t.error === true,
      unfinished: t.unfinished === true,
      duplicate: false,
      blocking: t.blocking === true,
      similar: undefined,
      parallelism: t.parallelism,
    });
    const inside: (TimingJSON | Row)[] = [...customRows(t.custom ?? [], depth + 1), ...t.children];
    inside.sort((a, b) => a.startMs - b.startMs);
    for (let i = inside.length - 1; i >= 0; i--) {
      stack.push(inside[i]!);
      depths.push(depth + 1);
    }
  }
  return out;
}

function customRows(custom: CustomTimingJSON[], depth: number): Row[] {
  const counts = new Map<string, number>();
  if (hasDuplicate(custom)) for (const c of custom) counts.set(key(c), (counts.get(key(c)) ?? 0) + 1);
  return custom.map((c) => ({
    kind: 'custom',
    depth,
    label: `[${c.category}] ${c.command}`,
    startMs: c.startMs,
    durationMs: c.durationMs,
    error: c.error === true,
    unfinished: c.unfinished === true,
    // Profiles mark duplicates over the whole tree; older JSON only lets us see them per step.
    duplicate: c.duplicate === true || (counts.get(key(c)) ?? 0) > 1,
    blocking: false,
    similar: c.similar,
    parallelism: undefined,
  }));
}

function key(c: CustomTimingJSON): string {
  return `${c.category}\u0000${c.command}`;
}

/** Milliseconds per pixel's inverse: the whole span (root, or anything running past it) fills BAR_WIDTH. */
export function scaleOf(list: readonly Row[]): number {
  let end = 0;
  for (const r of list) end = Math.max(end, r.startMs + r.durationMs);
  return end > 0 ? BAR_WIDTH / end : 0;
}

/**
 * The waterfall as inline SVG: presentation attributes and classes only (no `style`, no
 * script), so it draws under `default-src 'none'` and without JavaScript. Every bar's width is
 * `durationMs × scale` exactly and carries `data-start-ms`/`data-duration-ms`, so a test can
 * check the drawing against the JSON.
 */
export function renderTimeline(p: ProfileJSON): string {
  const list = rows(p);
  const scale = scaleOf(list);
  const height = TOP + list.length * ROW + 8;
  const width = LABEL_WIDTH + BAR_WIDTH + RIGHT;
  let out = `<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" role="img" aria-label="Timeline" data-scale="${num(scale)}">`;
  out += `<clipPath id="labels"><rect x="0" y="0" width="${LABEL_WIDTH - 8}" height="${height}"/></clipPath>`;
  out += axis(scale, height);
  list.forEach((r, i) => {
    out += row(r, i, scale);
  });
  return out + '</svg>';
}

function axis(scale: number, height: number): string {
  const total = scale > 0 ? BAR_WIDTH / scale : 0;
  let out = '<g class="axis">';
  for (let q = 0; q <= 4; q++) {
    const x = LABEL_WIDTH + (BAR_WIDTH * q) / 4;
    out += `<line x1="${num(x)}" y1="${TOP - 6}" x2="${num(x)}" y2="${height}" stroke="#d0d7de" stroke-width="1"/>`;
    out += `<text x="${num(x)}" y="${TOP - 10}" text-anchor="middle" font-size="11" fill="#57606a">${escapeHtml(msText((total * q) / 4))}</text>`;
  }
  return out + '</g>';
}

function row(r: Row, i: number, scale: number): string {
  const y = TOP + i * ROW;
  const x = LABEL_WIDTH + r.startMs * scale;
  const w = r.durationMs * scale;
  const fill = r.error ? '#cf222e' : r.kind === 'custom' ? (r.duplicate || r.similar !== undefined ? '#bc4c00' : '#8250df') : r.blocking ? '#9a6700' : '#0969da';
  const cls = `bar ${r.kind}${r.error ? ' error' : ''}${r.duplicate ? ' duplicate' : ''}${r.blocking ? ' blocking' : ''}${r.unfinished ? ' unfinished' : ''}`;
  const marks = markText(r);
  const label = escapeHtml(r.label);
  let out = `<g class="row">`;
  out += `<text x="${4 + r.depth * INDENT}" y="${y + BAR - 2}" font-size="12" clip-path="url(#labels)" fill="${r.kind === 'custom' ? '#57606a' : '#1f2328'}">${label}</text>`;
  out += `<rect class="${cls}" x="${num(x)}" y="${y}" width="${num(w)}" height="${BAR}" fill="${fill}" data-start-ms="${num(r.startMs)}" data-duration-ms="${num(r.durationMs)}">`;
  out += `<title>${label}: ${escapeHtml(msText(r.durationMs))} at ${escapeHtml(msText(r.startMs))}${marks}</title></rect>`;
  out += `<text x="${num(x + w + 4)}" y="${y + BAR - 2}" font-size="11" fill="#57606a">${escapeHtml(msText(r.durationMs))}${marks}</text>`;
  return out + '</g>';
}

/** The marks of a row as plain text (for the SVG, which has no badges). */
export function markText(r: Row): string {
  let m = '';
  if (r.error) m += ' (error)';
  if (r.blocking) m += ' (blocking)';
  if (r.duplicate) m += ' (duplicate)';
  if (r.similar !== undefined) m += ` (similar #${r.similar})`;
  if (r.parallelism !== undefined) m += ` (parallel ×${r.parallelism})`;
  if (r.unfinished) m += ' (unfinished)';
  return m;
}
