import { closeStep, openStep, runIn } from '../core/auto.js';
import type { Profile } from '../core/profile.js';
import { step } from '../core/step.js';
import type { TimingNode } from '../core/timing.js';

/**
 * Views as steps, with no app code: each framework's render function, wrapped on one developer
 * request's own response object (never a shared prototype), times the page it renders as a step
 * `render <view>`, the parent of whatever the engine's helpers start. An error in the view marks
 * the step errored and reaches the app exactly as before. docs/auto-steps.md has the details.
 */

type OnError = (err: unknown) => void;
// `this` is whatever object the app calls the function on (res, reply, ctx).
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Fn = (this: any, ...args: any[]) => unknown;

/** `render <view>` for a view named by a string (a path or a template name). */
function viewStep(view: unknown): string {
  return typeof view === 'string' ? `render ${view}` : 'render';
}

/** Express's `res` as far as its render is concerned. */
interface ExpressRes {
  render?: Fn;
  send?: (body: unknown) => unknown;
  req?: { next?: (err?: unknown) => void };
}

/**
 * Express's `res.render(view, [locals], [callback])`. The step ends when the engine hands back
 * the page (its callback), before anything is sent. With the app's own callback, that callback
 * then runs as before; without one, what Express's own default callback does (lib/response.js,
 * and Express's docs for res.render): an error goes to `next(err)`, the page to `res.send`.
 * Looked up on the prototype at each call: a mounted sub-app gives `res` its own prototype.
 */
export function timeExpressRender(res: object, onError: OnError): void {
  const own = res as ExpressRes;
  if (typeof own.render !== 'function') return;
  const prior = Object.hasOwn(own, 'render') ? own.render : null;
  own.render = function render(this: ExpressRes, view: unknown, options?: unknown, callback?: unknown): unknown {
    const original = prior ?? (Object.getPrototypeOf(this) as ExpressRes).render!;
    const done = typeof options === 'function' ? options : callback;
    const next = this.req?.next;
    // Neither the app's callback nor Express's `next` to hand an error to: left untimed.
    const t = typeof done === 'function' || typeof next === 'function' ? openStep(viewStep(view), onError) : null;
    if (t === null) return original.apply(this, arguments as unknown as unknown[]);
    const self = this;
    const finish = (err: unknown, html?: unknown): unknown => {
      closeStep(t, err != null);
      if (typeof done === 'function') return (done as Fn)(err, html);
      if (err != null) return next!(err);
      return self.send!(html);
    };
    return runIn(t, () => original.call(this, view, typeof options === 'function' ? undefined : options, finish));
  };
}

/** A Fastify reply as far as @fastify/view is concerned. */
interface ViewReply {
  send: (...args: unknown[]) => unknown;
  view?: Fn;
  viewAsync?: Fn;
}

/**
 * @fastify/view's `reply.view(page, data, opts)` and `reply.viewAsync(…)`. `view` sends the page
 * itself before its promise settles, and the response's outputs are made from the tree as the
 * page is handed over: so its step ends at that send (errored when it sends an error), and at
 * the latest when its promise settles.
 */
export function timeFastifyView(reply: object, onError: OnError): void {
  const r = reply as ViewReply;
  const view = r.view;
  if (typeof view === 'function') {
    r.view = function (this: ViewReply, page: unknown, ...rest: unknown[]): unknown {
      const t = openStep(viewStep(page), onError);
      if (t === null) return view.call(this, page, ...rest);
      const send = this.send;
      const sendOnce = function (this: ViewReply, payload?: unknown): unknown {
        if (this.send === sendOnce) this.send = send;
        closeStep(t, payload instanceof Error);
        return send.apply(this, arguments as unknown as unknown[]);
      };
      this.send = sendOnce;
      const restore = (): void => {
        if (this.send === sendOnce) this.send = send;
      };
      let out: unknown;
      try {
        out = runIn(t, () => view.call(this, page, ...rest));
      } catch (err) {
        restore();
        throw err;
      }
      return settled(out, t, restore);
    };
  }
  const viewAsync = r.viewAsync;
  if (typeof viewAsync === 'function') {
    r.viewAsync = function (this: ViewReply, page: unknown, ...rest: unknown[]): unknown {
      return step(viewStep(page), () => viewAsync.call(this, page, ...rest));
    };
  }
}

/** `out` itself; when it is a promise, its step also ends (errored on a rejection) once it settles. */
function settled(out: unknown, t: TimingNode<Profile>, after: () => void): unknown {
  if (!(out instanceof Promise)) {
    after();
    closeStep(t, false);
    return out;
  }
  // Observed, not chained into what the app gets: the app's promise is @fastify/view's own.
  out.then(
    () => (after(), closeStep(t, false)),
    () => (after(), closeStep(t, true)),
  );
  return out;
}

/**
 * A render function that returns a promise (or a value): Koa's `ctx.render` (koa-views,
 * @ladjs/koa-views), Hono's `c.render`. A callback step, named by `name(args[0])`.
 */
function timed(fn: unknown, name: (first: unknown) => string): unknown {
  if (typeof fn !== 'function') return fn;
  return function (this: unknown, ...args: unknown[]): unknown {
    return step(name(args[0]), () => (fn as Fn).apply(this, args));
  };
}

/**
 * Koa's `ctx.render(view, locals)`. koa-views (and @ladjs/koa-views) set it on each request's
 * `ctx` in their middleware, or on `app.context`: mounted before miniprof, it is there to wrap
 * now; mounted after, it is wrapped as it is assigned (koa-views sets it only when `ctx.render`
 * is unset, which it is, until then, as before).
 */
export function timeKoaRender(ctx: object): void {
  let wrapped = timed((ctx as { render?: unknown }).render, viewStep);
  Object.defineProperty(ctx, 'render', {
    configurable: true,
    enumerable: true,
    get: () => wrapped,
    set: (v: unknown) => {
      wrapped = timed(v, viewStep);
    },
  });
}

/**
 * Hono's `c.render(content, …)`: the renderer `c.setRenderer()` (or jsxRenderer) set, called
 * through Hono's own `render`, whenever it was set. The step is named after the JSX component
 * given as `content` (`render Page`) when there is one.
 */
export function timeHonoRender(c: object): void {
  const own = c as { render?: unknown };
  if (typeof own.render === 'function') own.render = timed(own.render, honoView);
}

/** A hono/jsx element's component or tag name; anything else names no view. */
function honoView(content: unknown): string {
  try {
    const tag = (content as { tag?: unknown } | null)?.tag;
    if (typeof tag === 'function' && tag.name !== '') return `render ${tag.name}`;
    if (typeof tag === 'string') return `render ${tag}`;
  } catch {
    // A getter of the app's that throws names nothing.
  }
  return 'render';
}
