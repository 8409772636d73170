/**
 * A linear scan of an HTML page with the HTML standard's tokenizer states that decide where a
 * tag is a tag (https://html.spec.whatwg.org/multipage/parsing.html#tokenization): data, tags and
 * their quoted attributes, comments, doctypes and bogus comments, CDATA in SVG/MathML, RCDATA
 * (`textarea`, `title`), RAWTEXT (`style`, `xmp`, `iframe`, `noembed`, `noframes`, `noscript`),
 * script data with its escaped and double-escaped states, and PLAINTEXT. No tree is built: of
 * the tree builder it keeps only what switches those states (the element names that start raw
 * text, whether the parser is inside `<svg>`/`<math>`, a `<template>` or a `<select>`).
 *
 * Where the tree builder would need more (a tag that breaks out of SVG, a tag inside an
 * integration point such as `<foreignObject>`, raw text inside `<select>`, a `<col>` in a
 * template, an end tag that matches nothing open in SVG), the scan stops with a reason instead of
 * guessing: a place found before that point stays right, nothing after it is trusted.
 *
 * Each character is looked at a bounded number of times (tags and raw text are skipped with
 * `indexOf`), so the cost is linear in the page. parse5's full parser is the test oracle
 * (test/insert.test.ts).
 */

/** What the scan found: the offset of the last `</body>` tag outside templates (or -1), and whether
 * the page ended cleanly (in the data state, no template, SVG or MathML open), or why not. */
export interface Scan {
  lastBodyEnd: number;
  /** null: ended in ordinary text at the top level; else the reason it did not, or stopped. */
  unsure: string | null;
}

const enum K { Other, Script, RawText, RcData, PlainText, Foreign, Template, Select, Col }

/** Start tags (in HTML content) that change the tokenizer's state or what the scan tracks. */
const KINDS = new Map<string, K>([
  ['script', K.Script],
  ['style', K.RawText], ['xmp', K.RawText], ['iframe', K.RawText], ['noembed', K.RawText], ['noframes', K.RawText],
  // parse5's default and every browser with scripts on: its content is raw text.
  ['noscript', K.RawText],
  ['textarea', K.RcData], ['title', K.RcData],
  ['plaintext', K.PlainText],
  ['svg', K.Foreign], ['math', K.Foreign],
  ['template', K.Template], ['select', K.Select], ['col', K.Col],
]);

/** Start tags that end SVG/MathML content (the standard's "breakout" list; `font` with some attributes). */
const BREAKOUT = new Set('b big blockquote body br center code dd div dl dt em embed font h1 h2 h3 h4 h5 h6 head hr i img li listing menu meta nobr ol p pre ruby s small span strong strike sub sup table tt u ul var'.split(' '));
/** Elements whose content the tree builder reads as HTML again. */
const SVG_POINTS = new Set(['foreignobject', 'desc', 'title']);
const MATH_POINTS = new Set(['mi', 'mo', 'mn', 'ms', 'mtext', 'annotation-xml']);

