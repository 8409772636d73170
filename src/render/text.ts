import type { ProfileJSON, TimingJSON } from '../core/types.js';
import { stepNotes, type NoteStyle } from './marks.js';
import { dataOf, type Renderable } from './data.js';
import { escapeText } from './escape.js';
import { ms1, ms1With, tenths } from './format.js';
import { summarize } from '../analysis/wall.js';
import { keep, MAX_KEPT_NAME } from './kept.js';
import { flat } from '../core/names.js';
import { cpuLine, heldNote } from './cpu-note.js';

export interface TextOptions {
  /** Escape everything outside printable ASCII (for pages not in UTF-8). Default false. */
  ascii?: boolean;
}

/**
 * The text tree, in the shape of MiniProfiler's original comment: a header line, the path, then
 * one line per step (`>` repeated depth times, a space, the name, ` = `, the duration), with
 * `trace <traceId>` ending the header when an OpenTelemetry span was active,
 * `(blocking: 25.0ms sync)` when its synchronous part exceeded `blockingMs` (`56.2ms held` for the
 * loop held after an await, see format.ts blockingNote), then its N+1 and its one verdict on
 * concurrency (`(N+1: 12 × select … where author_id = ?)`, `(serialized: 5 × load user ran one
 * at a time)`, `(5 × load user: 2.0 at once)` or `(parallel x2.9)`: see marks.ts), and on the root line
 * `(20.1ms in no step)`, the time no step accounts for. Custom timings follow their step as
 * `[category] command = duration`, marked `(duplicate)` and `(similar #N)`. After the tree: one
 * line per category (`[sql] 12 x 48.3ms summed, 30.1ms wall, 10 similar, 2 duplicate`), one per similar group with its
 * masked shape, and `!` lines for a stalled event loop, a process that did not run, a first
 * request's startup work, dropped steps and warnings. User text is
 * escaped so it can neither forge a line nor close an HTML comment.
 *
 * @example
 * web-1 at 2026-11-29T12:00:00.000Z
 * Path: GET /users/42
 *  GET /users/42 = 376.9ms (373.5ms in no step)
 * > load user = 3.4ms
 * >> [sql] select * from users where id = ? = 3.1ms
 */
export function renderText(profile: Renderable, options: TextOptions = {}): string {
  const p = dataOf(profile, 'renderText');
  const ascii = options.ascii === true;
  let out = `${escapeText(p.machine, ascii)} at ${p.started}`;
  // Escaped like all JSON text: a profile read back from a shared store may carry anything.
  if (typeof p.traceId === 'string') out += ` trace ${escapeText(p.traceId, ascii)}`;
  out += '\n';
  if (p.request !== undefined) {
    out += `Path: ${escapeText(p.request.method, ascii)} ${escapeText(p.request.path, ascii)}\n`;
  }
  out = lines(out, p.root, 0, ascii);
  out += summary(p, ascii);
  if (p.cpu !== undefined) out += cpuLine(p.cpu, ascii);
  out += ownTime(p);
  if (p.eventLoopDelayMs !== undefined) out += `! event loop delayed up to ${ms1(p.eventLoopDelayMs)}ms while this profile was open\n`;
  out += runNotes(p);
  if (p.droppedSteps > 0) out += `! ${p.droppedSteps} more steps were not recorded (maxSteps or maxDepth)\n`;
  // Indexed loops over the JSON's arrays: see collect() in server-timing.ts.
  const warnings = p.warnings;
  for (let i = 0; i < warnings.length; i++) out += `! ${escapeText(warnings[i]!, ascii)}\n`;
  return out;
}

/**
 * What miniprof spent on the response itself, when one decimal can show it: not a step, and not
 * in the root's time (the root stopped when the app handed the response over).
 */
function ownTime(p: ProfileJSON): string {
  const ms = p.miniprofMs;
  return typeof ms === 'number' && ms >= 0.05 ? `miniprof's own time: ${ms1(ms)}ms (not in the times above)\n` : '';
}

/**
 * The profile's notes on time that was not the steps' own: the process not running at all (a busy
 * machine, a pause), and a first request's startup work. Numbers only: nothing to escape.
 */
function runNotes(p: ProfileJSON): string {
  let out = '';
  if (typeof p.notRunMs === 'number') out += `! the process did not run for ${ms1(p.notRunMs)}ms while this profile was open (a busy machine or a pause): not counted against any step\n`;
  if (p.startup === true) out += '! first request since the process started: blocking here may be one-time startup work (module loading, compilation)\n';
  return out;
}

/** `>` repeated depth times, made once for the depths profiles usually have. */
const MARKS = Array.from({ length: 16 }, (_, d) => '>'.repeat(d));

/**
 * A step line's start, its marks and ` name = ` with the name escaped, kept for the names that
 * come back (step names are mostly literals, and come back at the same depth): a line is then
 * this and its duration, two strings joined where the template made six, and the name is not
 * scanned again. Kept with the depth it was made for; the same name at another depth makes it
 * again. Bounded as every kept name is (src/render/kept.ts).
 */
