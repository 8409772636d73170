// The `capture` option (issue 53) end to end: real Express 5 and Fastify 5 apps on real sockets, a
// real redis-server for the shared store. A sampled request that is not a developer's must reach
// its client byte for byte as with capture off; what is kept must hold no secret of the request.
import { createServer } from 'node:http';
import type http from 'node:http';
import net from 'node:net';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import zlib from 'node:zlib';
import compression from 'compression';
import express, { type Request, type RequestHandler } from 'express';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { miniprof as expressMiniprof, type MiniprofOptions } from '../adapters/express.js';
import { miniprof as fastifyMiniprof } from '../adapters/fastify.js';
import { openProfiles } from '../src/core/context.js';
import { labelOf, MAX_LABEL_LENGTH, resolveCapture } from '../src/http/capture.js';
import { resolveCore } from '../src/core/options.js';
import { CAPTURE_OWNER } from '../src/results/store.js';
import { currentProfile, memoryStore, redisStore, step, timing, type ProfileStore } from '../src/index.js';
import { closeServers, raw, serve, track, waitFor, withoutDate, type RawRequest } from './helpers/http.js';
import { startRedis, type RedisServer } from './helpers/redis-server.js';

const HTML = '<!doctype html><html><head><title>t</title></head><body><p>héllo ☕ wörld</p></body></html>';
const BIG = `<!doctype html><html><body>${'<p>lorem ipsum dolor sit amet</p>'.repeat(80)}</body></html>`;
const GZIPPED = zlib.gzipSync('<html><body>already encoded</body></html>');
const dev = { 'x-dev': '1' };
/** Replaced by the ETag the app without capture sent for the same path. */
const ETAG = '<etag>';

let faults: unknown[] = [];
const onInternalError = (err: unknown) => faults.push(err);

const fastifyApps: FastifyInstance[] = [];
afterEach(async () => {
  await closeServers();
  await Promise.all(fastifyApps.splice(0).map((a) => a.close()));
  await waitFor(() => openProfiles() === 0, 3000, 'every profile closed');
  const left = faults;
  faults = [];
  expect(left, 'unexpected onInternalError reports').toEqual([]);
});

function thrown(fn: () => unknown): Error & { code?: string } {
  try {
    fn();
  } catch (err) {
    return err as Error & { code?: string };
  }
  throw new Error('expected a throw');
}

async function captured(store: ProfileStore, n = 1000) {
  return store.list(CAPTURE_OWNER, n);
}

// ---------------------------------------------------------------------------------------------
describe('options', () => {
  const core = resolveCore({});
  it('capture: true takes the defaults; off is null', () => {
    expect(resolveCapture({ capture: true }, core, true)).toMatchObject({ rate: 0.01, slowerThanMs: 1000, errors: true, maxPerMinute: 60, maxOpen: 10, label: null });
    expect(resolveCapture({}, core, true)).toBeNull();
    expect(resolveCapture({ capture: false }, core, true)).toBeNull();
    const c = resolveCapture({ capture: { rate: 0.5, slowerThanMs: 0, errors: false, maxPerMinute: 7, maxOpen: 3 } }, core, true)!;
    expect([c.rate, c.slowerThanMs, c.errors, c.maxPerMinute, c.maxOpen]).toEqual([0.5, 0, false, 7, 3]);
  });

  it('commands are redacted in captured profiles even with redact: false', () => {
    const c = resolveCapture({ capture: true }, resolveCore({ redact: false }), true)!;
    expect(c.core.redact).toBe(true);
  });

  it.each([
    [{ capture: { rate: 0 } }, 'option "capture.rate" must be a number above 0 and at most 1, got 0 (number)'],
    [{ capture: { rate: 1.5 } }, 'option "capture.rate" must be a number above 0 and at most 1, got 1.5 (number)'],
    [{ capture: { rate: '0.1' } }, 'option "capture.rate" must be a number above 0 and at most 1, got "0.1" (string)'],
    [{ capture: { rate: Number.NaN } }, 'option "capture.rate" must be a number above 0 and at most 1, got NaN (number)'],
    [{ capture: { slowerThanMs: -1 } }, 'option "capture.slowerThanMs" must be an integer from 0 to 3600000, got -1 (number)'],
    [{ capture: { maxPerMinute: 0 } }, 'option "capture.maxPerMinute" must be an integer from 1 to 10000, got 0 (number)'],
    [{ capture: { maxOpen: 1.5 } }, 'option "capture.maxOpen" must be an integer from 1 to 10000, got 1.5 (number)'],
    [{ capture: { errors: 'yes' } }, 'option "capture.errors" must be a boolean, got "yes" (string)'],
    [{ capture: 'on' }, 'option "capture" must be a boolean or { rate, slowerThanMs, errors, maxPerMinute, maxOpen }, got "on" (string)'],
    [{ capture: true, results: false }, 'option "capture" must be off when results is false (captured profiles are kept in the results store), got true (boolean)'],
    [{ captureLabel: () => 'x' }, 'option "captureLabel" must be unset while capture is off, got a function'],
    [{ capture: true, captureLabel: 'user' }, 'option "captureLabel" must be a function, got "user" (string)'],
  ])('%j is refused at setup with a coded TypeError', (options, message) => {
    const err = thrown(() => expressMiniprof(options as never));
    expect(err).toBeInstanceOf(TypeError);
    expect(err.code).toBe('MINIPROF_ERR_INVALID_OPTION');
    expect(err.message).toBe(`miniprof: ${message}`);
  });

  it('an unknown key is refused with MINIPROF_ERR_UNKNOWN_OPTION, on Fastify too', async () => {
    const err = thrown(() => expressMiniprof({ capture: { rates: 1 } } as never));
    expect(err.code).toBe('MINIPROF_ERR_UNKNOWN_OPTION');
    expect(err.message).toBe('miniprof: unknown option "capture.rates" (1 (number)); known: rate, slowerThanMs, errors, maxPerMinute, maxOpen');
    const app = Fastify();
    fastifyApps.push(app);
    await expect(app.register(fastifyMiniprof, { capture: { rate: 2 } }).ready()).rejects.toMatchObject({ code: 'MINIPROF_ERR_INVALID_OPTION' });
  });
});

