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

import { after, BANG, commentEnd, GT, isAlpha, lower, nameEnd, QMARK, rawEnd, scriptEnd, selfClosing, SLASH, tagEnd } from './tokens.js';

/**
 * What the scan found: the offset of the last `</body>` tag outside templates (or -1), and whether
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
    // Most tags have no attributes.
    const bare = s.charCodeAt(b) === GT;
    i = bare ? b + 1 : b < n ? tagEnd(s, b) : -1;
    if (i === -1) return stop('an unclosed tag');
    if (foreign.length === 0 && (b - a < 3 || b - a > 9)) continue; // p, b, a, li, td…: nothing to track
    const name = lower(s, a, b);
    if (foreign.length > 0) {
      const why = end ? foreignEnd(foreign, name) : foreignStart(foreign, name, !bare && selfClosing, points);
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
      if (bare || !selfClosing) { foreign.push(name); points = name === 'svg' ? SVG_POINTS : MATH_POINTS; }
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
