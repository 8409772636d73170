import type Koa from 'koa';
import { runInProfile } from '../src/core/context.js';
import { report } from '../src/core/errors.js';
import { resolveHttp, type HttpConfig, type MiniprofOptions } from '../src/http/config.js';
import { captureNode, isProfiled, markProfiled, sealOnClose } from '../src/http/node.js';
import { openProfile, type ProfiledResponse } from '../src/http/response.js';
import { decide, serveResults, underBase, type Developer } from '../src/results/routes.js';
import { hookHead } from '../src/http/head.js';
import { timeKoaRender } from '../src/http/views.js';

export type { MiniprofOptions } from '../src/http/config.js';

type Ctx = Koa.Context;

function cookieOf(ctx: Ctx): unknown {
  return ctx.req.headers.cookie;
}

/**
 * After the chain: the app's response is complete as far as it is concerned, so the root stops
 * here, and a whole HTML `ctx.body` (a string or a Buffer, never a stream) gets the comment. Koa
 * writes the head and the body itself afterwards (`respond`), and recomputes the length when the
 * body is set.
 */
function finish(p: ProfiledResponse, ctx: Ctx): void {
  const res = ctx.res;
  const whole = ctx.respond !== false && !res.headersSent && (typeof ctx.body === 'string' || Buffer.isBuffer(ctx.body));
  const body = p.body(res, ctx.status, whole ? ctx.body : undefined);
  if (body !== null) ctx.body = typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

async function developer(cfg: HttpConfig<Ctx>, ctx: Ctx, next: Koa.Next, dev: Developer): Promise<void> {
  const onError = cfg.core.onInternalError;
  const url = ctx.originalUrl;
  if (cfg.results !== null && underBase(cfg.results, url)) {
    // `ctx.secure` is Koa's: it also believes X-Forwarded-Proto when the app set `app.proxy`.
    const r = await serveResults(cfg.results, dev, ctx.method, url, ctx.secure, onError, ctx.req.headers).catch((err: unknown) => (report(onError, err), null));
    if (r === null) return next();
    ctx.status = r.status;
    ctx.set(r.headers);
    ctx.body = r.body;
    return;
  }
  // The client left while an async isDeveloper was answering: 'close' has fired already, and
  // nothing would seal a profile opened now.
  if (ctx.res.destroyed) return next();
  const p = openProfile(cfg as HttpConfig<never>, ctx.method, url, dev.owner, ctx.req.headers, ctx);
  if (p === null) return next();
  markProfiled(ctx);
  // koa-views' `ctx.render` as a step, whichever of the two was mounted first.
  if (cfg.autoSteps) timeKoaRender(ctx);
  // Koa writes the head after the chain returns, or the app does on `ctx.res` (`ctx.respond =
  // false`), or Koa's error handler does: on-headers sees every one of them.
  hookHead(p, ctx.res);
  sealOnClose(p, ctx.req.socket, ctx.res);
  try {
    await runInProfile(p.profile, next);
  } catch (err) {
    // Koa's error handler answers: the root stops here, the body is the handler's own.
    p.body(ctx.res, ctx.status, undefined);
    throw err;
  }
  finish(p, ctx);
}

/**
 * Koa middleware (Koa 2 and 3). Mount it first, so the rest of the chain runs inside the profile.
 *
 * For a developer's request `await next()` runs inside a profile; afterwards a whole HTML
 * `ctx.body` gets the comment, and the head Koa writes gets `Server-Timing` and the cache headers.
 * For anyone else it calls `next()` and touches nothing; with `capture` on, a sampled request runs
 * inside a profile and its response is still left as the app made it.
 *
 * @example
 * import { miniprof } from 'miniprof/koa';
 * app.use(miniprof({ isDeveloper: (ctx) => ctx.state.user?.admin === true }));
 */
export function miniprof(options?: MiniprofOptions<Ctx>): Koa.Middleware {
  const cfg = resolveHttp<Ctx>(
    options,
    'miniprof/koa',
    (ctx) => ctx.req.socket?.remoteAddress,
    [],
    (ctx) => ctx.req.headers,
    (ctx) => ctx.secure,
  );
  if (cfg.isDeveloper === null && cfg.capture === null) return (_ctx, next) => next();
  /** Not a developer's: the app alone, or now and then a captured profile of it. */
  function other(ctx: Ctx, next: Koa.Next): Promise<unknown> {
    const p = cfg.capture === null ? null : captureNode(cfg as HttpConfig<never>, ctx.req, ctx.res, ctx.originalUrl, ctx);
    if (p === null) return next();
    markProfiled(ctx);
    return runInProfile(p.profile, next);
  }
  return function miniprofMiddleware(ctx, next) {
    if (isProfiled(ctx)) return next();
    const dev = decide(cfg, ctx, cookieOf);
    if (dev === null) return other(ctx, next);
    if (dev instanceof Promise) return dev.then((d) => (d === null ? other(ctx, next) : developer(cfg, ctx, next, d)));
    return developer(cfg, ctx, next, dev);
  };
}

export default miniprof;
