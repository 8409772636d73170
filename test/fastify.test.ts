// End-to-end tests of the Fastify 5 plugin against real Fastify apps: real sockets
// (`listen({ port: 0, host: '127.0.0.1' })` + node:net / node:http) where the behaviour depends
// on them, `inject` where it does not. Hazard IDs are those of reliability.md.
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { PassThrough, Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import zlib from 'node:zlib';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import compress from '@fastify/compress';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { miniprof, type MiniprofOptions } from '../adapters/fastify.js';
import { als, openProfiles } from '../src/core/context.js';
import { currentProfile, memoryStore, step } from '../src/index.js';
import type { Profile, ProfileJSON, TimingJSON } from '../src/index.js';
import { leaveDuringBody, TEST_TLS, tlsGet } from './helpers/http.js';

type Options = MiniprofOptions<FastifyRequest>;

// ---------------------------------------------------------------------------------------------
// Helpers

const apps: FastifyInstance[] = [];

/**
 * A Fastify app (closed after each test), optionally with miniprof registered first. No badge
 * unless told: its tag and Server-Timing id are test/badge.test.ts's.
 */
async function build(
  mp: Options | null,
  routes: (app: FastifyInstance) => void,
  opts: FastifyServerOptions = {},
): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, ...opts });
  apps.push(app);
  if (mp !== null) await app.register(miniprof, { badge: false, ...mp });
  routes(app);
  await app.ready();
  return app;
}

async function listen(app: FastifyInstance): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as net.AddressInfo).port;
}

afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

/** Send raw bytes on a fresh socket and collect everything until the server closes it. */
function rawExchange(port: number, request: string | Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    // No half-close: Node's server aborts in-flight requests when the client ends its side.
    const s = net.connect(port, '127.0.0.1', () => s.write(request));
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('error', reject);
    s.on('close', () => resolve(Buffer.concat(chunks)));
  });
}

/** A plain HTTP/1.1 request that asks the server to close the connection after it. */
function rawGet(port: number, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Buffer> {
  let head = `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n`;
  for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
  return rawExchange(port, head + '\r\n');
}

interface Parsed {
  status: number;
  /** Header lines as sent, name case kept, in order. */
  lines: string[];
  /** Lower-case name -> values in order. */
  headers: Map<string, string[]>;
  /** The body as received (chunk framing removed). */
  body: Buffer;
  /** Interim (1xx) responses before the final one. */
  interim: Parsed[];
}

/** Parse one HTTP/1.1 response (with any 1xx before it) from raw bytes; the body is read to the end. */
function parse(raw: Buffer): Parsed {
  const interim: Parsed[] = [];
  let at = 0;
  for (;;) {
    const end = raw.indexOf('\r\n\r\n', at);
    if (end === -1) throw new Error(`no header end in ${JSON.stringify(raw.toString('latin1'))}`);
    const [statusLine, ...lines] = raw.subarray(at, end).toString('latin1').split('\r\n');
    const status = Number(statusLine!.split(' ')[1]);
    const headers = new Map<string, string[]>();
    for (const line of lines) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).toLowerCase();
      headers.set(name, [...(headers.get(name) ?? []), line.slice(colon + 1).trim()]);
    }
    at = end + 4;
    if (status >= 100 && status < 200) {
      interim.push({ status, lines, headers, body: Buffer.alloc(0), interim: [] });
      continue;
    }
    const rest = raw.subarray(at);
    const chunked = (headers.get('transfer-encoding') ?? []).join(',').toLowerCase().includes('chunked');
    return { status, lines, headers, body: chunked ? dechunk(rest) : rest, interim };
  }
}

function dechunk(b: Buffer): Buffer {
  const out: Buffer[] = [];
  let i = 0;
  while (i < b.length) {
    const eol = b.indexOf('\r\n', i);
    const size = parseInt(b.subarray(i, eol).toString('latin1'), 16);
    if (size === 0) break;
    out.push(b.subarray(eol + 2, eol + 2 + size));
    i = eol + 2 + size + 2;
  }
  return Buffer.concat(out);
}

function header(p: Parsed, name: string): string | undefined {
  return p.headers.get(name)?.join(', ');
}

/** The raw response without its `Date` line: the only part that may differ between two runs. */
function withoutDate(raw: Buffer): string {
  return raw.toString('latin1').replace(/\r\nDate: [^\r\n]*/i, '');
}

const COMMENT = /<!--\n[\s\S]*?-->/g;

/**
 * The developer's body is the base body plus exactly one miniprof comment: remove it and the
 * bytes must be the same. Returns the comment.
 */
/** The badge's one script tag (on by default where results are), right after the comment. */
const BADGE_TAG = /<script src="\/_miniprof\/badge\.js\?v=[\w-]+" data-position="bottom-right" defer data-id="[\da-f-]{36}"><\/script>/;

function oneCommentMore(dev: Buffer, base: Buffer): string {
  const d = dev.toString('latin1');
  const found = d.match(COMMENT) ?? [];
  expect(found, 'exactly one comment in the developer body').toHaveLength(1);
  expect(base.toString('latin1').match(COMMENT)).toBeNull();
  const tag = d.match(BADGE_TAG);
  if (tag !== null) expect(d).toContain(found[0]! + tag[0]);
  expect(d.replace(COMMENT, '').replace(BADGE_TAG, '')).toBe(base.toString('latin1'));
  return Buffer.from(found[0]!, 'latin1').toString('utf8');
}

/** Wait until `cond` holds, polling every 5 ms; fails after ~10 s (a wait, never a speed check). */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (cond()) return;
    await sleep(5);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * The app's own step names, depth first. The route handler's automatic step (`autoSteps`, the
 * subject of test/auto-steps.test.ts) is looked through: these tests are about the app's steps.
 */
function names(t: TimingJSON): string[] {
  return t.children.flatMap((c) => (c.handler === true ? names(c) : [c.name, ...names(c)]));
}

/** The root's own top steps: the route handler's step looked through, as in `names`. */
function top(t: TimingJSON): TimingJSON[] {
  return t.children.flatMap((c) => (c.handler === true ? c.children : [c]));
}

/** A profile grabbed from inside a request, with a count of how often it was sealed. */
interface Seen {
  profile: Profile;
  seals: number;
}

function watch(profile: Profile | undefined): Seen | undefined {
  if (profile === undefined) return undefined;
  const seen: Seen = { profile, seals: 0 };
  const seal = profile.seal;
  profile.seal = function (this: Profile) {
    if (!this.sealed) seen.seals++;
    return seal.call(this);
  };
  return seen;
}

/** A clock the test moves by hand, and a fixed wall clock: outputs are exact. */
function fakeClock(): { t: number; clock: () => number; now: () => number } {
  const c = { t: 0, clock: () => c.t, now: () => Date.UTC(2026, 10, 29, 12, 0, 0) };
  return c;
}

const HTML = '<!doctype html><html><head><title>t</title></head><body><p>héllo ☕ wörld</p></body></html>';
const dev = { 'x-dev': '1' };
const byHeader: Options = { isDeveloper: (req) => req.headers['x-dev'] === '1' };

afterAll(() => {
  // Every developer request of this file was sealed, each exactly once.
  expect(openProfiles()).toBe(0);
});

// ---------------------------------------------------------------------------------------------
describe('who is a developer (A1, A2)', () => {
  const cases: Array<[string, (req: unknown) => unknown, boolean, boolean]> = [
    ['true', () => true, true, false],
    ['false', () => false, false, false],
    ['a truthy non-boolean ("yes")', () => 'yes', false, false],
    ['throws', () => {
      throw new Error('gate broke');
    }, false, true],
    ['async true', async () => {
      await sleep(1);
      return true;
    }, true, false],
    ['async false', async () => false, false, false],
    ['rejects', () => Promise.reject(new Error('gate broke')), false, true],
    ['resolves 1', async () => 1, false, false],
  ];

  for (const [label, isDeveloper, profiled, faults] of cases) {
    it(`A1: isDeveloper ${label} => ${profiled ? 'profiled' : 'untouched'}${faults ? ', fault reported once' : ''}`, async () => {
      const reported: unknown[] = [];
      let inHandler: Profile | undefined;
      const routes = (app: FastifyInstance) =>
        app.get('/', async (_req, reply) => {
          inHandler = currentProfile();
          await step('work', () => sleep(1));
          return reply.type('text/html; charset=utf-8').send(HTML);
        });
      const base = await build(null, routes);
      const app = await build({ isDeveloper: isDeveloper as Options['isDeveloper'], onInternalError: (e) => reported.push(e) }, routes);
      const want = await base.inject({ url: '/' });
      const got = await app.inject({ url: '/' });
      expect(got.statusCode).toBe(200);
      if (profiled) {
        expect(got.headers['server-timing']).toMatch(/^work;dur=\d+\.\d, (?:miniprof-self;dur=\d+\.\d, )?total;dur=\d+\.\d$/);
        expect(got.headers['cache-control']).toBe('private, no-store');
        oneCommentMore(got.rawPayload, want.rawPayload);
        expect(inHandler).toBeDefined();
      } else {
        expect(inHandler).toBeUndefined();
        expect(got.rawPayload.equals(want.rawPayload)).toBe(true);
        const { date: _d1, ...h1 } = got.headers;
        const { date: _d2, ...h2 } = want.headers;
        expect(h1).toEqual(h2);
      }
      expect(reported).toHaveLength(faults ? 1 : 0);
      if (faults) expect((reported[0] as Error).message).toBe('gate broke');
    });
  }

  it('A1: isDeveloper sees what an onRequest hook registered before the plugin put on the request (an auth step)', async () => {
    const app = await build(null, (a) => {
      a.decorateRequest('user', null);
      a.addHook('onRequest', async (req) => {
        (req as FastifyRequest & { user: unknown }).user = req.headers.authorization === 'Bearer admin' ? { admin: true } : { admin: false };
      });
      a.register(miniprof, { isDeveloper: (req) => (req as FastifyRequest & { user: { admin: boolean } | null }).user?.admin === true });
      a.get('/', async () => ({ profiled: currentProfile() !== undefined }));
    });
    expect((await app.inject({ url: '/', headers: { authorization: 'Bearer admin' } })).json()).toEqual({ profiled: true });
    expect((await app.inject({ url: '/', headers: { authorization: 'Bearer someone' } })).json()).toEqual({ profiled: false });
  });

  it('A2: unset isDeveloper => only loopback peers, judged from the socket address (inject fakes it)', async () => {
    let profiled = 0;
    const app = await build({}, (a) =>
      a.get('/', async () => {
        if (currentProfile() !== undefined) profiled++;
        return { ok: true };
      }),
    );
    const table: Array<[string, Record<string, string>, boolean]> = [
      ['127.0.0.1', {}, true],
      ['127.8.9.10', {}, true],
      ['::1', {}, true],
      ['::ffff:127.0.0.1', {}, true],
      ['10.0.0.1', {}, false],
      ['::ffff:10.0.0.1', {}, false],
      ['203.0.113.5', { 'x-forwarded-for': '127.0.0.1' }, false],
      ['203.0.113.5', { 'x-real-ip': '127.0.0.1', forwarded: 'for=127.0.0.1' }, false],
      ['1270.0.0.1', {}, false],
      ['fe80::1', {}, false],
    ];
    for (const [remoteAddress, headers, expected] of table) {
      const before = profiled;
      const res = await app.inject({ url: '/', remoteAddress, headers });
      expect({ remoteAddress, profiled: profiled > before, st: 'server-timing' in res.headers }).toEqual({
        remoteAddress,
        profiled: expected,
        st: expected,
      });
    }
  });

  it('A2: unset isDeveloper on a real socket: an earlier hook that changes remoteAddress decides, X-Forwarded-For never does', async () => {
    const app = await build(null, (a) => {
      // Registered before the plugin: it runs first, like a test double for a remote peer.
      a.addHook('onRequest', (req, _reply, done) => {
        const fake = req.headers['x-test-peer'];
        if (typeof fake === 'string') Object.defineProperty(req.raw.socket, 'remoteAddress', { value: fake, configurable: true });
        done();
      });
      a.register(miniprof);
      a.get('/', async () => ({ profiled: currentProfile() !== undefined }));
    }, { trustProxy: true });
    const port = await listen(app);
    const ask = async (h: Record<string, string>) => {
      const p = parse(await rawGet(port, '/', h));
      return { body: JSON.parse(p.body.toString()) as unknown, st: header(p, 'server-timing') !== undefined };
    };
    expect(await ask({})).toEqual({ body: { profiled: true }, st: true });
    expect(await ask({ 'x-test-peer': '198.51.100.7', 'x-forwarded-for': '127.0.0.1' })).toEqual({ body: { profiled: false }, st: false });
    expect(await ask({ 'x-test-peer': '::ffff:198.51.100.7', forwarded: 'for=127.0.0.1' })).toEqual({ body: { profiled: false }, st: false });
  });

  it('A2: NODE_ENV=production and no isDeveloper => no hook is registered at all, the response is the app\'s', async () => {
    const routes = (a: FastifyInstance) => a.get('/', async (_req, reply) => reply.type('text/html').send(HTML));
    const before = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    let app: FastifyInstance;
    let explicit: FastifyInstance;
    try {
      app = await build({}, routes);
      explicit = await build({ isDeveloper: () => true }, routes);
    } finally {
      process.env.NODE_ENV = before;
    }
    const base = await build(null, routes);
    const hooks = (a: FastifyInstance) => a.printRoutes({ commonPrefix: false, includeHooks: true });
    expect(hooks(app)).toBe(hooks(base));
    expect(hooks(explicit)).toContain('miniprofOnRequest');
    const port = await listen(app);
    const basePort = await listen(base);
    expect(withoutDate(await rawGet(port, '/'))).toBe(withoutDate(await rawGet(basePort, '/')));
    // An explicit isDeveloper is honoured in production.
    expect((await explicit.inject({ url: '/' })).headers['server-timing']).toBeDefined();
  });
});

