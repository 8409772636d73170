// F5 (issue 51): the opt-in cookie cannot be planted or outlive access. Both adapters on real
// sockets, with the memory store and a real Redis (redis-server on a free loopback port), and
// Chromium for what the browser accepts on http://localhost. F8: the tokens minted per owner are
// capped in the store.
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import { parse, type DefaultTreeAdapterMap } from 'parse5';
import { chromium, type BrowserContext } from 'playwright-core';
import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { miniprof as expressMiniprof } from '../adapters/express.js';
import { miniprof as fastifyMiniprof } from '../adapters/fastify.js';
import { memoryStore, redisStore, type ProfileStore } from '../src/index.js';
import { signOptIn } from '../src/results/optin.js';
import { chromiumPath } from './helpers/services.js';
import { closeServers, raw, serve, type RawResponse } from './helpers/http.js';
import { startRedis, type RedisServer } from './helpers/redis-server.js';

const SECRET = 'a test secret that is long enough: 0123456789';
const PAGE = '<!doctype html><html><body><p>hi</p></body></html>';

let redis: RedisServer;
let client: ReturnType<typeof createClient>;
let prefixes = 0;
const fastifies: FastifyInstance[] = [];
let faults: unknown[] = [];

beforeAll(async () => {
  redis = await startRedis();
  client = createClient({ url: redis.url });
  client.on('error', () => {});
  await client.connect();
});
afterAll(async () => {
  client.destroy();
  await redis.kill();
});
afterEach(async () => {
  await closeServers();
  for (const f of fastifies.splice(0)) await f.close();
  expect(faults).toEqual([]);
  faults = [];
});

type Kind = 'express' | 'fastify';
type StoreKind = 'memory' | 'redis';

function newStore(kind: StoreKind, maxOptIns?: number): ProfileStore {
  const o = maxOptIns === undefined ? {} : { maxOptIns };
  return kind === 'memory' ? memoryStore(o) : redisStore(client, { prefix: `optin-test-${++prefixes}:`, ...o });
}

/** `x-dev: 1` is the app's own developer check (an admin session, say). */
async function app(kind: Kind, store: ProfileStore, extra: Record<string, unknown> = {}): Promise<number> {
  const options = {
    isDeveloper: (req: { headers: http.IncomingHttpHeaders }) => req.headers['x-dev'] === '1',
    secret: SECRET,
    results: { store },
    onInternalError: (e: unknown) => faults.push(e),
    ...extra,
  };
  if (kind === 'express') {
    const a = express();
    a.set('trust proxy', true);
    a.use(expressMiniprof(options as never));
    a.get('/page', (_req, res) => void res.type('html').send(PAGE));
    return serve(a as unknown as http.RequestListener);
  }
  const f = Fastify({ logger: false, trustProxy: true });
  fastifies.push(f);
  await f.register(fastifyMiniprof, options as never);
  f.get('/page', (_req, reply) => void reply.type('text/html; charset=utf-8').send(PAGE));
  await f.listen({ port: 0, host: '127.0.0.1' });
  return (f.server.address() as { port: number }).port;
}

const sameOrigin = (port: number) => ({ Origin: `http://127.0.0.1:${port}`, 'x-dev': '1' });

/** POST to the opt-in route as the app's developer, from a page of the same origin. */
async function optIn(port: number, headers: Record<string, string> = sameOrigin(port)): Promise<RawResponse> {
  return raw(port, { method: 'POST', path: '/_miniprof/opt-in', headers, body: '' });
}

