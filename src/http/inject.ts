import { debug } from '../core/errors.js';

/** Where an injected body came from: a string with Node's encoding, or bytes. */
export type Body = string | Uint8Array;

/** Read-only view of the response headers (Node's `res` and Fastify's `reply` both fit). */
export interface HeaderView {
  getHeader(name: string): unknown;
}

const NO_BODY_STATUS = new Set([204, 206, 304]);

/** Charsets whose bytes below 0x80 are ASCII, so an ASCII comment can be spliced in as bytes. */
const ASCII_COMPATIBLE =
  /^(?:utf-?8|us-ascii|ascii|iso-?8859-\d+|latin-?1|l1|windows-125\d|cp125\d|koi8-[ru]|shift_jis|sjis|euc-jp|euc-kr|gb2312|gbk|gb18030|big5)$/;

/** A header value as one string: arrays (several values) joined as a list. */
export function headerString(v: unknown): string {
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return v.join(', ');
  return v === undefined || v === null ? '' : String(v);
}

/**
 * Decide whether a body may carry the comment, and say why not through `NODE_DEBUG=miniprof`.
 * Returns 'utf8' or 'ascii' (how the comment must be written), or null to leave the body alone.
 */
export function injectable(h: HeaderView, status: number, method: string, body: unknown): 'utf8' | 'ascii' | null {
  if (method === 'HEAD') return skip('HEAD request');
  if (NO_BODY_STATUS.has(status) || status < 200) return skip(`status ${status}`);
  if (typeof body !== 'string' && !(body instanceof Uint8Array)) return skip('body is not one string or buffer');
  if (body.length === 0) return skip('empty body');
  const given = headerString(h.getHeader('content-type'));
  // What Express and Fastify set for an HTML string, and most apps: no lowercase copy, no slices.
  const type = given === HTML_UTF8 ? given : given.toLowerCase();
  const common = type === HTML_UTF8;
  const mime = common ? 'text/html' : mimeOf(type);
  if (mime !== 'text/html' && mime !== 'application/xhtml+xml') return skip(`content-type ${mime || 'unset'}`);
  const coding = h.getHeader('content-encoding');
  if (coding !== undefined) {
    const enc = headerString(coding).trim().toLowerCase();
    if (enc !== '' && enc !== 'identity') return skip(`already encoded (${enc})`);
  }
  if (noTransform(h)) return skip('no-transform');
  if (common) return 'utf8';
  const m = /;\s*charset\s*=\s*"?([^";\s]+)/.exec(type);
  if (m === null) return 'ascii';
  const charset = m[1]!;
  if (!ASCII_COMPATIBLE.test(charset)) return skip(`charset ${charset} is not ASCII-compatible`);
  return charset === 'utf-8' || charset === 'utf8' ? 'utf8' : 'ascii';
}

const HTML_UTF8 = 'text/html; charset=utf-8';

/** The media type of a lowercased Content-Type, without its parameters. */
function mimeOf(type: string): string {
  const semi = type.indexOf(';');
  return (semi === -1 ? type : type.slice(0, semi)).trim();
}

/** The app asked that nothing between it and the client change the body (RFC 9111, 5.2.2.6). */
export function noTransform(h: HeaderView): boolean {
  const v = h.getHeader('cache-control');
  return v !== undefined && /(?:^|,)\s*no-transform\s*(?:,|$)/i.test(headerString(v));
}

function skip(why: string): null {
  debug('no comment: %s', why);
  return null;
}

/**
 * Put `comment` before the last `</body` (any case), else at the end. A string stays a string
 * (Node encodes it with the response's encoding); bytes stay bytes, the comment written in UTF-8
 * (it is pure ASCII unless the page is UTF-8).
 */
export function splice(body: Body, comment: string): Body {
  if (typeof body === 'string') {
    const at = lastBodyClose(body);
    return at === -1 ? body + comment : body.slice(0, at) + comment + body.slice(at);
  }
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const at = lastBodyClose(bytes.toString('latin1'));
  const c = Buffer.from(comment, 'utf8');
  return at === -1 ? Buffer.concat([bytes, c]) : Buffer.concat([bytes.subarray(0, at), c, bytes.subarray(at)]);
}

/** Index of the last `</body` followed by `>`, whitespace, `/` or the end; latin1 keeps byte offsets. */
export function lastBodyClose(s: string): number {
  // Pages end with their `</body>`, a few characters from the end: those are read one by one.
  // A page with no `</body` near its end gets `lastIndexOf`'s search over the rest.
  const stop = s.length > TAIL ? s.length - TAIL : 0;
  for (let i = s.length - 6; i >= stop; i--) {
    if (s.charCodeAt(i) === 0x3c && isBodyClose(s, i)) return i;
  }
  let from = stop;
  while (from > 0) {
    const i = s.lastIndexOf('</', from - 1);
    if (i === -1) return -1;
    if (isBodyClose(s, i)) return i;
    from = i;
  }
  return -1;
}

/** How far from the end `lastBodyClose` reads by hand. */
const TAIL = 256;

/**
 * `</body` at `i` (any case: `| 0x20` lowercases an ASCII letter, and no other character turns
 * into one of these four), then the end or a character that ends a tag name.
 */
function isBodyClose(s: string, i: number): boolean {
  if (s.charCodeAt(i + 1) !== 0x2f) return false;
  if ((s.charCodeAt(i + 2) | 0x20) !== 0x62 || (s.charCodeAt(i + 3) | 0x20) !== 0x6f || (s.charCodeAt(i + 4) | 0x20) !== 0x64 || (s.charCodeAt(i + 5) | 0x20) !== 0x79) return false;
  const next = s.charCodeAt(i + 6);
  return Number.isNaN(next) || next === 0x3e || next === 0x2f || next === 0x20 || (next >= 0x09 && next <= 0x0d);
}