// ---------------------------------------------------------------------------------------------
// The response matrix: one set of routes, served by the app alone and by the app with miniprof.

const UTF16 = Buffer.from('\ufeff<html><body>x</body></html>', 'utf16le');
const LATIN1 = Buffer.from('<html><body>caf\xe9</body></html>', 'latin1');
const GZIPPED = zlib.gzipSync('<html><body>already encoded</body></html>');

function matrixRoutes(app: FastifyInstance): void {
  const html = (type = 'text/html; charset=utf-8') => async (_req: unknown, reply: FastifyReply) => {
    await step('render', () => sleep(1));
    return reply.type(type).send(HTML);
  };
  app.get('/html', html());
  app.get('/xhtml', html('application/xhtml+xml'));
  app.get('/plain-html-type', html('text/html'));
  app.get('/buffer', async (_req, reply) => reply.type('text/html; charset=utf-8').send(Buffer.from(HTML)));
  app.get('/uint8', async (_req, reply) => reply.type('text/html; charset=utf-8').send(new Uint8Array(Buffer.from(HTML))));
  app.get('/app-length', async (_req, reply) =>
    reply.type('text/html; charset=utf-8').header('content-length', Buffer.byteLength(HTML)).send(HTML),
  );
  app.get('/no-body-tag', async (_req, reply) => reply.type('text/html').send('<p>a fragment, é</p>'));
  app.get('/two-bodies', async (_req, reply) => reply.type('text/html').send('<body>a</body><p>b</p></BODY >tail'));
  app.get('/latin1', async (_req, reply) => reply.type('text/html; charset=iso-8859-1').send(LATIN1));
  app.get('/utf16', async (_req, reply) => reply.type('text/html; charset=utf-16').send(UTF16));
  app.get('/no-transform', async (_req, reply) => reply.type('text/html').header('cache-control', 'no-transform').send(HTML));
  app.get('/encoded', async (_req, reply) => reply.type('text/html').header('content-encoding', 'gzip').send(GZIPPED));
  app.get('/empty-html', async (_req, reply) => reply.type('text/html').send(''));
  app.get('/json', async () => ({ a: 1, s: 'é☕', nested: { b: [1, 2] } }));
  app.get('/json-string', async (_req, reply) => reply.type('application/json').send('{"already":"serialized"}'));
  app.get('/text', async () => 'plain text é');
  app.get('/stream', async (_req, reply) => reply.type('text/html').send(Readable.from(['<html><body>', 'streamed é', '</body></html>'])));
  app.get('/web-stream', async (_req, reply) => {
    const parts = ['<html><body>', 'web ☕', '</body></html>'].map((s) => new TextEncoder().encode(s));
    return reply.type('text/html').send(new ReadableStream({ pull(c) { const p = parts.shift(); if (p === undefined) c.close(); else c.enqueue(p); } }));
  });
  app.get('/response', async () => new Response('<html><body>a Response</body></html>', { headers: { 'content-type': 'text/html' } }));
  app.get('/204', async (_req, reply) => reply.code(204).send());
  app.get('/204-html', async (_req, reply) => reply.code(204).type('text/html').send('<html><body>x</body></html>'));
  app.get('/304', async (_req, reply) => reply.code(304).type('text/html').send('<html><body>x</body></html>'));
  app.get('/206', async (_req, reply) => reply.code(206).header('content-range', 'bytes 0-9/100').type('text/html').send('<html><bo'));
  app.get('/etag', async (req, reply) => {
    if (req.headers['if-none-match'] === '"v1"') return reply.code(304).send();
    return reply.type('text/html').header('etag', '"v1"').header('cache-control', 'public, max-age=60').header('last-modified', 'Sun, 29 Nov 2026 12:00:00 GMT').send(HTML);
  });
  app.get('/early-hints', async (_req, reply) => {
    reply.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
    await step('after hints', () => sleep(1));
    return reply.type('text/html').send(HTML);
  });
  app.get('/app-server-timing', async (_req, reply) => reply.header('server-timing', 'app;dur=1.5;desc="cache"').type('text/html').send(HTML));
  app.get('/tao', async (_req, reply) => reply.header('timing-allow-origin', '*').type('text/html').send(HTML));
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
  // Every writeHead call shape (C4), through a hijacked reply where the app owns the raw response.
  app.get('/write-head/:shape', (req, reply) => {
    reply.hijack();
    const raw = reply.raw;
    const shape = (req.params as { shape: string }).shape;
    if (shape === 'status') {
      raw.setHeader('x-set', 'before');
      raw.writeHead(200);
    } else if (shape === 'message-object') raw.writeHead(201, 'Made It', { 'x-a': '1', 'set-cookie': ['a=1', 'b=2'] });
    else if (shape === 'nested-array') raw.writeHead(200, [['x-a', '1'], ['x-b', '2']] as unknown as http.OutgoingHttpHeaders);
    else if (shape === 'flat-array') raw.writeHead(200, ['x-a', '1', 'x-b', '2'] as unknown as http.OutgoingHttpHeaders);
    else raw.writeHead(202, 'Accepted Later');
    raw.end('<html><body>shape</body></html>');
  });
  app.get('/returned', async (_req, reply) => {
    reply.type('Text/HTML; Charset=UTF-8');
    return step('render', () => HTML);
  });
  // An auth-style hook that answers before the handler.
  app.get('/early-reply', { onRequest: (_req, reply, done) => void reply.code(401).type('text/html').send('<html><body>who?</body></html>') }, async () => 'never');
  app.get('/pre-handler-reply', { preHandler: async (_req, reply) => reply.type('text/html').send('<html><body>cached</body></html>') }, async () => 'never');
  app.setNotFoundHandler(async (_req, reply) => reply.code(404).type('text/html').send('<html><body>not here</body></html>'));
  app.get('/cookies', async (_req, reply) => reply.header('set-cookie', ['a=1; Path=/', 'b=2; HttpOnly']).type('text/html').send(HTML));
  app.get('/trailer', async (_req, reply) => reply.trailer('x-checksum', async () => 'abc').type('text/html').send(HTML));
  app.get('/write-then-end', (_req, reply) => {
    reply.hijack();
    reply.raw.setHeader('content-type', 'text/html');
    reply.raw.write('<html><body>');
    reply.raw.end('chunks</body></html>');
  });
}

type Expect = 'comment' | 'same';
interface Row {
  path: string;
  method?: string;
  headers?: Record<string, string>;
  body: Expect;
  /** Developer headers: Server-Timing and cache headers present (false: the app's own reply). */
  ours?: boolean;
  status?: number;
}

const MATRIX: Row[] = [
  { path: '/html', body: 'comment' },
  { path: '/xhtml', body: 'comment' },
  { path: '/plain-html-type', body: 'comment' },
  { path: '/buffer', body: 'comment' },
  { path: '/uint8', body: 'comment' },
  { path: '/app-length', body: 'comment' },
  { path: '/no-body-tag', body: 'comment' },
  { path: '/two-bodies', body: 'comment' },
  { path: '/latin1', body: 'comment' },
  { path: '/early-hints', body: 'comment' },
  { path: '/app-server-timing', body: 'comment' },
  { path: '/utf16', body: 'same' },
  { path: '/no-transform', body: 'same' },
  { path: '/encoded', body: 'same' },
  { path: '/empty-html', body: 'same' },
  { path: '/json', body: 'same' },
  { path: '/json-string', body: 'same' },
  { path: '/text', body: 'same' },
  { path: '/stream', body: 'same' },
  { path: '/web-stream', body: 'same' },
  { path: '/response', body: 'same' },
  { path: '/204', body: 'same', status: 204 },
  { path: '/204-html', body: 'same', status: 204 },
  { path: '/304', body: 'same', status: 304 },
  { path: '/206', body: 'same', status: 206 },
  { path: '/html', method: 'HEAD', body: 'same' },
  { path: '/etag', body: 'comment' },
  { path: '/redirect', body: 'same', status: 302 },
  { path: '/throws', body: 'same', status: 500 },
  { path: '/missing', body: 'comment', status: 404 },
  { path: '/returned', body: 'comment' },
  { path: '/cookies', body: 'comment' },
  { path: '/trailer', body: 'comment' },
  { path: '/early-reply', body: 'comment', status: 401 },
  { path: '/pre-handler-reply', body: 'comment' },
  { path: '/hijack', body: 'same', ours: false },
  { path: '/write-head/status', body: 'same', ours: false },
  { path: '/write-head/message-object', body: 'same', ours: false, status: 201 },
  { path: '/write-head/nested-array', body: 'same', ours: false },
  { path: '/write-head/flat-array', body: 'same', ours: false },
  { path: '/write-head/bare', body: 'same', ours: false, status: 202 },
  { path: '/write-then-end', body: 'same', ours: false },
];

