/**
 * Every HTTP adapter under test, behind one descriptor: the same neutral routes served by a real
 * app of each framework, with miniprof mounted first (or not at all), on a real `node:http`
 * server made by the suite (so every app can be given the same socket tricks). A route is a
 * handler that reads the request through a small view and returns a neutral reply; each
 * descriptor sends that reply the way its framework's users do (`res.send`, `reply.send`,
 * `ctx.body`, `c.body`, `res.end`).
 */
import http from 'node:http';
import { PassThrough } from 'node:stream';
import connect from 'connect';
import express5 from 'express';
import express4 from 'express4';
import Fastify from 'fastify';
import { Hono, type Context } from 'hono';
import { getRequestListener } from '@hono/node-server';
import Koa3 from 'koa';
import Koa2 from 'koa2';
import polka from 'polka';
import { miniprof as expressMiniprof } from '../../adapters/express.js';
import { miniprof as fastifyMiniprof } from '../../adapters/fastify.js';
import { miniprof as honoMiniprof } from '../../adapters/hono.js';
import { miniprof as httpMiniprof, wrap } from '../../adapters/http.js';
import { miniprof as koaMiniprof } from '../../adapters/koa.js';

/** What a handler may read of the request. */
export interface ReqView {
  method: string;
  /** Path and query as the client sent them. */
  url: string;
  header(name: string): string | undefined;
}

export type Headers = Record<string, string | string[]>;

/** A whole body (or none), or a stream of chunks written `everyMs` apart (forever when `endless`). */
export type Reply =
  | { status?: number; headers?: Headers; body?: string | Buffer }
  | { status?: number; headers?: Headers; chunks: string[]; everyMs: number; endless?: boolean; onChunk?: () => void };

export type Handler = (req: ReqView) => Promise<Reply>;
export type Routes = Record<string, Handler>;

/** Options as every adapter takes them; the request type is the framework's. */
export type Options = Record<string, unknown>;

export interface AdapterUnderTest {
  name: string;
  /** A request listener for an app with `routes` (GET and HEAD), miniprof mounted first unless `options` is null. */
  listener(options: Options | null, routes: Routes): Promise<http.RequestListener>;
  /** An `isDeveloper` for this framework's request: true when header `name` is `1`. */
  byHeader(name: string): (req: never) => boolean;
  /** `c.res` carries our headers on a new Response: no `setHeader` of Node's is called for them. */
  fetchHeaders?: boolean;
}

function isWhole(r: Reply): r is Extract<Reply, { body?: unknown }> {
  return !('chunks' in r);
}

/** Write a streamed reply on a Node response (node:http, connect, polka, Express). */
function writeStream(res: http.ServerResponse, r: Extract<Reply, { chunks: string[] }>): void {
  res.writeHead(r.status ?? 200, r.headers);
  let i = 0;
  const timer = setInterval(() => {
    if (i < r.chunks.length) {
      r.onChunk?.();
      res.write(r.chunks[i++]!);
    }
    if (i >= r.chunks.length && !r.endless) {
      clearInterval(timer);
      res.end();
    }
  }, r.everyMs);
  res.once('close', () => clearInterval(timer));
}

/** The same stream as a Node Readable (Fastify, Koa): ended when the client leaves. */
function passThrough(r: Extract<Reply, { chunks: string[] }>, closed: http.IncomingMessage): PassThrough {
  const out = new PassThrough();
  let i = 0;
  const timer = setInterval(() => {
    if (i < r.chunks.length) {
      r.onChunk?.();
      out.write(r.chunks[i++]!);
    }
    if (i >= r.chunks.length && !r.endless) {
      clearInterval(timer);
      out.end();
    }
  }, r.everyMs);
  closed.socket.once('close', () => {
    clearInterval(timer);
    out.end();
  });
  return out;
}

/** The same stream as a web ReadableStream (Hono), cancelled when the client leaves. */
function webStream(r: Extract<Reply, { chunks: string[] }>): ReadableStream<Uint8Array> {
  let timer: NodeJS.Timeout;
  let i = 0;
  return new ReadableStream({
    start(c) {
      timer = setInterval(() => {
        if (i < r.chunks.length) {
          r.onChunk?.();
          c.enqueue(Buffer.from(r.chunks[i++]!));
        }
        if (i >= r.chunks.length && !r.endless) {
          clearInterval(timer);
          c.close();
        }
      }, r.everyMs);
    },
    cancel() {
      clearInterval(timer);
    },
  });
}

function nodeView(req: http.IncomingMessage & { originalUrl?: string }): ReqView {
  return { method: req.method!, url: req.originalUrl ?? req.url!, header: (name) => req.headers[name.toLowerCase()] as string | undefined };
}

/** Plain Node: status, headers, `res.end(body)`. */
async function sendNode(res: http.ServerResponse, r: Reply): Promise<void> {
  if (!isWhole(r)) return writeStream(res, r);
  res.statusCode = r.status ?? 200;
  for (const [k, v] of Object.entries(r.headers ?? {})) res.setHeader(k, v);
  res.end(r.body);
}

const nodeByHeader = (name: string) => (req: http.IncomingMessage) => req.headers[name] === '1';

function connectStyle(name: string, make: () => { use(fn: unknown): unknown; get?: unknown }, handler: (app: ReturnType<typeof make>) => http.RequestListener): AdapterUnderTest {
  return {
    name,
    byHeader: nodeByHeader as AdapterUnderTest['byHeader'],
    async listener(options, routes) {
      const app = make();
      if (options !== null) app.use(httpMiniprof(options));
      app.use((req: http.IncomingMessage & { originalUrl?: string }, res: http.ServerResponse, next: () => void) => {
        const path = (req.originalUrl ?? req.url!).split('?')[0]!;
        const route = routes[path];
        if (route === undefined || (req.method !== 'GET' && req.method !== 'HEAD')) return next();
        route(nodeView(req)).then((r) => sendNode(res, r));
      });
      return handler(app);
    },
  };
}

