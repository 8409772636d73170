import { debug } from '../core/errors.js';
import { scan } from './scan.js';

/**
 * Where the comment can go in an HTML document without changing anything else in it: the offset
 * (in `html`'s code units) to insert at, or -1 for nowhere (with the reason through
 * `NODE_DEBUG=miniprof`).
 *
 * Found by a linear scan of the tokenizer's states (src/http/scan.ts), never by searching for
 * `</body`: that text also occurs where it is no tag (in a `<script>`, a `<style>`, a
 * `<textarea>`, a `<title>`, a comment, an attribute value), and a comment put there changes the
 * script or the text, or lets text from the profile (a request path such as
 * `/docs/x*\/alert(document.domain)/*`) run as script. No tree is built: parse5's tree of a
 * megabyte of messy HTML took seconds, on the event loop, for everyone (issue 58).
 *
 * - Before the last `</body>` end tag outside any `<template>`: there the tree builder takes a
 *   comment as a comment, whatever the insertion mode.
 * - With no such tag, at the end, but only when the document ends in ordinary text (the data
 *   state, no `<template>`, `<svg>` or `<math>` left open). An unclosed `<script>`, `<style>`,
 *   `<textarea>`, `<title>`, `<noscript>`, `<plaintext>`, comment, tag or attribute at the end
 *   gets no comment, nor does a page the scan cannot follow to its end (see scan.ts).
 * - A page with `<frameset` anywhere gets none: a frameset after `</body>` throws the body, and
 *   the comment with it, out of the document.
 *
 * `html` may be bytes decoded as latin1 (then offsets are byte offsets): every ASCII-compatible
 * encoding keeps `<`, `>`, `/`, `!`, `-`, quotes and whitespace where they are.
 */
export function insertionPoint(html: string): number {
  if (FRAMESET.test(html)) return none('a <frameset> in the page');
  const r = scan(html);
  if (r.lastBodyEnd !== -1) return r.lastBodyEnd;
  if (r.unsure !== null) return none(r.unsure);
  return html.length;
}

const FRAMESET = /<frameset/i;

function none(why: string): -1 {
  debug('no comment: %s', why);
  return -1;
}
