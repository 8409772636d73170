import { codedError, describe } from '../core/errors.js';
import type { CategorySummaryJSON, ProfileJSON, TimingJSON } from '../core/types.js';
import { summarize } from '../analysis/wall.js';
import { isPlumbing } from '../analysis/plumbing.js';
import { stepNotes } from './marks.js';
import { describedStep, groupDesc, NOTES, sameNamed, wallOf } from './step-metrics.js';
import { dataOf, type Renderable } from './data.js';
import { ms1 } from './format.js';
import { keep, MAX_KEPT_NAME } from './kept.js';

export interface ServerTimingOptions {
  /** The value is cut at metric boundaries to fit; `total` is always kept. Default 2048. */
  maxBytes?: number;
  /**
   * Add `miniprof;desc="<profile id>"` before `total` (kept whatever is cut, like `total`), so a
   * page can find the profile of each of its requests in `PerformanceResourceTiming.serverTiming`.
   * Default false; the HTTP adapters set it when results are on.
   */
  id?: boolean;
}

export const DEFAULT_MAX_BYTES = 2048;
/** Room for `more;desc="N more"`, `miniprof;desc="<uuid>"` and `total;dur=…` whatever is cut. */
export const MIN_MAX_BYTES = 128;
const MAX_TOKEN = 32;
const MAX_DESC = 96;

/**
 * One `Server-Timing` header value: a metric per top-level step name (several steps of one name:
 * one metric, their wall time, the count in `desc`; a step's `desc` says what its line in the text
 * says: blocking, its N+1, its verdict on concurrency), one per custom-timing category but plumbing (`dur` its wall time, the union of its
 * timings' intervals, so never more than `total`; the count, summed time and duplicates in `desc`,
 * never a command), `event-loop` when the loop stalled past `blockingMs`, `miniprof` (the
 * profile's id) with `id`, then `total`. Always printable ASCII (0x20–0x7E): names are
 * reduced to tokens, and `desc` is a quoted string with `\` and `"` escaped and anything outside
 * ASCII percent-encoded as UTF-8, so Node can never reject it. Metrics that do not fit `maxBytes`
 * are dropped from the end and counted in a `more` metric.
 *
 * @example
 * load-user;dur=3.4;desc="load user", sql;dur=3.1;desc="sql (1 x 3.1ms summed)", total;dur=376.9
 */
export function renderServerTiming(profile: Renderable, options: ServerTimingOptions = {}): string {
  const p = dataOf(profile, 'renderServerTiming');
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  // NaN or a string compares false with every length, which would silently drop the cap (B5).
  if (typeof maxBytes !== 'number' || Number.isNaN(maxBytes)) {
    throw codedError('MINIPROF_ERR_INVALID_ARGUMENT', `renderServerTiming() option "maxBytes" must be a number, got ${describe(maxBytes)}`);
  }
  const max = Math.max(MIN_MAX_BYTES, maxBytes);
  let total = options.id === true ? `miniprof;desc="${quoted(p.id)}", total;dur=${ms1(p.durationMs)}` : `total;dur=${ms1(p.durationMs)}`;
  // miniprof's own time (issue 58), kept like `total` so it is never cut away; its own name, as
  // `miniprof` already names the profile's id.
  const self = p.miniprofMs;
  if (typeof self === 'number' && self >= 0.05) total = `miniprof-self;dur=${ms1(self)}, ${total}`;
  // Most values fit whole, and are sent whole: fit() reserves room for a `more` metric at every
  // metric, so it could drop a last short one that fits. The metrics are then joined as they are
  // made; a value that does not fit makes them again, as a list to cut.
  const whole = metrics(p, null);
  if (whole.length + total.length <= max) return whole + total;
  const list: string[] = [];
  metrics(p, list);
  return fit(list, total, max);
}

const SEP = ', ';

/**
 * The metrics in their order: a metric per top-level step, per custom-timing category, the
 * event loop's. Pushed onto `list`, or with none, returned as one string, each followed by `, `.
 */