export function scan(s: string): Scan {
  const n = s.length;
  let lastBodyEnd = -1;
  let templates = 0;
  let select = false;
  /** Lowercased names of the open SVG/MathML elements; empty in HTML content. */
  const foreign: string[] = [];
  let points = SVG_POINTS;
  const stop = (why: string): Scan => ({ lastBodyEnd, unsure: why });
  let i = 0;
  for (;;) {
    const lt = s.indexOf('<', i);
    if (lt === -1) break;
    const c = s.charCodeAt(lt + 1);
    if (c === BANG) {
      // `<!--`: a comment; `<![CDATA[` in SVG/MathML; anything else (a doctype too) up to `>`.
      if (s.startsWith('--', lt + 2)) i = commentEnd(s, lt);
      else if (foreign.length > 0 && s.startsWith('[CDATA[', lt + 2)) i = after(s, ']]>', lt + 9);
      else i = after(s, '>', lt + 2);
      if (i === -1) return stop('an unclosed comment, doctype or CDATA section');
      continue;
    }
    if (c === QMARK) {
      i = after(s, '>', lt + 2);
      if (i === -1) return stop('an unclosed bogus comment');
      continue;
    }
    const end = c === SLASH;
    const a = end ? lt + 2 : lt + 1;
    if (a >= n) return stop('a `<` at the end');
    const first = s.charCodeAt(a);
    if (!isAlpha(first)) {
      if (!end) { i = lt + 1; continue; } // text
      if (first === GT) { i = a + 1; continue; } // `</>` is dropped
      i = after(s, '>', a); // `</ body>`, `</#`: a bogus comment
      if (i === -1) return stop('an unclosed bogus comment');
      continue;
    }
    const b = nameEnd(s, a);
    if (s.charCodeAt(b) === GT) { i = b + 1; selfClosing = false; } // most tags: no attributes
    else i = b < n ? tagEnd(s, b) : -1;
    if (i === -1) return stop('an unclosed tag');
    if (foreign.length === 0 && (b - a < 3 || b - a > 9)) continue; // p, b, a, li, td…: nothing to track
    const name = lower(s, a, b);
    if (foreign.length > 0) {
      const why = end ? foreignEnd(foreign, name) : foreignStart(foreign, name, selfClosing, points);
      if (why !== null) return stop(why);
      continue;
    }
    if (end) {
      if (name === 'body') { if (templates === 0) lastBodyEnd = lt; }
      else if (name === 'template') { if (templates > 0) templates--; }
      else if (name === 'select') select = false;
      continue;
    }
    const kind = KINDS.get(name) ?? K.Other;
    if (kind === K.Other) continue;
    if (kind === K.Template) { templates++; continue; }
    if (kind === K.Select) { select = true; continue; }
    if (kind === K.Col) {
      // In a template's column-group mode the tree builder ignores every other start tag, raw text ones too.
      if (templates > 0) return stop('a <col> inside a <template>');
      continue;
    }
    // The old and the new (customizable) <select> parsing disagree on raw text and SVG inside it.
    if (select && kind !== K.Script) return stop(`a <${name}> inside a <select>`);
    if (kind === K.Foreign) {
      if (!selfClosing) { foreign.push(name); points = name === 'svg' ? SVG_POINTS : MATH_POINTS; }
      continue;
    }
    if (kind === K.PlainText) return stop('<plaintext> (the rest of the page is text)');
    i = kind === K.Script ? scriptEnd(s, i) : rawEnd(s, i, name);
    if (i === -1) return stop(`an unclosed <${name}>`);
  }
  if (templates > 0) return stop('the page ends inside a <template>');
  if (foreign.length > 0) return stop(`the page ends inside <${foreign[0]}>`);
  return { lastBodyEnd, unsure: null };
}

/** A start tag in SVG/MathML content: pushed, or the reason the scan cannot follow. */
function foreignStart(foreign: string[], name: string, selfClosing: boolean, points: Set<string>): string | null {
  if (points.has(foreign[foreign.length - 1]!)) return `a <${name}> inside <${foreign[foreign.length - 1]}> (HTML again)`;
  if (BREAKOUT.has(name)) return `a <${name}> inside <${foreign[0]}>`;
  if (!selfClosing) foreign.push(name);
  return null;
}

/** An end tag in SVG/MathML content closes the innermost open element of its name, or the scan stops. */
function foreignEnd(foreign: string[], name: string): string | null {
  const at = foreign.lastIndexOf(name);
  if (at === -1 || name === 'p' || name === 'br') return `a </${name}> inside <${foreign[0]}> that closes no element of it`;
  foreign.length = at;
  return null;
}

const BANG = 33, DQ = 34, SQ = 39, DASH = 45, SLASH = 47, EQ = 61, GT = 62, QMARK = 63, LT = 60;

function isWs(c: number): boolean {
  // CR is a line feed once the input stream is preprocessed.
  return c === 32 || c === 10 || c === 9 || c === 12 || c === 13;
}

function isAlpha(c: number): boolean {
  const l = c | 32;
  return l >= 97 && l <= 122;
}

/** The offset after `token`'s first occurrence from `from`, or -1. */
function after(s: string, token: string, from: number): number {
  const at = s.indexOf(token, from);
  return at === -1 ? -1 : at + token.length;
}

/** A comment starting at `lt` (`<!--`) ends at the first `-->` (even `<!-->`, `<!--->`) or `--!>`. */
function commentEnd(s: string, lt: number): number {
  const a = s.indexOf('-->', lt + 2);
  const b = s.indexOf('--!>', lt + 4);
  if (b !== -1 && (a === -1 || b < a)) return b + 4;
  return a === -1 ? -1 : a + 3;
}

function nameEnd(s: string, i: number): number {
  const n = s.length;
  for (; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c === GT || c === SLASH || isWs(c)) return i;
  }
  return n;
}

/** ASCII-lowercased tag name (the tokenizer lowercases A–Z only). */
function lower(s: string, a: number, b: number): string {
  const t = s.slice(a, b);
  for (let i = a; i < b; i++) {
    const c = s.charCodeAt(i);
    if (c >= 65 && c <= 90) return t.replace(/[A-Z]+/g, (u) => u.toLowerCase());
  }
  return t;
}

