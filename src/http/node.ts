import type { IncomingMessage, ServerResponse } from 'node:http';
import { als, runInProfile } from '../core/context.js';
import { report } from '../core/errors.js';
import { decide, serveResults, underBase, type Developer, type ResultsReply } from '../results/routes.js';
import type { HttpConfig } from './config.js';
import { openCapture, openProfile, type ProfiledResponse } from './response.js';
import { hookHead } from './head.js';

/** A connect-style middleware: Express, connect, polka and a plain `node:http` handler all call it so. */
export type NodeMiddleware<Req> = (req: Req, res: ServerResponse, next: (err?: unknown) => void) => void;

/** The response end as the app may call it: `end()`, `end(cb)`, `end(chunk, cb)`, `end(chunk, encoding, cb)`. */
type End = (this: ServerResponse, ...args: unknown[]) => ServerResponse;

/** What `res` closing means for the profile, on HTTP/1 (and light-my-request's fake) and HTTP/2 responses. */
interface Closable {
  statusCode: number;
  once(event: 'finish' | 'close', listener: () => void): unknown;
  /** HTTP/2 compatibility responses only. */
  stream?: { aborted?: boolean };
}

/**
 * Seal `p` when `res` closes, finished or aborted alike. Finished means 'finish' was emitted and
 * nothing reset the transport: Node 20 and 22 emit 'finish' for a response whose connection was
 * reset while its end was still being written (a client that left during a large body), and the
 * request's socket keeps that reset; an HTTP/2 response emits 'finish' at every close, and its
 * stream says whether the client reset it.
 */
export function sealOnClose(p: ProfiledResponse, socket: { errored?: unknown } | null | undefined, res: Closable): void {
  let finished = false;
  res.once('finish', () => {
    finished = true;
  });
  res.once('close', () => {
    const reset = res.stream !== undefined ? res.stream.aborted === true : socket?.errored != null;
    p.close(res.statusCode, finished && !reset);
  });
}

/**
 * Hook one developer's `node:http` response, and only that one (per-response wrappers, as
 * `compression` does): `on-headers` for our headers as the head goes out, its `end` for the
 * comment in a whole HTML body, and the seal on close.
 */
export function hookResponse(p: ProfiledResponse, req: IncomingMessage, res: ServerResponse): void {
  hookHead(p, res);
  const end = res.end as End;
  res.end = function (this: ServerResponse, ...args: unknown[]): ServerResponse {
    const [chunk, encoding, cb] = args;
    // Streamed (the head is out), no body, or `end(cb)`: nothing to add to, the root stops here.
    if (this.headersSent || chunk === undefined || chunk === null || typeof chunk === 'function') {
      p.body(this, this.statusCode, undefined);
      return end.apply(this, args);
    }
    const body = p.body(this, this.statusCode, chunk, typeof encoding === 'string' ? encoding : undefined);
    if (body === null) return end.apply(this, args);
    // A length the app set was checked against the body it gave: it now counts the comment too.
    if (this.getHeader('content-length') !== undefined) {
      this.setHeader('Content-Length', typeof body === 'string' ? Buffer.byteLength(body, encoding as BufferEncoding | undefined) : body.byteLength);
    }
    return end.call(this, body, encoding, cb);
  } as ServerResponse['end'];
  sealOnClose(p, req.socket, res);
}

/**
 * A request that is not a developer's, with capture on: nearly always null, and nothing done.
 * When it is sampled, its profile, sealed when `res` closes; the response gets one 'finish' and
 * one 'close' listener and nothing else: no wrapper, no header, no change to the request. The
 * caller then runs the rest of the chain in it: `runInProfile(p.profile, next)` (which returns
 * what `next` returns, for Koa). `labelReq` is what `captureLabel` is given: the framework's own
 * request.
 */
export function captureNode(cfg: HttpConfig<never>, req: IncomingMessage, res: ServerResponse, url: string | undefined, labelReq: unknown): ProfiledResponse | null {
  // The client left already: 'close' has fired, and nothing would seal a profile opened now.
  if (res.destroyed) return null;
  const p = openCapture(cfg, req.method, url, labelReq);
  if (p === null) return null;
  markProfiled(res);
  sealOnClose(p, req.socket, res);
  return p;
}

/**
 * Run the request stream's events in the profile. Node runs a stream's events in the socket's
 * context, not the request's (nodejs/node#41285), so steps in a body parser that works from
 * 'data'/'end' listeners (Fastify's `parseAs` parsers) were lost. Re-entered as on-finished does
 * for its listeners; only while the profile is open, so that an event after the seal cannot
 * switch the hooks on again.
 */
