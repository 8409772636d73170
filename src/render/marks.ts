import type { FanOutJSON, TimingJSON } from '../core/types.js';
import { ms1 } from './format.js';

/**
 * A step's verdicts as the text, the comment and Server-Timing write them, each the inside of
 * one pair of parentheses, after `blocking` (format.ts):
 * - `N+1: 12 × select … where author_id = ?`: the N+1 this step ran (`nPlusOne`); when the same
 *   calls were also started together, the concurrency verdict joins it
 *   (`N+1: 12 × select pg_sleep(?), one at a time` or `…, 2.0 at once`);
 * - `serialized: 5 × load stat ran one at a time` or `10 × article toJSON: 8.1 at once`: the
 *   fan-out's verdict (`concurrency`, src/analysis/fanout.ts), about another group than the N+1's;
 * - `parallel x3.0`: the children's summed durations over the step's, only where no fan-out
 *   verdict applies (JSON stored by older versions may carry both: the fan-out's wins here too).
 * So a step states one verdict on concurrency, and "parallel" never stands beside "serialized".
 */
export interface NoteStyle {
  /** `×`, or `x` where the output must be ASCII. */
  times: string;
  /** User text (names, commands) as this output writes it. */
  text: (s: string) => string;
  /** Name the commands (text, comment) or only their category (Server-Timing, where a command's commas would read as metric boundaries). */
  commands: boolean;
}

export function stepNotes(t: TimingJSON, style: NoteStyle): string[] {
  const out: string[] = [];
  const n1 = t.nPlusOne;
  const f = t.concurrency !== undefined ? t.fanOut : undefined;
  let fanOutSaid = false;
  if (n1 !== undefined) {
    let note = `N+1: ${n1.count} ${style.times} ${style.commands ? style.text(briefCommand(n1.command)) : style.text(n1.category)}`;
    if (f !== undefined && f.similar === n1.similar) {
      note += t.serialized === true ? ', one at a time' : `, ${ms1(t.concurrency!)} at once`;
      fanOutSaid = true;
    }
    out.push(note);
  }
  if (f !== undefined && !fanOutSaid) out.push(fanOutNote(t.concurrency!, t.serialized === true, f, style));
  else if (f === undefined && t.parallelism !== undefined) out.push(`parallel x${ms1(t.parallelism)}`);
  return out;
}

/**
 * `serialized: 5 × load user ran one at a time`, or `5 × load user: 2.0 at once` when more than
 * one ran at a time; custom timings are named by category and command
 * (`3 × [sql] select pg_sleep(?)`), or by category alone without commands.
 */
function fanOutNote(c: number, serialized: boolean, f: FanOutJSON, style: NoteStyle): string {
  let name: string;
  if (f.category === undefined) name = style.text(f.name);
  else name = style.commands ? `[${style.text(f.category)}] ${style.text(briefCommand(f.name))}` : style.text(f.category);
  const group = `${f.count} ${style.times} ${name}`;
  return serialized ? `serialized: ${group} ran one at a time` : `${group}: ${ms1(c)} at once`;
}

/** Longest command a mark writes whole. */
export const BRIEF_MAX = 60;

/**
 * A command short enough for a mark on a step's line: whole up to {@link BRIEF_MAX} characters,
 * else its first word, `…` and as many of its last words as fit (`select … where author_id = ?`):
 * the verb and the condition say which loop it was. The rows below show it whole.
 */
export function briefCommand(command: string): string {
  if (command.length <= BRIEF_MAX) return command;
  const space = command.indexOf(' ');
  const head = space > 0 && space < BRIEF_MAX / 3 ? command.slice(0, space) : command.slice(0, BRIEF_MAX / 3);
  const room = BRIEF_MAX - head.length - 3;
  let tail = command.slice(command.length - room);
  const cut = tail.indexOf(' ');
  if (cut >= 0 && cut < tail.length - 1) tail = tail.slice(cut + 1);
  return `${head} … ${tail}`;
}