// ---------------------------------------------------------------------------------------------
// The response matrix for sampled requests: the same routes behind miniprof with capture off and
// with capture at rate 1 (every request sampled, every one kept), raw bytes compared minus Date.

interface Row extends RawRequest {
  status: number;
}

function expressRoutes(app: express.Express): void {
  app.get('/page', (_req, res, next) => {
    step('load', () => sleep(1)).then(() => res.type('html').send(HTML), next);
  });
  app.get('/static', (_req, res) => res.type('html').send(HTML));
  app.get('/big', (_req, res) => res.type('html').send(BIG));
  app.get('/json', (_req, res) => res.json({ ok: true, s: 'é☕' }));
  app.get('/length', (_req, res) => res.type('html').set('Content-Length', String(Buffer.byteLength(HTML))).end(HTML));
  app.get('/stream', (_req, res, next) => {
    res.type('html');
    res.write('<html><body>');
    sleep(1).then(() => res.end('streamed</body></html>'), next);
  });
  app.get('/write-head', (_req, res) => {
    res.setHeader('x-before', '1');
    res.writeHead(201, 'Made It', { 'content-type': 'text/html', 'set-cookie': ['a=1', 'b=2'] });
    res.end(HTML);
  });
  app.get('/no-store', (_req, res) => res.set('Cache-Control', 'public, max-age=60').set('Server-Timing', 'app;dur=1').type('html').send(HTML));
  app.get('/encoded', (_req, res) => res.set('Content-Encoding', 'gzip').type('html').send(GZIPPED));
  app.get('/204', (_req, res) => res.status(204).end());
  app.get('/redirect', (_req, res) => res.redirect('/static'));
  app.get('/throws', () => {
    throw new Error('route failed');
  });
  app.get('/sse', (req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: one\n\n');
    setTimeout(() => res.end('data: two\n\n'), 5);
  });
  // In development Express's own error page shows the stack, whose frames below the route differ
  // whenever anything (miniprof's runInProfile, any middleware) calls `next` from another place.
  app.use((err: Error, _req: Request, res: express.Response, _next: express.NextFunction) => res.status(500).type('html').send(`<p>${err.message}</p>`));
}

const EXPRESS_ROWS: Row[] = [
  { path: '/page', status: 200 },
  { path: '/page?token=s3cret', status: 200 },
  { path: '/static', status: 200 },
  { path: '/static', method: 'HEAD', status: 200 },
  { path: '/static', headers: { 'If-None-Match': ETAG }, status: 304 },
  { path: '/big', headers: { 'Accept-Encoding': 'gzip' }, status: 200 },
  { path: '/big', headers: { 'Accept-Encoding': 'br' }, status: 200 },
  { path: '/json', status: 200 },
  { path: '/length', status: 200 },
  { path: '/stream', status: 200 },
  { path: '/write-head', status: 201 },
  { path: '/no-store', status: 200 },
  { path: '/encoded', status: 200 },
  { path: '/204', status: 204 },
  { path: '/redirect', status: 302 },
  { path: '/throws', status: 500 },
  { path: '/missing', status: 404 },
  { path: '/sse', status: 200 },
  { path: '/_miniprof/captured', status: 404 },
  { path: '/static', method: 'POST', body: 'a=1', status: 404 },
];