function metrics(p: ProfileJSON, list: string[] | null): string {
  let all = '';
  const top = topSteps(p.root);
  const groups = top.length > 1 ? sameNamed(top, token) : null;
  for (let i = 0; i < top.length; i++) {
    const c = top[i]!;
    const group = groups === null ? undefined : groups.get(token(c.name));
    if (group !== undefined) {
      // Said once, at its first step.
      if (group[0] === c) all = add(list, all, metric(c.name, wallOf(group), groupDesc(group, p.root, token)));
      continue;
    }
    const notes = stepNotes(c, NOTES);
    // DevTools shows only name and desc: say there what the step's line says.
    if (c.blocking === true || notes.length > 0) all = add(list, all, metric(c.name, c.durationMs, describedStep(c, notes)));
    else if (list === null) all += stepMetric(c.name, c.durationMs, 2);
    else list.push(stepMetric(c.name, c.durationMs, 1));
  }
  const cats = categories(p);
  for (let i = 0; i < cats.length; i++) {
    const s = cats[i]!;
    // Plumbing (a pool checkout) is in its step's time: not a metric of its own.
    if (isPlumbing(s.category)) continue;
    all = add(list, all, metric(s.category, s.wallMs, categoryDesc(s)));
  }
  if (p.eventLoopDelayMs !== undefined) all = add(list, all, `event-loop;dur=${ms1(p.eventLoopDelayMs)};desc="largest event-loop delay"`);
  return all;
}

/**
 * The root's child steps, with a route handler's step (`handler`, from autoSteps) replaced by the
 * steps inside it: the handler spans nearly the whole request, and the app's own steps are what
 * DevTools should list, as without it.
 */
function topSteps(root: TimingJSON): TimingJSON[] {
  const top = root.children;
  let i = 0;
  while (i < top.length && top[i]!.handler !== true) i++;
  if (i === top.length) return top;
  const out: TimingJSON[] = [];
  for (const c of top) {
    if (c.handler === true) out.push(...c.children);
    else out.push(c);
  }
  return out;
}

function add(list: string[] | null, all: string, m: string): string {
  if (list === null) return all + m + SEP;
  list.push(m);
  return all;
}

/** The profile's category summaries with wall times; made from the tree for JSON that lacks them. */
function categories(p: ProfileJSON): CategorySummaryJSON[] {
  const s = p.customSummary;
  if (s !== undefined && (s.length === 0 || s[0]!.wallMs !== undefined)) return s;
  return hasCustom(p.root) ? summarize(p.root) : NONE;
}

const NONE: CategorySummaryJSON[] = [];

function hasCustom(t: TimingJSON): boolean {
  if (t.custom !== undefined && t.custom.length > 0) return true;
  const children = t.children;
  for (let i = 0; i < children.length; i++) if (hasCustom(children[i]!)) return true;
  return false;
}

/**
 * A category's `desc`: the count and the summed time (parallel calls each counted, so it can
 * exceed `dur`), and the duplicates as the JSON counts them: `sql (4 x 5.0ms summed) 2 duplicate`.
 * No comma (see blockingNote).
 */
function categoryDesc(s: CategorySummaryJSON): string {
  const d = `${s.category} (${s.count} x ${ms1(s.durationMs)}ms summed)`;
  return s.duplicate > 0 ? `${d} ${s.duplicate} duplicate` : d;
}

/**
 * `metric(name, durationMs, name)`, with what depends on the name alone kept for the names that
 * come back (`load_user;dur=`, `;desc="load user"`, and that with the `, ` after it), as token()
 * keeps tokens: the metric is then three strings joined, and the name is neither scanned nor
 * quoted again. `end` 1: the metric alone; 2: followed by `, `.
 */
function stepMetric(name: string, durationMs: number, end: 1 | 2): string {
  if (name.length > MAX_KEPT_NAME) {
    const m = metric(name, durationMs, name);
    return end === 1 ? m : m + SEP;
  }
  let parts = named.get(name);
  if (parts === undefined) {
    const tok = token(name);
    const desc = name === tok ? '' : `;desc="${quoted(name)}"`;
    parts = keep(named, name, [`${tok};dur=`, desc, desc + SEP]);
  }
  return parts[0] + ms1(durationMs) + parts[end];
}

const named = new Map<string, [string, string, string]>();

function metric(name: string, durationMs: number, desc: string): string {
  const tok = token(name);
  const m = `${tok};dur=${ms1(durationMs)}`;
  return desc === tok ? m : `${m};desc="${quoted(desc)}"`;
}

/**
 * The metrics cut at metric boundaries to fit `max` with `total` (which may start with the id
 * metric: both are kept), those dropped counted in `more`.
 */
