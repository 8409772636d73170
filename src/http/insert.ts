import { createRequire } from 'node:module';
import type * as Parse5 from 'parse5';
import { debug } from '../core/errors.js';

/**
 * Where the comment can go in an HTML document without changing anything else in it: the offset
 * (in `html`'s code units) to insert at, or -1 for nowhere (with the reason through
 * `NODE_DEBUG=miniprof`).
 *
 * Found by parsing the page with parse5 (the HTML standard's tokenizer and tree builder), never by
 * searching for `</body`: that text also occurs where it is no tag (in a `<script>`, a `<style>`,
 * a `<textarea>`, a `<title>`, a comment, an attribute value), and a comment put there changes the
 * script or the text, or lets text from the profile (a request path such as
 * `/docs/x*\/alert(document.domain)/*`) run as script.
 *
 * - Before the last `</body>` end tag the tokenizer emits, outside any `<template>`: there the
 *   tree builder takes a comment as a comment, whatever the insertion mode.
 * - With no such tag, at the end, but only when the document ends in ordinary text (the
 *   tokenizer's data state at the end of input, no `<template>` left open). An unclosed
 *   `<script>`, `<style>`, `<textarea>`, `<title>`, `<noscript>`, `<plaintext>`, comment, tag or
 *   attribute at the end gets no comment.
 *
 * `html` may be bytes decoded as latin1 (then offsets are byte offsets): every ASCII-compatible
 * encoding keeps `<`, `>`, `/`, `!`, `-`, quotes and whitespace where they are.
 */
export function insertionPoint(html: string): number {
  const p = bodyEndsParser(parse5());
  p.tokenizer.write(html, true);
  // A `<frameset>` after `</body>` throws the body, comment and all, out of the document.
  if (FRAMESET.test(html) && hasFrameset(p.document)) return none('a frameset document');
  // Most pages have no <template>: no tree walk for them.
  const templates = TEMPLATE.test(html) ? templateSpans(p.document, html.length) : [];
  for (let i = p.bodyEnds.length - 1; i >= 0; i--) {
    const at = p.bodyEnds[i]!;
    if (!inside(templates, at)) return at;
  }
  if (p.eofState !== p.dataState) return none('the document does not end in ordinary text (an unclosed script, style, textarea, title, comment, tag or attribute)');
  if (inside(templates, html.length)) return none('the document ends inside a <template>');
  return html.length;
}

const TEMPLATE = /<template/i;
const FRAMESET = /<frameset/i;

function hasFrameset(document: Node): boolean {
  for (const html of (document as { childNodes: Node[] }).childNodes) {
    const kids = (html as { childNodes?: Node[] }).childNodes;
    if (kids !== undefined && kids.some((k) => k.nodeName === 'frameset')) return true;
  }
  return false;
}

function none(why: string): -1 {
  debug('no comment: %s', why);
  return -1;
}

type Node = Parse5.DefaultTreeAdapterMap['node'];

/**
 * `[start, end]` of every `<template>` element in the tree (its content included), where `end` is
 * the offset of its end tag, or the end of the input when it has none.
 */
function templateSpans(document: Node, length: number): [number, number][] {
  const out: [number, number][] = [];
  const stack: Node[] = [document];
  while (stack.length > 0) {
    const n = stack.pop()! as Node & { childNodes?: Node[]; content?: Node; sourceCodeLocation?: Parse5.Token.ElementLocation | null };
    if (n.nodeName === 'template' && n.sourceCodeLocation != null) {
      const loc = n.sourceCodeLocation;
      out.push([loc.startOffset, loc.endTag !== undefined ? loc.endTag.startOffset : length]);
    }
    if (n.childNodes !== undefined) for (const c of n.childNodes) stack.push(c);
    if (n.content !== undefined) stack.push(n.content);
  }
  return out;
}

function inside(spans: [number, number][], at: number): boolean {
  for (const [start, end] of spans) if (at > start && at <= end) return true;
  return false;
}

/**
 * Loaded at the first developer page that can carry a comment (`require` of an ES module, Node
 * 20.19+): an app that never profiles an HTML page never loads it. Every module loaded in a Node
 * 20 server measured as a cost on requests that had nothing to do with it (see scripts/bundle.mjs).
 */
let lib: typeof Parse5 | null = null;
function parse5(): typeof Parse5 {
  return (lib ??= createRequire(import.meta.url)('parse5') as typeof Parse5);
}

interface BodyEndsParser extends Parse5.Parser<Parse5.DefaultTreeAdapterMap> {
  bodyEnds: number[];
  eofState: number;
  dataState: number;
}

let BodyEnds: (new () => BodyEndsParser) | null = null;

/**
 * parse5's parser, noting the offset of each `</body>` end tag token and the tokenizer's state at
 * the end of input. Offsets are those of the input string (parse5's source locations), CR LF and
 * NUL included.
 */
function bodyEndsParser(lib: typeof Parse5): BodyEndsParser {
  if (BodyEnds === null) {
    const { Parser, TokenizerMode } = lib;
    BodyEnds = class extends Parser<Parse5.DefaultTreeAdapterMap> {
      bodyEnds: number[] = [];
      eofState = -1;
      dataState: number = TokenizerMode.DATA;
      constructor() {
        super({ sourceCodeLocationInfo: true });
      }
      override onEndTag(token: Parse5.Token.TagToken): void {
        if (token.tagName === 'body') this.bodyEnds.push(token.location!.startOffset);
        super.onEndTag(token);
      }
      override onEof(token: Parse5.Token.EOFToken): void {
        this.eofState = this.tokenizer.state;
        super.onEof(token);
      }
    } as unknown as new () => BodyEndsParser;
  }
  return new BodyEnds();
}
