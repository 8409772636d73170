import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyPluginCallback, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import { als, runInProfile } from '../src/core/context.js';
import { report } from '../src/core/errors.js';
import { resolveHttp, type HttpConfig, type MiniprofOptions } from '../src/http/config.js';
import { delivered, ProfiledResponse, stripConditionals } from '../src/http/response.js';
import { writeHeadWith, type ResMethod } from '../src/http/write-head.js';
import type { TimingNode } from '../src/core/timing.js';
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
  let hook: Hook;
  try {
    hook = instrument(cfg, request, reply, owner);
  } catch (err) {
    // Setting up is the profiler's business: if it fails, the request goes on unprofiled.
    report(cfg.core.onInternalError, err);
    return next();
  }
  runInProfile(hook.state.profile, enter, hook, next);
}

/**
 * What one developer's request needs at its hooks, kept as data in a property of the request,
 * the reply and the raw response (`HOOK`), while the methods put there are shared functions.
 *
 * Why not closures: a new closure stored in a property of `reply` or of the raw `req`/`res`
 * (on-headers' `writeHead`, a wrapper of `send`) got everything it reached promoted to the old
 * generation, request after request. Measured on Node 20 with Fastify and real sockets, one
 * connection, a minor GC every 50 requests, old-space growth per request: 112 bytes with no
 * hook, 112 with the per-request object in a property and a shared function, 200-1,860 with a
 * closure (1,840 on `res`, whatever the closure held); miniprof's developer request went from
 * ~1,000-1,900 to ~100. The promoted garbage is what the scavenger copies and what a full GC
 * must then collect: several microseconds of GC per request under load (bench/RESULTS.md).
 * Listeners (`on('close', fn)`) are not affected; they are shared functions here anyway.
 */
class Hook {
  readonly state: ProfiledResponse;
  readonly req: IncomingMessage;
  /** The methods the app would have reached without us. */
  readonly send: FastifyReply['send'];
  readonly hijack: FastifyReply['hijack'];
  readonly writeHead: ResMethod;
  /** Set by `enter`, inside the profile. */
  root: TimingNode | null = null;
  emit: IncomingMessage['emit'] | null = null;

  constructor(state: ProfiledResponse, req: IncomingMessage, reply: FastifyReply) {
    this.state = state;
    this.req = req;
    this.send = reply.send;
    this.hijack = reply.hijack;
    this.writeHead = reply.raw.writeHead as ResMethod;
  }
}

/** Private to this copy of miniprof: another copy's hooks wrap ours and keep their own. */
const HOOK = Symbol('miniprof.fastify');
type Hooked = { [HOOK]?: Hook };

/**
 * Runs inside the profile. Fastify calls `parseAs: 'string' | 'buffer'` content-type parsers from
 * the body stream's 'end' event, and Node runs a stream's events in the socket's context, not the
 * request's (nodejs/node#41285): steps in such a parser were lost. The request stream's events
 * are re-entered in the profile, as on-finished does for its listeners.
 */
function enter(hook: Hook, next: HookHandlerDoneFunction): void {
  // Not AsyncResource.bind: on Node 20 it costs a new async resource, two util.deprecate wrappers
  // and a defineProperties per request (~4% of a profiled Fastify request's CPU in bench/profile.js).
  const req = hook.req;
  hook.root = als.getStore()!;
  hook.emit = req.emit;
  (req as Hooked)[HOOK] = hook;
  req.emit = emitInProfile as IncomingMessage['emit'];
  next();
}

/**
 * Only our own store needs restoring, and only while the profile is open: an event after the
 * seal must not re-enable an ALS that closeProfile released. An event nobody listens to runs no
 * code that could start a step: a GET's request stream emits 'readable' and 'resume' while the
 * profile is open, and entering the profile for them was ~1,000 instructions per request
 * (bench/RESULTS.md Run 26).
 */
