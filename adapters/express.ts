import type { IncomingMessage, ServerResponse } from 'node:http';
import onHeaders from 'on-headers';
import { runInProfile } from '../src/context.js';
import { report } from '../src/errors.js';
import { resolveHttp, type MiniprofOptions } from '../src/http/config.js';
import { askDeveloper, ProfiledResponse, stripConditionals } from '../src/http/response.js';

export type { MiniprofOptions } from '../src/http/config.js';

type Next = (err?: unknown) => void;
type Req = IncomingMessage & { originalUrl?: string };
type End = ServerResponse['end'];

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

  function profile(req: Req, res: ServerResponse, next: Next): void {
    let state: ProfiledResponse;
    try {
      state = instrument(req, res);
    } catch (err) {
      // Setting up is the profiler's business: if it fails, the request goes on unprofiled.
      report(cfg.core.onInternalError, err);
      return next();
    }
    runInProfile(state.profile, next);
  }

  function instrument(req: Req, res: ServerResponse): ProfiledResponse {
    const state = new ProfiledResponse(cfg as never, req.method, req.originalUrl ?? req.url);
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

  return function miniprofMiddleware(req, res, next) {
    askDeveloper(cfg, req, (yes) => (yes ? profile(req, res, next) : next()));
  };
}

export default miniprof;