export function runEventsInProfile(p: ProfiledResponse, req: IncomingMessage): void {
  const emit = req.emit;
  req.emit = function (this: IncomingMessage, ...args: Parameters<IncomingMessage['emit']>): boolean {
    if (p.profile.sealed) return emit.apply(this, args);
    return als.run(p.profile.root, () => emit.apply(this, args));
  } as IncomingMessage['emit'];
}

/**
 * This copy's mark on what it profiles or samples (a response, a Koa or Hono context): mounted
 * twice (app and sub-app), the outer profile covers the request.
 */
const PROFILED = Symbol('miniprof.profiled');
type Marked = { [PROFILED]?: true };

export function markProfiled(x: object): void {
  (x as Marked)[PROFILED] = true;
}

export function isProfiled(x: object): boolean {
  return (x as Marked)[PROFILED] === true;
}

function cookieOf(req: IncomingMessage): unknown {
  return req.headers.cookie;
}

/** HTTPS as seen on the socket: no proxy header is believed. */
export function encrypted(req: IncomingMessage): boolean {
  return (req.socket as { encrypted?: boolean } | null)?.encrypted === true;
}

/**
 * The whole connect-style middleware for `node:http` responses: decide, serve the results pages,
 * or profile the rest of the chain. For anyone but a developer it calls `next()` and nothing
 * else, unless capture samples the request (then `next()` runs in a profile the response never
 * shows: see captureNode). Whether the request came over HTTPS (for the opt-in cookie's `Secure`) is `cfg.https`.
 * The URL is `req.originalUrl` where the framework keeps one (Express, connect and polka rewrite
 * `req.url` under a mount path), else `req.url`. `onDeveloper` gets each profiled developer
 * response, hooked, before the chain runs: the framework's own wrappers (Express's render step).
 */
export function developerMiddleware<Req extends IncomingMessage>(cfg: HttpConfig<Req>, onDeveloper?: (res: ServerResponse) => void): NodeMiddleware<Req> {
  const capture = cfg.capture !== null;
  if (cfg.isDeveloper === null && !capture) return (_req, _res, next) => next();
  const onError = cfg.core.onInternalError;

  /** Not a developer's: the app alone, or now and then a captured profile of it. */
  function other(req: Req, res: ServerResponse, next: (err?: unknown) => void): void {
    const p = captureNode(cfg as HttpConfig<never>, req, res, (req as { originalUrl?: string }).originalUrl ?? req.url, req);
    if (p === null) return next();
    runInProfile(p.profile, next);
  }

  function developer(req: Req, res: ServerResponse, next: (err?: unknown) => void, dev: Developer): void {
    const url = (req as { originalUrl?: string }).originalUrl ?? req.url;
    if (cfg.results !== null && underBase(cfg.results, url)) {
      serveResults(cfg.results, dev, req.method, url!, cfg.https(req), onError, req.headers).then(
        (r) => (r === null ? outside(next) : writeReply(res, r)),
        (err: unknown) => (report(onError, err), outside(next)),
      ).catch((err: unknown) => report(onError, err));
      return;
    }
    // The client left while an async isDeveloper (or a middleware before us) was busy: 'close'
    // has fired already, and nothing would seal a profile opened now.
    if (res.destroyed) return next();
    const p = openProfile(cfg as HttpConfig<never>, req.method, url, dev.owner, req.headers, req);
    if (p === null) return next();
    markProfiled(res);
    hookResponse(p, req, res);
    onDeveloper?.(res);
    runInProfile(p.profile, next);
  }

  return function miniprofMiddleware(req, res, next) {
    if (isProfiled(res)) return next();
    const dev = decide(cfg, req, cookieOf);
    // Capture off: the common answer, a synchronous no, is `next()` and nothing else, as before.
    if (dev === null) return capture ? other(req, res, next) : next();
    if (dev instanceof Promise) {
      void dev.then((d) => (d === null ? outside(other, req, res, next) : outside(developer, req, res, next, d)));
      return;
    }
    developer(req, res, next, dev);
  };
}

/**
 * Go on with the app's chain after a promise of ours settled, outside that promise: an exception
 * the app throws then surfaces as it would without miniprof (an uncaught exception, as from a
 * request listener), instead of a rejection nobody handles or a fault of ours.
 */
function outside<A extends unknown[]>(fn: (...args: A) => void, ...args: A): void {
  process.nextTick(fn, ...args);
}

/** A results page, unless the app has already answered. */
function writeReply(res: ServerResponse, r: ResultsReply): void {
  if (res.headersSent) return;
  res.writeHead(r.status, r.headers);
  res.end(r.body);
}