describe('response matrix on real sockets (C1, C2, C4, C6, C7, C9, B6)', () => {
  let basePort = 0;
  let mpPort = 0;
  const seen: Array<Seen | undefined> = [];
  const reported: unknown[] = [];

  beforeAll(async () => {
    const base = Fastify({ logger: false });
    const mp = Fastify({ logger: false });
    await mp.register(miniprof, { ...byHeader, onInternalError: (e) => reported.push(e) });
    // After the plugin, so it runs inside the profile; on both apps, so they stay the same.
    for (const a of [base, mp]) {
      a.addHook('onRequest', (_req, _reply, done) => {
        const s = watch(currentProfile());
        if (s !== undefined) seen.push(s);
        done();
      });
      matrixRoutes(a);
    }
    basePort = await listen(base);
    mpPort = await listen(mp);
    return async () => {
      await base.close();
      await mp.close();
    };
  });

  for (const row of MATRIX) {
    const method = row.method ?? 'GET';
    it(`non-developer ${method} ${row.path}: byte-identical to the app alone`, async () => {
      const want = await rawGet(basePort, row.path, row.headers, method);
      const got = await rawGet(mpPort, row.path, row.headers, method);
      expect(withoutDate(got)).toBe(withoutDate(want));
      expect(parse(got).status).toBe(row.status ?? 200);
    });

    it(`developer ${method} ${row.path}: ${row.body === 'comment' ? 'one comment more' : 'the same body'}, headers right, sealed once`, async () => {
      const before = seen.length;
      const base = parse(await rawGet(basePort, row.path, row.headers, method));
      const got = parse(await rawGet(mpPort, row.path, { ...row.headers, ...dev }, method));
      expect(got.status).toBe(row.status ?? 200);
      expect(got.status).toBe(base.status);
      if (row.body === 'comment') oneCommentMore(got.body, base.body);
      else expect(got.body.toString('latin1')).toBe(base.body.toString('latin1'));
      // C1: a declared length is the length of what arrived (HEAD: no body at all).
      const length = header(got, 'content-length');
      if (method === 'HEAD' || got.status === 304) expect(got.body.length).toBe(0);
      else if (length !== undefined) expect(Number(length)).toBe(got.body.length);
      const ours = row.ours ?? true;
      if (ours) {
        expect(header(got, 'server-timing')).toMatch(/(^|, )total;dur=\d+\.\d$/);
        // An app's no-transform is kept (compression middleware reads it after our header hook).
        expect(got.headers.get('cache-control')).toEqual([row.path === '/no-transform' ? 'private, no-store, no-transform' : 'private, no-store']);
        expect(got.headers.has('etag')).toBe(false);
      } else {
        expect(got.headers.has('server-timing')).toBe(false);
        // The app's own headers, exactly as it wrote them.
        expect(got.lines.filter((l) => !/^date:/i.test(l))).toEqual(base.lines.filter((l) => !/^date:/i.test(l)));
      }
      // Every header the app sent is still there (ours may add to or replace the cache ones).
      for (const [name, values] of base.headers) {
        if (['date', 'content-length', 'etag', 'cache-control', 'last-modified', 'server-timing'].includes(name)) continue;
        expect(got.headers.get(name), name).toEqual(values);
      }
      await until(() => seen.length > before && seen[seen.length - 1]!.profile.sealed, 'the profile to be sealed');
      const s = seen[seen.length - 1]!;
      expect(seen.length).toBe(before + 1);
      expect(s.seals).toBe(1);
      expect(s.profile.toJSON().request).toEqual({ method, path: row.path, status: got.status });
      expect(reported).toEqual([]);
    });
  }
});

