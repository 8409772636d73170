import { emit, mark, MASK, REMOVE, VALUE } from './marks.js';
import { valueLike } from './value-like.js';

/**
 * URLs as a profile keeps them: no `user:password@`, every query and matrix parameter's value
 * masked (its name kept when it reads as one), the fragment masked, and each path segment that
 * looks like an id or a token masked (see value-like.ts): `https://api.example.com/users/?`,
 * `https://hooks.slack.com/services/?/?/?`, `/app;jsessionid=?`.
 */

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]{0,30}:\/\//;

/** Mark the URL (or the path, with its query and fragment) in `text[from, to)`. */
export function markUrl(text: string, from: number, to: number, marks: Uint8Array): void {
  let i = from;
  const scheme = SCHEME.exec(text.slice(from, Math.min(to, from + 40)));
  if (scheme !== null) {
    i += scheme[0].length;
    let end = i;
    while (end < to && text[end] !== '/' && text[end] !== '?' && text[end] !== '#') end++;
    // Up to the last `@` of the authority: a raw `@` in a password is common, and parsers differ.
    const at = text.lastIndexOf('@', end - 1);
    if (at >= i) mark(marks, i, at + 1, REMOVE);
    i = end;
  }
  let pathEnd = i;
  while (pathEnd < to && text[pathEnd] !== '?' && text[pathEnd] !== '#') pathEnd++;
  markPath(text, i, pathEnd, marks);
  i = pathEnd;
  if (i < to && text[i] === '?') {
    let end = ++i;
    while (end < to && text[end] !== '#') end++;
    markPairs(text, i, end, '&', marks);
    i = end;
  }
  if (i < to && text[i] === '#') mark(marks, i + 1, to, VALUE);
}

/** Each `/`-separated segment: masked if it looks like a value; `;name=value` parameters too. */
function markPath(text: string, from: number, to: number, marks: Uint8Array): void {
  let a = from;
  while (a <= to) {
    const b = find(text, '/', a, to);
    const semi = find(text, ';', a, b);
    if (valueLike(text.slice(a, semi), true)) mark(marks, a, semi, VALUE);
    if (semi < b) markPairs(text, semi + 1, b, ';', marks);
    a = b + 1;
  }
}

/** `name=value` pairs split by `sep`: the value masked, the name too unless it reads as a name. */
function markPairs(text: string, from: number, to: number, sep: string, marks: Uint8Array): void {
  let a = from;
  while (a < to) {
    const b = find(text, sep, a, to);
    const eq = find(text, '=', a, b);
    if (eq === b || valueLike(text.slice(a, eq), true)) mark(marks, a, eq, VALUE);
    if (eq + 1 < b) mark(marks, eq + 1, b, VALUE);
    a = b + 1;
  }
}

/** The first `c` in `text[from, to)`, or `to`: never looks past `to`, so every scan stays linear. */
function find(text: string, c: string, from: number, to: number): number {
  let i = from;
  while (i < to && text[i] !== c) i++;
  return i;
}

/**
 * An outgoing HTTP call as the instrumentations record it, `METHOD url`: the method kept, the
 * URL masked.
 *
 * @example
 * maskHttp('POST https://u:pw@hooks.slack.com/services/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?x=1')
 * // 'POST https://hooks.slack.com/services/?/?/??x=?'
 */
export function maskHttp(command: string): string {
  const marks = new Uint8Array(command.length);
  const m = /^[A-Za-z_-]+ +/.exec(command);
  markUrl(command, m === null ? 0 : m[0].length, command.length, marks);
  return emit(command, marks);
}

/**
 * A request target as a profile names it: the path only (an absolute-form target,
 * `http://alice:pw@host/err`, loses its scheme, authority and all), no query or fragment. With
 * `mask` (a captured request, someone else's), segments that look like ids or tokens are masked,
 * and a target that is not a path (authority-form) is masked whole.
 */
export function requestPath(url: string | undefined, mask: boolean): string {
  if (url === undefined) return '/';
  let path = url;
  const q = path.search(/[?#]/);
  if (q !== -1) path = path.slice(0, q);
  const scheme = SCHEME.exec(path.slice(0, 40));
  if (scheme !== null) {
    const slash = path.indexOf('/', scheme[0].length);
    path = slash === -1 ? '/' : path.slice(slash);
  }
  if (!mask) return path;
  if (path[0] !== '/') return path === '*' ? path : MASK;
  const marks = new Uint8Array(path.length);
  markPath(path, 0, path.length, marks);
  return emit(path, marks);
}
