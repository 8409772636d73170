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

/** A module of the build under test: `dist/`, or MINIPROF_BENCH_DIST (a copy of it with a change). */
const distRoot = process.env.MINIPROF_BENCH_DIST ?? new URL('../../dist/', import.meta.url).pathname;
export const dist = (p) => pathToFileURL(`${distRoot.replace(/\/$/, '')}/${p}`).href;

/**
 * The page as every bench serves it: Express (ETags off) or Fastify on 127.0.0.1, a free port.
 * `install(app)` adds the profiler or tracer before the route. Resolves the http.Server.
 */
export async function servePage(framework, s, install = () => {}) {
  if (framework === 'express') {
    const { default: express } = await import('express');
    const app = express();
    app.set('etag', false);
    await install(app);
    expressPage(app, s);
    return new Promise((resolve) => {
      const srv = app.listen(0, '127.0.0.1', () => resolve(srv));
    });
  }
  const { default: Fastify } = await import('fastify');
  const app = Fastify({ logger: false });
  await install(app);
  fastifyPage(app, s);
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app.server;
}

/** GET / serving the page, the same way in every bench that uses Fastify. */
function fastifyPage(app, s) {
  app.get('/', async (_request, reply) => {
    const html = await page(s);
    reply.type('text/html; charset=utf-8');
    return html;
  });
}

/** GET / serving the page, the same way in every bench that uses Express. */
function expressPage(app, s) {
  app.get('/', (_req, res, next) => {
    page(s).then((html) => res.type('html').send(html), next);
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