/** A request with a `Host` of our choosing (raw() sends the loopback one). */
function withHost(port: number, method: string, path: string, headers: Record<string, string>): Promise<{ status: number; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers: { ...headers, 'Content-Length': '0' } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

function cookieOf(r: RawResponse): string {
  const c = r.headers['set-cookie']?.[0];
  expect(c, 'a Set-Cookie').toBeDefined();
  return c!.slice(0, c!.indexOf(';'));
}

/** Profiled for this cookie alone, at an instance reached under the name `host` (as behind a load balancer). */
async function admitsAt(port: number, cookie: string, host: string): Promise<boolean> {
  const r = await withHost(port, 'GET', '/page', { Host: host, cookie });
  expect(r.status).toBe(200);
  return r.headers['x-miniprof-id'] !== undefined;
}

/** Profiled for this cookie alone (isDeveloper says no without x-dev). */
async function admits(port: number, cookie: string): Promise<boolean> {
  const r = await raw(port, { path: '/page', headers: { cookie } });
  expect(r.status).toBe(200);
  return r.headers['x-miniprof-id'] !== undefined;
}

const COOKIE_ATTRS = /^__Host-miniprof=v3\.[0-9a-f-]{36}\.\d+\.0\.[A-Za-z0-9_-]{43}; Path=\/; Max-Age=28800; HttpOnly; SameSite=Strict; Secure$/;

describe.each(['express', 'fastify'] as const)('%s', (kind) => {
  it('F5: opt-in is a POST from this origin; the cookie is __Host-, Secure, HttpOnly, SameSite=Strict, Path=/ on loopback hosts, over HTTPS and with optInSecure', async () => {
    const port = await app(kind, newStore('memory'));
    const r = await optIn(port);
    expect(r.status).toBe(303);
    expect(r.headers.location).toEqual(['/_miniprof/']);
    expect(r.headers['set-cookie']).toHaveLength(1);
    expect(r.headers['set-cookie']![0]).toMatch(COOKIE_ATTRS);
    expect(await admits(port, cookieOf(r))).toBe(true);
    // HTTPS as the app sees it (a trusted proxy's X-Forwarded-Proto here), on a public host name.
    const proxied = await withHost(port, 'POST', '/_miniprof/opt-in', { Host: 'app.example.test', Origin: 'https://app.example.test', 'X-Forwarded-Proto': 'https', 'x-dev': '1' });
    expect(proxied.headers['set-cookie']![0]).toMatch(COOKIE_ATTRS);
    // Plain HTTP on a public name: the browser would refuse Secure, so the plain name (documented).
    const plain = await withHost(port, 'POST', '/_miniprof/opt-in', { Host: 'app.example.test', Origin: 'http://app.example.test', 'x-dev': '1' });
    expect(plain.headers['set-cookie']![0]).toMatch(/^miniprof=v3\.[^;]+; Path=\/; Max-Age=28800; HttpOnly; SameSite=Strict$/);
    // optInSecure: TLS ends at a proxy that does not say so.
    const forced = await app(kind, newStore('memory'), { optInSecure: true });
    const f = await withHost(forced, 'POST', '/_miniprof/opt-in', { Host: 'app.example.test', Origin: 'https://app.example.test', 'x-dev': '1' });
    expect(f.headers['set-cookie']![0]).toMatch(COOKIE_ATTRS);
  });

  it('F5: GET shows a form that POSTs here, under the pages’ CSP (no script), and sets nothing', async () => {
    const port = await app(kind, newStore('memory'));
    for (const action of ['opt-in', 'opt-out']) {
      const r = await raw(port, { path: `/_miniprof/${action}`, headers: { 'x-dev': '1' } });
      expect(r.status).toBe(200);
      expect(r.headers['set-cookie']).toBeUndefined();
      expect(r.headers['content-security-policy']).toEqual(["default-src 'none'; style-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"]);
      const doc = parse(r.payload.toString());
      const forms = all(doc, 'form');
      expect(forms).toHaveLength(1);
      expect(attrs(forms[0]!)).toEqual({ method: 'post', action: `/_miniprof/${action}` });
      expect(all(doc, 'script')).toHaveLength(0);
    }
  });

  it.each([
    ['another site’s Origin', { Origin: 'https://evil.example' }],
    ['a sibling subdomain (Sec-Fetch-Site: same-site)', { 'Sec-Fetch-Site': 'same-site', Origin: 'http://evil.127.0.0.1.nip.io' }],
    ['Sec-Fetch-Site: cross-site', { 'Sec-Fetch-Site': 'cross-site' }],
    ['neither Origin nor Sec-Fetch-Site', {}],
    ['Origin: null', { Origin: 'null' }],
  ])('F5: a cross-site POST (%s) changes nothing: 403, no cookie set, an opt-in stays valid', async (_what, h) => {
    const port = await app(kind, newStore('memory'));
    const r = await optIn(port, { 'x-dev': '1', ...h });
    expect(r.status).toBe(403);
    expect(r.headers['set-cookie']).toBeUndefined();
    const cookie = cookieOf(await optIn(port));
    const out = await raw(port, { method: 'POST', path: '/_miniprof/opt-out', headers: { cookie, ...h }, body: '' });
    expect(out.status).toBe(403);
    expect(out.headers['set-cookie']).toBeUndefined();
    expect(await admits(port, cookie)).toBe(true);
  });

  it('F5: a GET to /opt-in or /opt-out (a link, an image from another site) changes nothing', async () => {
    const port = await app(kind, newStore('memory'));
    const cookie = cookieOf(await optIn(port));
    const r = await raw(port, { path: '/_miniprof/opt-out', headers: { cookie } });
    expect(r.headers['set-cookie']).toBeUndefined();
    expect(await admits(port, cookie)).toBe(true);
  });

  it('F5: a planted cookie is not read: the plain name on a secure request, a valid MAC the store never minted', async () => {
    const store = newStore('memory');
    const port = await app(kind, store);
    const real = cookieOf(await optIn(port));
    // The same valid value under the plain name (what a sibling subdomain or an HTTP page can set).
    expect(await admits(port, real.replace('__Host-miniprof=', 'miniprof='))).toBe(false);
    // Signed with the secret, but never minted by this store (a leaked secret, a copy from elsewhere).
    expect(await admits(port, `__Host-miniprof=${signOptIn(Buffer.from(SECRET), Date.now(), 3_600_000).value}`)).toBe(false);
  });

  it.each(['memory', 'redis'] as const)('F5: a cookie minted for another port of the same host (same secret, same %s store) admits nothing here, and ours nothing there', async (storeKind) => {
    const store = newStore(storeKind);
    const here = await app(kind, store);
    const other = await app(kind, store);
    const theirs = cookieOf(await optIn(other));
    const ours = cookieOf(await optIn(here));
    expect(await admits(other, theirs)).toBe(true);
    expect(await admits(here, ours)).toBe(true);
    expect(await admits(here, theirs)).toBe(false);
    expect(await admits(other, ours)).toBe(false);
  });

  it.each(['memory', 'redis'] as const)('F5: opt-out revokes the token in the %s store: the old cookie admits nothing after', async (storeKind) => {
    const store = newStore(storeKind);
    const port = await app(kind, store);
    const a = cookieOf(await optIn(port));
    const b = cookieOf(await optIn(port));
    expect(await admits(port, a)).toBe(true);
    const out = await raw(port, { method: 'POST', path: '/_miniprof/opt-out', headers: { cookie: a, Origin: `http://127.0.0.1:${port}` }, body: '' });
    expect(out.status).toBe(303);
    expect(out.headers['set-cookie']).toEqual(['__Host-miniprof=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict; Secure']);
    // The holder kept a copy: it is dead anyway, here and on every instance sharing the store.
    expect(await admits(port, a)).toBe(false);
    expect(await admits(port, b)).toBe(true);
    const instance = await app(kind, store);
    expect(await admitsAt(instance, a, `127.0.0.1:${port}`)).toBe(false);
    expect(await admitsAt(instance, b, `127.0.0.1:${port}`)).toBe(true);
  });

  it.each(['memory', 'redis'] as const)('F5: optInGeneration voids every opt-in at once (%s store)', async (storeKind) => {
    const store = newStore(storeKind);
    const first = await app(kind, store);
    const cookie = cookieOf(await optIn(first));
    // Instances behind one name (a load balancer): the Host the cookie was minted for.
    const host = `127.0.0.1:${first}`;
    expect(await admitsAt(await app(kind, store), cookie, host)).toBe(true);
    const next = await app(kind, store, { optInGeneration: 1 });
    expect(await admitsAt(next, cookie, host)).toBe(false);
    const fresh = cookieOf(await optIn(next));
    expect(fresh).toMatch(/^__Host-miniprof=v3\.[0-9a-f-]{36}\.\d+\.1\./);
    expect(await admits(next, fresh)).toBe(true);
  });

  it('F5: a rotated secret voids every opt-in', async () => {
    const store = newStore('memory');
    const cookie = cookieOf(await optIn(await app(kind, store)));
    expect(await admits(await app(kind, store, { secret: 'another secret that is long enough: 9876543210' }), cookie)).toBe(false);
  });

  it.each(['memory', 'redis'] as const)('F8: the opt-in tokens minted per owner are capped (%s store, maxOptIns 3): the oldest stops working', async (storeKind) => {
    const store = newStore(storeKind, 3);
    const port = await app(kind, store);
    const cookies: string[] = [];
    for (let i = 0; i < 5; i++) cookies.push(cookieOf(await optIn(port)));
    const alive = [];
    for (const c of cookies) alive.push(await admits(port, c));
    expect(alive).toEqual([false, false, true, true, true]);
  });
});

it('F5: the store must keep opt-in tokens when secret is set (a coded TypeError at setup)', () => {
  const bare = { save: async () => {}, get: async () => undefined, list: async () => [] };
  expect(() => expressMiniprof({ secret: SECRET, results: { store: bare } })).toThrow(
    expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_OPTION', message: expect.stringContaining('addOptIn, hasOptIn and revokeOptIn') }),
  );
  expect(() => expressMiniprof({ secret: SECRET, optInGeneration: -1 } as never)).toThrow(expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_OPTION' }));
  expect(() => expressMiniprof({ secret: SECRET, optInSecure: 'yes' } as never)).toThrow(expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_OPTION' }));
});

describe('F5 in Chromium', () => {
  const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
  let ctx: BrowserContext;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'miniprof-chromium-'));
    ctx = await chromium.launchPersistentContext(dir, { executablePath: chromiumPath(), headless: true, args: ARGS });
  });
  afterAll(async () => {
    await ctx.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('F5: on http://localhost Chromium keeps the __Host- Secure cookie from the form; another site’s form cannot opt out', async () => {
    // The browser is the developer only by its opt-in: isDeveloper admits the form pages alone.
    const a = express();
    a.use(expressMiniprof({ isDeveloper: (req) => (req.originalUrl ?? '').startsWith('/_miniprof/opt-'), secret: SECRET, onInternalError: (e) => faults.push(e) }));
    a.get('/page', (_req, res) => void res.type('html').send(PAGE));
    const port = await serve(a as unknown as http.RequestListener);
    // Another site: 127.0.0.1 is not the same site as localhost.
    const evil = await serve((_req, res) => {
      res.setHeader('Content-Type', 'text/html');
      res.end(`<form method="post" action="http://localhost:${port}/_miniprof/opt-out"><button id="go">win a prize</button></form>`);
    });
    const page = await ctx.newPage();
    await page.goto(`http://localhost:${port}/_miniprof/opt-in`);
    await Promise.all([page.waitForURL(`http://localhost:${port}/_miniprof/`), page.click('button')]);
    const cookies = await ctx.cookies(`http://localhost:${port}/`);
    expect(cookies.map((c) => [c.name, c.secure, c.httpOnly, c.sameSite, c.path])).toEqual([['__Host-miniprof', true, true, 'Strict', '/']]);
    const profiled = await page.goto(`http://localhost:${port}/page`);
    expect(profiled!.headers()['x-miniprof-id']).toMatch(/^[0-9a-f-]{36}$/);
    // The attacker's page posts to opt-out: refused (Sec-Fetch-Site: cross-site), nothing changes.
    await page.goto(`http://127.0.0.1:${evil}/`);
    const [answer] = await Promise.all([page.waitForResponse(`http://localhost:${port}/_miniprof/opt-out`), page.click('#go')]);
    expect(answer.status()).toBe(403);
    expect((await ctx.cookies(`http://localhost:${port}/`)).map((c) => c.name)).toEqual(['__Host-miniprof']);
    const still = await page.goto(`http://localhost:${port}/page`);
    expect(still!.headers()['x-miniprof-id']).toMatch(/^[0-9a-f-]{36}$/);
    // The developer's own opt-out form works, and the cookie is gone from the browser.
    await page.goto(`http://localhost:${port}/_miniprof/opt-out`);
    await Promise.all([page.waitForURL(`http://localhost:${port}/_miniprof/`), page.click('button')]);
    expect(await ctx.cookies(`http://localhost:${port}/`)).toEqual([]);
    const after = await page.goto(`http://localhost:${port}/page`);
    expect(after!.headers()['x-miniprof-id']).toBeUndefined();
    await page.close();
  });
  it('F5: cookies are not port-scoped: the cookie an app on another port of localhost set reaches this one, and admits nothing here', async () => {
    await ctx.clearCookies();
    // Two apps of one developer on one host, sharing the secret and the store (a copied .env, one Redis).
    const store = memoryStore();
    const make = async () => {
      const a = express();
      a.use(expressMiniprof({ isDeveloper: (req) => (req.originalUrl ?? '').startsWith('/_miniprof/opt-'), secret: SECRET, results: { store }, onInternalError: (e) => faults.push(e) }));
      a.get('/page', (_req, res) => void res.type('html').send(PAGE));
      return serve(a as unknown as http.RequestListener);
    };
    const here = await make();
    const other = await make();
    const page = await ctx.newPage();
    await page.goto(`http://localhost:${other}/_miniprof/opt-in`);
    await Promise.all([page.waitForURL(`http://localhost:${other}/_miniprof/`), page.click('button')]);
    // The platform: Chromium sends the other port's __Host- cookie to this port too.
    expect((await ctx.cookies(`http://localhost:${here}/`)).map((c) => c.name)).toEqual(['__Host-miniprof']);
    expect((await page.goto(`http://localhost:${other}/page`))!.headers()['x-miniprof-id']).toMatch(/^[0-9a-f-]{36}$/);
    const sent: string[] = [];
    page.on('request', (r) => void r.headerValue('cookie').then((c) => c !== null && sent.push(c)));
    const planted = await page.goto(`http://localhost:${here}/page`);
    expect(sent.some((c) => c.startsWith('__Host-miniprof=')), 'the cookie was sent here').toBe(true);
    expect(planted!.headers()['x-miniprof-id'], 'bound to the other port: not admitted here').toBeUndefined();
    await page.close();
    await ctx.clearCookies();
  });
});

type Node = DefaultTreeAdapterMap['node'];
function all(n: Node, tag: string, out: Node[] = []): Node[] {
  if (n.nodeName === tag) out.push(n);
  for (const c of (n as { childNodes?: Node[] }).childNodes ?? []) all(c, tag, out);
  return out;
}
function attrs(n: Node): Record<string, string> {
  return Object.fromEntries((n as { attrs: { name: string; value: string }[] }).attrs.map((a) => [a.name, a.value]));
}
