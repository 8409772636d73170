import type { IncomingMessage, ServerResponse } from 'node:http';
import onHeaders from 'on-headers';
import { runInProfile } from '../src/context.js';
import { report } from '../src/errors.js';
import { resolveHttp, type MiniprofOptions } from '../src/http/config.js';
import { ProfiledResponse, stripConditionals } from '../src/http/response.js';
import { decide, serveResults, underBase, type Developer, type ResultsReply } from '../src/results/routes.js';

export type { MiniprofOptions } from '../src/http/config.js';

type Next = (err?: unknown) => void;
type Req = IncomingMessage & { originalUrl?: string };
type End = ServerResponse['end'];

/**
 * Responses already profiled by a miniprof mounted further up (app and sub-app both). Kept in one
 * WeakSet per process, shared by every copy of miniprof, rather than in a property of `res`: a
 * symbol-keyed property added to a ServerResponse cost about 60,000 instructions per developer
 * request on Node 20 (bench/instructions, Express `open` row, 1,170,000 -> 1,110,000).
 */
const PROFILED: WeakSet<object> = ((globalThis as Record<symbol, unknown>)[Symbol.for('miniprof.express.profiled')] ??= new WeakSet()) as WeakSet<object>;

/**
 * Express middleware (Express 4.21+ and 5). Mount it early, after `compression()` if you use
 * it, so the comment is written before the body is compressed.
 *
 * For a developer's request it runs the rest of the chain inside a profile, adds the HTML
 * comment to a whole HTML body, and sets `Server-Timing`. For anyone else it calls `next()` and
 * touches nothing: no AsyncLocalStorage, no wrapper on `res`.
 *
 * @example
 * import { miniprof } from 'miniprof/express';
 * app.use(miniprof({ isDeveloper: (req) => req.user?.admin === true }));
 */
export function miniprof<R extends Req = Req>(options?: MiniprofOptions<R>): (req: R, res: ServerResponse, next: Next) => void {
  // Generic so `isDeveloper: (req: express.Request) => …` type-checks without this file importing express.
  const cfg = resolveHttp<R>(options, 'miniprof/express', (req) => req.socket?.remoteAddress);
  if (cfg.isDeveloper === null) return (_req, _res, next) => next();

  const results = cfg.results;

  function profile(req: Req, res: ServerResponse, next: Next, owner: string): void {
    // The client left while an async isDeveloper (or an async middleware before us) was busy:
    // 'close' has fired already, so nothing would seal a profile opened now, and it would hold
    // the promise hooks on until maxDurationMs.
    if (res.destroyed) return next();
    PROFILED.add(res);
    let state: ProfiledResponse;
    try {
      state = instrument(req, res, owner);
    } catch (err) {
      // Setting up is the profiler's business: if it fails, the request goes on unprofiled.
      report(cfg.core.onInternalError, err);
      return next();
    }
    runInProfile(state.profile, next);
  }

  function instrument(req: Req, res: ServerResponse, owner: string): ProfiledResponse {
    const state = new ProfiledResponse(cfg as never, req.method, req.originalUrl ?? req.url, owner);
    stripConditionals(req.headers);
    onHeaders(res, function (this: ServerResponse) {
      state.writeHeaders(this);
    });
    const end = res.end as (...args: unknown[]) => ServerResponse;
    res.end = function (this: ServerResponse, chunk?: unknown, encoding?: unknown, cb?: unknown) {
      if (this.headersSent || chunk === undefined || chunk === null || typeof chunk === 'function') {
        state.body(this, this.statusCode, undefined);
        return end.apply(this, arguments as unknown as unknown[]);
      }
      const enc = typeof encoding === 'string' ? encoding : undefined;
      const body = state.body(this, this.statusCode, chunk, enc);
      if (body === null) return end.apply(this, arguments as unknown as unknown[]);
      if (this.getHeader('content-length') !== undefined) {
        const length = typeof body === 'string' ? Buffer.byteLength(body, enc as BufferEncoding | undefined) : body.byteLength;
        this.setHeader('Content-Length', length);
      }
      return end.call(this, body, encoding, cb);
    } as End;
    res.once('close', () => state.finish(res));
    return state;
  }

  /** A results page for a developer, or the app's own answer (404/405) when we serve nothing there. */
  function answer(req: Req, res: ServerResponse, next: Next, dev: Developer, url: string): void {
    const https = (req as { secure?: boolean }).secure === true || (req.socket as { encrypted?: boolean }).encrypted === true;
    serveResults(results!, dev, req.method, url, https, cfg.core.onInternalError).then(
      (r) => (r === null ? next() : write(res, r)),
      (err: unknown) => {
        report(cfg.core.onInternalError, err);
        next();
      },
    ).catch((err: unknown) => report(cfg.core.onInternalError, err));
  }

  return function miniprofMiddleware(req, res, next) {
    // Mounted twice on one path (app and sub-app): the outer profile already covers this request.
    if (PROFILED.has(res)) return next();
    const dev = decide(cfg, req, cookieOf);
    if (dev === null) return next();
    if (dev instanceof Promise) {
      // `next()` continues the app's chain; a throw there must not become an unhandled rejection.
      dev.then((d) => (d === null ? next() : developer(req, res, next, d))).catch((err: unknown) => report(cfg.core.onInternalError, err));
      return;
    }
    developer(req, res, next, dev);
  };

  function developer(req: Req, res: ServerResponse, next: Next, dev: Developer): void {
    const url = req.originalUrl ?? req.url;
    if (results !== null && underBase(results, url)) return answer(req, res, next, dev, url!);
    profile(req, res, next, dev.owner);
  }
}

function cookieOf(req: IncomingMessage): unknown {
  return req.headers.cookie;
}

function write(res: ServerResponse, r: ResultsReply): void {
  if (res.headersSent) return;
  res.writeHead(r.status, r.headers);
  res.end(r.body);
}

export default miniprof;
