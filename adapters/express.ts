import { ServerResponse, type IncomingMessage } from 'node:http';
import { runInProfile } from '../src/core/context.js';
import { report } from '../src/core/errors.js';
import { resolveHttp, type MiniprofOptions } from '../src/http/config.js';
import { headersSent, ProfiledResponse, stripConditionals } from '../src/http/response.js';
import { writeHeadWith, type ResMethod } from '../src/http/write-head.js';
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
 * touches nothing: no AsyncLocalStorage, no wrapper on `res`. (After the first developer
 * request, Express's shared response prototype has miniprof's `end`, `writeHead` and `emit`, which
 * pass every other response straight on after one WeakMap lookup, `emit` only for 'finish' and
 * 'close'.)
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

  function profile(req: Req, res: ServerResponse, next: Next, owner: string, url: string | undefined): void {
    // The client left while an async isDeveloper (or an async middleware before us) was busy:
    // 'close' has fired already, so nothing would seal a profile opened now, and it would hold
    // the promise hooks on until maxDurationMs.
    if (res.destroyed) return next();
    PROFILED.add(res);
    let state: ProfiledResponse;
    try {
      state = instrument(req, res, owner, url);
    } catch (err) {
      // Setting up is the profiler's business: if it fails, the request goes on unprofiled.
      report(cfg.core.onInternalError, err);
      return next();
    }
    runInProfile(state.profile, next);
  }

  // `url` is read once, by the caller: each property read on Express's req/res is an IC miss of its
  // own (their maps are new per request; bench/RESULTS.md Run 9).
  function instrument(req: Req, res: ServerResponse, owner: string, url: string | undefined): ProfiledResponse {
    const state = new ProfiledResponse(cfg as never, req.method, url, owner);
    // Read now, right after the owner's peer check read it (a stub-cache hit; with an `owner`
    // function of the app's, the same one miss), rather than at close (two misses: `req`, `socket`).
    state.socket = req.socket;
    stripConditionals(req.headers);
    const base = sharedBase(res);
    if (base === null) {
      // Own wrappers, as compression() must run after ours, with the shared header handling.
      const head = res.writeHead as ResMethod;
      res.writeHead = function (this: ServerResponse) {
        return writeHeadWith(state, this, arguments, head);
      } as ServerResponse['writeHead'];
      const end = res.end as ResMethod;
      res.end = function (this: ServerResponse) {
        return endWith(state, this, arguments, end);
      } as End;
      // `on`, not `once`: 'close' comes once, and once()'s wrapper (a bound function, then a
      // removeListener on this `res`, whose hidden class Express makes new per request) cost
      // ~19,000-25,000 instructions per developer request (bench/RESULTS.md Run 9). A second
      // 'close', should anything emit one, finds the profile sealed.
      res.on('close', () => state.finish(res));
    } else {
      // The shared `emit` (install) sees this response's 'close': no listener to add.
      HOOKS.set(res, { state, endWith });
    }
    return state;
  }

  /** A results page for a developer, or the app's own answer (404/405) when we serve nothing there. */
  function answer(req: Req, res: ServerResponse, next: Next, dev: Developer, url: string): void {
    const https = (req as { secure?: boolean }).secure === true || (req.socket as { encrypted?: boolean }).encrypted === true;
    serveResults(results!, dev, req.method, url, https, cfg.core.onInternalError, req.headers).then(
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
    profile(req, res, next, dev.owner, url);
  }
}

/** The comment into a whole body: `end` as the app called it, with `end` the one it would reach. */
function endWith(state: ProfiledResponse, res: ServerResponse, args: IArguments, end: ResMethod): ServerResponse {
  const chunk: unknown = args[0];
  const encoding: unknown = args[1];
  const cb: unknown = args[2];
  if (headersSent(res) || chunk === undefined || chunk === null || typeof chunk === 'function') {
    state.body(res, res.statusCode, undefined);
    return end.apply(res, args as unknown as unknown[]);
  }
  const enc = typeof encoding === 'string' ? encoding : undefined;
  const body = state.body(res, res.statusCode, chunk, enc);
  if (body === null) return end.apply(res, args as unknown as unknown[]);
  if (res.getHeader('content-length') !== undefined) {
    const length = typeof body === 'string' ? Buffer.byteLength(body, enc as BufferEncoding | undefined) : body.byteLength;
    res.setHeader('Content-Length', length);
  }
  return end.call(res, body, encoding, cb);
}

