import { OutgoingMessage, ServerResponse } from 'node:http';
import { closeProfile } from '../core/context.js';
import { debug, report } from '../core/errors.js';
import { toText } from '../core/names.js';
import { Profile } from '../core/profile.js';
import type { ProfileJSON } from '../core/types.js';
import { renderServerTiming } from '../render/server-timing.js';
import { renderHtmlComment } from '../render/text.js';
import { badgeTag } from './badge.js';
import type { HttpConfig } from './config.js';
import { headerString, injectable, noTransform, splice, type Body, type HeaderView } from './inject.js';
import { linkHeaders, saveProfile } from '../results/save.js';
import { unwatch, watch, type Expiring } from './deadline.js';
import type { Linked } from '../core/linked.js';
import { monotonic } from '../core/clock.js';
import type { HeaderTarget } from '../results/save.js';

const TEXT_ENCODINGS = /^(?:utf-?8|latin1|binary|ascii)$/i;

function byteLength(body: Body, encoding: unknown): number {
  if (typeof body !== 'string') return body.byteLength;
  return Buffer.byteLength(body, typeof encoding === 'string' && Buffer.isEncoding(encoding) ? encoding : 'utf8');
}

/** The query string can hold secrets, and the path is all a reader needs. */
function pathOf(url: string | undefined): string {
  if (url === undefined) return '/';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/**
 * The adapter-independent half of one developer request: the profile, the header written at
 * `writeHead`, the comment spliced into a whole HTML body, the seal on close. Every entry point
 * catches its own faults and reports them: the app's response must be what it would have been.
 */
export class ProfiledResponse implements Expiring {
  readonly profile: Profile;
  private readonly cfg: HttpConfig<never>;
  private readonly method: string;
  /** The JSON the outputs were rendered from, so the comment and the header agree. */
  private frozen: ProfileJSON | null = null;
  /** Set for Fastify's `reply.hijack()`: the app writes the raw response itself. */
  hijacked = false;
  /** Our headers were written: by writeHeadWith, at the first writeHead only. */
  headersWritten = false;
  /**
   * The status the first writeHead sent (writeHeadWith), 0 before: the request's status at close
   * without reading `res.statusCode`, a stub-cache miss on Express (its `res` has a hidden class
   * of its own by then).
   */
  sentStatus = 0;
  /**
   * The response emitted 'finish' (set by the Express adapter's shared `emit`): with the socket not
   * reset, delivered. Seen as it happens rather than read from `res` at close (see delivered).
   */
  flushed = false;

  /** The request's socket, where the adapter has it at hand (see delivered); undefined: `res.req.socket`. */
  socket: { errored?: unknown } | null | undefined;

  /** Whose profile this is, for the store; undefined when results are off. */
  private readonly owner: string | undefined;

  constructor(cfg: HttpConfig<never>, method: string | undefined, url: string | undefined, owner?: string) {
    this.cfg = cfg;
    this.owner = owner;
    this.socket = undefined;
    this.method = method ?? 'GET';
    const path = toText(pathOf(url), cfg.core.maxNameLength);
    this.profile = new Profile(`${this.method} ${path}`, cfg.core, { method: this.method, path });
    // A response that never ends (server-sent events, a long poll) must not keep its profile,
    // and with it the promise hooks, open forever.
    this.deadlineAt = 0;
    this.prevLink = null;
    this.nextLink = null;
    // The profile's start is that same reading when it runs on the default clock: one read less.
    watch(this, cfg.maxDurationMs, cfg.core.clock === monotonic ? this.profile.t0 : performance.now());
  }

  /** @internal Set by watch(). */
  deadlineAt: number;
  /** @internal Links in the set of responses waiting for their deadline (src/linked.ts). */
  prevLink: Linked | null;
  /** @internal */
  nextLink: Linked | null;

  /**
   * A whole body is being handed over: the response is complete as far as the app is concerned,
   * so the root stops here and the outputs are rendered from this moment. Returns the body with
   * the comment, or null to send it untouched.
   */
  body(h: HeaderView, status: number, body: unknown, encoding?: unknown): Body | null {
    try {
      this.profile.stopRoot();
      this.frozen = this.profile.freeze();
      const badge = this.owner === undefined ? null : (this.cfg.results?.badge ?? null);
      if (!this.cfg.htmlComment && badge === null) return null;
      let mode = injectable(h, status, this.method, body);
      if (mode === null) return null;
      const declared = h.getHeader('content-length');
      if (declared !== undefined && Number(declared) !== byteLength(body as Body, encoding)) {
        debug('no comment: Content-Length %s does not match the body', String(declared));
        return null;
      }
      // 'utf8' is what Express's send passes with every string: no regex for the common case.
      if (typeof body === 'string' && typeof encoding === 'string' && encoding !== 'utf8') {
        if (!TEXT_ENCODINGS.test(encoding)) {
          debug('no comment: string body in %s encoding', encoding);
          return null;
        }
        if (!/^utf-?8$/i.test(encoding)) mode = 'ascii';
      }
      const comment = this.cfg.htmlComment ? renderHtmlComment(this.frozen, { ascii: mode === 'ascii' }) : '';
      // The tag is ASCII (a UUID, the checked base path, a base64 nonce): right in any mode.
      const tag = badge === null ? '' : badgeTag(badge, this.profile.id, h, this.cfg.core.onInternalError);
      return comment === '' && tag === '' ? null : splice(body as Body, comment + tag);
    } catch (err) {
      report(this.cfg.core.onInternalError, err);
      return null;
    }
  }

  /**
   * From the `writeHead` hook: cache safety and `Server-Timing`, set on the response or in the
   * headers given to writeHead (see writeHeadWith).
   */
  writeHeaders(h: HeaderTarget): void {
    if (this.hijacked) return;
    try {
      // no-transform stays: compression() reads it in a header hook that runs after this one.
      h.setHeader('Cache-Control', noTransform(h) ? 'private, no-store, no-transform' : 'private, no-store');
      // Looked up first: with no ETag (Express's `etag` off, a stream, most Fastify replies) there
      // is nothing to remove, and reading `removeHeader` of an Express `res` was a stub-cache miss.
      if (h.getHeader('etag') !== undefined) h.removeHeader('etag');
      if (this.owner !== undefined && this.cfg.results !== null) linkHeaders(h, this.cfg.results.basePath, this.profile.id);
      const st = this.cfg.serverTiming;
      if (st === null) return;
      if (!st.crossOrigin && allowsAnyOrigin(h.getHeader('timing-allow-origin'))) {
        debug('no Server-Timing: Timing-Allow-Origin is *');
        return;
      }
      // The badge's way to find the profile of each of the page's fetch calls without patching
      // fetch: browsers expose Server-Timing to the page (PerformanceResourceTiming.serverTiming).
      const id = this.owner !== undefined && this.cfg.results !== null && this.cfg.results.badge !== null;
      const value = renderServerTiming(this.frozen ?? this.profile.data(), { maxBytes: st.maxBytes, id });
      const prev = h.getHeader('server-timing');
      if (prev === undefined) h.setHeader('Server-Timing', value);
      else if (Array.isArray(prev)) h.setHeader('Server-Timing', [...prev, value]);
      else h.setHeader('Server-Timing', `${String(prev)}, ${value}`);
    } catch (err) {
      report(this.cfg.core.onInternalError, err);
    }
  }

  /**
   * The response closed (finished or aborted): record how, seal once. `finished` defaults to
   * {@link delivered}; an adapter that saw 'finish' says so (light-my-request, behind Fastify's
   * `inject`, emits 'finish' but never sets `writableFinished`).
   */
  finish(res: ServerResponse, finished = delivered(res, this.socket)): void {
    try {
      const req = this.profile.request!;
      req.status = this.sentStatus !== 0 ? this.sentStatus : res.statusCode;
      if (!finished) req.aborted = true;
      unwatch(this);
      // Sealed (and saved) by maxDurationMs already: the JSON is final, and saving it again would
      // only move it in the developer's list.
      if (this.profile.sealed) return;
      closeProfile(this.profile);
      this.save();
    } catch (err) {
      report(this.cfg.core.onInternalError, err);
    }
  }

  /** maxDurationMs passed with the response still open (SSE, a long poll): seal and save it now. */
  expire(): void {
    try {
      if (this.profile.sealed) return;
      this.profile.warn(`sealed after maxDurationMs while the response was still open`);
      closeProfile(this.profile);
      // Saved now, not at close: a stream may never close, and its profile is final anyway.
      this.save();
    } catch (err) {
      report(this.cfg.core.onInternalError, err);
    }
  }

  private save(): void {
    const r = this.cfg.results;
    if (r !== null && this.owner !== undefined) saveProfile(r.store, this.owner, this.profile.data(), this.cfg.core.onInternalError, this.profile.jsonBound());
  }
}

/**
 * Ended and flushed to the client. Node 20 and 22 emit 'finish', and then read `writableFinished`
 * true, for a response whose connection was reset while its end was still being written (a client
 * that left during a large body); Node 24 does not. The request's socket keeps that reset.
 */
export function delivered(res: ServerResponse, socket?: { errored?: unknown } | null): boolean {
  // HTTP/2 (Fastify's `http2: true`): a response's `writableFinished` reads true once its stream
  // is closed, also when the client reset it before anything was sent; the stream says which.
  // Told apart without loading node:http2 for everyone: HTTP/1 responses (light-my-request's too)
  // are ServerResponses.
  if (!(res instanceof ServerResponse)) {
    const h2 = res as { writableEnded: boolean; stream?: { aborted?: boolean } };
    return h2.writableEnded && h2.stream?.aborted !== true;
  }
  // The getter called, and the socket passed, rather than read from `res`: on Express each read of
  // a property of `res` is a stub-cache miss (its hidden class is new per request).
  return WRITABLE_FINISHED.call(res) === true && (socket === undefined ? res.req?.socket : socket)?.errored == null;
}

const WRITABLE_FINISHED = Object.getOwnPropertyDescriptor(OutgoingMessage.prototype, 'writableFinished')!.get!;
const HEADERS_SENT = Object.getOwnPropertyDescriptor(OutgoingMessage.prototype, 'headersSent')!.get!;

/** `res.headersSent`, without looking the getter up on `res` (see delivered). */
export function headersSent(res: ServerResponse): boolean {
  return HEADERS_SENT.call(res) === true;
}

/** `Timing-Allow-Origin` is a list (and may be set as an array): `*` anywhere in it opens it to all. */
function allowsAnyOrigin(v: unknown): boolean {
  return v !== undefined && headerString(v).split(',').some((o) => o.trim() === '*');
}

/** Conditional headers would let the framework answer 304 with an old, unprofiled page. */
export function stripConditionals(headers: Record<string, unknown>): void {
  // Looked up first: `delete` of a key that is not there (most requests) is still a runtime call,
  // ~100 ns against ~10 (scratch micro, Node 20).
  if (headers['if-none-match'] !== undefined) delete headers['if-none-match'];
  if (headers['if-modified-since'] !== undefined) delete headers['if-modified-since'];
}
