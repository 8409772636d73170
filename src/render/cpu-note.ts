import type { CpuFunctionJSON, CpuJSON, StepCpuJSON, TimingJSON } from '../core/types.js';
import { shortPlace } from '../analysis/cpu-source.js';
import { escapeText } from './escape.js';
import { blockingNote, ms1 } from './format.js';

/**
 * What a step line says in its parentheses when the step held the loop or the CPU: the blocking
 * verdict (format.ts), the GC pauses within it, and, for a CPU-sampled request, its top functions
 * by self time with file and line:
 * `blocking: 56.2ms held (GC 31.0ms); cpu: burnCpu app.mjs:12 78.0ms`. `cpu (shared 20.0ms):`
 * when some of its samples were taken while other requests were in flight.
 */
export function heldNote(t: TimingJSON, ascii: boolean): string {
  let out = '';
  if (t.blocking === true) {
    out = blockingNote(t);
    if (typeof t.gcMs === 'number' && t.gcMs > 0) out += ` (GC ${ms1(t.gcMs)}ms)`;
  }
  if (t.cpu !== undefined && t.cpu !== null && typeof t.cpu === 'object') out += (out === '' ? '' : '; ') + stepCpu(t.cpu, ascii);
  return out;
}

/** Paths are shown relative to the working directory (read once: it is the process's). */
const CWD = process.cwd();

/** `burnCpu app.mjs:12 78.0ms`: user text escaped like every name. */
export function fnText(f: CpuFunctionJSON, ascii: boolean): string {
  const place = shortPlace({ fn: f.fn, url: String(f.url), line: Number(f.line) | 0 }, CWD);
  return `${escapeText(String(f.fn), ascii)}${place === '' ? '' : ` ${escapeText(place, ascii)}`} ${ms1(Number(f.ms))}ms`;
}

function list(top: readonly CpuFunctionJSON[], ascii: boolean): string {
  return Array.isArray(top) ? top.map((f) => fnText(f, ascii)).join(', ') : '';
}

function stepCpu(c: StepCpuJSON, ascii: boolean): string {
  const shared = typeof c.sharedMs === 'number' && c.sharedMs > 0 ? ` (shared ${ms1(c.sharedMs)}ms)` : '';
  return `cpu${shared}: ${list(c.top, ascii)}`;
}

/** The line after the tree for a sampled request: `cpu: 123.4ms sampled; top: …`. */
export function cpuLine(c: CpuJSON, ascii: boolean): string {
  const shared = typeof c.sharedMs === 'number' && c.sharedMs > 0 ? `, ${ms1(c.sharedMs)}ms while other requests ran` : '';
  let out = `cpu: ${ms1(Number(c.ms))}ms sampled every ${Number(c.intervalUs) | 0}us${shared}; top: ${list(c.top, ascii)}\n`;
  if (typeof c.note === 'string') out += `! cpu: ${escapeText(c.note, ascii)}\n`;
  return out;
}