function expressApp(name: string, express: typeof express5): AdapterUnderTest {
  return {
    name,
    byHeader: nodeByHeader as AdapterUnderTest['byHeader'],
    async listener(options, routes) {
      const app = express();
      if (options !== null) app.use(expressMiniprof(options));
      for (const [path, route] of Object.entries(routes)) {
        app.get(path, (req, res, next) => {
          route(nodeView(req)).then((r) => {
            if (!isWhole(r)) return writeStream(res, r);
            res.status(r.status ?? 200).set(r.headers ?? {});
            res.send(r.body);
          }, next);
        });
      }
      return app as unknown as http.RequestListener;
    },
  };
}

const MOUNTED: AdapterUnderTest[] = [
  expressApp('express 5', express5),
  expressApp('express 4', express4),
  {
    name: 'fastify',
    byHeader: (name) => ((req: { headers: http.IncomingHttpHeaders }) => req.headers[name] === '1') as never,
    async listener(options, routes) {
      let handler: http.RequestListener | undefined;
      // Fastify hands its request handler to serverFactory: the suite's own server runs it.
      const app = Fastify({ serverFactory: (h) => ((handler = h as http.RequestListener), http.createServer()) });
      if (options !== null) await app.register(fastifyMiniprof, options);
      for (const [path, route] of Object.entries(routes)) {
        app.get(path, async (req, reply) => {
          const r = await route(nodeView(req.raw));
          reply.code(r.status ?? 200).headers(r.headers ?? {});
          return isWhole(r) ? reply.send(r.body) : reply.send(passThrough(r, req.raw));
        });
      }
      await app.ready();
      return handler!;
    },
  },
  ...([['koa 3', Koa3], ['koa 2', Koa2]] as const).map(([name, Koa]): AdapterUnderTest => ({
    name,
    byHeader: (h) => ((ctx: { get(n: string): string }) => ctx.get(h) === '1') as never,
    async listener(options, routes) {
      const app = new (Koa as typeof Koa3)();
      // Koa logs every stream a client cut short ('Premature close'); the tests cut them on purpose.
      app.silent = true;
      if (options !== null) app.use(koaMiniprof(options));
      app.use(async (ctx, next) => {
        const route = routes[ctx.path];
        if (route === undefined || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
        const r = await route(nodeView(ctx.req));
        ctx.status = r.status ?? 200;
        ctx.set(r.headers ?? {});
        ctx.body = isWhole(r) ? r.body : passThrough(r, ctx.req);
      });
      return app.callback();
    },
  })),
  {
    name: 'hono',
    fetchHeaders: true,
    byHeader: (h) => ((c: Context) => c.req.header(h) === '1') as never,
    async listener(options, routes) {
      const app = new Hono();
      if (options !== null) app.use(honoMiniprof(options));
      for (const [path, route] of Object.entries(routes)) {
        app.get(path, async (c) => {
          const url = c.req.url.slice(c.req.url.indexOf('/', 8));
          const r = await route({ method: c.req.method, url, header: (n) => c.req.header(n) });
          const headers = r.headers ?? {};
          if (!isWhole(r)) return c.body(webStream(r), (r.status ?? 200) as 200, headers);
          if (r.body === undefined) return c.body(null, (r.status ?? 200) as 200, headers);
          return c.body(typeof r.body === 'string' ? r.body : new Uint8Array(r.body), (r.status ?? 200) as 200, headers);
        });
      }
      return getRequestListener(app.fetch);
    },
  },
  {
    name: 'node:http (wrap)',
    byHeader: nodeByHeader as AdapterUnderTest['byHeader'],
    async listener(options, routes) {
      const listener: http.RequestListener = (req, res) => {
        const route = routes[req.url!.split('?')[0]!];
        if (route === undefined) {
          res.statusCode = 404;
          res.setHeader('content-type', 'text/html; charset=utf-8');
          return res.end('<html><body>not here</body></html>');
        }
        route(nodeView(req)).then((r) => sendNode(res, r));
      };
      return options === null ? listener : wrap(listener, options);
    },
  },
  connectStyle('connect', () => connect() as never, (app) => app as unknown as http.RequestListener),
  connectStyle('polka', () => polka() as never, (app) => ((req, res) => (app as unknown as { handler: http.RequestListener }).handler(req, res)) as http.RequestListener),
];

/**
 * The adapters as the suites use them: with the badge off unless a test asks for it, so that
 * exact comments and Server-Timing headers stay the profile's alone (the badge's tag and
 * `miniprof;desc` metric are asserted by the matrix's own badge test).
 */
export const ADAPTERS: AdapterUnderTest[] = MOUNTED.map((a) => ({
  ...a,
  listener: (options, routes) => a.listener(options === null ? null : { badge: false, ...options }, routes),
}));

/**
 * The root's steps as the app made them: the route handler's automatic step (Fastify's
 * `handler GET /x`, autoSteps; test/auto-steps.test.ts) looked through.
 */
export function appSteps(root: { children: { name: string; handler?: true; children: unknown[] }[] }): { name: string; children: unknown[]; custom?: unknown }[] {
  return root.children.flatMap((c) => (c.handler === true ? (c.children as { name: string; children: unknown[] }[]) : [c]));
}
