import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyPluginCallback, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import onHeaders from 'on-headers';
import { als, runInProfile } from '../src/context.js';
import { report } from '../src/errors.js';
import { resolveHttp, type HttpConfig, type MiniprofOptions } from '../src/http/config.js';
import { ProfiledResponse, stripConditionals } from '../src/http/response.js';
import { decide, serveResults, underBase, type Developer } from '../src/results/routes.js';

export type { MiniprofOptions } from '../src/http/config.js';

/** Keys Fastify itself may pass along with `register` options. */
const FASTIFY_KEYS = ['prefix', 'logLevel', 'logSerializers'];

function isStream(payload: unknown): boolean {
  if (payload === null || typeof payload !== 'object') return false;
  const p = payload as { pipe?: unknown; getReader?: unknown };
  return typeof p.pipe === 'function' || typeof p.getReader === 'function';
}

/**
 * One global `onRequest` hook and nothing else: a global `onSend` would cost every request.
 * For a developer's request the rest is attached to that request only: `reply.send` (to splice
 * the comment into a whole HTML payload, before `onSend` hooks such as compression run),
 * `reply.hijack` (a hijacked reply is the app's own), and the raw response's `writeHead` (for
 * `Server-Timing`, after every `onSend` hook) and `close` (to seal, on finish and on abort alike).
 */
function profile(cfg: HttpConfig<FastifyRequest>, request: FastifyRequest, reply: FastifyReply, next: HookHandlerDoneFunction, owner: string): void {
  // The client left while an async isDeveloper was answering: 'close' has fired already, so
  // nothing would seal a profile opened now (and it would hold the promise hooks on).
  if (reply.raw.destroyed) return next();
  let state: ProfiledResponse;
  try {
    state = instrument(cfg, request, reply, owner);
  } catch (err) {
    // Setting up is the profiler's business: if it fails, the request goes on unprofiled.
    report(cfg.core.onInternalError, err);
    return next();
  }
  runInProfile(state.profile, enter, request.raw, next);
}

/**
 * Runs inside the profile. Fastify calls `parseAs: 'string' | 'buffer'` content-type parsers from
 * the body stream's 'end' event, and Node runs a stream's events in the socket's context, not the
 * request's (nodejs/node#41285): steps in such a parser were lost. The request stream's events
 * are re-entered in the profile, as on-finished does for its listeners.
 */
function enter(req: IncomingMessage, next: HookHandlerDoneFunction): void {
  // Not AsyncResource.bind: on Node 20 it costs a new async resource, two util.deprecate wrappers
  // and a defineProperties per request (~4% of a profiled Fastify request's CPU in bench/profile.js).
  // Only our own store needs restoring, and only while the profile is open: an event after the
  // seal must not re-enable an ALS that closeProfile released.
  const root = als.getStore()!;
  const emit = req.emit;
  req.emit = function (this: IncomingMessage, ...args: unknown[]): boolean {
    return root.profile === null ? Reflect.apply(emit, req, args) : als.run(root, Reflect.apply, emit, req, args);
  } as IncomingMessage['emit'];
  next();
}

function instrument(cfg: HttpConfig<FastifyRequest>, request: FastifyRequest, reply: FastifyReply, owner: string): ProfiledResponse {
  const raw = reply.raw;
  const state = new ProfiledResponse(cfg as never, request.raw.method, request.raw.url, owner);
  stripConditionals(request.raw.headers);
  onHeaders(raw, function (this: ServerResponse) {
    state.writeHeaders(this);
  });
  const send = reply.send;
  reply.send = function (this: FastifyReply, payload?: unknown) {
    if (payload instanceof Error || isStream(payload)) return send.call(this, payload);
    const body = state.body(this, this.statusCode, payload);
    return send.call(this, body ?? payload);
  };
  const hijack = reply.hijack;
  reply.hijack = function (this: FastifyReply) {
    state.hijacked = true;
    return hijack.call(this);
  };
  let finished = false;
  raw.once('finish', () => (finished = true));
  raw.once('close', () => state.finish(raw, finished || raw.writableFinished));
  return state;
}

/**
 * A results page, sent from the hook (Fastify allows a reply from onRequest), or the app's own
 * answer when we serve nothing there: routing already ran, so `next()` reaches the app's route
 * or its 404 handler exactly as without the plugin.
 */
function answer(cfg: HttpConfig<FastifyRequest>, request: FastifyRequest, reply: FastifyReply, next: HookHandlerDoneFunction, dev: Developer): void {
  serveResults(cfg.results!, dev, request.raw.method, request.raw.url!, request.protocol === 'https', cfg.core.onInternalError).then(
    (r) => (r === null ? next() : reply.code(r.status).headers(r.headers).send(r.body)),
    (err: unknown) => {
      report(cfg.core.onInternalError, err);
      next();
    },
  ).catch((err: unknown) => report(cfg.core.onInternalError, err));
}

const plugin: FastifyPluginCallback<MiniprofOptions<FastifyRequest>> = (fastify, options, done) => {
  let cfg: HttpConfig<FastifyRequest>;
  try {
    cfg = resolveHttp<FastifyRequest>(options, 'miniprof/fastify', (req) => req.raw.socket?.remoteAddress, FASTIFY_KEYS);
  } catch (err) {
    // A callback plugin that throws is not failed by avvio: the error escapes as an uncaught
    // exception and `ready()` waits for pluginTimeout. `done(err)` rejects register/ready with it.
    return done(err as Error);
  }
  if (cfg.isDeveloper === null) return done();
  fastify.addHook('onRequest', function miniprofOnRequest(request, reply, next) {
    const dev = decide(cfg, request, cookieOf);
    if (dev === null) return next();
    if (dev instanceof Promise) {
      // `next()` continues Fastify's chain; a throw there must not become an unhandled rejection.
      dev.then((d) => (d === null ? next() : developer(cfg, request, reply, next, d))).catch((err: unknown) => report(cfg.core.onInternalError, err));
      return;
    }
    developer(cfg, request, reply, next, dev);
  });
  done();
};

function developer(cfg: HttpConfig<FastifyRequest>, request: FastifyRequest, reply: FastifyReply, next: HookHandlerDoneFunction, dev: Developer): void {
  if (cfg.results !== null && underBase(cfg.results, request.raw.url)) return answer(cfg, request, reply, next, dev);
  profile(cfg, request, reply, next, dev.owner);
}

function cookieOf(request: FastifyRequest): unknown {
  return request.raw.headers.cookie;
}

/**
 * Fastify 5 plugin, wrapped with fastify-plugin so its hook covers every route and child plugin.
 *
 * @example
 * import { miniprof } from 'miniprof/fastify';
 * await app.register(miniprof, { isDeveloper: (req) => req.user?.admin === true });
 */
export const miniprof = fp(plugin, { fastify: '5.x', name: 'miniprof' });

export default miniprof;