function lineStart(marks: string, name: string, depth: number, ascii: boolean): string {
  if (name.length > MAX_KEPT_NAME) return `${marks} ${escapeText(name, ascii)} = `;
  const kept = ascii ? startsAscii : startsUtf8;
  const s = kept.get(name);
  if (s !== undefined && s.depth === depth) return s.text;
  // Flat once, when kept, rather than walked as a tree each time a comment is copied out.
  return keep(kept, name, { depth, text: flat(`${marks} ${escapeText(name, ascii)} = `) }).text;
}

interface LineStart {
  readonly depth: number;
  readonly text: string;
}

const startsUtf8 = new Map<string, LineStart>();
const startsAscii = new Map<string, LineStart>();

/** The end of a step line without flags: its duration, `ms` and the newline. */
const MS_LINE = tenths('ms\n');

/** `out` with the lines of `t` and of its subtree after it (appended to, not joined from parts). */
function lines(out: string, t: TimingJSON, depth: number, ascii: boolean): string {
  const marks = depth < MARKS.length ? MARKS[depth]! : '>'.repeat(depth);
  out += lineStart(marks, t.name, depth, ascii);
  if (t.error !== true && t.unfinished !== true && t.blocking !== true && t.parallelism === undefined && t.concurrency === undefined && t.nPlusOne === undefined && t.cpu === undefined && !(typeof t.selfMs === 'number' && t.selfMs >= 0.05)) {
    out += ms1With(t.durationMs, MS_LINE);
  }
  else {
    out += `${ms1(t.durationMs)}ms`;
    if (t.error === true) out += ' (error)';
    if (t.unfinished === true) out += ' (unfinished)';
    // The blocking verdict with its GC pauses and, for a sampled request, what held the CPU (cpu-note.ts).
    if (t.blocking === true || t.cpu !== undefined) out += ` (${heldNote(t, ascii)})`;
    const notes = stepNotes(t, ascii ? ASCII_NOTES : UTF8_NOTES);
    for (let i = 0; i < notes.length; i++) out += ` (${notes[i]})`;
    // The root's time in no step (src/analysis/self.ts), when one decimal can show it: a line that
    // says "0.0ms in no step" on every profile would be noise.
    if (typeof t.selfMs === 'number' && t.selfMs >= 0.05) out += ` (${ms1(t.selfMs)}ms in no step)`;
    out += '\n';
  }
  const custom = t.custom;
  if (custom !== undefined) {
    for (let i = 0; i < custom.length; i++) {
      const c = custom[i]!;
      out += `${marks}> [${escapeText(c.category, ascii)}] ${escapeText(c.command, ascii)} = ${ms1(c.durationMs)}ms`;
      if (c.error === true) out += ' (error)';
      if (c.unfinished === true) out += ' (unfinished)';
      if (c.duplicate === true) out += ' (duplicate)';
      if (c.similar !== undefined) out += ` (similar #${c.similar})`;
      out += '\n';
    }
  }
  const children = t.children;
  for (let i = 0; i < children.length; i++) out = lines(out, children[i]!, depth + 1, ascii);
  return out;
}

const UTF8_NOTES: NoteStyle = { times: '\u00d7', text: (x) => escapeText(x, false), commands: true };
const ASCII_NOTES: NoteStyle = { times: 'x', text: (x) => escapeText(x, true), commands: true };

/**
 * One line per category (`[sql] 12 x 48.3ms summed, 30.1ms wall, 10 similar, 2 duplicate`: the
 * summed time counts parallel calls each, the wall time once), then one per group of
 * similar commands with its masked shape: the N+1 pattern, named. Both start with a character a
 * step line never starts with (`[`, `#`), so no category can make a summary pass for a step.
 */
function summary(p: ProfileJSON, ascii: boolean): string {
  let out = '';
  if (p.customSummary !== undefined) {
    // Stored by an older version without wall times: made again from the tree.
    const cats = p.customSummary.length > 0 && p.customSummary[0]!.wallMs === undefined ? summarize(p.root) : p.customSummary;
    for (const s of cats) {
      out += `[${escapeText(s.category, ascii)}] ${s.count} x ${ms1(s.durationMs)}ms summed, ${ms1(s.wallMs)}ms wall`;
      if (s.similar > 0) out += `, ${s.similar} similar`;
      if (s.duplicate > 0) out += `, ${s.duplicate} duplicate`;
      out += '\n';
    }
  }
  if (p.similar !== undefined) {
    for (const g of p.similar) {
      out += `#${g.id} [${escapeText(g.category, ascii)}] ${g.count} x ${ms1(g.durationMs)}ms similar: ${escapeText(g.command, ascii)}\n`;
    }
  }
  return out;
}

/**
 * The text tree as an HTML comment, safe for any step name: an HTML (or XML) parser sees exactly
 * one comment node. Pass `ascii: true` when the page's charset is not UTF-8.
 */
export function renderHtmlComment(profile: Renderable, options: TextOptions = {}): string {
  return `<!--\n${renderText(profile, options)}-->`;
}