function emitInProfile(this: IncomingMessage & Hooked, type: string | symbol): boolean {
  // `arguments` handed on whole, not a rest array: V8 passes it on without making it.
  const h = this[HOOK];
  if (h === undefined) return inherited<IncomingMessage['emit']>(this, 'emit').apply(this, arguments as never);
  const root = h.root!;
  if (root.profile === null || this.listenerCount(type) === 0) return h.emit!.apply(this, arguments as never);
  return als.run(root, Reflect.apply, h.emit!, this, arguments);
}

/**
 * What `obj[key]` would be without our own property: for a call with some other `this` (the
 * methods are shared), which must reach the app's method rather than throw.
 */
function inherited<F extends (...args: never[]) => unknown>(obj: object, key: string): F {
  return (Object.getPrototypeOf(obj) as Record<string, F>)[key]!;
}

function sendWithComment(this: FastifyReply & Hooked, payload?: unknown): FastifyReply {
  const h = this[HOOK];
  if (h === undefined) return inherited<FastifyReply['send']>(this, 'send').call(this, payload);
  if (payload instanceof Error || isStream(payload)) return h.send.call(this, payload);
  const body = h.state.body(this, this.statusCode, payload);
  return h.send.call(this, body ?? payload);
}

function hijackReply(this: FastifyReply & Hooked): FastifyReply {
  const h = this[HOOK];
  if (h === undefined) return inherited<FastifyReply['hijack']>(this, 'hijack').call(this);
  h.state.hijacked = true;
  return h.hijack.call(this);
}

function writeHeadWithTiming(this: ServerResponse & Hooked): ServerResponse {
  const h = this[HOOK];
  if (h === undefined) return inherited<ResMethod>(this, 'writeHead').apply(this, arguments as unknown as unknown[]);
  return writeHeadWith(h.state, this, arguments, h.writeHead);
}

/**
 * Finished or aborted, judged at close. A real response is finished once flushed
 * (`delivered`). light-my-request's (behind `inject`) never sets that: it ends, emits
 * 'finish' and closes at once, so for it ended is finished. Judged here rather than by a 'finish'
 * listener of our own: a second 'finish' listener beside Node's cost ~6,000 instructions per
 * developer request (bench/RESULTS.md Run 9).
 */
function onClose(this: ServerResponse & Hooked & { _lightMyRequest?: unknown }): void {
  const h = this[HOOK];
  if (h !== undefined) h.state.finish(this, delivered(this) || (this.writableEnded && this._lightMyRequest !== undefined));
}

function instrument(cfg: HttpConfig<FastifyRequest>, request: FastifyRequest, reply: FastifyReply, owner: string): Hook {
  const raw = reply.raw as ServerResponse & Hooked;
  const state = new ProfiledResponse(cfg as never, request.raw.method, request.raw.url, owner);
  stripConditionals(request.raw.headers);
  const hook = new Hook(state, request.raw, reply);
  (reply as Hooked)[HOOK] = hook;
  raw[HOOK] = hook;
  reply.send = sendWithComment;
  reply.hijack = hijackReply;
  raw.writeHead = writeHeadWithTiming as ServerResponse['writeHead'];
  // `on`, not `once`: 'close' comes once, and once()'s wrapper is a bound function and a state
  // object per request, and a removeListener at the emit. A second 'close' finds the profile sealed.
  raw.on('close', onClose);
  return hook;
}

/**
 * A results page, sent from the hook (Fastify allows a reply from onRequest), or the app's own
 * answer when we serve nothing there: routing already ran, so `next()` reaches the app's route
 * or its 404 handler exactly as without the plugin.
 */
function answer(cfg: HttpConfig<FastifyRequest>, request: FastifyRequest, reply: FastifyReply, next: HookHandlerDoneFunction, dev: Developer): void {
  serveResults(cfg.results!, dev, request.raw.method, request.raw.url!, request.protocol === 'https', cfg.core.onInternalError, request.raw.headers).then(
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
