import type { TimingJSON } from '../profile.js';
import { dataOf, type Renderable } from './data.js';
import { escapeText } from './escape.js';
import { ms1 } from './format.js';

export interface TextOptions {
  /** Escape everything outside printable ASCII (for pages not in UTF-8). Default false. */
  ascii?: boolean;
}

/**
 * The text tree, in the shape of MiniProfiler's original comment: a header line, the path, then
 * one line per step (`>` repeated depth times, a space, the name, ` = `, the duration). Custom
 * timings follow their step as `[category] command = duration`. User text is escaped so it can
 * neither forge a line nor close an HTML comment.
 *
 * @example
 * web-1 at 2026-11-29T12:00:00.000Z
 * Path: GET /users/42
 *  GET /users/42 = 376.9ms
 * > load user = 3.4ms
 * >> [sql] select * from users where id = ? = 3.1ms
 */
export function renderText(profile: Renderable, options: TextOptions = {}): string {
  const p = dataOf(profile, 'renderText');
  const ascii = options.ascii === true;
  let out = `${escapeText(p.machine, ascii)} at ${p.started}\n`;
  if (p.request !== undefined) {
    out += `Path: ${escapeText(p.request.method, ascii)} ${escapeText(p.request.path, ascii)}\n`;
  }
  out += lines(p.root, 0, ascii);
  if (p.droppedSteps > 0) out += `! ${p.droppedSteps} more steps were not recorded (maxSteps or maxDepth)\n`;
  for (const w of p.warnings) out += `! ${escapeText(w, ascii)}\n`;
  return out;
}

function lines(t: TimingJSON, depth: number, ascii: boolean): string {
  const marks = '>'.repeat(depth);
  let out = `${marks} ${escapeText(t.name, ascii)} = ${ms1(t.durationMs)}ms`;
  if (t.error === true) out += ' (error)';
  if (t.unfinished === true) out += ' (unfinished)';
  out += '\n';
  if (t.custom !== undefined) {
    for (const c of t.custom) {
      out += `${marks}> [${escapeText(c.category, ascii)}] ${escapeText(c.command, ascii)} = ${ms1(c.durationMs)}ms`;
      if (c.error === true) out += ' (error)';
      if (c.unfinished === true) out += ' (unfinished)';
      out += '\n';
    }
  }
  for (const c of t.children) out += lines(c, depth + 1, ascii);
  return out;
}

/**
 * The text tree as an HTML comment, safe for any step name: an HTML (or XML) parser sees exactly
 * one comment node. Pass `ascii: true` when the page's charset is not UTF-8.
 */
export function renderHtmlComment(profile: Renderable, options: TextOptions = {}): string {
  return `<!--\n${renderText(profile, options)}-->`;
}
