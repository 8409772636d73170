import type { ReadableStreamReadResult } from 'node:stream/web';
import { debug, report, type InternalErrorHandler } from '../core/errors.js';
import type { HeaderTarget } from '../results/save.js';
import type { ResultsReply } from '../results/routes.js';
import type { ProfiledResponse } from './response.js';

/**
 * The half of a developer request that adapters built on the Fetch API's `Response` share (Hono):
 * the body read only when it is already whole, the comment, our headers on a new `Response`.
 */

/** The largest body read to put the comment in: a bigger one goes out as it came. */
export const MAX_READ_BYTES = 1 << 20;

/** Statuses whose `Response` may not have a body (the constructor throws for one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** A `Headers` seen as Node's response headers, for ProfiledResponse's `headers()` and `body()`. */
export function headerTarget(h: Headers): HeaderTarget {
  return {
    getHeader: (name) => h.get(name) ?? undefined,
    setHeader(name, value) {
      if (!Array.isArray(value)) return h.set(name, value);
      h.delete(name);
      for (const v of value) h.append(name, v);
    },
    removeHeader: (name) => h.delete(name),
    getHeaderNames: () => [...h.keys()],
  };
}

type Read = { whole: Uint8Array } | { rest: ReadableStream<Uint8Array> };

/**
 * Read `body` as far as it is there within one turn of the event loop, at most `cap` bytes. A body
 * made from a string or bytes is complete by then: it comes back whole. Anything else (a stream
 * still being written, a large body) comes back as a stream of the same bytes, those read first
 * and then the rest as the app writes it: the client receives exactly what it would have.
 * (@hono/node-server reads a body the same way, without waiting, to decide on a Content-Length.)
 * A body that fails while read fails the same way for the client.
 */
export async function readIfWhole(body: ReadableStream<Uint8Array>, cap: number): Promise<Read> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let late = false;
  const deadline = new Promise<null>((resolve) => setImmediate(() => ((late = true), resolve(null))));
  let pending: Promise<ReadableStreamReadResult<Uint8Array>> | null = null;
  while (!late && size <= cap) {
    pending ??= reader.read();
    let r: ReadableStreamReadResult<Uint8Array> | null;
    try {
      r = await Promise.race([pending, deadline]);
    } catch {
      break;
    }
    if (r === null) break;
    pending = null;
    if (r.done) return { whole: concat(chunks, size) };
    chunks.push(r.value);
    size += r.value.byteLength;
  }
  debug('no comment: the body was not complete at once (a stream, or over %d bytes)', cap);
  return { rest: resume(chunks, reader, pending) };
}

function concat(chunks: Uint8Array[], size: number): Uint8Array {
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
}

/** The chunks read so far, then whatever `reader` still gives; cancelling it cancels the app's stream. */
function resume(chunks: Uint8Array[], reader: ReadableStreamDefaultReader<Uint8Array>, pending: Promise<ReadableStreamReadResult<Uint8Array>> | null): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(c) {
      for (const chunk of chunks) c.enqueue(chunk);
    },
    async pull(c) {
      const r = await (pending ?? reader.read());
      pending = null;
      if (r.done) c.close();
      else c.enqueue(r.value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

/** Only an HTML body that is not encoded, streamed on purpose, or a HEAD's, is worth reading. */
function worthReading(res: Response, method: string): boolean {
  if (method === 'HEAD' || res.body === null || res.status < 200 || NULL_BODY.has(res.status)) return false;
  const h = res.headers;
  const type = (h.get('content-type') ?? '').toLowerCase();
  if (!type.startsWith('text/html') && !type.startsWith('application/xhtml+xml')) return false;
  // Hono's streaming helpers (streamSSE, streamText, a streaming jsxRenderer) say so with this.
  if (/chunked/i.test(h.get('transfer-encoding') ?? '')) {
    debug('no comment: Transfer-Encoding: chunked');
    return false;
  }
  const length = h.get('content-length');
  return length === null || Number(length) <= MAX_READ_BYTES;
}

/**
 * The app's response is complete: stop the root, put the comment into a whole HTML body, and
 * return a new `Response` (status, status text, headers and body the app's) carrying our headers.
 * A `Response`'s headers may be immutable (one from `fetch()` or `Response.redirect()`), so ours go
 * on a copy. Faults are reported, and the app's response comes back as it was.
 */
export async function finishResponse(p: ProfiledResponse, res: Response, method: string, onError: InternalErrorHandler): Promise<Response> {
  if (res.status < 200 || res.status > 599) {
    p.body(headerTarget(res.headers), res.status, undefined);
    return res;
  }
  try {
    const headers = new Headers(res.headers);
    const h = headerTarget(headers);
    let body: ConstructorParameters<typeof Response>[0] = res.body;
    const read = worthReading(res, method) ? await readIfWhole(res.body!, MAX_READ_BYTES) : null;
    if (read !== null && 'whole' in read) {
      const given = p.body(h, res.status, read.whole) ?? read.whole;
      const out = typeof given === 'string' ? Buffer.from(given) : given;
      if (headers.has('content-length')) headers.set('content-length', String(out.byteLength));
      body = out as Uint8Array<ArrayBuffer>;
    } else {
      if (read !== null) body = read.rest;
      p.body(h, res.status, undefined);
    }
    p.headers(h, res.status);
    return new Response(NULL_BODY.has(res.status) ? null : body, { status: res.status, statusText: res.statusText, headers });
  } catch (err) {
    report(onError, err);
    return res;
  }
}

/** A results page as a `Response`. */
export function replyResponse(r: ResultsReply): Response {
  return new Response(r.body === '' ? null : r.body, { status: r.status, headers: r.headers });
}
