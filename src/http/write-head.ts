import { OutgoingMessage, ServerResponse } from 'node:http';
import type { ProfiledResponse } from './response.js';
import type { HeaderTarget } from '../results/save.js';

/** `end` or `writeHead` as found on a response or a prototype. */
export type ResMethod = (this: ServerResponse, ...args: unknown[]) => ServerResponse;

/**
 * The headers object an app gave writeHead, while the response has none of its own (Fastify
 * writes every response so): ours go into a copy of it, and it is handed to writeHead whole.
 * Keys are lowercase (checked by `givenHeaders`), so are the names looked up. @internal
 */
export class GivenHeaders implements HeaderTarget {
  readonly h: Record<string, unknown>;
  constructor(h: Record<string, unknown>) {
    this.h = h;
  }
  getHeader(name: string): unknown {
    return this.h[name];
  }
  /**
   * Only miniprof's own headers come here (ProfiledResponse.writeHeaders, linkHeaders), and their
   * values are valid by construction: constants, a UUID, a basePath checked at setup, and a
   * Server-Timing value that is printable ASCII whatever the step names (fuzzed in
   * test/fuzz.test.ts). What they carry of the app's (a `Link` or `Server-Timing` it set) is
   * checked by writeHead, which throws for it exactly as it would without us. So not checked here
   * again: Node's validateHeaderValue and a toLowerCase were ~2,000 instructions per header
   * (bench/RESULTS.md Run 17).
   */
  setHeader(name: string, value: string | string[]): void {
    this.h[lower(name)] = value;
  }
  /** Called only for a header getHeader found (writeHeaders looks first). */
  removeHeader(name: string): void {
    delete this.h[name];
  }
}

/**
 * A developer's response's writeHead, as on-headers does it: at the first call only, our headers
 * are merged with those passed to writeHead, then `head` (the writeHead the app would have
 * reached) is called. Later calls go straight to `head`, as on-headers fired once.
 *
 * Two ways to merge. While the response has no headers of its own and the given ones are an
 * object with lowercase keys (Fastify's, on every response), ours go into a copy of that object
 * and writeHead gets it whole, as it would have without us. Otherwise the given headers become the
 * response's own first (so ours merge with them rather than being overwritten), then ours, then
 * `head` with the status (and reason) only. The first way skips a `setHeader` per header (its
 * lowercasing, its `[name, value]` pair, a store into a dictionary-mode object): 0.5 against
 * 1.3 µs for Fastify's two headers and two of ours (scratch micro, Node 20).
 *
 * Not on-headers itself: it puts a new closure on each response, and a per-request closure kept
 * in a property of `res` got everything of the request promoted to the old generation (see
 * adapters/fastify.ts). On a per-response holder object instead, it measured ~80,000 instructions
 * more per Express developer request (bench/instructions, `open` row, twice).
 */
export function writeHeadWith(state: ProfiledResponse, res: ServerResponse, args: IArguments, head: ResMethod): ServerResponse {
  if (state.headersWritten) return head.apply(res, args as unknown as unknown[]);
  state.headersWritten = true;
  const n = args.length;
  const at = n > 1 && typeof args[1] === 'string' ? 2 : 1;
  const given: unknown = n > at ? args[at] : undefined;
  const own = givenHeaders(res, given);
  if (own !== null) {
    state.writeHeaders(new GivenHeaders(own));
    try {
      return sent(state, head, args[0], at === 2 ? head.call(res, args[0], args[1], own) : head.call(res, args[0], own));
    } catch (err) {
      // Refused (a status code, reason or header of the app's), nothing sent: ours were only in
      // this copy, and the error page the app sends next must carry them too (no-store above all).
      state.headersWritten = false;
      throw err;
    }
  }
  try {
    if (Array.isArray(given)) setFromArray(res, given);
    else if (given !== null && typeof given === 'object') for (const k of Object.keys(given)) res.setHeader(k, (given as Record<string, never>)[k]);
  } catch (err) {
    // A header of the app's refused before ours were set: the same.
    state.headersWritten = false;
    throw err;
  }
  // From here ours are on the response itself, and stay there if writeHead refuses its status.
  state.writeHeaders(res);
  return sent(state, head, args[0], at === 2 ? head.call(res, args[0], args[1]) : head.call(res, args[0]));
}

const NODE_WRITE_HEAD = ServerResponse.prototype.writeHead;

/**
 * Notes the status sent, once `head` returned: Node's own writeHead sends `status | 0` (and
 * throws for anything out of range). Any other `head` (compression's on-headers wrapper, HTTP/2's
 * writeHead) may set another: its status is read from the response at close, as before.
 */
function sent(state: ProfiledResponse, head: ResMethod, status: unknown, r: ServerResponse): ServerResponse {
  if (head === NODE_WRITE_HEAD) state.sentStatus = (status as number) | 0;
  return r;
}

/**
 * A copy of `given` for the first way (see writeHeadWith), or null. What writeHead does with it
 * is unchanged: it reads an object's own enumerable keys (for-in, hasOwnProperty) whichever way
 * it is built, and only when the response has no headers of its own.
 */
function givenHeaders(res: ServerResponse, given: unknown): Record<string, unknown> | null {
  if (given === null || typeof given !== 'object' || Array.isArray(given)) return null;
  // A `setHeader` of the response's own (a seam that watches or refuses headers) sees ours.
  if (res.setHeader !== NODE_SET_HEADER || res.getHeaderNames().length !== 0) return null;
  const out: Record<string, unknown> = {};
  for (const k in given) {
    if (!Object.hasOwn(given, k)) continue;
    // An assignment of "__proto__" would set the copy's prototype.
    if (k === '__proto__' || !lowercase(k)) return null;
    out[k] = (given as Record<string, unknown>)[k];
  }
  return out;
}

const NODE_SET_HEADER = OutgoingMessage.prototype.setHeader;

/** The names miniprof sets, lowercased without making a new string each time. */
function lower(name: string): string {
  switch (name) {
    case 'Cache-Control':
      return 'cache-control';
    case 'Server-Timing':
      return 'server-timing';
    case 'Link':
      return 'link';
    case 'X-Miniprof-Id':
      return 'x-miniprof-id';
    default:
      return name.toLowerCase();
  }
}

function lowercase(k: string): boolean {
  for (let i = 0; i < k.length; i++) {
    const c = k.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) return false;
  }
  return true;
}

/** `[[name, value], …]` or `[name, value, name, value, …]`, the two forms writeHead takes. */
function setFromArray(res: ServerResponse, given: unknown[]): void {
  if (given.length > 0 && Array.isArray(given[0])) {
    for (const pair of given as [string, never][]) res.setHeader(pair[0], pair[1]);
    return;
  }
  // The TypeError on-headers gives for it (miniprof used on-headers before).
  if (given.length % 2 !== 0) throw new TypeError('headers array is malformed');
  for (let i = 0; i < given.length; i += 2) res.setHeader(given[i] as string, given[i + 1] as never);
}

