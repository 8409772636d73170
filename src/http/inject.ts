import { debug } from '../core/errors.js';
import { insertionPoint as placeIn } from './insert.js';

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
  if (utf16Bom(body)) return skip('UTF-16 byte order mark');
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
 * Put `comment` where it is inert (see insertionPoint: before the last `</body>` tag, else at the
 * end of a document that ends in ordinary text), or return null to leave the body alone. A string
 * stays a string (Node encodes it with the response's encoding); bytes stay bytes, read as latin1
 * so offsets are byte offsets, the comment written in UTF-8 (it is pure ASCII unless the page is
 * UTF-8).
 */
export function splice(body: Body, comment: string): Body | null {
  const at = insertionPoint(body);
  return at === -1 ? null : spliceAt(body, at, comment);
}

/** Where the comment can go in `body` (see src/http/insert.ts), in its code units or bytes; -1 for nowhere. */
export function insertionPoint(body: Body): number {
  if (typeof body === 'string') return placeIn(body);
  return placeIn(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('latin1'));
}

/** `comment` put into `body` at `at` (from insertionPoint). */
export function spliceAt(body: Body, at: number, comment: string): Body {
  if (typeof body === 'string') return body.slice(0, at) + comment + body.slice(at);
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  return Buffer.concat([bytes.subarray(0, at), Buffer.from(comment, 'utf8'), bytes.subarray(at)]);
}

/**
 * A UTF-16 byte order mark (FF FE or FE FF): browsers decode the page as UTF-16 whatever the
 * `Content-Type` charset says (the HTML standard's encoding sniffing puts the BOM first), so an
 * ASCII comment spliced in would be garbage or worse.
 */
function utf16Bom(body: string | Uint8Array): boolean {
  if (typeof body === 'string' || body.length < 2) return false;
  return (body[0] === 0xff && body[1] === 0xfe) || (body[0] === 0xfe && body[1] === 0xff);
}