function fastifyRoutes(app: FastifyInstance): void {
  const html = async (_req: unknown, reply: FastifyReply) => {
    await step('render', () => sleep(1));
    return reply.type('text/html; charset=utf-8').send(HTML);
  };
  app.get('/html', html);
  app.get('/buffer', async (_req, reply) => reply.type('text/html').send(Buffer.from(HTML)));
  app.get('/app-length', async (_req, reply) => reply.type('text/html').header('content-length', Buffer.byteLength(HTML)).send(HTML));
  app.get('/json', async () => ({ a: 1, s: 'é☕' }));
  app.get('/text', async () => 'plain text é');
  app.get('/stream', async (_req, reply) => reply.type('text/html').send(Readable.from(['<html><body>', 'streamed é', '</body></html>'])));
  app.get('/204', async (_req, reply) => reply.code(204).send());
  app.get('/206', async (_req, reply) => reply.code(206).header('content-range', 'bytes 0-9/100').type('text/html').send('<html><bo'));
  app.get('/etag', async (req, reply) => {
    if (req.headers['if-none-match'] === '"v1"') return reply.code(304).send();
    return reply.type('text/html').header('etag', '"v1"').header('cache-control', 'public, max-age=60').send(HTML);
  });
  app.get('/early-hints', async (_req, reply) => {
    reply.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
    await step('after hints', () => sleep(1));
    return reply.type('text/html').send(HTML);
  });
  app.get('/app-server-timing', async (_req, reply) => reply.header('server-timing', 'app;dur=1.5').type('text/html').send(HTML));
  app.get('/redirect', async (_req, reply) => reply.redirect('/html'));
  app.get('/throws', async () => {
    await step('fails', () => Promise.reject(new Error('handler failed')));
  });
  app.get('/hijack', async (_req, reply) => {
    reply.hijack();
    await step('hijacked work', () => sleep(1));
    reply.raw.writeHead(200, { 'content-type': 'text/html', 'x-app': 'hijacked' });
    reply.raw.end(HTML);
  });
  app.get('/write-head', (_req, reply) => {
    reply.hijack();
    reply.raw.writeHead(201, 'Made It', { 'x-a': '1', 'set-cookie': ['a=1', 'b=2'] });
    reply.raw.end('<html><body>shape</body></html>');
  });
  app.get('/cookies', async (_req, reply) => reply.header('set-cookie', ['a=1; Path=/', 'b=2; HttpOnly']).type('text/html').send(HTML));
  app.get('/trailer', async (_req, reply) => reply.trailer('x-checksum', async () => 'abc').type('text/html').send(HTML));
  app.get('/early-reply', { onRequest: (_req, reply) => void reply.code(401).type('text/html').send('<html><body>who?</body></html>') }, async () => 'never');
  app.post('/upload', async (req) => ({ got: req.body }));
  app.setNotFoundHandler(async (_req, reply) => reply.code(404).type('text/html').send('<html><body>not here</body></html>'));
}

const FASTIFY_ROWS: Row[] = [
  { path: '/html', status: 200 },
  { path: '/html?token=s3cret', status: 200 },
  { path: '/html', method: 'HEAD', status: 200 },
  { path: '/buffer', status: 200 },
  { path: '/app-length', status: 200 },
  { path: '/json', status: 200 },
  { path: '/text', status: 200 },
  { path: '/stream', status: 200 },
  { path: '/204', status: 204 },
  { path: '/206', status: 206 },
  { path: '/etag', status: 200 },
  { path: '/etag', headers: { 'If-None-Match': '"v1"' }, status: 304 },
  { path: '/early-hints', status: 200 },
  { path: '/app-server-timing', status: 200 },
  { path: '/redirect', status: 302 },
  { path: '/throws', status: 500 },
  { path: '/hijack', status: 200 },
  { path: '/write-head', status: 201 },
  { path: '/cookies', status: 200 },
  { path: '/trailer', status: 200 },
  { path: '/early-reply', status: 401 },
  { path: '/upload', method: 'POST', headers: { 'Content-Type': 'application/json' }, body: ['{"a":', '1}'], chunkDelayMs: 2, status: 200 },
  { path: '/missing', status: 404 },
];

interface Running {
  port: number;
  close(): Promise<void>;
}

/** An Express app on 127.0.0.1:0, closed by the caller (the matrix keeps its servers for all rows). */
async function expressApp(options: MiniprofOptions<Request>, pre: RequestHandler[] = []): Promise<Running> {
  const app = express();
  for (const m of pre) app.use(m);
  app.use(expressMiniprof({ onInternalError, ...options }) as RequestHandler);
  expressRoutes(app);
  const server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as net.AddressInfo).port, close: () => new Promise((r) => server.close(() => r())) };
}

