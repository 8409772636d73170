import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';

// The page every server configuration renders: 10 steps (2 nested, 2 async) and ~200 bytes of
// HTML. `s(name, fn)` is the contender's step: a direct call, miniprof's step, or an OTel span.
export async function page(s) {
  const user = s('load user', () => ({ id: 42, name: 'Ada' }));
  const perms = s('permissions', () => s('role lookup', () => ['read', 'write']));
  const rows = await s('query orders', async () => {
    await null;
    return [3, 1, 2];
  });
  const sorted = s('sort', () => rows.slice().sort((a, b) => a - b));
  const cached = await s('cache', async () => {
    await null;
    return 'hit';
  });
  const total = s('totals', () => s('sum', () => sorted.reduce((a, b) => a + b, 0)));
  const title = s('title', () => `Orders of ${user.name}`);
  return s(
    'render',
    () =>
      `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1>` +
      `<p>${perms.join(',')} ${sorted.join(',')} total ${total} cache ${cached}</p></body></html>`,
  );
}

export const direct = (_name, fn) => fn();

/** The header by which a bench client says it is a developer (the `nondev` server's isDeveloper). */
export const DEVELOPER_HEADER = 'x-bench-developer';

/**
 * GET /slow: a request that spends ~80 ms awaiting inside two steps, as a developer browsing a
 * real page would keep a profile open. bench/run.js's mixed-traffic rows keep one of these in
 * flight at all times (bench/http/children.js `hold`) while the load hits GET /.
 */
export async function slow(s) {
  await s('slow query', () => sleep(40));
  await s('slow call', () => sleep(40));
  return 'slow';
}

/**
 * The framework's own share of a non-developer request: the cheapest global hook of the kind
 * miniprof registers (an Express middleware, a Fastify `onRequest`), doing nothing. The `hook`
 * configuration of bench/http/server.js and of bench/instructions/harness.js.
 */
export function emptyHook(framework, app) {
  if (framework === 'express') app.use((_req, _res, next) => next());
  else if (framework === 'koa' || framework === 'hono') app.use((_ctx, next) => next());
  else if (framework === 'http') {
    // A connect-style pass-through in front of the listener, as miniprof/http's wrap is.
    const inner = app.listener;
    const hook = (_req, _res, next) => next();
    app.listener = (req, res) => hook(req, res, () => inner(req, res));
  } else app.addHook('onRequest', (_request, _reply, done) => done());
}

/** A module of the build under test: `dist/`, or MINIPROF_BENCH_DIST (a copy of it with a change). */
const distRoot = process.env.MINIPROF_BENCH_DIST ?? new URL('../../dist/', import.meta.url).pathname;
export const dist = (p) => pathToFileURL(`${distRoot.replace(/\/$/, '')}/${p}`).href;
/**
 * One of the package's entries as users load it (`index`, `express` or `fastify`): the bundle that
 * `npm run build` makes of the build's modules (scripts/bundle.mjs; for a copy of dist/, run
 * `node scripts/bundle.mjs <copy>`). The micro and instruction benches that reach into internals
 * (context, profile, options) load the modules instead, all from one tree.
 */
export const entry = (name) => dist(`bundle/${name}.js`);

/**
 * The page as every bench serves it: Express (ETags off) or Fastify on 127.0.0.1, a free port.
 * `install(app)` adds the profiler or tracer before the route. `view(html, setHeader)`, when
 * given, returns the body to send and may set headers (the OTel configuration that renders its
 * own comment and Server-Timing). Resolves the http.Server.
 */
export async function servePage(framework, s, install = () => {}, view = undefined) {
  if (framework === 'koa' || framework === 'hono' || framework === 'http') return serveOther(framework, s, install, view);
  if (framework === 'express') {
    const { default: express } = await import('express');
    const app = express();
    app.set('etag', false);
    await install(app);
    expressPage(app, s, view);
    return new Promise((resolve) => {
      const srv = app.listen(0, '127.0.0.1', () => resolve(srv));
    });
  }
  const { default: Fastify } = await import('fastify');
  const app = Fastify({ logger: false });
  await install(app);
  fastifyPage(app, s, view);
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app.server;
}

/**
 * Koa 3 (`ctx.body`), Hono on @hono/node-server (`c.html`) and plain node:http (`res.end`; `app`
 * is `{ listener }`, which `install` may wrap) on a node:http server of their own.
 */