// ---------------------------------------------------------------------------------------------
describe('developer output', () => {
  it('exact comment and Server-Timing with an injected clock; the comment goes before the last </body>, no query string', async () => {
    const c = fakeClock();
    const app = await build({ isDeveloper: () => true, clock: c.clock, now: c.now, machine: 'web-1' }, (a) => {
      a.get('/page', async (_req, reply) => {
        c.t = 1;
        await step('load user', async () => {
          c.t = 3;
          await step('query', () => {
            c.t = 5.25;
          });
          c.t = 6;
        });
        c.t = 10;
        return reply.type('text/html; charset=utf-8').send('<body>first</body><p>é</p></body >end');
      });
      a.get('/api', async () => {
        await step('load', () => {
          c.t = 4;
        });
        c.t = 7.5;
        return { ok: true };
      });
    });
    const port = await listen(app);
    const page = parse(await rawGet(port, '/page?token=secret'));
    const comment = [
      '<!--',
      'web-1 at 2026-11-29T12:00:00.000Z',
      'Path: GET /page',
      ' GET /page = 10.0ms',
      '> handler GET /page = 10.0ms',
      '>> load user = 5.0ms',
      '>>> query = 2.3ms',
      '-->',
    ].join('\n');
    expect(page.body.toString()).toBe(`<body>first</body><p>é</p>${comment}</body >end`);
    expect(header(page, 'content-length')).toBe(String(page.body.length));
    expect(header(page, 'server-timing')).toBe('load_user;dur=5.0;desc="load user", total;dur=10.0');
    expect(page.body.toString()).not.toContain('secret');

    c.t = 0;
    const api = parse(await rawGet(port, '/api'));
    expect(JSON.parse(api.body.toString())).toEqual({ ok: true });
    expect(header(api, 'server-timing')).toBe('load;dur=4.0, total;dur=7.5');
    expect(header(api, 'cache-control')).toBe('private, no-store');
  });

  it('C1: multibyte string and Buffer payloads: Content-Length is the byte length received, also when the app set it', async () => {
    const page = '<html><body>ünïcödé ☕ 𝄞</body></html>';
    const app = await build({ isDeveloper: () => true }, (a) => {
      a.get('/s', async (_req, reply) => reply.type('text/html; charset=utf-8').send(page));
      a.get('/b', async (_req, reply) => reply.type('text/html; charset=utf-8').send(Buffer.from(page)));
      a.get('/set', async (_req, reply) => reply.type('text/html; charset=utf-8').header('content-length', String(Buffer.byteLength(page))).send(page));
      a.get('/wrong', async (_req, reply) => reply.type('text/html').header('content-length', '3').send(page));
    });
    const port = await listen(app);
    for (const path of ['/s', '/b', '/set']) {
      const r = parse(await rawGet(port, path));
      expect(Number(header(r, 'content-length')), path).toBe(r.body.length);
      const text = r.body.toString('utf8');
      expect(text.startsWith('<html><body>ünïcödé ☕ 𝄞<!--\n')).toBe(true);
      expect(text.endsWith('-->\n</body></html>') || text.endsWith('--></body></html>')).toBe(true);
    }
    // A length that does not match the body is the app's business: no comment (Fastify fixes the length).
    const wrong = parse(await rawGet(port, '/wrong'));
    expect(wrong.body.toString()).toBe(page);
    expect(Number(header(wrong, 'content-length'))).toBe(wrong.body.length);
  });

  it('Server-Timing is appended to one the app set: in the handler, as a list, and in an onSend hook', async () => {
    const c = fakeClock();
    const app = await build({ isDeveloper: () => true, clock: c.clock }, (a) => {
      a.get('/handler', async (_req, reply) => {
        step('s', () => {
          c.t = 2;
        });
        return reply.header('server-timing', 'app;dur=1').send({});
      });
      a.get('/list', async (_req, reply) => {
        step('s', () => {
          c.t = 2;
        });
        return reply.header('server-timing', ['db;dur=3', 'cache;desc="hit"']).send({});
      });
      a.register(async (child) => {
        child.addHook('onSend', async (_req, reply, payload) => {
          reply.header('Server-Timing', 'edge;dur=0.5');
          return payload;
        });
        child.get('/on-send', async () => {
          step('s', () => {
            c.t = 2;
          });
          return {};
        });
      });
    });
    const port = await listen(app);
    c.t = 0;
    expect(header(parse(await rawGet(port, '/handler')), 'server-timing')).toBe('app;dur=1, s;dur=2.0, total;dur=2.0');
    c.t = 0;
    const list = parse(await rawGet(port, '/list'));
    expect(list.headers.get('server-timing')).toEqual(['db;dur=3', 'cache;desc="hit"', 's;dur=2.0, total;dur=2.0']);
    c.t = 0;
    expect(header(parse(await rawGet(port, '/on-send')), 'server-timing')).toBe('edge;dur=0.5, s;dur=2.0, total;dur=2.0');
  });

  it('C4: our headers merge with the headers Fastify gives writeHead, and with one the app set on the raw response; a non-developer raw response keeps none of its own', async () => {
    const seen: Record<string, string[]> = {};
    const routes = (a: FastifyInstance) => {
      a.addHook('onResponse', async (req, reply) => {
        seen[`${req.url} ${req.headers['x-dev'] ?? ''}`] = reply.raw.getHeaderNames();
      });
      a.get('/page', async (_req, reply) => reply.header('etag', '"v1"').header('link', '</a>; rel=preload').type('text/html').send(HTML));
      a.get('/raw-set', async (_req, reply) => {
        reply.raw.setHeader('x-raw', 'kept');
        return reply.header('etag', '"v1"').type('text/html').send(HTML);
      });
    };
    const port = await listen(await build(byHeader, routes));
    const r = parse(await rawGet(port, '/page', dev));
    expect(r.status).toBe(200);
    expect(header(r, 'etag')).toBeUndefined();
    expect(header(r, 'cache-control')).toBe('private, no-store');
    const id = header(r, 'x-miniprof-id');
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(header(r, 'link')).toBe(`</a>; rel=preload, </_miniprof/${id}>; rel="related"; title="miniprof"`);
    expect(header(r, 'server-timing')).toMatch(/total;dur=/);
    await rawGet(port, '/page');
    expect(seen['/page ']).toEqual([]);
    const m = parse(await rawGet(port, '/raw-set', dev));
    expect(header(m, 'x-raw')).toBe('kept');
    expect(header(m, 'etag')).toBeUndefined();
    expect(header(m, 'cache-control')).toBe('private, no-store');
    expect(header(m, 'server-timing')).toMatch(/total;dur=/);
    expect(seen['/raw-set 1']).toEqual(expect.arrayContaining(['x-raw', 'content-type', 'cache-control', 'server-timing']));
  });

  it("A6: an error page sent after writeHead refused a header of the app's still gets no-store and Server-Timing", async () => {
    const routes = (a: FastifyInstance) => {
      a.setErrorHandler((err: { code?: string }, _req, reply) => {
        reply.removeHeader('x-bad');
        return reply.code(500).type('text/html').send(`<html><body>${err.code}</body></html>`);
      });
      a.get('/bad', async (_req, reply) => reply.header('x-bad', 'a\u0000b').type('text/html').send(HTML));
    };
    const port = await listen(await build(byHeader, routes));
    const other = parse(await rawGet(port, '/bad'));
    expect(other.status).toBe(500);
    expect(other.body.toString()).toBe('<html><body>ERR_INVALID_CHAR</body></html>');
    const r = parse(await rawGet(port, '/bad', dev));
    expect(r.status).toBe(500);
    expect(r.body.toString()).toMatch(/^<html><body>ERR_INVALID_CHAR<!--\n[\s\S]*--><\/body><\/html>$/);
    expect(header(r, 'cache-control')).toBe('private, no-store');
    expect(header(r, 'server-timing')).toMatch(/total;dur=/);
    expect(header(r, 'x-miniprof-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(header(r, 'x-bad')).toBeUndefined();
  });

  it("C4: a valid header and then an invalid one: the developer's 500 carries the app's headers exactly as everyone else's (not the valid one)", async () => {
    const routes = (a: FastifyInstance) => {
      a.get('/bad', async (_req, reply) => reply.header('x-ok', 'valid').header('x-bad', 'a\u0000b').type('text/html').send(HTML));
      // A header the app set on the raw response first: Node then leaves the valid one for everyone.
      a.get('/raw-first', async (_req, reply) => {
        reply.raw.setHeader('x-raw', 'first');
        return reply.header('x-ok', 'valid').header('x-bad', 'a\u0000b').type('text/html').send(HTML);
      });
    };
    const port = await listen(await build(byHeader, routes));
    const ours = new Set(['date', 'cache-control', 'vary', 'server-timing', 'x-miniprof-id', 'link']);
    const appOnly = (r: Parsed) => r.lines.filter((l) => !ours.has(l.slice(0, l.indexOf(':')).toLowerCase()));
    for (const [path, left] of [['/bad', []], ['/raw-first', ['x-raw: first', 'x-ok: valid']]] as const) {
      const other = parse(await rawGet(port, path));
      const mine = parse(await rawGet(port, path, dev));
      expect([other.status, mine.status]).toEqual([500, 500]);
      expect(mine.body.toString()).toBe(other.body.toString());
      expect(appOnly(mine), path).toEqual(appOnly(other));
      for (const line of left) expect(other.lines, path).toContain(line);
      if (left.length === 0) expect(other.headers.has('x-ok')).toBe(false);
      // Still a developer's: not cacheable, and timed.
      expect(header(mine, 'cache-control')).toBe('private, no-store');
      expect(header(mine, 'server-timing')).toMatch(/total;dur=/);
    }
  });

  it('A6: cache headers: private, no-store and no ETag; a developer\'s conditional GET gets a fresh 200, not a 304', async () => {
    const app = await build(byHeader, matrixRoutes);
    const port = await listen(app);
    const conditional = { 'if-none-match': '"v1"', 'if-modified-since': 'Sun, 29 Nov 2026 12:00:00 GMT' };
    const other = parse(await rawGet(port, '/etag', conditional));
    expect(other.status).toBe(304);
    const mine = parse(await rawGet(port, '/etag', { ...conditional, ...dev }));
    expect(mine.status).toBe(200);
    expect(mine.body.toString()).toContain('<!--');
    expect(mine.headers.get('cache-control')).toEqual(['private, no-store']);
    expect(mine.headers.has('etag')).toBe(false);
    // The app's own validators for everyone else are untouched.
    const plain = parse(await rawGet(port, '/etag'));
    expect(header(plain, 'etag')).toBe('"v1"');
    expect(header(plain, 'cache-control')).toBe('public, max-age=60');
  });

  it('C6: HEAD has no body and does not throw; its Content-Length is the page\'s without the comment', async () => {
    const reported: unknown[] = [];
    const app = await build({ ...byHeader, onInternalError: (e) => reported.push(e) }, matrixRoutes);
    const port = await listen(app);
    const plainGet = parse(await rawGet(port, '/html'));
    const devGet = parse(await rawGet(port, '/html', dev));
    const devHead = parse(await rawGet(port, '/html', dev, 'HEAD'));
    expect(devHead.status).toBe(200);
    expect(devHead.body.length).toBe(0);
    expect(header(devHead, 'server-timing')).toMatch(/total;dur=/);
    // Fastify computes HEAD's length from the GET payload, which gets no comment for HEAD: so the
    // length is what a non-developer GET receives, smaller than the developer's GET.
    expect(Number(header(devHead, 'content-length'))).toBe(plainGet.body.length);
    expect(Number(header(devGet, 'content-length'))).toBeGreaterThan(plainGet.body.length);
    expect(reported).toEqual([]);
  });

  it('C7: 204 (payload undefined), 304 and 103 Early Hints keep their status, get no comment and never throw', async () => {
    const reported: unknown[] = [];
    const app = await build({ ...byHeader, onInternalError: (e) => reported.push(e) }, matrixRoutes);
    const port = await listen(app);
    const r204 = parse(await rawGet(port, '/204', dev));
    expect([r204.status, r204.body.length, r204.headers.has('content-length'), r204.headers.has('content-type')]).toEqual([204, 0, false, false]);
    expect(header(r204, 'server-timing')).toMatch(/^(?:miniprof-self;dur=\d+\.\d, )?total;dur=/);
    const r304 = parse(await rawGet(port, '/304', dev));
    expect([r304.status, r304.body.length]).toEqual([304, 0]);
    const hints = parse(await rawGet(port, '/early-hints', dev));
    expect(hints.interim.map((i) => [i.status, header(i, 'link')])).toEqual([[103, '</style.css>; rel=preload; as=style']]);
    expect(hints.interim[0]!.headers.has('server-timing')).toBe(false);
    expect(hints.status).toBe(200);
    expect(header(hints, 'server-timing')).toMatch(/^after_hints;dur=\d+\.\d;desc="after hints", (?:miniprof-self;dur=\d+\.\d, )?total;dur=/);
    expect(hints.body.toString()).toMatch(/<!--\n[\s\S]*> after hints = [\s\S]*--><\/body>/);
    expect(reported).toEqual([]);
  });

  it('C9: reply.hijack(): no header, no comment, and the profile is still sealed with its steps', async () => {
    let seen: Seen | undefined;
    const app = await build({ isDeveloper: () => true }, (a) => {
      a.addHook('onRequest', (_req, _reply, done) => {
        seen = watch(currentProfile());
        done();
      });
      matrixRoutes(a);
    });
    const port = await listen(app);
    const r = parse(await rawGet(port, '/hijack'));
    expect(r.body.toString()).toBe(HTML);
    expect([...r.headers.keys()].sort()).toEqual(['connection', 'content-type', 'date', 'transfer-encoding', 'x-app']);
    await until(() => seen!.profile.sealed, 'seal');
    expect(seen!.seals).toBe(1);
    const json = seen!.profile.toJSON();
    expect(names(json.root)).toEqual(['hijacked work']);
    expect(json.request).toEqual({ method: 'GET', path: '/hijack', status: 200 });
  });

  it('B2: a step named "a\\r\\nSet-Cookie: x=1" gives a valid 200 with no injected header (never the 500 Fastify makes of a bad header)', async () => {
    const reported: unknown[] = [];
    const evil = 'a\r\nSet-Cookie: x=1';
    const app = await build({ isDeveloper: () => true, onInternalError: (e) => reported.push(e) }, (a) => {
      a.get('/', async (_req, reply) => {
        step(evil, () => 1);
        step('caf\u00e9 \u2615 \u0000 \u007f "q" \\', () => 1);
        return reply.type('text/html').send('<html><body>ok</body></html>');
      });
    });
    const port = await listen(app);
    const raw = await rawGet(port, '/');
    const r = parse(raw);
    expect(r.status).toBe(200);
    expect(r.headers.has('set-cookie')).toBe(false);
    const head = raw.subarray(0, raw.indexOf('\r\n\r\n')).toString('latin1');
    expect(head).toMatch(/^[\x20-\x7e\r\n]*$/);
    expect(r.lines.every((l) => /^[A-Za-z0-9-]+: /.test(l))).toBe(true);
    const st = header(r, 'server-timing')!;
    expect(st).toMatch(/^a_Set-Cookie_x_1;dur=\d+\.\d;desc="a%0D%0ASet-Cookie: x=1", /);
    expect(st).toMatch(/^[\x20-\x7e]*$/);
    expect(r.body.toString()).toContain('> a\\r\\nSet-Cookie: x=1 = ');
    expect(r.body.toString()).toContain('<html><body>ok<!--');
    expect(reported).toEqual([]);
  });

  it('B5: 10,000 steps keep Server-Timing within 2048 bytes (and a smaller maxBytes), cut at metrics, total kept', async () => {
    const routes = (a: FastifyInstance) =>
      a.get('/', async () => {
        for (let i = 0; i < 10_000; i++) step(`step number ${i} with a longish name`, () => i);
        return { ok: true };
      });
    const port = await listen(await build({ isDeveloper: () => true }, routes));
    const small = await listen(await build({ isDeveloper: () => true, serverTiming: { maxBytes: 300 } }, routes));
    for (const [p, max] of [[port, 2048], [small, 300]] as const) {
      const r = parse(await rawGet(p, '/'));
      expect(r.status).toBe(200);
      const st = header(r, 'server-timing')!;
      expect(Buffer.byteLength(st)).toBeLessThanOrEqual(max);
      expect(Buffer.byteLength(st)).toBeGreaterThan(max - 120);
      expect(st).toMatch(/, more;desc="\d+ more", (?:miniprof-self;dur=\d+\.\d, )?total;dur=\d+\.\d$/);
      for (const metric of st.split(', ')) expect(metric).toMatch(/^[A-Za-z0-9_-]+;(dur=\d+\.\d(;desc="[^"]*")?|desc="\d+ more")$/);
    }
  });

  it('A7: the profiler never sets Timing-Allow-Origin, and drops Server-Timing when the app sets it to * (unless crossOrigin)', async () => {
    const closed = await listen(await build(byHeader, matrixRoutes));
    const open = await listen(await build({ ...byHeader, serverTiming: { crossOrigin: true } }, matrixRoutes));
    const own = parse(await rawGet(closed, '/html', dev));
    expect(own.headers.has('timing-allow-origin')).toBe(false);
    expect(own.headers.has('server-timing')).toBe(true);
    const tao = parse(await rawGet(closed, '/tao', dev));
    expect(header(tao, 'timing-allow-origin')).toBe('*');
    expect(tao.headers.has('server-timing')).toBe(false);
    expect(tao.body.toString()).toContain('<!--');
    const optIn = parse(await rawGet(open, '/tao', dev));
    expect(header(optIn, 'server-timing')).toMatch(/total;dur=/);
  });
});

// ---------------------------------------------------------------------------------------------
describe('lifecycle: streams, aborts, compression, encapsulation, errors', () => {
  it('C2: a server-sent event stream that never ends, closed by the client: events untouched, profile sealed once', async () => {
    const seen: Seen[] = [];
    let cleared = 0;
    const routes = (a: FastifyInstance) =>
      a.get('/events', (req, reply) => {
        const s = watch(currentProfile());
        if (s !== undefined) seen.push(s);
        const out = new PassThrough();
        let n = 0;
        const timer = setInterval(() => step('tick', () => out.write(`id: ${n}\ndata: event ${n++}\n\n`)), 2);
        req.raw.once('close', () => {
          clearInterval(timer);
          cleared++;
        });
        void reply.type('text/event-stream').header('cache-control', 'no-cache').send(out);
      });
    const basePort = await listen(await build(null, routes));
    const port = await listen(await build(byHeader, routes));
    const read = (p: number, headers: Record<string, string>) =>
      new Promise<{ head: http.IncomingHttpHeaders; events: string }>((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port: p, path: '/events', headers, agent: false }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            text += c;
            const events = text.split('\n\n');
            if (events.length > 3) {
              req.destroy();
              resolve({ head: res.headers, events: events.slice(0, 3).join('\n\n') });
            }
          });
        });
        req.on('error', (e) => (e.message === 'socket hang up' ? undefined : reject(e)));
      });
    const base = await read(basePort, {});
    const other = await read(port, {});
    const mine = await read(port, dev);
    const expected = 'id: 0\ndata: event 0\n\nid: 1\ndata: event 1\n\nid: 2\ndata: event 2';
    expect([base.events, other.events, mine.events]).toEqual([expected, expected, expected]);
    expect(other.head['server-timing']).toBeUndefined();
    expect(other.head['cache-control']).toBe('no-cache');
    // Written when the first event is: the ticks so far, and the time to then.
    expect(mine.head['server-timing']).toMatch(/(^|, )total;dur=\d+\.\d$/);
    expect(mine.head['cache-control']).toBe('private, no-store');
    await until(() => cleared === 3 && seen.length === 1 && seen[0]!.profile.sealed, 'the stream to close');
    expect(seen[0]!.seals).toBe(1);
    const json = seen[0]!.profile.toJSON();
    expect(json.request).toEqual({ method: 'GET', path: '/events', status: 200, aborted: true });
    expect(new Set(names(json.root))).toEqual(new Set(['tick']));
  });

  it('E3: an event stream that outlives maxDurationMs: sealed once while still streaming, and the stream goes on untouched', async () => {
    let seen: Seen | undefined;
    let closed = false;
    const app = await build({ isDeveloper: () => true, maxDurationMs: 30 }, (a) =>
      a.get('/events', (req, reply) => {
        seen = watch(currentProfile());
        const out = new PassThrough();
        let n = 0;
        const timer = setInterval(() => step('tick', () => out.write(`data: ${n++}\n\n`)), 2);
        req.raw.once('close', () => {
          clearInterval(timer);
          closed = true;
        });
        void reply.type('text/event-stream').send(out);
      }),
    );
    const port = await listen(app);
    const before = openProfiles();
    let text = '';
    const req = http.get({ host: '127.0.0.1', port, path: '/events', agent: false }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
    });
    req.on('error', () => undefined);
    await until(() => seen !== undefined && seen.profile.sealed, 'the maxDurationMs seal');
    expect(openProfiles()).toBe(before);
    const atSeal = text.length;
    await until(() => text.length > atSeal + 40, 'more events after the seal');
    req.destroy();
    await until(() => closed, 'the stream to close');
    await sleep(5);
    expect(seen!.seals).toBe(1);
    expect(openProfiles()).toBe(before);
    const json = seen!.profile.toJSON();
    expect(json.warnings.some((w) => w.includes('maxDurationMs'))).toBe(true);
    expect(new Set(names(json.root))).toEqual(new Set(['tick']));
    const events = text.split('\n\n').filter((e) => e !== '');
    expect(events.slice(0, -1)).toEqual(events.slice(0, -1).map((_, i) => `data: ${i}`));
  });

  it('C8: a client gone before an async isDeveloper answers: no profile is opened, since no close would seal it', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let asked!: () => void;
    const askedP = new Promise<void>((r) => (asked = r));
    const inHandler: Array<Profile | undefined> = [];
    let asking: FastifyRequest | undefined;
    const isDeveloper = async (req: FastifyRequest) => {
      asking = req;
      asked();
      await gate;
      return true;
    };
    const app = await build({ isDeveloper }, (a) => {
      a.get('/', async () => {
        inHandler.push(currentProfile());
        return 'x';
      });
    });
    const port = await listen(app);
    const before = openProfiles();
    const socket = net.connect(port, '127.0.0.1', () => socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
    await askedP;
    socket.destroy();
    await until(() => asking!.raw.destroyed, 'the server to see the client go');
    release();
    await until(() => inHandler.length === 1, 'the handler');
    expect(inHandler).toEqual([undefined]);
    expect(openProfiles()).toBe(before);
  });

  it('C8: a client that aborts mid-handler: the profile is sealed once, marked aborted, and later steps do not change it', async () => {
    const reported: unknown[] = [];
    let seen: Seen | undefined;
    let arrived!: () => void;
    const inHandler = new Promise<void>((r) => (arrived = r));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let finished = false;
    const app = await build({ isDeveloper: () => true, onInternalError: (e) => reported.push(e) }, (a) => {
      a.get('/slow', async (_req, reply) => {
        seen = watch(currentProfile());
        await step('before abort', async () => {
          arrived();
          await gate;
        });
        step('after abort', () => 1);
        await reply.type('text/html').send('<html><body>too late</body></html>');
        finished = true;
      });
    });
    const port = await listen(app);
    const socket = net.connect(port, '127.0.0.1', () => socket.write(`GET /slow HTTP/1.1\r\nHost: x\r\n\r\n`));
    await inHandler;
    socket.destroy();
    await until(() => seen!.profile.sealed, 'the seal on abort');
    release();
    await until(() => finished, 'the handler to finish');
    await sleep(10);
    expect(seen!.seals).toBe(1);
    const json = seen!.profile.toJSON();
    expect(json.request).toMatchObject({ method: 'GET', path: '/slow', aborted: true });
    expect(names(json.root)).toEqual(['before abort']);
    expect(top(json.root)[0]!.unfinished).toBe(true);
    expect(reported).toEqual([]);
  });

  it('C8: a client that leaves while a large body is still being written: request.aborted, on every Node', async () => {
    // Node 20 and 22 emit 'finish' for this response (the end was handed to the socket), and
    // read writableFinished true at 'close'; Node 24 does not.
    const huge = 'x'.repeat(48 << 20);
    let seen: Seen | undefined;
    const app = await build({ isDeveloper: () => true }, (a) => {
      a.get('/huge', async (_req, reply) => {
        seen = watch(currentProfile());
        return reply.type('text/plain').send(huge);
      });
    });
    await leaveDuringBody(await listen(app), '/huge');
    await until(() => seen !== undefined && seen.profile.sealed, 'the seal at close');
    expect(seen!.seals).toBe(1);
    expect(seen!.profile.toJSON().request).toEqual({ method: 'GET', path: '/huge', status: 200, aborted: true });
  });

  describe('C5: @fastify/compress in both registration orders', () => {
    const big = `<!doctype html><html><body>${'<p>compressible é ☕ text</p>'.repeat(200)}</body></html>`;
    const routes = (a: FastifyInstance) => {
      a.get('/page', async (_req, reply) => {
        await step('render', () => sleep(1));
        return reply.type('text/html; charset=utf-8').send(big);
      });
      a.get('/data', async () => ({ rows: Array.from({ length: 200 }, (_, i) => ({ i, s: 'row é' })) }));
    };
    const decode = (p: Parsed): Buffer => {
      const enc = header(p, 'content-encoding');
      if (enc === 'gzip') return zlib.gunzipSync(p.body);
      if (enc === 'br') return zlib.brotliDecompressSync(p.body);
      expect(enc).toBeUndefined();
      return p.body;
    };
    let basePort = 0;
    const ports: Record<string, number> = {};
    beforeAll(async () => {
      const base = Fastify({ logger: false });
      await base.register(compress);
      routes(base);
      const compressFirst = Fastify({ logger: false });
      await compressFirst.register(compress);
      await compressFirst.register(miniprof, byHeader);
      routes(compressFirst);
      const miniprofFirst = Fastify({ logger: false });
      await miniprofFirst.register(miniprof, byHeader);
      await miniprofFirst.register(compress);
      routes(miniprofFirst);
      basePort = await listen(base);
      ports['compress first'] = await listen(compressFirst);
      ports['miniprof first'] = await listen(miniprofFirst);
      return () => Promise.all([base.close(), compressFirst.close(), miniprofFirst.close()]);
    });
    for (const order of ['compress first', 'miniprof first']) {
      for (const encoding of ['gzip', 'br', 'identity']) {
        it(`C5: ${order}, ${encoding}: the decoded body has exactly one comment; non-developers get the app's bytes`, async () => {
          const port = ports[order]!;
          const ae = { 'accept-encoding': encoding };
          for (const path of ['/page', '/data']) {
            const baseRaw = await rawGet(basePort, path, ae);
            expect(withoutDate(await rawGet(port, path, ae))).toBe(withoutDate(baseRaw));
            const base = parse(baseRaw);
            const mine = parse(await rawGet(port, path, { ...ae, ...dev }));
            expect(header(mine, 'content-encoding')).toBe(header(base, 'content-encoding'));
            expect(header(base, 'content-encoding')).toBe(encoding === 'identity' ? undefined : encoding);
            // F2: a profiled response varies on everything, whatever compression said.
            expect(header(mine, 'vary')).toBe('*');
            expect(header(mine, 'server-timing')).toMatch(/total;dur=/);
            const length = header(mine, 'content-length');
            if (length !== undefined) expect(Number(length)).toBe(mine.body.length);
            if (path === '/page') {
              oneCommentMore(decode(mine), decode(base));
              expect(decode(mine).toString()).toMatch(/-->\n?<script [^>]+><\/script><\/body><\/html>$/);
            } else {
              expect(decode(mine).toString()).toBe(decode(base).toString());
            }
          }
        });
      }
    }
  });

  it('C12: routes in sibling, child and grandchild (encapsulated) plugins are all profiled', async () => {
    const app = await build({ isDeveloper: () => true }, (a) => {
      a.get('/root', async () => step('at root', () => ({ at: 'root' })));
      a.register(async (sibling) => {
        sibling.get('/', async () => step('in sibling', () => ({ at: 'sibling' })));
      }, { prefix: '/sibling' });
      a.register(async (child) => {
        child.addHook('preHandler', async () => {
          step('child hook', () => 1);
        });
        child.get('/', async () => step('in child', () => ({ at: 'child' })));
        child.register(async (grandchild) => {
          grandchild.get('/', async (_req, reply) => reply.type('text/html').send(step('in grandchild', () => '<html><body>g</body></html>')));
        }, { prefix: '/grand' });
      }, { prefix: '/child' });
    });
    const port = await listen(app);
    const expectations: Array<[string, string]> = [
      ['/root', 'at_root;dur='],
      ['/sibling', 'in_sibling;dur='],
      ['/child', 'child_hook;dur='],
      ['/child', 'in_child;dur='],
      ['/child/grand', 'child_hook;dur='],
      ['/child/grand', 'in_grandchild;dur='],
    ];
    for (const [path, metric] of expectations) {
      const r = parse(await rawGet(port, path));
      expect(r.status, path).toBe(200);
      expect(header(r, 'server-timing'), path).toContain(metric);
    }
    expect(parse(await rawGet(port, '/child/grand')).body.toString()).toMatch(/^<html><body>g<!--\n[\s\S]*> in grandchild = /);
  });

  it('C10: a handler\'s error reaches setErrorHandler as the same object; its HTML error page gets the comment', async () => {
    const thrown: unknown[] = [];
    const received: unknown[] = [];
    const reported: unknown[] = [];
    let profile: Profile | undefined;
    const failures: Record<string, () => unknown> = {
      sync: () => {
        const e = Object.assign(new Error('sync'), { statusCode: 418, extra: { a: 1 } });
        thrown.push(e);
        step('throws', () => {
          throw e;
        });
      },
      async: async () => {
        const e = new RangeError('async');
        thrown.push(e);
        await step('rejects', () => Promise.reject(e));
      },
      nonError: async () => {
        const e = { notAnError: true };
        thrown.push(e);
        await step('rejects a plain object', async () => {
          throw e;
        });
      },
    };
    const app = await build({ isDeveloper: () => true, onInternalError: (e) => reported.push(e) }, (a) => {
      a.setErrorHandler((err, _req, reply) => {
        received.push(err);
        return reply.code(500).type('text/html').send('<html><body><h1>Sorry</h1></body></html>');
      });
      a.get('/:kind', async (req) => {
        profile = currentProfile();
        return failures[(req.params as { kind: string }).kind]!();
      });
    });
    const port = await listen(app);
    for (const [kind, stepName] of [['sync', 'throws'], ['async', 'rejects'], ['nonError', 'rejects a plain object']] as const) {
      const r = parse(await rawGet(port, `/${kind}`));
      expect(r.status, kind).toBe(500);
      expect(received.at(-1)).toBe(thrown.at(-1));
      expect(r.body.toString()).toMatch(new RegExp(`^<html><body><h1>Sorry</h1><!--\\n[\\s\\S]*> ${stepName} = \\d+\\.\\dms \\(error\\)\\n(?:miniprof's own time: \\d+\\.\\dms \\(not in the times above\\)\\n)?-->\\n?</body></html>$`));
      expect(header(r, 'server-timing')).toMatch(/total;dur=/);
      await until(() => profile!.sealed, 'seal');
      // The handler's own step is errored too (its error was sent), and the app's step inside it.
      expect(profile!.toJSON().root.children.map((c) => [c.name, c.error])).toEqual([['handler GET /:kind', true]]);
      expect(top(profile!.toJSON().root).map((c) => [c.name, c.error])).toEqual([[stepName, true]]);
    }
    expect(received).toHaveLength(3);
    expect(reported).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
describe('async context (D1, D2, D5)', () => {
  it('D2: slow chunked POSTs > 64 KiB (JSON, a parseAs string parser, a streaming parser, a preParsing stream): steps from preParsing to onSend land in the request\'s own profile', async () => {
    const profiles = new Map<string, Profile>();
    const sameEverywhere = new Map<string, Set<Profile | undefined>>();
    const idOf = (req: FastifyRequest) => String(req.headers['x-id']);
    const mark = (req: FastifyRequest, what: string) => {
      const id = idOf(req);
      sameEverywhere.set(id, (sameEverywhere.get(id) ?? new Set()).add(currentProfile()));
      step(`${id}:${what}`, () => 1);
    };
    const app = await build({ isDeveloper: () => true }, (a) => {
      a.addHook('preParsing', async (req, _reply, payload) => {
        await sleep(1);
        mark(req, 'preParsing');
        // A hook may hand on a stream of its own: the parser then reads that one.
        return req.headers['x-wrap'] === '1' ? payload.pipe(new PassThrough()) : payload;
      });
      a.addContentTypeParser('application/x-lines', { parseAs: 'string', bodyLimit: 1 << 20 }, (req, body, done) => {
        mark(req, 'parse');
        done(null, String(body).split('\n'));
      });
      a.addContentTypeParser('application/x-count', { bodyLimit: 1 << 20 }, async (req: FastifyRequest, payload: NodeJS.ReadableStream) => {
        let n = 0;
        for await (const chunk of payload) {
          n += (chunk as Buffer).length;
          mark(req, 'chunk');
        }
        return { n };
      });
      a.addHook('preValidation', async (req) => mark(req, 'preValidation'));
      a.addHook('preHandler', (req, _reply, done) => {
        mark(req, 'preHandler');
        done();
      });
      a.addHook('onSend', async (req, _reply, payload) => {
        await sleep(1);
        mark(req, 'onSend');
        return payload;
      });
      a.post('/upload', { bodyLimit: 1 << 20 }, async (req) => {
        await sleep(1);
        mark(req, 'handler');
        profiles.set(idOf(req), currentProfile()!);
        const body = req.body as unknown;
        const size = Array.isArray(body) ? body.join('\n').length : (body as { n?: number; items?: string[] }).n ?? Buffer.byteLength(JSON.stringify(body));
        return { id: idOf(req), size };
      });
    });
    const port = await listen(app);
    const slowPost = (id: string, type: string, body: Buffer, extra = '') =>
      new Promise<Parsed>((resolve, reject) => {
        const chunks: Buffer[] = [];
        const s = net.connect(port, '127.0.0.1', async () => {
          s.write(`POST /upload HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: ${type}\r\nTransfer-Encoding: chunked\r\nX-Id: ${id}\r\n${extra}\r\n`);
          for (let at = 0; at < body.length; at += 8192) {
            const part = body.subarray(at, at + 8192);
            s.write(`${part.length.toString(16)}\r\n`);
            s.write(part);
            s.write('\r\n');
            await sleep(2);
          }
          s.write('0\r\n\r\n');
        });
        s.on('data', (c: Buffer) => chunks.push(c));
        s.on('error', reject);
        s.on('close', () => resolve(parse(Buffer.concat(chunks))));
      });
    const json = Buffer.from(JSON.stringify({ items: Array.from({ length: 6000 }, (_, i) => `item ${i} é`) }));
    const lines = Buffer.from(Array.from({ length: 9000 }, (_, i) => `line ${i}`).join('\n'));
    const counted = Buffer.alloc(70_000, 'x');
    expect(Math.min(json.length, lines.length, counted.length)).toBeGreaterThan(64 * 1024);
    const [rj, rl, rc, rw] = await Promise.all([
      slowPost('J', 'application/json', json),
      slowPost('L', 'application/x-lines', lines),
      slowPost('C', 'application/x-count', counted),
      slowPost('W', 'application/x-lines', lines, 'X-Wrap: 1\r\n'),
    ]);
    expect(JSON.parse(rw.body.toString())).toEqual({ id: 'W', size: lines.length });
    expect(JSON.parse(rj.body.toString())).toEqual({ id: 'J', size: json.length });
    expect(JSON.parse(rl.body.toString())).toEqual({ id: 'L', size: lines.length });
    expect(JSON.parse(rc.body.toString())).toEqual({ id: 'C', size: counted.length });
    await until(() => [...profiles.values()].every((p) => p.sealed) && profiles.size === 4, 'four sealed profiles');
    const flow = ['preValidation', 'preHandler', 'handler', 'onSend'];
    const got = (id: string) => names(profiles.get(id)!.toJSON().root);
    expect(got('J')).toEqual(['J:preParsing', ...flow.map((f) => `J:${f}`)]);
    // A `parseAs` parser runs from the body stream's 'end' event: its step is still the request's.
    expect(got('L')).toEqual(['L:preParsing', 'L:parse', ...flow.map((f) => `L:${f}`)]);
    expect(got('W')).toEqual(['W:preParsing', 'W:parse', ...flow.map((f) => `W:${f}`)]);
    const c = got('C');
    expect(c.slice(0, 1)).toEqual(['C:preParsing']);
    expect(c.slice(-4)).toEqual(flow.map((f) => `C:${f}`));
    const chunks = c.slice(1, -4);
    expect(chunks.length).toBeGreaterThan(1);
    expect(new Set(chunks)).toEqual(new Set(['C:chunk']));
    for (const id of ['J', 'L', 'C', 'W']) expect([...sameEverywhere.get(id)!]).toEqual([profiles.get(id)]);
    // The header was rendered when the payload was handed over: onSend's step is in the JSON only.
    expect(header(rj, 'server-timing')).toMatch(/^J_preParsing;dur=.*J_handler;dur=[^,]*, (?:miniprof-self;dur=\d+\.\d, )?total;dur=/);
  });

  it('D5: 200 concurrent real-socket requests (1 in 4 not from a developer) with random awaits, nested and Promise.all steps: every tree holds only its own names', async () => {
    const profiles = new Map<string, ProfileJSON>();
    const unprofiled: string[] = [];
    const pending: Array<Promise<void>> = [];
    const jitter = async () => {
      const r = Math.random();
      if (r < 0.3) await sleep(Math.floor(Math.random() * 8));
      else if (r < 0.6) await new Promise((res) => setImmediate(res));
      else await null;
    };
    const app = await build(byHeader, (a) => {
      a.addHook('preHandler', async (req) => {
        const id = (req.params as { id: string }).id;
        await jitter();
        await step(`${id}:pre`, jitter);
      });
      const handler = async (req: FastifyRequest) => {
        const id = (req.params as { id: string }).id;
        const p = currentProfile();
        if (p === undefined) unprofiled.push(id);
        else pending.push(until(() => p.sealed, 'seal').then(() => void profiles.set(id, p.toJSON())));
        await step(`${id}:outer`, async () => {
          await jitter();
          await Promise.all([
            step(`${id}:a`, async () => {
              await jitter();
              await step(`${id}:a1`, jitter);
            }),
            step(`${id}:b`, jitter),
            step(`${id}:c`, () => `${id}`),
          ]);
          step(`${id}:sync`, () => 1);
        });
        return { id };
      };
      a.get('/d5/:id', handler);
      a.post('/d5/:id', handler);
    });
    const port = await listen(app);
    const agent = new http.Agent({ keepAlive: false, maxSockets: 200 });
    const one = (i: number) =>
      new Promise<{ id: string; st: string; body: string }>((resolve, reject) => {
        const id = `r${i}`;
        const post = i % 2 === 1;
        const headers: Record<string, string> = i % 4 === 0 ? {} : { ...dev };
        if (post) headers['content-type'] = 'application/json';
        const req = http.request(
          { host: '127.0.0.1', port, path: `/d5/${id}`, method: post ? 'POST' : 'GET', agent, headers },
          (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => (body += c));
            res.on('end', () => resolve({ id, st: String(res.headers['server-timing']), body }));
          },
        );
        req.on('error', reject);
        req.end(post ? JSON.stringify({ id, pad: 'x'.repeat(i * 10) }) : undefined);
      });
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => one(i)));
    agent.destroy();
    await Promise.all(pending);
    expect(profiles.size).toBe(150);
    expect(unprofiled.sort()).toEqual(Array.from({ length: 50 }, (_, i) => `r${i * 4}`).sort());
    let foreign = 0;
    for (const { id, st, body } of results) {
      expect(JSON.parse(body)).toEqual({ id });
      if (unprofiled.includes(id)) {
        expect(st).toBe('undefined');
        continue;
      }
      const tree = profiles.get(id)!;
      const all = names(tree.root);
      foreign += all.filter((n) => !n.startsWith(`${id}:`)).length;
      expect(all.sort()).toEqual([`${id}:pre`, `${id}:outer`, `${id}:a`, `${id}:a1`, `${id}:b`, `${id}:c`, `${id}:sync`].sort());
      const outer = top(tree.root).find((c) => c.name === `${id}:outer`)!;
      expect(outer.children.map((c) => c.name)).toEqual([`${id}:a`, `${id}:b`, `${id}:c`, `${id}:sync`]);
      expect(outer.children[0]!.children.map((c) => c.name)).toEqual([`${id}:a1`]);
      // Every step metric is this request's. `event-loop` is miniprof's own, there when a loaded
      // machine stalled the loop past blockingMs while this request was open (it failed CI once).
      const steps = st.split(', ').slice(0, -1).filter((m) => !m.startsWith('event-loop;') && !m.startsWith('miniprof-self;'));
      expect(steps.length).toBeGreaterThanOrEqual(2);
      for (const metric of steps) expect(metric.startsWith(`${id}_`), `${id}: ${st}`).toBe(true);
    }
    expect(foreign).toBe(0);
  });

  it('D1: one keep-alive socket carries 5 developer requests (GET and POST); a hook registered before the plugin never sees a profile', async () => {
    const before: Array<Profile | undefined> = [];
    const sockets = new Set<unknown>();
    const app = await build(null, (a) => {
      a.addHook('onRequest', (req, _reply, done) => {
        before.push(currentProfile());
        sockets.add(req.raw.socket);
        step('before the profiler', () => 1);
        done();
      });
      a.register(miniprof, { isDeveloper: () => true });
      a.get('/ka', async () => step('work', async () => ({ profiled: currentProfile() !== undefined })));
      a.post('/ka', async (req) => step('work', async () => ({ profiled: currentProfile() !== undefined, body: req.body })));
    });
    const port = await listen(app);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    for (let i = 0; i < 5; i++) {
      const post = i % 2 === 1;
      const r = await new Promise<{ body: string; st: string }>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port, path: '/ka', method: post ? 'POST' : 'GET', agent, headers: post ? { 'content-type': 'application/json' } : {} }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c));
          res.on('end', () => resolve({ body, st: String(res.headers['server-timing']) }));
        });
        req.on('error', reject);
        req.end(post ? JSON.stringify({ i }) : undefined);
      });
      expect(JSON.parse(r.body)).toEqual(post ? { profiled: true, body: { i } } : { profiled: true });
      expect(r.st).toMatch(/^work;dur=\d+\.\d, (?:miniprof-self;dur=\d+\.\d, )?miniprof;desc="[\da-f-]{36}", total;dur=/);
    }
    agent.destroy();
    expect(sockets.size).toBe(1);
    expect(before).toEqual([undefined, undefined, undefined, undefined, undefined]);
  });

  it('D1: three pipelined requests on one socket: each gets its own profile, and code before the plugin sees none', async () => {
    const before: Array<Profile | undefined> = [];
    const app = await build(null, (a) => {
      a.addHook('onRequest', (_req, _reply, done) => {
        before.push(currentProfile());
        done();
      });
      a.register(miniprof, { isDeveloper: () => true });
      a.get('/p/:n', async (req) => {
        const n = (req.params as { n: string }).n;
        await step(`pipelined ${n}`, () => sleep(3 - Number(n)));
        return { n };
      });
    });
    const port = await listen(app);
    const req = (n: number, last = false) => `GET /p/${n} HTTP/1.1\r\nHost: x\r\n${last ? 'Connection: close\r\n' : ''}\r\n`;
    const raw = (await rawExchange(port, req(0) + req(1) + req(2, true))).toString('latin1');
    const heads = [...raw.matchAll(/server-timing: ([^\r]*)/gi)].map((m) => m[1]!.replace(/miniprof-self;dur=[\d.]+, /, '').replace(/dur=[\d.]+/g, 'dur=X'));
    const ids = [...raw.matchAll(/x-miniprof-id: ([^\r]*)/gi)].map((m) => m[1]);
    expect(new Set(ids).size).toBe(3);
    expect(heads).toEqual([0, 1, 2].map((n) => `pipelined_${n};dur=X;desc="pipelined ${n}", miniprof;desc="${ids[n]}", total;dur=X`));
    expect([...raw.matchAll(/\{"n":"(\d)"\}/g)].map((m) => m[1])).toEqual(['0', '1', '2']);
    expect(before).toEqual([undefined, undefined, undefined]);
  });

  it('D1: five app.inject() calls: the hook before the plugin and the test\'s own context never see a store', async () => {
    const before: Array<Profile | undefined> = [];
    const inside: boolean[] = [];
    const app = await build(null, (a) => {
      a.addHook('onRequest', (_req, _reply, done) => {
        before.push(currentProfile());
        done();
      });
      a.register(miniprof, { isDeveloper: () => true });
      a.get('/', async () => {
        inside.push(currentProfile() !== undefined);
        profiles.push(currentProfile()!);
        return 'ok';
      });
    });
    const profiles: Profile[] = [];
    const afterEach: unknown[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await app.inject({ url: '/' });
      expect(r.headers['server-timing']).toBeDefined();
      afterEach.push(als.getStore(), currentProfile());
    }
    expect(before).toEqual([undefined, undefined, undefined, undefined, undefined]);
    expect(inside).toEqual([true, true, true, true, true]);
    expect(afterEach.every((v) => v === undefined)).toBe(true);
    // Sealed on close like on a socket, and not mistaken for an abort (inject never sets writableFinished).
    await until(() => profiles.every((p) => p.sealed), 'seal');
    expect(profiles.map((p) => p.toJSON().request)).toEqual(Array(5).fill({ method: 'GET', path: '/', status: 200 }));
  });
});