/** Set by tagEnd: the tag ended in `/>` as the tokenizer reads it (not a `/` inside a value). */
let selfClosing = false;

/**
 * From just after a tag's name: its attributes, quoted values included, to the offset after its
 * `>`, or -1 when the page ends first. Follows the tokenizer's attribute states.
 */
function tagEnd(s: string, i: number): number {
  const n = s.length;
  selfClosing = false;
  for (;;) {
    while (i < n && isWs(s.charCodeAt(i))) i++;
    if (i >= n) return -1;
    let c = s.charCodeAt(i);
    if (c === GT) return i + 1;
    if (c === SLASH) {
      if (++i >= n) return -1;
      if (s.charCodeAt(i) === GT) { selfClosing = true; return i + 1; }
      continue;
    }
    // An attribute's name (its first character may be `=`).
    for (i++; i < n; i++) {
      c = s.charCodeAt(i);
      if (c === GT || c === SLASH || c === EQ || isWs(c)) break;
    }
    while (i < n && isWs(s.charCodeAt(i))) i++;
    if (i >= n) return -1;
    if (s.charCodeAt(i) !== EQ) continue;
    for (i++; i < n && isWs(s.charCodeAt(i)); i++);
    if (i >= n) return -1;
    c = s.charCodeAt(i);
    if (c === DQ || c === SQ) {
      const q = s.indexOf(c === DQ ? '"' : "'", i + 1);
      if (q === -1) return -1;
      i = q + 1;
      continue;
    }
    // Unquoted: to whitespace or `>` (a `/` is part of the value).
    for (; i < n; i++) {
      c = s.charCodeAt(i);
      if (c === GT) return i + 1;
      if (isWs(c)) break;
    }
    if (i >= n) return -1;
  }
}

/** `</name` (any case) at `i`, followed by whitespace, `/` or `>`: an appropriate end tag. */
function endTagAt(s: string, i: number, name: string): boolean {
  for (let k = 0; k < name.length; k++) if ((s.charCodeAt(i + k) | 32) !== name.charCodeAt(k)) return false;
  const c = s.charCodeAt(i + name.length);
  return c === GT || c === SLASH || isWs(c);
}

/** RCDATA or RAWTEXT from `i`: the offset after its end tag `</name …>`, or -1. */
function rawEnd(s: string, i: number, name: string): number {
  for (;;) {
    const at = s.indexOf('</', i);
    if (at === -1) return -1;
    if (endTagAt(s, at + 2, name)) return tagEnd(s, at + 2 + name.length);
    i = at + 2;
  }
}

const enum S { Data, Escaped, EscapedDash, EscapedDashDash, Double, DoubleDash, DoubleDashDash }

/**
 * Script data from `i`, with its escaped (`<!--`) and double-escaped (`<!--<script>`) states, in
 * which a `</script>` does not end the script: the offset after its end tag, or -1.
 */
function scriptEnd(s: string, i: number): number {
  const n = s.length;
  let state = S.Data;
  while (i < n) {
    if (state === S.Data) {
      const at = s.indexOf('<', i);
      if (at === -1) return -1;
      i = at + 1;
      const c = s.charCodeAt(i);
      if (c === SLASH && endTagAt(s, i + 1, 'script')) return tagEnd(s, i + 7);
      if (c === BANG && s.charCodeAt(i + 1) === DASH && s.charCodeAt(i + 2) === DASH) {
        i += 3;
        state = S.EscapedDashDash;
      }
      continue;
    }
    const c = s.charCodeAt(i);
    if (c === LT) {
      i++;
      const d = s.charCodeAt(i);
      if (state <= S.EscapedDashDash) {
        if (d === SLASH && endTagAt(s, i + 1, 'script')) return tagEnd(s, i + 7);
        state = S.Escaped;
        if (isAlpha(d) && endTagAt(s, i, 'script')) { state = S.Double; i += 7; }
      } else {
        state = S.Double;
        if (d === SLASH && endTagAt(s, i + 1, 'script')) { state = S.Escaped; i += 8; }
      }
      continue;
    }
    i++;
    const escaped: boolean = state <= S.EscapedDashDash;
    if (c === DASH) state = state === S.Escaped ? S.EscapedDash : state === S.Double ? S.DoubleDash : escaped ? S.EscapedDashDash : S.DoubleDashDash;
    else if (c === GT && (state === S.EscapedDashDash || state === S.DoubleDashDash)) state = S.Data;
    else state = escaped ? S.Escaped : S.Double;
  }
  return -1;
}