async function serveOther(framework, s, install, view) {
  const { default: http } = await import('node:http');
  let listener;
  if (framework === 'koa') {
    const { default: Koa } = await import('koa');
    const app = new Koa();
    await install(app);
    app.use(async (ctx, next) => {
      if (ctx.path !== '/') return next();
      const html = await page(s);
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = view === undefined ? html : view(html, (k, v) => ctx.set(k, v));
    });
    listener = app.callback();
  } else if (framework === 'hono') {
    const { Hono } = await import('hono');
    const { getRequestListener } = await import('@hono/node-server');
    const app = new Hono();
    await install(app);
    app.get('/', async (c) => {
      const html = await page(s);
      return c.html(view === undefined ? html : view(html, (k, v) => c.header(k, v)));
    });
    listener = getRequestListener(app.fetch);
  } else {
    const app = {
      listener: (_req, res) => {
        page(s).then((html) => {
          res.setHeader('Content-Type', 'text/html; charset=utf-8');
          res.end(view === undefined ? html : view(html, (k, v) => res.setHeader(k, v)));
        });
      },
    };
    await install(app);
    listener = app.listener;
  }
  const server = http.createServer(listener);
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** GET / serving the page, the same way in every bench that uses Fastify. */
function fastifyPage(app, s, view) {
  app.get('/slow', async () => slow(s));
  app.get('/', async (_request, reply) => {
    const html = await page(s);
    reply.type('text/html; charset=utf-8');
    return view === undefined ? html : view(html, (k, v) => reply.header(k, v));
  });
}

/** GET / serving the page, the same way in every bench that uses Express. */
function expressPage(app, s, view) {
  app.get('/slow', (_req, res, next) => {
    slow(s).then((text) => res.type('text').send(text), next);
  });
  app.get('/', (_req, res, next) => {
    page(s).then((html) => res.type('html').send(view === undefined ? html : view(html, (k, v) => res.setHeader(k, v))), next);
  });
}

/** An OTel step: a span per call, ended when the result settles. */
export function otelStep(tracer) {
  return (name, fn) =>
    tracer.startActiveSpan(name, (span) => {
      let r;
      try {
        r = fn();
      } catch (err) {
        span.end();
        throw err;
      }
      if (r !== null && typeof r === 'object' && typeof r.then === 'function') {
        return r.then(
          (v) => {
            span.end();
            return v;
          },
          (err) => {
            span.end();
            throw err;
          },
        );
      }
      span.end();
      return r;
    });
}

/**
 * What it takes to see the same thing with OpenTelemetry: a span processor that keeps each
 * request's ended spans (by trace), and a view that rebuilds the tree from `parentSpanContext`
 * and renders it as a `Server-Timing` header (a metric per top-level span) and an HTML comment
 * (a line per span). The peers' "OpenTelemetry" figures in the issue were measured this way
 * (../shared/reference/performance.md: otel-sdk-collector). The rendering is minimal (names are
 * made tokens, nothing else is escaped), so if anything it flatters OTel.
 */
export function otelCollector(api) {
  const byTrace = new Map();
  const processor = {
    onStart() {},
    onEnd(span) {
      const id = span.spanContext().traceId;
      // The request span ends last, after the view took the trace's spans: nothing to keep.
      if (span.parentSpanContext === undefined) {
        byTrace.delete(id);
        return;
      }
      const spans = byTrace.get(id);
      if (spans === undefined) byTrace.set(id, [span]);
      else spans.push(span);
    },
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
  const ms = (d) => d[0] * 1e3 + d[1] / 1e6;
  const view = (html, setHeader) => {
    const root = api.trace.getActiveSpan();
    if (root === undefined) return html;
    const { traceId, spanId } = root.spanContext();
    const spans = byTrace.get(traceId) ?? [];
    byTrace.delete(traceId);
    spans.sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
    const kids = new Map();
    for (const sp of spans) {
      const p = sp.parentSpanContext.spanId;
      const list = kids.get(p);
      if (list === undefined) kids.set(p, [sp]);
      else list.push(sp);
    }
    const top = kids.get(spanId) ?? [];
    const metrics = top.map((sp) => `${sp.name.replace(/[^A-Za-z0-9_-]/g, '_')};dur=${ms(sp.duration).toFixed(1)};desc="${sp.name}"`);
    setHeader('Server-Timing', metrics.join(', '));
    let text = '';
    const walk = (id, depth) => {
      for (const sp of kids.get(id) ?? []) {
        text += `${'>'.repeat(depth)} ${sp.name} = ${ms(sp.duration).toFixed(1)}ms\n`;
        walk(sp.spanContext().spanId, depth + 1);
      }
    };
    walk(spanId, 1);
    return html.replace('</body>', `</body><!--\n${root.name}\n${text}-->`);
  };
  return { processor, view };
}