async function fastifyApp(options: MiniprofOptions<FastifyRequest>, routes = fastifyRoutes, keep = false): Promise<Running> {
  const app = Fastify({ logger: false });
  if (!keep) fastifyApps.push(app);
  await app.register(fastifyMiniprof, { onInternalError, ...options });
  routes(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { port: (app.server.address() as net.AddressInfo).port, close: () => app.close() };
}

describe.each([
  ['Express 5', EXPRESS_ROWS, (o: MiniprofOptions<never>) => expressApp(o as MiniprofOptions<Request>)],
  ['Express 5 after compression()', EXPRESS_ROWS, (o: MiniprofOptions<never>) => expressApp(o as MiniprofOptions<Request>, [compression() as RequestHandler])],
  ['Fastify 5', FASTIFY_ROWS, (o: MiniprofOptions<never>) => fastifyApp(o as MiniprofOptions<FastifyRequest>, fastifyRoutes, true)],
] as const)('%s: a sampled request is byte-identical to an unsampled one', (_name, rows, start) => {
  let off: Running;
  let on: Running;
  const store = memoryStore();

  beforeAll(async () => {
    // Nobody is a developer in either; only `capture` differs.
    off = await start({ isDeveloper: () => false });
    on = await start({ isDeveloper: () => false, capture: { rate: 1, slowerThanMs: 0, maxPerMinute: 10_000 }, results: { store } });
    return async () => {
      await off.close();
      await on.close();
    };
  });

  for (const row of rows) {
    const method = row.method ?? 'GET';
    it(`${method} ${row.path}${row.headers ? ` ${JSON.stringify(row.headers)}` : ''}`, async () => {
      const before = (await captured(store)).length;
      let req: RawRequest = row;
      if (row.headers?.['If-None-Match'] === ETAG) {
        const etag = (await raw(off.port, { path: row.path })).headers.etag![0]!;
        req = { ...row, headers: { 'If-None-Match': etag } };
      }
      const want = await raw(off.port, req);
      const got = await raw(on.port, req);
      expect(got.status).toBe(row.status);
      expect(withoutDate(got.bytes).toString('latin1')).toBe(withoutDate(want.bytes).toString('latin1'));
      // It was sampled, profiled and kept (slowerThanMs 0 keeps every one): not a vacuous match.
      await waitFor(() => openProfiles() === 0, 3000, 'the captured profile closed');
      const list = await captured(store);
      expect(list.length).toBe(before + 1);
      // Someone else's path: its number segments (ids) masked (issue 57 item 3).
      expect(list[0]).toMatchObject({ method, path: row.path!.split('?')[0]!.replace(/\/\d+(?=\/|$)/g, '/?'), status: row.status });
    });
  }
});

describe('a sampled response carries no wrapper of ours', () => {
  it('Express: no own end or writeHead on res, conditionals kept, the app sees its profile', async () => {
    const store = memoryStore();
    const app = express();
    app.use(expressMiniprof({ isDeveloper: () => false, capture: { rate: 1, slowerThanMs: 0 }, results: { store }, onInternalError }) as RequestHandler);
    app.get('/own', (req, res) => {
      res.json({
        end: Object.hasOwn(res, 'end'),
        writeHead: Object.hasOwn(res, 'writeHead'),
        profiled: currentProfile() !== undefined,
        conditional: req.headers['if-none-match'] ?? null,
      });
    });
    const port = await serve(app as unknown as http.RequestListener);
    const r = await raw(port, { path: '/own', headers: { 'If-None-Match': '"x"' } });
    expect(JSON.parse(r.payload.toString())).toEqual({ end: false, writeHead: false, profiled: true, conditional: '"x"' });
    expect(r.headers['x-miniprof-id']).toBeUndefined();
    expect(r.headers['server-timing']).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------------------------
describe('what is kept', () => {
  /** A clock each route moves on by the time it says it took. */
  function clocked() {
    const c = { t: 0 };
    return { c, clock: () => c.t };
  }

  async function app(capture: MiniprofOptions<Request>['capture'], extra: MiniprofOptions<Request> = {}) {
    const store = memoryStore();
    const { c, clock } = clocked();
    const a = express();
    a.use(expressMiniprof({ isDeveloper: (req) => req.headers['x-dev'] === '1', capture, results: { store }, clock, onInternalError, ...extra }) as RequestHandler);
    a.get('/took/:ms', (req, res) => {
      step('work', () => {
        c.t += Number(req.params.ms);
      });
      res.send('ok');
    });
    a.get('/5xx', (_req, res) => res.status(503).send('busy'));
    a.get('/4xx', (_req, res) => res.status(404).send('no'));
    a.get('/caught', (_req, res) => {
      try {
        step('fails', () => {
          throw new Error('caught by the app');
        });
      } catch {
        // the app recovers and answers 200
      }
      res.send('recovered');
    });
    a.get('/sql-error', (_req, res, next) => {
      timing('sql', 'select 1', () => Promise.reject(new Error('db down'))).catch(() => res.send('fallback')).catch(next);
    });
    const port = await serve(a as unknown as http.RequestListener);
    return { store, port };
  }

  it('kept when at least slowerThanMs, or 5xx, or a step threw; dropped otherwise', async () => {
    const { store, port } = await app({ rate: 1, slowerThanMs: 1000 });
    for (const path of ['/took/999', '/took/1000', '/took/2500', '/5xx', '/4xx', '/caught', '/sql-error', '/took/0']) await raw(port, { path });
    await waitFor(() => openProfiles() === 0);
    const list = await captured(store);
    expect(list.map((s) => [s.path, s.status, s.durationMs])).toEqual([
      ['/sql-error', 200, 0],
      ['/caught', 200, 0],
      // Someone else's path: segments with digits in them are masked (issue 57 item 3).
      ['/?', 503, 0],
      ['/took/?', 200, 2500],
      ['/took/?', 200, 1000],
    ]);
    expect(list.find((s) => s.path === '/caught')!.flags).toContain('error');
  });

  it('a response still open after maxDurationMs is sealed then and kept if slow; the stream goes on untouched', async () => {
    const store = memoryStore();
    const a = express();
    a.use(expressMiniprof({ isDeveloper: () => false, capture: { rate: 1, slowerThanMs: 20 }, maxDurationMs: 30, results: { store }, onInternalError }) as RequestHandler);
    a.get('/long', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
      setTimeout(() => res.end('data: two\n\n'), 120);
    });
    const port = await serve(a as unknown as http.RequestListener);
    const r = await raw(port, { path: '/long' });
    expect(r.payload.toString()).toBe('data: one\n\ndata: two\n\n');
    await waitFor(() => openProfiles() === 0);
    const [row] = await captured(store);
    expect(row).toMatchObject({ path: '/long', flags: ['warnings'] });
    expect((await store.get(CAPTURE_OWNER, row!.id))!.warnings).toEqual(['sealed after maxDurationMs while the response was still open']);
  });

  it('errors: false keeps only the slow ones', async () => {
    const { store, port } = await app({ rate: 1, slowerThanMs: 1000, errors: false });
    for (const path of ['/5xx', '/caught', '/took/1500', '/took/10']) await raw(port, { path });
    await waitFor(() => openProfiles() === 0);
    expect((await captured(store)).map((s) => [s.path, s.durationMs])).toEqual([['/took/?', 1500]]);
  });

  it("a developer's request is the developer's own, never captured", async () => {
    const { store, port } = await app({ rate: 1, slowerThanMs: 0 });
    const r = await raw(port, { path: '/took/5000', headers: dev });
    expect(r.headers['server-timing']).toBeDefined();
    await waitFor(() => openProfiles() === 0);
    expect(await captured(store)).toEqual([]);
  });

  it('rate: sampled at about the given share (no clock involved: Math.random)', async () => {
    const { store, port } = await app({ rate: 0.25, slowerThanMs: 0, maxPerMinute: 10_000 });
    for (let i = 0; i < 400; i++) await raw(port, { path: '/took/0' });
    await waitFor(() => openProfiles() === 0);
    const n = (await captured(store)).length;
    // Binomial(400, 0.25): mean 100, sd 8.7; outside 50-150 has a chance below 1e-8.
    expect(n).toBeGreaterThan(50);
    expect(n).toBeLessThan(150);
  });

  it('captureLabel: asked for kept ones only, after the app ran; cut, flattened; a fault is reported, not thrown', async () => {
    const asked: string[] = [];
    const { store, port } = await app({ rate: 1, slowerThanMs: 1000 }, {
      captureLabel: (req) => {
        asked.push(req.path);
        if (req.path === '/took/1001') throw new Error('label failed');
        if (req.path === '/took/1002') return 42 as unknown as string;
        return `tenant\n<b>${'x'.repeat(200)}`;
      },
    });
    for (const path of ['/took/1', '/took/1000', '/took/1001', '/took/1002']) await raw(port, { path });
    await waitFor(() => openProfiles() === 0);
    expect(asked).toEqual(['/took/1000', '/took/1001', '/took/1002']);
    const list = await captured(store);
    expect(list.map((s) => s.label)).toEqual([undefined, undefined, `tenant <b>${'x'.repeat(MAX_LABEL_LENGTH - 13)}...`]);
    expect(faults.map((e) => (e as Error).message)).toEqual(['label failed', 'miniprof: captureLabel must return a non-empty string, got 42 (number)']);
    faults = [];
    const page = (await raw(port, { path: '/_miniprof/captured', headers: dev })).payload.toString();
    expect(page).toContain('<span class="flag label">tenant &lt;b&gt;xxx');
    expect(page).not.toContain('<b>');
  });
});

describe('captureLabel is bounded and flat for any string', () => {
  it('property: at most MAX_LABEL_LENGTH units, no control or line-separator character, the start of the input', () => {
    const c = resolveCapture({ capture: true, captureLabel: (s: string) => s }, resolveCore({ onInternalError: () => {} }), true)!;
    fc.assert(
      fc.property(fc.string({ unit: 'binary', minLength: 1, maxLength: 400 }), (s) => {
        const out = labelOf(c, s)!;
        expect(out.length).toBeLessThanOrEqual(MAX_LABEL_LENGTH);
        expect(out).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/);
        const flat = s.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, ' ');
        if (flat.length <= MAX_LABEL_LENGTH) expect(out).toBe(flat);
        else expect(flat.startsWith(out.slice(0, -3)) && out.endsWith('...')).toBe(true);
        // Never half a surrogate pair at the cut.
        expect(/[\ud800-\udbff]\.\.\.$/.test(out)).toBe(false);
      }),
    );
  });
});

describe('who is sampled', () => {
  it('production without isDeveloper: nobody is a developer, capture still samples everyone else', async () => {
    const store = memoryStore();
    const env = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    let mw: RequestHandler;
    try {
      mw = expressMiniprof({ capture: { rate: 1, slowerThanMs: 0 }, results: { store }, onInternalError }) as RequestHandler;
    } finally {
      process.env.NODE_ENV = env;
    }
    const app = express();
    app.use(mw);
    app.get('/p', (_req, res) => res.send('ok'));
    const port = await serve(app as unknown as http.RequestListener);
    // A loopback peer, which outside production would be a developer.
    const r = await raw(port, { path: '/p' });
    expect(r.headers['server-timing']).toBeUndefined();
    await waitFor(() => openProfiles() === 0);
    expect((await captured(store)).map((x) => x.path)).toEqual(['/p']);
    // And no results page for anyone.
    expect((await raw(port, { path: '/_miniprof/captured' })).status).toBe(404);
  });

  it('Fastify, async isDeveloper: a no is followed by the dice; a yes is a developer profile', async () => {
    const store = memoryStore();
    const port = (
      await fastifyApp({ isDeveloper: async (req) => req.headers['x-dev'] === '1', capture: { rate: 1, slowerThanMs: 0 }, results: { store } }, (app) =>
        void app.get('/p', async () => ({ profiled: currentProfile() !== undefined })),
      )
    ).port;
    expect(JSON.parse((await raw(port, { path: '/p' })).payload.toString())).toEqual({ profiled: true });
    const d = await raw(port, { path: '/p', headers: dev });
    expect(d.headers['server-timing']).toBeDefined();
    await waitFor(() => openProfiles() === 0);
    expect((await captured(store)).length).toBe(1);
    expect((await store.list('peer:127.0.0.1', 10)).length).toBe(1);
  });
});

// ---------------------------------------------------------------------------------------------
describe('no secret of the request reaches the store', () => {
  const SECRETS = {
    query: 'QSECRET-7f3a9c',
    authorization: 'HSECRET-bearer-41d2',
    apiKey: 'HSECRET-apikey-88e1',
    cookie: 'CSECRET-session-5b07',
    sqlString: 'SQLSECRET-pass-2c44',
    sqlNumber: '4111111111111111',
    param: 'PSECRET-param-93aa',
    url: 'USECRET-url-6d1e',
  };

  it.each(['express', 'fastify'] as const)('%s: query, headers, cookies and SQL literals are nowhere in the stored JSON', async (fw) => {
    const store = memoryStore();
    const route = async () => {
      await step('load user', () =>
        timing('sql', `select * from users where password = '${SECRETS.sqlString}' and card = ${SECRETS.sqlNumber}`, () => sleep(1)),
      );
      await timing('sql', `select * from t where a = $1 /* params: '${SECRETS.param}' */`, () => sleep(1));
      await timing('http', `GET https://api.example.com/v1?key=${SECRETS.url}`, () => sleep(1));
      return HTML;
    };
    // redact: false for developers; captured profiles are redacted regardless.
    const options = { isDeveloper: () => false, redact: false, capture: { rate: 1, slowerThanMs: 0 }, results: { store } };
    let port: number;
    if (fw === 'express') {
      const app = express();
      app.use(expressMiniprof({ ...options, onInternalError }) as RequestHandler);
      app.get('/account/:id', (_req, res, next) => void route().then((h) => res.type('html').send(h), next));
      port = await serve(app as unknown as http.RequestListener);
    } else {
      port = (await fastifyApp(options, (app) => void app.get('/account/:id', async (_req, reply) => reply.type('text/html').send(await route())))).port;
    }
    const r = await raw(port, {
      path: `/account/7?token=${SECRETS.query}&x=1`,
      headers: { Authorization: `Bearer ${SECRETS.authorization}`, 'X-Api-Key': SECRETS.apiKey, Cookie: `sid=${SECRETS.cookie}; theme=dark` },
    });
    expect(r.status).toBe(200);
    await waitFor(() => openProfiles() === 0);
    const [row] = await captured(store);
    expect(row).toBeDefined();
    const text = JSON.stringify(await store.get(CAPTURE_OWNER, row!.id)) + JSON.stringify(await captured(store));
    for (const [where, secret] of Object.entries(SECRETS)) expect(text.includes(secret), `${where} secret in the store`).toBe(false);
    // What is there: the path without its query, the commands' shapes.
    expect(text).toContain('"path":"/account/?"');
    expect(text).toContain("select * from users where password = ? and card = ?");
    expect(text).toContain('GET https://api.example.com/v1?key=?');
  });
});

// ---------------------------------------------------------------------------------------------
describe('bounded', () => {
  it('maxPerMinute: a flood of slow requests keeps that many per minute, and samples no more once they are kept', async () => {
    const store = memoryStore();
    let now = Date.UTC(2026, 10, 29, 12, 0, 0);
    let profiled = 0;
    const app = express();
    // maxOpen 5: with slowerThanMs 0 every open one is slow already and may make room, but only
    // until five are kept.
    app.use(expressMiniprof({ isDeveloper: () => false, capture: { rate: 1, slowerThanMs: 0, maxPerMinute: 5, maxOpen: 5 }, results: { store }, now: () => now, onInternalError }) as RequestHandler);
    app.get('/slow', (_req, res) => {
      if (currentProfile() !== undefined) profiled++;
      setTimeout(() => res.send('done'), 2);
    });
    const port = await serve(app as unknown as http.RequestListener);
    // 40 at once: at most 5 open at a time, at most 5 kept this minute (a sampled one that finds
    // them kept when it closes is let go): at most 5 + 4 sampled.
    await Promise.all(Array.from({ length: 40 }, () => raw(port, { path: '/slow' })));
    await waitFor(() => openProfiles() === 0);
    expect((await captured(store)).length).toBe(5);
    expect(profiled).toBeGreaterThanOrEqual(5);
    expect(profiled).toBeLessThanOrEqual(9);
    const first = profiled;
    for (let i = 0; i < 20; i++) await raw(port, { path: '/slow' });
    expect(profiled).toBe(first);
    // The next minute has its own five.
    now += 60_000;
    for (let i = 0; i < 20; i++) await raw(port, { path: '/slow' });
    await waitFor(() => openProfiles() === 0);
    expect(profiled).toBe(first + 5);
    expect((await captured(store)).length).toBe(10);
  });

  it("memory store: a flood of captured profiles evicts only captured ones, never a developer's", async () => {
    const store = memoryStore({ maxCount: 5, captureMaxCount: 3 });
    const app = express();
    app.use(expressMiniprof({ isDeveloper: (req) => req.headers['x-dev'] === '1', capture: { rate: 1, slowerThanMs: 0, maxPerMinute: 10_000 }, results: { store }, onInternalError }) as RequestHandler);
    app.get('/p/:n', (_req, res) => res.send('ok'));
    const port = await serve(app as unknown as http.RequestListener);
    for (let i = 0; i < 4; i++) await raw(port, { path: `/p/dev${i}`, headers: dev });
    await Promise.all(Array.from({ length: 60 }, (_, i) => raw(port, { path: `/p/user${i}` })));
    await waitFor(() => openProfiles() === 0);
    const mine = await store.list('peer:127.0.0.1', 100);
    expect(mine.map((s) => s.path)).toEqual(['/p/dev3', '/p/dev2', '/p/dev1', '/p/dev0']);
    expect((await captured(store)).length).toBe(3);
    expect(store.stats().count).toBe(7);
  });

  it('memory store: captureMaxBytes bounds the captured bytes alone', async () => {
    const store = memoryStore({ maxBytes: 1 << 20, captureMaxBytes: 4096 });
    const profile = (id: string) => ({ v: 1 as const, id, name: 'x'.repeat(500), machine: 'm', started: new Date(0).toISOString(), durationMs: 1, droppedSteps: 0, warnings: [], root: { name: 'x'.repeat(500), startMs: 0, durationMs: 1, children: [] } });
    const ids = Array.from({ length: 10 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
    const size = Buffer.byteLength(JSON.stringify(profile(ids[0]!)));
    const fit = Math.floor(4096 / size);
    expect(fit).toBe(3);
    for (const id of ids.slice(0, 5)) await store.save('peer:dev', profile(id));
    for (const id of ids.slice(5)) await store.save(CAPTURE_OWNER, profile(id));
    expect((await store.list('peer:dev', 100)).length).toBe(5);
    expect((await captured(store)).map((s) => s.id)).toEqual([ids[9], ids[8], ids[7]]);
    expect(store.stats()).toEqual({ count: 8, bytes: 8 * size });
  });
});

// ---------------------------------------------------------------------------------------------
describe('for developers only: <basePath>/captured', () => {
  async function app(listLimit?: number) {
    const store = memoryStore();
    const c = { t: 0 };
    const a = express();
    a.use(expressMiniprof({ isDeveloper: (req) => req.headers['x-dev'] === '1', capture: { rate: 1, slowerThanMs: 100 }, results: { store, listLimit }, clock: () => c.t, onInternalError }) as RequestHandler);
    // Words, not numbers, in the paths: a captured path's number segments are masked (ids).
    const MS: Record<string, number> = { one: 100, two: 200, three: 300, nine: 900 };
    a.get('/took/:ms', (req, res) => {
      c.t += MS[req.params.ms as string]!;
      res.send('ok');
    });
    const port = await serve(a as unknown as http.RequestListener);
    for (const ms of ['three', 'one', 'nine', 'two']) await raw(port, { path: `/took/${ms}` });
    await waitFor(() => openProfiles() === 0);
    return { store, port };
  }

  it('newest first, slowest first, each opening in the profile page and as JSON', async () => {
    const { store, port } = await app();
    const list = await captured(store);
    const page = (await raw(port, { path: '/_miniprof/captured', headers: dev })).payload.toString();
    expect(page).toContain('<h1>Captured requests</h1>');
    expect([...page.matchAll(/<a href="\/_miniprof\/captured\/([0-9a-f-]{36})"><span class="method">GET<\/span>\/took\/([a-z]+)<\/a>/g)].map((m) => m[2])).toEqual(['two', 'nine', 'one', 'three']);
    const slowest = (await raw(port, { path: '/_miniprof/captured/slowest', headers: dev })).payload.toString();
    expect([...slowest.matchAll(/<\/span>\/took\/([a-z]+)<\/a>/g)].map((m) => m[1])).toEqual(['nine', 'three', 'two', 'one']);
    const id = list[0]!.id;
    const profile = await raw(port, { path: `/_miniprof/captured/${id}`, headers: dev });
    expect(profile.status).toBe(200);
    expect(profile.payload.toString()).toContain(`<a href="/_miniprof/captured/${id}.json">JSON</a>`);
    const json = await raw(port, { path: `/_miniprof/captured/${id}.json`, headers: dev });
    expect(JSON.parse(json.payload.toString())).toMatchObject({ id, request: { method: 'GET', path: '/took/two', status: 200 } });
    // The developer's own list links there; a captured id is not one of the developer's own.
    expect((await raw(port, { path: '/_miniprof/', headers: dev })).payload.toString()).toContain('<a href="/_miniprof/captured">captured requests</a>');
    expect((await raw(port, { path: `/_miniprof/${id}`, headers: dev })).status).toBe(404);
  });

  it('slowest first: the slowest of the kept ones, not only of the newest listLimit; its filter form stays on it', async () => {
    const { port } = await app(2);
    const rows = (html: string) => [...html.matchAll(/<\/span>\/took\/([a-z]+)<\/a>/g)].map((m) => m[1]);
    // Kept newest first: 200, 900, 100, 300. The newest two alone would give 900, 200.
    expect(rows((await raw(port, { path: '/_miniprof/captured', headers: dev })).payload.toString())).toEqual(['two', 'nine']);
    const slowest = (await raw(port, { path: '/_miniprof/captured/slowest', headers: dev })).payload.toString();
    expect(rows(slowest)).toEqual(['nine', 'three']);
    expect(slowest).toContain('<form class="filter" method="get" action="/_miniprof/captured/slowest/" role="search">');
    // What the form submits: still slowest first, filtered.
    const filtered = await raw(port, { path: '/_miniprof/captured/slowest/?path=%2Ftook%2Fon&flag=', headers: dev });
    expect(filtered.status).toBe(200);
    expect(filtered.payload.toString()).toContain('<h1>Captured requests, slowest first</h1>');
    expect(rows(filtered.payload.toString())).toEqual(['one']);
    const none = (await raw(port, { path: '/_miniprof/captured/slowest/?path=nothing', headers: dev })).payload.toString();
    expect(none).toContain('<a href="/_miniprof/captured/slowest/">Show all</a>');
    // The newest-first list's form stays on it.
    expect((await raw(port, { path: '/_miniprof/captured', headers: dev })).payload.toString()).toContain('action="/_miniprof/captured/" role="search"');
  });

  it('a non-developer gets the app\'s own answer at every captured path', async () => {
    const { store, port } = await app();
    const id = (await captured(store))[0]!.id;
    for (const path of ['/_miniprof/captured', '/_miniprof/captured/slowest', `/_miniprof/captured/${id}`, `/_miniprof/captured/${id}.json`]) {
      const r = await raw(port, { path });
      expect(r.status, path).toBe(404);
      // Express's own 404 page, which echoes the path; nothing of the profile.
      expect(r.payload.toString()).toContain(`<pre>Cannot GET ${path}</pre>`);
      expect(r.payload.toString()).not.toMatch(/Captured|"request"|miniprof\.css/);
    }
  });
});

// ---------------------------------------------------------------------------------------------
describe('with the Redis store: one captured list over every instance', () => {
  let redis: RedisServer;
  const clients: Redis[] = [];
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await redis?.kill();
  });

  let saved = 0;
  async function instance(name: string) {
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    clients.push(client);
    const inner = redisStore(client, { prefix: 'cap-test:', maxCount: 10, captureMaxCount: 4 });
    // Saves go out after the response: counted when settled, so the test can wait for them.
    const store: ProfileStore = { ...inner, save: (owner, p) => inner.save(owner, p).finally(() => saved++) };
    const app = express();
    app.use(expressMiniprof({ isDeveloper: (req) => req.headers['x-dev'] === '1', capture: { rate: 1, slowerThanMs: 0, maxPerMinute: 10_000 }, results: { store }, machine: name, onInternalError }) as RequestHandler);
    app.get('/p/:n', (_req, res) => res.send('ok'));
    const server = (await import('node:http')).createServer(app);
    track(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return { store, port: (server.address() as net.AddressInfo).port };
  }

  it("captured requests of two instances in one list; a flood keeps captureMaxCount and every developer profile", async () => {
    const a = await instance('web-a');
    const b = await instance('web-b');
    // One at a time, each saved before the next: the lists' order is then the requests' order.
    const requests: [number, string, Record<string, string>?][] = [[a.port, '/p/dev-a', dev], [b.port, '/p/dev-b', dev], [a.port, '/p/from-a'], [b.port, '/p/from-b']];
    for (const [i, [port, path, headers]] of requests.entries()) {
      await raw(port, { path, headers });
      await waitFor(() => saved === i + 1, 5000, `save ${i + 1}`);
    }
    const page = (await raw(a.port, { path: '/_miniprof/captured', headers: dev })).payload.toString();
    expect([...page.matchAll(/<\/span>(\/p\/[a-z-]+)<\/a>/g)].map((m) => m[1])).toEqual(['/p/from-b', '/p/from-a']);
    const id = (await captured(a.store)).find((s) => s.path === '/p/from-b')!.id;
    const json = await raw(a.port, { path: `/_miniprof/captured/${id}.json`, headers: dev });
    expect(JSON.parse(json.payload.toString())).toMatchObject({ id, machine: 'web-b' });

    await Promise.all(Array.from({ length: 40 }, (_, i) => raw(i % 2 ? a.port : b.port, { path: `/p/flood${i}` })));
    await waitFor(() => openProfiles() === 0 && saved === 44, 10_000, 'every save');
    expect((await captured(a.store)).length).toBe(4);
    expect((await a.store.list('peer:127.0.0.1', 100)).map((s) => s.path)).toEqual(['/p/dev-b', '/p/dev-a']);
  });
});