function fit(metrics: string[], total: string, max: number): string {
  let out = '';
  let i = 0;
  for (; i < metrics.length; i++) {
    const next = out === '' ? metrics[i]! : `${out}, ${metrics[i]}`;
    const left = metrics.length - i - 1;
    const reserve = total.length + 2 + (left > 0 ? more(left).length + 2 : 0);
    if (next.length + reserve > max) break;
    out = next;
  }
  if (i < metrics.length) out = out === '' ? more(metrics.length - i) : `${out}, ${more(metrics.length - i)}`;
  return out === '' ? total : `${out}, ${total}`;
}

function more(n: number): string {
  return `more;desc="${n} more"`;
}

/**
 * A metric name is an RFC 9110 token: each run of other characters becomes one `_`, then the
 * first 32 characters without `_` at either end. `total`, `more`, `event-loop` and `miniprof` are ours.
 */
export function token(name: string): string {
  const n = name.length;
  // Most names are already a token: one scan, and the name itself.
  let i = 0;
  while (i < n && isTchar(name.charCodeAt(i))) i++;
  if (i === n && n > 0 && n <= MAX_TOKEN && name.charCodeAt(0) !== 0x5f && name.charCodeAt(n - 1) !== 0x5f) return reserved(name);
  // Human names ("load user") have spaces. Step names are mostly literals, so the same few come
  // back request after request: remembered, bounded as every kept name is (src/render/kept.ts).
  if (n > MAX_KEPT_NAME) return tokenOf(name, i);
  return tokens.get(name) ?? keep(tokens, name, tokenOf(name, i));
}

const tokens = new Map<string, string>();

/** token() past the fast path: `name` is a token up to `i`. */
function tokenOf(name: string, i: number): string {
  const n = name.length;
  let t = '';
  let from = 0;
  while (i < n && t.length <= MAX_TOKEN) {
    t += name.slice(from, i) + '_';
    while (i < n && !isTchar(name.charCodeAt(i))) i++;
    from = i;
    while (i < n && isTchar(name.charCodeAt(i))) i++;
  }
  if (t.length <= MAX_TOKEN) t += name.slice(from, i);
  if (t.length > MAX_TOKEN) t = t.slice(0, MAX_TOKEN);
  let a = 0;
  let b = t.length;
  while (a < b && t.charCodeAt(a) === 0x5f) a++;
  while (b > a && t.charCodeAt(b - 1) === 0x5f) b--;
  return a === b ? 'step' : reserved(a === 0 && b === t.length ? t : t.slice(a, b));
}

function reserved(t: string): string {
  return t === 'total' || t === 'more' || t === 'event-loop' || t === 'miniprof' || t === 'miniprof-self' ? `${t}_` : t;
}

/** RFC 9110 tchar. */
function isTchar(c: number): boolean {
  if ((c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39)) return true;
  // ! # $ % & ' * + - . ^ _ ` | ~
  return c === 0x21 || (c >= 0x23 && c <= 0x27) || c === 0x2a || c === 0x2b || c === 0x2d || c === 0x2e || (c >= 0x5e && c <= 0x60) || c === 0x7c || c === 0x7e;
}

/** The inside of a quoted-string: ASCII only, `%`-encoding what is not (so `\u` is never needed). */
export function quoted(s: string): string {
  if (s.length > MAX_DESC) {
    // Not between the halves of a pair, which would show as U+FFFD where an emoji was.
    const end = (s.charCodeAt(MAX_DESC - 1) & 0xfc00) === 0xd800 ? MAX_DESC - 1 : MAX_DESC;
    s = s.slice(0, end);
  }
  // Most descriptions need no escape: return them whole rather than rebuilding them by character.
  let i = 0;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c >= 0x7f || c === 0x22 || c === 0x5c || c === 0x25) break;
  }
  if (i === s.length) return s;
  let out = s.slice(0, i);
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22 || c === 0x5c) out += '\\' + s[i];
    else if (c === 0x25) out += '%25';
    else if (c >= 0x20 && c < 0x7f) out += s[i];
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      out += encodeURIComponent(s[i]! + s[i + 1]!);
      i++;
    } else if (c >= 0xd800 && c <= 0xdfff) out += '%EF%BF%BD';
    else out += encodeURIComponent(s[i]!);
  }
  return out;
}