/**
 * Express gives every `res` maps of its own (it sets the prototype per request, and V8 then
 * never shares the maps of the properties added after): each own property miniprof added
 * (`end`, on-headers' `writeHead`) cost ~70,000 instructions per developer request on Node 20
 * (bench/instructions, Express `open` row; bench/RESULTS.md Run 7). So `end`, `writeHead` and
 * `emit` (for 'finish' and 'close') are put once on Express's shared response prototype (the one
 * every app's and sub-app's `response` inherits from) and act only for responses in HOOKS; every
 * other response goes straight on, at the cost of a WeakMap lookup. (Node 24 shares those maps
 * again: `node bench/http/hidden-classes.js --node <Node 24>`.) Process-wide, like PROFILED: every
 * copy of miniprof shares one set of methods, and each entry carries its own copy's `endWith`.
 * The symbols are versioned: a copy older than `emit` (v1) installs its own set and map, and each
 * set passes the other's responses on.
 */
interface Hooked {
  state: ProfiledResponse;
  endWith: typeof endWith;
}

const SHARED = globalThis as Record<symbol, unknown>;
const HOOKS = (SHARED[Symbol.for('miniprof.express.hooks.v2')] ??= new WeakMap()) as WeakMap<object, Hooked>;
/** Marks a prototype that has the methods. */
const INSTALLED = Symbol.for('miniprof.express.hooks.v2.installed');

type Base = { end: ResMethod; writeHead: ResMethod; emit: Emit };
type Emit = (this: ServerResponse, ...args: unknown[]) => boolean;

/**
 * The object between `res` and `ServerResponse.prototype` (Express's response prototype), with
 * miniprof's methods on it; or null where the own-property wrappers must be used instead: no
 * such object (plain `http`), or something that `res.end` / `res.writeHead` reach first (an own
 * wrapper from compression() mounted before miniprof, an `app.response.end`): it must run after
 * miniprof's, as it did when miniprof's were own properties set later.
 */
function sharedBase(res: ServerResponse): Base | null {
  let base = Object.getPrototypeOf(res) as Base | null;
  while (base !== null) {
    const up = Object.getPrototypeOf(base) as Base | null;
    if (up === ServerResponse.prototype) break;
    base = up;
  }
  if (base === null) return null;
  if (!Object.hasOwn(base, INSTALLED)) install(base);
  return res.end === base.end && res.writeHead === base.writeHead ? base : null;
}

function install(base: Base): void {
  // What `res.end` / `res.writeHead` reached before: a method of the prototype's own, or the
  // inherited one, looked up at each call so that a later patch of ServerResponse.prototype runs.
  const ownEnd = Object.hasOwn(base, 'end') ? base.end : undefined;
  const ownHead = Object.hasOwn(base, 'writeHead') ? base.writeHead : undefined;
  const ownEmit = Object.hasOwn(base, 'emit') ? base.emit : undefined;
  const up = Object.getPrototypeOf(base) as Base;
  const methods: Record<'end' | 'writeHead', ResMethod> & { emit: Emit } = {
    end(this: ServerResponse) {
      const end = ownEnd ?? up.end;
      const h = HOOKS.get(this);
      return h === undefined ? end.apply(this, arguments as unknown as unknown[]) : h.endWith(h.state, this, arguments, end);
    },
    writeHead(this: ServerResponse) {
      const head = ownHead ?? up.writeHead;
      const h = HOOKS.get(this);
      return h === undefined ? head.apply(this, arguments as unknown as unknown[]) : writeHeadWith(h.state, this, arguments, head);
    },
    // Node emits a response's 'close' (finished or aborted) through `emit`. Seen here, a developer
    // response needs no 'close' listener: adding one read `on`, `_events` and `_eventsCount` on a
    // `res` whose hidden class is new per request, a stub-cache miss each.
    emit(this: ServerResponse, event: unknown) {
      const emit = ownEmit ?? up.emit;
      if (event === 'close') {
        const h = HOOKS.get(this);
        if (h !== undefined) {
          // Not left to the GC: a WeakMap entry kept until then got the whole request promoted to
          // the old generation (old-space growth per Express developer request ~15,000 -> ~11,900
          // bytes, Express alone ~11,600; bench/RESULTS.md Run 8). A second 'close' finds nothing.
          HOOKS.delete(this);
          // What delivered() judges from `res`, from what this emit saw: reading `finished` at
          // close was a stub-cache miss (1.03 per developer request, bench/instructions/ic.js).
          h.state.finish(this, h.state.flushed && h.state.socket?.errored == null);
        }
      } else if (event === 'finish') {
        const h = HOOKS.get(this);
        if (h !== undefined) h.state.flushed = true;
      }
      return emit.apply(this, arguments as unknown as unknown[]);
    },
  };
  Object.defineProperty(base, 'end', { value: methods.end, writable: true, configurable: true, enumerable: false });
  Object.defineProperty(base, 'writeHead', { value: methods.writeHead, writable: true, configurable: true, enumerable: false });
  Object.defineProperty(base, 'emit', { value: methods.emit, writable: true, configurable: true, enumerable: false });
  Object.defineProperty(base, INSTALLED, { value: true });
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