// ---------------------------------------------------------------------------------------------
describe('HTTP/2 (Fastify `http2: true`: cleartext, and TLS with HTTP/1.1 allowed; real sockets)', () => {
  interface H2Response {
    headers: http2.IncomingHttpHeaders;
    body: string;
    /** The protocol TLS negotiated (ALPN), or false in cleartext. */
    alpn: string | false | undefined;
  }
  /**
   * `build` and `listen` with `http2: true` (over TLS: the usual production setup, HTTP/1.1
   * clients served on the same port), and a store to read the saved profiles from.
   */
  async function h2App(
    mp: Options,
    routes: (app: FastifyInstance) => void,
    secure = false,
  ): Promise<{ url: string; port: number; store: ReturnType<typeof memoryStore> }> {
    const store = memoryStore();
    const server = secure ? { http2: true, https: { ...TEST_TLS, allowHTTP1: true } } : { http2: true };
    const app = await build({ ...mp, results: { store } }, routes, server as FastifyServerOptions);
    const port = await listen(app);
    return { url: `${secure ? 'https' : 'http'}://127.0.0.1:${port}`, port, store };
  }
  function h2connect(url: string): http2.ClientHttp2Session {
    return url.startsWith('https:') ? http2.connect(url, { ca: TEST_TLS.cert }) : http2.connect(url);
  }
  function h2get(url: string, path: string, headers: Record<string, string> = {}): Promise<H2Response> {
    const client = h2connect(url);
    return new Promise<H2Response>((resolve, reject) => {
      const req = client.request({ ':path': path, ...headers });
      let body = '';
      let got: http2.IncomingHttpHeaders = {};
      req.setEncoding('utf8');
      req.on('response', (h) => (got = h));
      req.on('data', (c: string) => (body += c));
      req.on('end', () => resolve({ headers: got, body, alpn: client.alpnProtocol }));
      req.on('error', reject);
    }).finally(() => client.close());
  }
  /** Promise.withResolvers, which Node 20 lacks. */
  function deferred(): { promise: Promise<void>; resolve: () => void } {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    return { promise, resolve };
  }
  /** Signals from /slow's handler: inside it (after its first step), and done (after its last). */
  let inside = deferred();
  let done = deferred();
  let leave = deferred();
  const routes = (a: FastifyInstance) => {
    a.get('/page', async (_req, reply) => {
      await step('work', () => sleep(2));
      return reply.type('text/html').send(HTML);
    });
    a.get('/slow', async (_req, reply) => {
      await step('before', () => sleep(1));
      inside.resolve();
      await leave.promise;
      await step('after', () => sleep(1));
      done.resolve();
      return reply.type('text/html').send(HTML);
    });
  };

  it('a developer gets Server-Timing, the comment, cache safety and a saved profile; anyone else the app\'s own response', async () => {
    const { url, store } = await h2App(byHeader, routes);
    const plain = await h2get(url, '/page');
    expect(plain.body).toBe(HTML);
    expect(plain.headers['server-timing']).toBeUndefined();
    expect(plain.headers['x-miniprof-id']).toBeUndefined();
    const r = await h2get(url, '/page', dev);
    expect(r.headers[':status']).toBe(200);
    expect(r.headers['server-timing']).toMatch(/^work;dur=\d+\.\d, (?:miniprof-self;dur=\d+\.\d, )?total;dur=\d+\.\d$/);
    expect(r.headers['cache-control']).toBe('private, no-store');
    expect(oneCommentMore(Buffer.from(r.body), Buffer.from(HTML))).toMatch(/^<!--\n/);
    const id = r.headers['x-miniprof-id'] as string;
    // Saved when the stream closes, which may come after the client has the whole body.
    await until(() => openProfiles() === 0, 'the profile sealed and saved');
    const saved = await store.get('peer:127.0.0.1', id);
    expect(saved?.request).toEqual({ method: 'GET', path: '/page', status: 200 });
    expect(top(saved!.root).map((c) => c.name)).toEqual(['work']);
  });

  for (const secure of [false, true]) {
    it(`C8: a stream the client resets mid-handler (${secure ? 'TLS' : 'cleartext'}): the profile is sealed once, marked aborted, and later steps do not change it`, async () => {
      inside = deferred();
      done = deferred();
      leave = deferred();
      const { url, store } = await h2App(byHeader, routes, secure);
      const client = h2connect(url);
      const req = client.request({ ':path': '/slow', ...dev });
      req.on('error', () => {});
      await inside.promise;
      req.close(http2.constants.NGHTTP2_CANCEL);
      await until(() => openProfiles() === 0, 'the reset stream\'s profile sealed');
      leave.resolve();
      await done.promise;
      client.close();
      const list = await store.list('peer:127.0.0.1', 10);
      expect(list).toHaveLength(1);
      expect(list[0]!.flags).toContain('aborted');
      const saved = (await store.get('peer:127.0.0.1', list[0]!.id))!;
      expect(saved.request?.aborted).toBe(true);
      expect(top(saved.root).map((c) => c.name)).toEqual(['before']);
    });
  }

  it('over TLS with allowHTTP1: an HTTP/2 and an HTTP/1.1 developer request on one port each get the outputs and a saved profile; anyone else the app\'s own bytes', async () => {
    const { url, port, store } = await h2App(byHeader, routes, true);
    const plain2 = await h2get(url, '/page');
    expect(plain2.alpn).toBe('h2');
    expect(plain2.body).toBe(HTML);
    expect(plain2.headers['server-timing']).toBeUndefined();
    expect(plain2.headers['cache-control']).toBeUndefined();
    const plain1 = await tlsGet(port, '/page');
    expect(plain1.alpn).toBe('http/1.1');
    expect(plain1.body.equals(Buffer.from(HTML))).toBe(true);
    expect(plain1.res.headers['server-timing']).toBeUndefined();
    expect(plain1.res.headers['x-miniprof-id']).toBeUndefined();

    const r2 = await h2get(url, '/page', dev);
    const r1 = await tlsGet(port, '/page', dev);
    expect(r2.alpn).toBe('h2');
    expect(r1.alpn).toBe('http/1.1');
    for (const [headers, body] of [
      [r2.headers, Buffer.from(r2.body)],
      [r1.res.headers, r1.body],
    ] as const) {
      expect(headers['server-timing']).toMatch(/^work;dur=\d+\.\d, (?:miniprof-self;dur=\d+\.\d, )?total;dur=\d+\.\d$/);
      expect(headers['cache-control']).toBe('private, no-store');
      expect(oneCommentMore(body, Buffer.from(HTML))).toMatch(/^<!--\n/);
    }
    // HTTP/1.1 declares the length, which must count the comment's bytes.
    expect(Number(r1.res.headers['content-length'])).toBe(r1.body.length);
    const ids = [r2.headers['x-miniprof-id'], r1.res.headers['x-miniprof-id']] as string[];
    expect(new Set(ids).size).toBe(2);
    await until(() => openProfiles() === 0, 'both profiles sealed and saved');
    for (const id of ids) {
      const saved = await store.get('peer:127.0.0.1', id);
      expect(saved?.request).toEqual({ method: 'GET', path: '/page', status: 200 });
      expect(top(saved!.root).map((c) => c.name)).toEqual(['work']);
    }
  });

  it('over TLS: the results pages answer HTTP/2 requests (no connection-specific header), and the opt-in cookie is Secure', async () => {
    const { url } = await h2App({ ...byHeader, secret: 's'.repeat(32) }, routes, true);
    const r = await h2get(url, '/page', dev);
    const id = r.headers['x-miniprof-id'] as string;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    await until(() => openProfiles() === 0, 'the profile sealed and saved');
    const list = await h2get(url, '/_miniprof/', dev);
    expect(list.headers[':status']).toBe(200);
    expect(list.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(list.headers['content-security-policy']).toMatch(/^default-src 'none'/);
    expect(list.body).toContain(`/_miniprof/${id}`);
    const page = await h2get(url, `/_miniprof/${id}`, dev);
    expect(page.headers[':status']).toBe(200);
    expect(page.body).toContain('work');
    const json = await h2get(url, `/_miniprof/${id}.json`, dev);
    expect((JSON.parse(json.body) as ProfileJSON).id).toBe(id);
    // Not a developer: the results path is the app's own (a 404 here), as over HTTP/1.1.
    const outsider = await h2get(url, `/_miniprof/${id}.json`);
    expect(outsider.headers[':status']).toBe(404);
    expect(JSON.parse(outsider.body)).toEqual({ message: `Route GET:/_miniprof/${id}.json not found`, error: 'Not Found', statusCode: 404 });
    // Fastify reads the protocol from the TLS socket behind the HTTP/2 stream.
    // A public host name, so only the TLS socket can make the cookie Secure (F5: __Host-).
    const optIn = await h2get(url, '/_miniprof/opt-in', { ...dev, ':method': 'POST', ':authority': 'app.example.test', origin: 'https://app.example.test' });
    expect(optIn.headers[':status']).toBe(303);
    expect(String(optIn.headers['set-cookie'])).toMatch(/^__Host-miniprof=[^;]+; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Strict; Secure$/);
  });
});

describe('setup and cost', () => {
  const bad: Array<[string, unknown, string, RegExp]> = [
    ['maxSteps -1', { maxSteps: -1 }, 'MINIPROF_ERR_INVALID_OPTION', /"maxSteps".*-1 \(number\)/],
    ['isDeveloper true', { isDeveloper: true }, 'MINIPROF_ERR_INVALID_OPTION', /"isDeveloper".*true \(boolean\)/],
    ['serverTiming "yes"', { serverTiming: 'yes' }, 'MINIPROF_ERR_INVALID_OPTION', /"serverTiming".*"yes" \(string\)/],
    ['htmlComment 1', { htmlComment: 1 }, 'MINIPROF_ERR_INVALID_OPTION', /"htmlComment".*1 \(number\)/],
    ['a typo', { isDevelopr: () => true }, 'MINIPROF_ERR_UNKNOWN_OPTION', /"isDevelopr"/],
    ['serverTiming.max', { serverTiming: { max: 10 } }, 'MINIPROF_ERR_UNKNOWN_OPTION', /serverTiming\.max.*10 \(number\)/],
  ];
  for (const [label, options, code, message] of bad) {
    it(`setup: ${label} => register rejects with a coded TypeError naming it`, async () => {
      const app = Fastify({ logger: false });
      apps.push(app);
      const err = await app.register(miniprof, options as Options).ready().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(TypeError);
      expect((err as { code?: string }).code).toBe(code);
      expect((err as Error).message).toMatch(message);
    });
  }

  it('setup: Fastify\'s own register options (prefix, logLevel) are accepted', async () => {
    const app = await build(null, (a) => a.register(miniprof, { prefix: '/x', logLevel: 'silent', isDeveloper: () => true }));
    expect(app.hasPlugin('miniprof')).toBe(true);
  });

  it('cost: the plugin adds exactly one onRequest hook and no other, and leaves a non-developer\'s reply alone', async () => {
    const own: Record<string, unknown> = {};
    const routes = (a: FastifyInstance) => {
      a.get('/', async (req, reply) => {
        const key = req.headers['x-dev'] === '1' ? 'dev' : 'other';
        own[key] = {
          send: Object.hasOwn(reply, 'send'),
          hijack: Object.hasOwn(reply, 'hijack'),
          writeHead: Object.hasOwn(reply.raw, 'writeHead'),
          store: als.getStore() !== undefined,
          closeListeners: reply.raw.listenerCount('close'),
        };
        return 'ok';
      });
      a.register(async (child) => child.get('/child', async () => 'ok'));
    };
    const base = await build(null, routes);
    const app = await build(byHeader, routes);
    const hookLines = (a: FastifyInstance) =>
      a.printRoutes({ commonPrefix: false, includeHooks: true }).split('\n').filter((l) => l.includes('•')).map((l) => l.trim());
    const added = hookLines(app);
    for (const line of hookLines(base)) {
      expect(added).toContain(line);
      added.splice(added.indexOf(line), 1);
    }
    // One line per route (GET and its HEAD, at root and in the child), each the same single hook.
    expect(added).toEqual(Array(4).fill('• (onRequest) ["miniprofOnRequest()"]'));
    await base.inject({ url: '/' });
    const baseline = own.other;
    let runs = 0;
    const run = als.run;
    als.run = function (this: typeof als, ...args: Parameters<typeof als.run>) {
      runs++;
      return run.apply(this, args);
    } as typeof als.run;
    try {
      await app.inject({ url: '/' });
      expect(runs).toBe(0);
      await app.inject({ url: '/', headers: dev });
      expect(runs).toBeGreaterThan(0);
    } finally {
      als.run = run;
    }
    expect(own.other).toEqual(baseline);
    expect(own.other).toEqual({ send: false, hijack: false, writeHead: false, store: false, closeListeners: expect.any(Number) });
    expect(own.dev).toMatchObject({ send: true, hijack: true, writeHead: true, store: true });
  });


  it('C11: a fault while setting up a developer request (the wall clock throws) leaves it unprofiled and is reported once', async () => {
    const reported: unknown[] = [];
    const boom = new Error('clock broke');
    const routes = (a: FastifyInstance) => a.get('/', async (_req, reply) => reply.type('text/html').send(HTML));
    const base = await build(null, routes);
    const app = await build({ isDeveloper: async () => true, now: () => { throw boom; }, onInternalError: (e) => reported.push(e) }, routes);
    const port = await listen(app);
    const basePort = await listen(base);
    expect(withoutDate(await rawGet(port, '/'))).toBe(withoutDate(await rawGet(basePort, '/')));
    expect(reported).toEqual([boom]);
  });
});
