import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context, MiddlewareHandler, Next } from 'hono';
import { runInProfile } from '../src/core/context.js';
import { report } from '../src/core/errors.js';
import { resolveHttp, type HttpConfig, type MiniprofOptions } from '../src/http/config.js';
import { finishResponse, replyResponse } from '../src/http/fetch.js';
import { captureNode, isProfiled, markProfiled, sealOnClose } from '../src/http/node.js';
import type { Headers as NodeHeaders } from '../src/http/proxy.js';
import { openCapture, openProfile, stripConditionals } from '../src/http/response.js';
import { cpuHeaders } from '../src/http/cpu.js';
import { decide, serveResults, underBase, type Developer } from '../src/results/routes.js';
import { timeHonoRender } from '../src/http/views.js';

export type { MiniprofOptions } from '../src/http/config.js';

/** What @hono/node-server passes as `c.env` (its `HttpBindings`), as far as we read it. */
type Bindings = { incoming?: IncomingMessage; outgoing?: ServerResponse } | undefined;

function incoming(c: Context): IncomingMessage | undefined {
  return (c.env as Bindings)?.incoming;
}

/** Path and query of the request URL (`c.req.url` is absolute). */
function target(url: string): string {
  const at = url.indexOf('/', url.indexOf('://') + 3);
  return at === -1 ? '/' : url.slice(at);
}

/** HTTPS as seen on the Node socket (the URL's scheme can come from the request line), else the URL's. */
function secure(c: Context): boolean {
  const node = incoming(c);
  return node !== undefined ? (node.socket as { encrypted?: boolean } | null)?.encrypted === true : c.req.url.startsWith('https:');
}

/** The request's headers as Node gives them (lowercase names): the Node request's, else the fetch Request's. */
function headersOf(c: Context): NodeHeaders {
  const node = incoming(c);
  return node !== undefined ? node.headers : Object.fromEntries(c.req.raw.headers);
}

/**
 * Conditional headers would let the app (Hono's `etag()`, say) answer 304 with an old, unprofiled
 * page. The request's headers cannot be changed, so the developer's request gets a copy without
 * them (`c.req.raw` is Hono's public field for the request); the Node request loses them too.
 */
function dropConditionals(c: Context): void {
  const node = incoming(c);
  if (node !== undefined) stripConditionals(node.headers);
  const raw = c.req.raw;
  // Only GET and HEAD are answered 304; a request with a body is left as it came.
  if (raw.method !== 'GET' && raw.method !== 'HEAD') return;
  if (!raw.headers.has('if-none-match') && !raw.headers.has('if-modified-since')) return;
  const headers = new Headers(raw.headers);
  headers.delete('if-none-match');
  headers.delete('if-modified-since');
  c.req.raw = new Request(raw, { headers });
}

async function developer(cfg: HttpConfig<Context>, c: Context, next: Next, dev: Developer): Promise<Response | void> {
  const onError = cfg.core.onInternalError;
  const url = target(c.req.url);
  if (cfg.results !== null && underBase(cfg.results, url)) {
    const r = await serveResults(cfg.results, dev, c.req.method, url, secure(c), onError, headersOf(c)).catch((err: unknown) => (report(onError, err), null));
    return r === null ? next() : replyResponse(r);
  }
  const out = (c.env as Bindings)?.outgoing;
  // The client left while an async isDeveloper was answering: 'close' has fired already, and
  // nothing would seal a profile opened now.
  if (out?.destroyed === true) return next();
  // Only what CPU sampling reads (src/http/cpu.ts): Hono's conditionals are dropped below, its own way.
  const p = openProfile(cfg as HttpConfig<never>, c.req.method, url, dev.owner, cpuHeaders((name) => c.req.header(name)), c);
  if (p === null) return next();
  markProfiled(c);
  // `c.render` (c.setRenderer, jsxRenderer) as a step.
  if (cfg.autoSteps) timeHonoRender(c);
  try {
    dropConditionals(c);
  } catch (err) {
    report(onError, err);
  }
  // Sealed when the Node response closes (a streamed body may still be going out then); without
  // one (`app.request()`), once the response is handed back.
  if (out !== undefined) sealOnClose(p, out.req?.socket, out);
  try {
    await runInProfile(p.profile, next);
  } finally {
    // The app's response is complete as far as it is concerned: Hono answers after this returns.
    // Unset first, so Hono does not copy the old headers (an ETag, say) back over ours (honojs/hono#970).
    const res = await finishResponse(p, c.res, c.req.method, onError);
    c.res = undefined;
    c.res = res;
    if (out === undefined) p.close(res.status, true);
  }
}

/**
 * Hono middleware, for Hono on Node (`@hono/node-server`) and anywhere `app.request()` runs it.
 *
 * For a developer's request the rest of the chain runs inside a profile; the comment goes into a
 * whole HTML response (one already complete, at most 1 MiB: never a stream such as `streamSSE`),
 * and `Server-Timing` and the cache headers onto `c.res`. For anyone else it calls `next()` and
 * touches nothing; with `capture` on, a sampled request runs inside a profile and its response is
 * still left as the app made it. The default developer rule reads the peer from the Node request that
 * `@hono/node-server` passes in `c.env.incoming`.
 *
 * @example
 * import { miniprof } from 'miniprof/hono';
 * app.use(miniprof({ isDeveloper: (c) => c.get('user')?.admin === true }));
 */
export function miniprof(options?: MiniprofOptions<Context>): MiddlewareHandler {
  const cfg = resolveHttp<Context>(options, 'miniprof/hono', (c) => incoming(c)?.socket?.remoteAddress, [], headersOf, secure);
  if (cfg.isDeveloper === null && cfg.capture === null) return (_c, next) => next();
  /** Not a developer's: the app alone, or now and then a captured profile of it (no hook on its response). */
  function other(c: Context, next: Next): Promise<void> {
    if (cfg.capture === null) return next();
    const node = incoming(c);
    const out = (c.env as Bindings)?.outgoing;
    const url = target(c.req.url);
    const onNode = node !== undefined && out !== undefined;
    const p = onNode ? captureNode(cfg as HttpConfig<never>, node, out, url, c) : openCapture(cfg as HttpConfig<never>, c.req.method, url, c);
    if (p === null) return next();
    markProfiled(c);
    // On Node, sealed when the response closes (captureNode's listeners).
    if (onNode) return runInProfile(p.profile, next);
    // No Node response to close (`app.request()`): sealed once the Response is handed back.
    return runInProfile(p.profile, next).then(
      () => p.close(c.res.status, true),
      (err: unknown) => {
        p.close(500, false);
        throw err;
      },
    );
  }
  return function miniprofMiddleware(c, next) {
    if (isProfiled(c)) return next();
    const dev = decide(cfg, c, (x) => x.req.header('cookie'));
    if (dev === null) return other(c, next);
    if (dev instanceof Promise) return dev.then((d) => (d === null ? other(c, next) : developer(cfg, c, next, d)));
    return developer(cfg, c, next, dev);
  };
}

export default miniprof;
