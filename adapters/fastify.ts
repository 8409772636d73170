import type { ServerResponse } from 'node:http';
import type { FastifyPluginCallback, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import { runInProfile } from '../src/core/context.js';
import { report } from '../src/core/errors.js';
import { resolveHttp, type HttpConfig, type MiniprofOptions } from '../src/http/config.js';
import { timeFastifyHandler } from '../src/http/fastify-handler.js';
import { captureNode, runEventsInProfile, sealOnClose } from '../src/http/node.js';
import { openProfile, type ProfiledResponse } from '../src/http/response.js';
import { decide, serveResults, underBase, type Developer } from '../src/results/routes.js';
import { hookHead } from '../src/http/head.js';
import { timeFastifyView } from '../src/http/views.js';

export type { MiniprofOptions } from '../src/http/config.js';

type Cfg = HttpConfig<FastifyRequest>;

/** Keys Fastify itself may pass along with `register` options. */
const FASTIFY_KEYS = ['prefix', 'logLevel', 'logSerializers'];

/** A Node stream or a web ReadableStream: not a whole body. */
function isStream(payload: unknown): boolean {
  const p = payload as { pipe?: unknown; getReader?: unknown } | null;
  return typeof p === 'object' && p !== null && (typeof p.pipe === 'function' || typeof p.getReader === 'function');
}

/**
 * One global `onRequest` hook and nothing else: a global `onSend` would cost every request. A
 * developer's request gets wrappers on its own reply: `send` (the comment goes into a whole HTML
 * payload before `onSend` hooks such as compression run), `hijack` (a hijacked reply is the app's
 * own), on-headers on the raw response (our headers after every `onSend` hook), and the seal on
 * close.
 */
function hookReply(p: ProfiledResponse, request: FastifyRequest, reply: FastifyReply): void {
  const send = reply.send;
  reply.send = function (this: FastifyReply, payload?: unknown): FastifyReply {
    if (payload instanceof Error || isStream(payload)) return send.call(this, payload);
    return send.call(this, p.body(this, this.statusCode, payload) ?? payload);
  };
  const hijack = reply.hijack;
  reply.hijack = function (this: FastifyReply): FastifyReply {
    p.hijacked = true;
    return hijack.call(this);
  };
  hookHead(p, reply.raw as ServerResponse);
  sealOnClose(p, request.raw.socket, reply.raw);
  // Fastify calls `parseAs: 'string' | 'buffer'` content-type parsers from the body stream's 'end'.
  runEventsInProfile(p, request.raw);
}

function developer(cfg: Cfg, request: FastifyRequest, reply: FastifyReply, next: HookHandlerDoneFunction, dev: Developer): void {
  const raw = request.raw;
  if (cfg.results !== null && underBase(cfg.results, raw.url)) return answer(cfg, request, reply, next, dev);
  // The client left while an async isDeveloper was answering: 'close' has fired already, so
  // nothing would seal a profile opened now.
  if (reply.raw.destroyed) return next();
  const p = openProfile(cfg as HttpConfig<never>, raw.method, raw.url, dev.owner, raw.headers, request);
  if (p === null) return next();
  hookReply(p, request, reply);
  if (cfg.autoSteps) {
    // The route handler (Fastify's tracing channel) and @fastify/view's pages as steps.
    timeFastifyHandler(reply, reply.raw, cfg.core.onInternalError);
    timeFastifyView(reply, cfg.core.onInternalError);
  }
  runInProfile(p.profile, next);
}

/** Not a developer's: with capture on, now and then profiled with no hook on its reply at all. */
function other(cfg: Cfg, request: FastifyRequest, reply: FastifyReply, next: HookHandlerDoneFunction): void {
  const p = cfg.capture === null ? null : captureNode(cfg as HttpConfig<never>, request.raw, reply.raw, request.raw.url, request);
  if (p === null) return next();
  runEventsInProfile(p, request.raw);
  runInProfile(p.profile, next);
}

/**
 * A results page, sent from the hook (Fastify allows a reply from onRequest), or the app's own
 * answer when we serve nothing there: routing already ran, so `next()` reaches the app's route
 * or its 404 handler exactly as without the plugin.
 */
function answer(cfg: Cfg, request: FastifyRequest, reply: FastifyReply, next: HookHandlerDoneFunction, dev: Developer): void {
  const onError = cfg.core.onInternalError;
  serveResults(cfg.results!, dev, request.raw.method, request.raw.url!, cfg.https(request), onError, request.raw.headers)
    .then((r) => (r === null ? next() : reply.code(r.status).headers(r.headers).send(r.body)), (err: unknown) => (report(onError, err), next()))
    .catch((err: unknown) => report(onError, err));
}

const cookieOf = (request: FastifyRequest): unknown => request.raw.headers.cookie;

const plugin: FastifyPluginCallback<MiniprofOptions<FastifyRequest>> = (fastify, options, done) => {
  let cfg: Cfg;
  try {
    cfg = resolveHttp<FastifyRequest>(options, 'miniprof/fastify', (req) => req.raw.socket?.remoteAddress, FASTIFY_KEYS);
  } catch (err) {
    // A callback plugin that throws is not failed by avvio: the error escapes as an uncaught
    // exception and `ready()` waits for pluginTimeout. `done(err)` rejects register/ready with it.
    return done(err as Error);
  }
  if (cfg.isDeveloper === null && cfg.capture === null) return done();
  fastify.addHook('onRequest', function miniprofOnRequest(request, reply, next) {
    const dev = decide(cfg, request, cookieOf);
    if (dev === null) return other(cfg, request, reply, next);
    if (dev instanceof Promise) {
      // `next()` continues Fastify's chain; a throw there must not become an unhandled rejection.
      dev.then((d) => (d === null ? other(cfg, request, reply, next) : developer(cfg, request, reply, next, d))).catch((err: unknown) => report(cfg.core.onInternalError, err));
      return;
    }
    developer(cfg, request, reply, next, dev);
  });
  done();
};

/**
 * Fastify 5 plugin, wrapped with fastify-plugin so its hook covers every route and child plugin.
 *
 * @example
 * import { miniprof } from 'miniprof/fastify';
 * await app.register(miniprof, { isDeveloper: (req) => req.user?.admin === true });
 */
export const miniprof = fp(plugin, { fastify: '5.x', name: 'miniprof' });

export default miniprof;
