/**
 * The results side end to end, on both adapters over real sockets: who may see what (A1, A3,
 * A4, A9), the id header, the list/profile/JSON routes and their headers, the opt-in cookie,
 * escaping of every user text on the pages (A8, parse5 + fast-check) and the store's bounds
 * under 10,000 profiled requests (E2).
 */
import express from 'express';
import fc from 'fast-check';
import Fastify, { type FastifyInstance } from 'fastify';
import http from 'node:http';
import { PassThrough } from 'node:stream';
import { parse, type DefaultTreeAdapterMap } from 'parse5';
import { afterEach, describe, expect, onTestFinished, test } from 'vitest';
import { miniprof as expressMiniprof } from '../adapters/express.js';
import { miniprof as fastifyMiniprof } from '../adapters/fastify.js';
import { appSteps } from './adapters/apps.js';
import type { MiniprofOptions } from '../src/http/config.js';
import { memoryStore, step, timing, type ProfileJSON, type ProfileStore } from '../src/index.js';
import { signOptIn } from '../src/results/optin.js';
import { LIST_HEADERS, PAGE_HEADERS, renderListPage, renderProfilePage } from '../src/results/pages.js';
import { summarize } from '../src/results/store.js';
import { closeServers, raw, serve, waitFor, withoutDate, type RawRequest, type RawResponse } from './helpers/http.js';

const SECRET = 'a test secret that is long enough: 0123456789';
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

type Kind = 'express' | 'fastify';
type Opts = MiniprofOptions<never> | null;

/** A store that says which ids it has saved, so a test can wait for the save on close. */
function watched(inner: ProfileStore = memoryStore()): ProfileStore & { saved: string[] } {
  const saved: string[] = [];
  return {
    saved,
    async save(owner, p) {
      await inner.save(owner, p);
      saved.push(p.id);
    },
    get: (owner, id) => inner.get(owner, id),
    list: (owner, limit) => inner.list(owner, limit),
    addOptIn: (owner, token, expiresAt) => inner.addOptIn!(owner, token, expiresAt),
    hasOptIn: (token) => inner.hasOptIn!(token),
    revokeOptIn: (token) => inner.revokeOptIn!(token),
  };
}

/** Opt in as the app's developer, by POST from a page of this origin (F5). */
function optInReq(port: number): RawRequest {
  return { method: 'POST', path: '/_miniprof/opt-in', headers: { 'x-dev': '1', Origin: `http://127.0.0.1:${port}` }, body: '' };
}

const fastifies: FastifyInstance[] = [];
afterEach(async () => {
  await closeServers();
  for (const f of fastifies.splice(0)) await f.close();
});

/** `x-dev: 1` is the app's own notion of a developer (an admin session, say). */
const isDeveloper = (req: { headers: http.IncomingHttpHeaders }) => req.headers['x-dev'] === '1';

async function page(): Promise<string> {
  await step('load <user> & "friends"', async () => {
    await timing('sql', 'select * from users where id = 42', async () => {});
    await timing('sql', 'select * from users where id = 42', async () => {});
  });
  return '<!doctype html><html><body><p>hi</p></body></html>';
}

/** Event streams whose request the server has seen close. */
let streamsClosed = 0;

/** An event stream that never ends by itself: a step per event until the client goes away. */
function stream(req: http.IncomingMessage, write: (chunk: string) => void): void {
  let n = 0;
  const timer = setInterval(() => step('tick', () => write(`data: ${n++}\n\n`)), 2);
  req.once('close', () => {
    clearInterval(timer);
    streamsClosed++;
  });
}

/** The app, with the profiler (`opts`) or without it (`null`); the same routes either way. */
async function app(kind: Kind, opts: Opts): Promise<number> {
  if (kind === 'express') {
    const a = express();
    a.set('trust proxy', true);
    if (opts !== null) a.use(expressMiniprof(opts as MiniprofOptions<http.IncomingMessage>));
    a.get('/page', async (_req, res) => void res.type('html').send(await page()));
    a.get('/api', async (_req, res) => {
      await step('api', async () => {});
      res.set('Link', '</next>; rel="next"').json({ ok: true });
    });
    a.get('/events', (req, res) => {
      res.type('text/event-stream').flushHeaders();
      stream(req, (chunk) => res.write(chunk));
    });
    return serve(a);
  }
  const f = Fastify({ trustProxy: true });
  fastifies.push(f);
  if (opts !== null) await f.register(fastifyMiniprof, opts as never);
  f.get('/page', async (_req, reply) => reply.type('text/html').send(await page()));
  f.get('/api', async (_req, reply) => {
    await step('api', async () => {});
    return reply.header('Link', '</next>; rel="next"').send({ ok: true });
  });
  f.get('/events', (req, reply) => {
    const out = new PassThrough();
    stream(req.raw, (chunk) => out.write(chunk));
    void reply.type('text/event-stream').send(out);
  });
  await f.listen({ port: 0, host: '127.0.0.1' });
  return (f.server.address() as { port: number }).port;
}

function cookieOf(r: RawResponse): string {
  const set = r.headers['set-cookie']?.[0];
  if (set === undefined) throw new Error('no Set-Cookie');
  return set.slice(0, set.indexOf(';'));
}

function strip(r: RawResponse): string {
  return withoutDate(r.bytes).toString('latin1');
}

for (const kind of ['express', 'fastify'] as const) {
  describe(`${kind}`, () => {
    async function both(opts: MiniprofOptions<never>): Promise<{ port: number; bare: number }> {
      return { port: await app(kind, opts), bare: await app(kind, null) };
    }

    test('every profiled response carries X-Miniprof-Id and a Link to its page (JSON too, after the app’s Link)', async () => {
      const store = watched();
      const { port } = await both({ isDeveloper, results: { store } });
      const r = await raw(port, { path: '/api', headers: { 'x-dev': '1' } });
      const id = r.headers['x-miniprof-id']![0]!;
      expect(id).toMatch(UUID_RE);
      expect(r.headers.link).toEqual([`</next>; rel="next", </_miniprof/${id}>; rel="related"; title="miniprof"`]);
      await waitFor(() => store.saved.includes(id));
      const json = await raw(port, { path: `/_miniprof/${id}.json`, headers: { 'x-dev': '1' } });
      expect(json.status).toBe(200);
      expect(json.headers['content-type']).toEqual(['application/json; charset=utf-8']);
      const p = JSON.parse(json.payload.toString()) as ProfileJSON;
      expect(p).toMatchObject({ v: 1, id, request: { method: 'GET', path: '/api', status: 200 } });
      expect(appSteps(p.root).map((c) => c.name)).toEqual(['api']);
      const none = await raw(port, { path: '/api' });
      expect(none.headers['x-miniprof-id']).toBeUndefined();
    });

    test('a stream that outlives maxDurationMs is saved when it is sealed, while it still streams, and only then', async () => {
      const store = watched();
      const { port } = await both({ isDeveloper, maxDurationMs: 40, results: { store } });
      const closedBefore = streamsClosed;
      let text = '';
      let id = '';
      let closed = false;
      const req = http.get({ host: '127.0.0.1', port, path: '/events', headers: { 'x-dev': '1' }, agent: false }, (res) => {
        id = String(res.headers['x-miniprof-id']);
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('close', () => (closed = true));
      });
      req.on('error', () => undefined);
      onTestFinished(() => void req.destroy());
      await waitFor(() => store.saved.length > 0);
      expect(store.saved).toEqual([id]);
      const atSave = text.length;
      await waitFor(() => text.length > atSave + 40);
      expect(closed).toBe(false);
      const json = await raw(port, { path: `/_miniprof/${id}.json`, headers: { 'x-dev': '1' } });
      expect(json.status).toBe(200);
      const p = JSON.parse(json.payload.toString()) as ProfileJSON;
      expect(p.id).toBe(id);
      expect(p.warnings).toContain('sealed after maxDurationMs while the response was still open');
      expect(new Set(appSteps(p.root).map((c) => c.name))).toEqual(new Set(['tick']));
      const list = await raw(port, { path: '/_miniprof/', headers: { 'x-dev': '1' } });
      expect(list.payload.toString()).toContain(id);
      req.destroy();
      await waitFor(() => closed && streamsClosed === closedBefore + 1);
      // The close seals nothing new and saves nothing more: a fresh request's save lands after
      // any second save of the stream would have.
      await raw(port, { path: '/api', headers: { 'x-dev': '1' } });
      await waitFor(() => store.saved.length === 2);
      expect(store.saved[0]).toBe(id);
      expect(store.saved.filter((s) => s === id)).toHaveLength(1);
    });

    test('results: false keeps nothing and adds no id; the base path is the app’s', async () => {
      const { port, bare } = await both({ isDeveloper, results: false });
      const r = await raw(port, { path: '/api', headers: { 'x-dev': '1' } });
      expect(r.headers['x-miniprof-id']).toBeUndefined();
      expect(r.headers['server-timing']).toBeDefined();
      // Still a developer's request, so profiled like any other of the app's 404s.
      const a = await raw(port, { path: '/_miniprof/', headers: { 'x-dev': '1' } });
      expect(a.status).toBe(404);
      expect(a.status).toBe((await raw(bare, { path: '/_miniprof/', headers: { 'x-dev': '1' } })).status);
      expect(a.headers['x-miniprof-id']).toBeUndefined();
    });

    test('list, page and JSON for a developer: newest first, exact headers, HEAD without a body', async () => {
      const store = watched();
      const { port } = await both({ isDeveloper, results: { store, basePath: '/debug/prof' } });
      const ids: string[] = [];
      for (const path of ['/page', '/api', '/page']) {
        const r = await raw(port, { path, headers: { 'x-dev': '1' } });
        ids.push(r.headers['x-miniprof-id']![0]!);
      }
      await waitFor(() => ids.every((id) => store.saved.includes(id)));
      const list = await raw(port, { path: '/debug/prof/', headers: { 'x-dev': '1' } });
      expect(list.status).toBe(200);
      for (const [k, v] of Object.entries(LIST_HEADERS)) expect(list.headers[k.toLowerCase()]).toEqual([v]);
      expect(list.headers['content-type']).toEqual(['text/html; charset=utf-8']);
      // The list's filter is a GET form back to this origin; no other page may submit a form.
      expect(list.headers['content-security-policy']).toEqual(["default-src 'none'; style-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"]);
      const html = list.payload.toString();
      const order = [...html.matchAll(/href="\/debug\/prof\/([0-9a-f-]{36})"/g)].map((m) => m[1]);
      expect([...new Set(order)]).toEqual([...ids].reverse());
      // The same query with the same values twice: duplicate, and a group of two similar (N+1).
      expect(html).toContain('<span class="flag duplicate">duplicate</span><span class="flag n+1">n+1</span>');
      const one = await raw(port, { path: `/debug/prof/${ids[0]}`, headers: { 'x-dev': '1' } });
      expect(one.status).toBe(200);
      for (const [k, v] of Object.entries(PAGE_HEADERS)) expect(one.headers[k.toLowerCase()]).toEqual([v]);
      expect(one.headers['content-security-policy']).toEqual(["default-src 'none'; style-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"]);
      expect(one.headers['cache-control']).toEqual(['private, no-store']);
      expect(one.headers['x-content-type-options']).toEqual(['nosniff']);
      const body = one.payload.toString();
      expect(body).toContain('load &lt;user&gt; &amp; &quot;friends&quot;');
      expect(body).toContain('<link rel="stylesheet" href="/debug/prof/miniprof.css">');
      expect(body).not.toMatch(/<script(?![^>]*type="application\/json")/);
      const css = await raw(port, { path: '/debug/prof/miniprof.css', headers: { 'x-dev': '1' } });
      expect(css.headers['content-type']).toEqual(['text/css; charset=utf-8']);
      const head = await raw(port, { method: 'HEAD', path: `/debug/prof/${ids[0]}`, headers: { 'x-dev': '1' } });
      expect(head.status).toBe(200);
      expect(head.body.length).toBe(0);
      expect(head.headers['content-length']).toEqual(one.headers['content-length']);
      // Results requests are not themselves profiled.
      expect(one.headers['x-miniprof-id']).toBeUndefined();
      expect(one.headers['server-timing']).toBeUndefined();
    });

    test('A1: truth table of isDeveloper × opt-in cookie: profiled and shown only when one of them admits', async () => {
      const store = watched();
      const faults: unknown[] = [];
      const answers = {
        yes: () => true,
        no: () => false,
        throws: () => {
          throw new Error('auth down');
        },
        rejects: () => Promise.reject(new Error('auth down')),
        slowYes: () => new Promise<boolean>((r) => setTimeout(() => r(true), 20)),
      } as const;
      const bare = await app(kind, null);
      const secret = Buffer.from(SECRET);
      /** Each cookie, for the app on `port` (an opt-in is bound to the Host it was minted for). */
      const cookiesFor = async (port: number) => {
        const origin = `127.0.0.1:${port}`;
        // Minted as the opt-in route does: signed, and its token kept by the store (F5).
        const minted = signOptIn(secret, Date.now(), 3_600_000, 0, origin);
        await store.addOptIn!('peer:127.0.0.1', minted.optIn.token, minted.optIn.expires * 1000);
        const expired = signOptIn(secret, Date.now() - 9 * 3_600_000, 8 * 3_600_000, 0, origin);
        await store.addOptIn!('peer:127.0.0.1', expired.optIn.token, Date.now() + 3_600_000);
        const elsewhere = signOptIn(secret, Date.now(), 3_600_000, 0, '127.0.0.1:1');
        await store.addOptIn!('peer:127.0.0.1', elsewhere.optIn.token, elsewhere.optIn.expires * 1000);
        const valid = `__Host-miniprof=${minted.value}`;
        return {
          absent: undefined,
          valid,
          forged: `__Host-miniprof=${signOptIn(Buffer.from('another secret, also long enough, 0123456789'), Date.now(), 3_600_000, 0, origin).value}`,
          expired: `__Host-miniprof=${expired.value}`,
          tampered: valid.replace(/\.(\d+)\./, (_m, n: string) => `.${Number(n) + 1000}.`),
          garbage: '__Host-miniprof=v3.not-a-token.1.0.x; other=1',
          unminted: `__Host-miniprof=${signOptIn(secret, Date.now(), 3_600_000, 0, origin).value}`,
          planted: `miniprof=${minted.value}`,
          anotherPort: `__Host-miniprof=${elsewhere.value}`,
        } as const;
      };
      for (const [a, fn] of Object.entries(answers)) {
        const port = await app(kind, { isDeveloper: fn, secret: SECRET, onInternalError: (e: unknown) => faults.push(e), results: { store } } as never);
        for (const [c, cookie] of Object.entries(await cookiesFor(port))) {
          const admitted = a === 'yes' || a === 'slowYes' || c === 'valid';
          const headers: Record<string, string> = cookie === undefined ? {} : { cookie };
          const r = await raw(port, { path: '/page', headers });
          const bareR = await raw(bare, { path: '/page', headers });
          const what = `isDeveloper ${a}, cookie ${c}`;
          if (admitted) {
            expect(r.headers['x-miniprof-id'], what).toHaveLength(1);
            expect(r.payload.toString(), what).toContain('<!--');
          } else {
            expect(strip(r), what).toBe(strip(bareR));
          }
          const l = await raw(port, { path: '/_miniprof/', headers });
          if (admitted) expect(l.status, what).toBe(200);
          else expect(strip(l), what).toBe(strip(await raw(bare, { path: '/_miniprof/', headers })));
        }
      }
      expect(faults.length).toBeGreaterThan(0);
      expect(faults.every((e) => (e as Error).message === 'auth down')).toBe(true);
    });

    test('A3: two developers from the same address with their own opt-in never see each other’s profiles; 404 is the app’s', async () => {
      const store = watched();
      const { port, bare } = await both({ isDeveloper, secret: SECRET, results: { store } } as never);
      const optIn = await raw(port, optInReq(port));
      expect(optIn.status).toBe(303);
      expect(optIn.headers.location).toEqual(['/_miniprof/']);
      expect(optIn.headers['set-cookie']![0]).toMatch(/^__Host-miniprof=v3\.[0-9a-f-]{36}\.\d+\.0\.[A-Za-z0-9_-]{43}; Path=\/; Max-Age=28800; HttpOnly; SameSite=Strict; Secure$/);
      const a = cookieOf(optIn);
      const b = cookieOf(await raw(port, optInReq(port)));
      expect(a).not.toBe(b);
      const mine = { a: [] as string[], b: [] as string[], peer: [] as string[] };
      for (let i = 0; i < 3; i++) {
        // No x-dev: the cookie alone admits them (isDeveloper says no to both).
        mine.a.push((await raw(port, { path: '/api', headers: { cookie: a } })).headers['x-miniprof-id']![0]!);
        mine.b.push((await raw(port, { path: '/page', headers: { cookie: b } })).headers['x-miniprof-id']![0]!);
        mine.peer.push((await raw(port, { path: '/api', headers: { 'x-dev': '1' } })).headers['x-miniprof-id']![0]!);
      }
      await waitFor(() => [...mine.a, ...mine.b, ...mine.peer].every((id) => store.saved.includes(id)));
      const ids = async (headers: Record<string, string>) =>
        [...new Set([...(await raw(port, { path: '/_miniprof/', headers })).payload.toString().matchAll(/href="\/_miniprof\/([0-9a-f-]{36})"/g)].map((m) => m[1]))];
      expect(await ids({ cookie: a })).toEqual([...mine.a].reverse());
      expect(await ids({ cookie: b })).toEqual([...mine.b].reverse());
      expect(await ids({ 'x-dev': '1' })).toEqual([...mine.peer].reverse());
      for (const [who, headers] of [['a', { cookie: a }], ['b', { cookie: b }], ['peer', { 'x-dev': '1' }]] as const) {
        for (const [owner, list] of Object.entries(mine)) {
          if (owner === who) continue;
          for (const path of [`/_miniprof/${list[0]}`, `/_miniprof/${list[0]}.json`]) {
            const r = await raw(port, { path, headers });
            expect(r.status).toBe(404);
            expect(strip(r)).toBe(strip(await raw(bare, { path, headers })));
          }
        }
      }
      const out = await raw(port, { method: 'POST', path: '/_miniprof/opt-out', headers: { cookie: a, Origin: `http://127.0.0.1:${port}` }, body: '' });
      expect(out.headers['set-cookie']).toEqual(['__Host-miniprof=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict; Secure']);
    });

    test('A3 by peer address: two loopback peers, alternating, each list only its own (the owner string is remembered per peer)', async () => {
      const store = watched();
      const { port } = await both({ isDeveloper: () => true, results: { store, listLimit: 100 } } as never);
      const peers = ['127.0.0.1', '127.0.0.2', '127.0.0.2', '127.0.0.1', '127.0.0.1', '127.0.0.2'];
      const ids: string[] = [];
      for (const localAddress of peers) ids.push((await raw(port, { path: '/api', localAddress })).headers['x-miniprof-id']![0]!);
      await waitFor(() => ids.every((id) => store.saved.includes(id)));
      const listed = async (localAddress: string) =>
        [...(await raw(port, { path: '/_miniprof/', localAddress })).payload.toString().matchAll(/href="\/_miniprof\/([0-9a-f-]{36})"/g)].map((m) => m[1]);
      const own = (who: string) => [...new Set(ids.filter((_, i) => peers[i] === who))].reverse();
      expect(new Set(await listed('127.0.0.1'))).toEqual(new Set(own('127.0.0.1')));
      expect(new Set(await listed('127.0.0.2'))).toEqual(new Set(own('127.0.0.2')));
      expect(own('127.0.0.1')).toHaveLength(3);
    });

    test('A3 under concurrency: 60 interleaved requests of two opted-in developers; each list is exactly its own', async () => {
      const store = watched();
      const { port } = await both({ isDeveloper, secret: SECRET, results: { store, listLimit: 100 } } as never);
      const a = cookieOf(await raw(port, optInReq(port)));
      const b = cookieOf(await raw(port, optInReq(port)));
      const who = Array.from({ length: 60 }, (_, i) => (i % 3 === 0 ? a : b));
      const got = await Promise.all(who.map((cookie, i) => raw(port, { path: i % 2 ? '/api' : '/page', headers: { cookie } })));
      const ids = got.map((r) => r.headers['x-miniprof-id']![0]!);
      await waitFor(() => ids.every((id) => store.saved.includes(id)));
      const listed = async (cookie: string) =>
        new Set([...(await raw(port, { path: '/_miniprof/', headers: { cookie } })).payload.toString().matchAll(/href="\/_miniprof\/([0-9a-f-]{36})"/g)].map((m) => m[1]));
      expect(await listed(a)).toEqual(new Set(ids.filter((_, i) => who[i] === a)));
      expect(await listed(b)).toEqual(new Set(ids.filter((_, i) => who[i] === b)));
    });

    test('A3 with results.owner: two signed-in developers on one address see only their own; an owner that throws denies', async () => {
      const store = watched();
      const faults: unknown[] = [];
      const owner = (req: { headers: http.IncomingHttpHeaders }) => {
        const u = req.headers['x-user'];
        if (u === 'boom') throw new Error('session store down');
        return typeof u === 'string' ? u : '';
      };
      const { port, bare } = await both({ isDeveloper, onInternalError: (e: unknown) => faults.push(e), results: { store, owner } } as never);
      const as = (user: string) => ({ 'x-dev': '1', 'x-user': user });
      const ida = (await raw(port, { path: '/api', headers: as('ann') })).headers['x-miniprof-id']![0]!;
      const idb = (await raw(port, { path: '/api', headers: as('bob') })).headers['x-miniprof-id']![0]!;
      await waitFor(() => store.saved.includes(ida) && store.saved.includes(idb));
      expect((await raw(port, { path: `/_miniprof/${ida}.json`, headers: as('ann') })).status).toBe(200);
      const cross = await raw(port, { path: `/_miniprof/${ida}.json`, headers: as('bob') });
      expect(strip(cross)).toBe(strip(await raw(bare, { path: `/_miniprof/${ida}.json`, headers: as('bob') })));
      // No identity, or a failing one: not a developer's request at all.
      for (const user of ['', 'boom']) {
        const r = await raw(port, { path: '/page', headers: as(user) });
        expect(strip(r)).toBe(strip(await raw(bare, { path: '/page', headers: as(user) })));
      }
      expect(faults.map(String)).toEqual(['Error: session store down']);
    });

    test('the opt-in cookie is __Host- and Secure when the request came over HTTPS (behind a trusted proxy here)', async () => {
      const { port } = await both({ isDeveloper, secret: SECRET } as never);
      const req = optInReq(port);
      const r = await raw(port, { ...req, headers: { ...req.headers, 'x-forwarded-proto': 'https' } });
      expect(r.headers['set-cookie']![0]).toMatch(/^__Host-miniprof=[^;]+; Path=\/; Max-Age=28800; HttpOnly; SameSite=Strict; Secure$/);
    });

    test('without a secret there is no opt-in route and cookies are never read', async () => {
      const { port, bare } = await both({ isDeveloper });
      for (const path of ['/_miniprof/opt-in', '/_miniprof/opt-out']) {
        const r = await raw(port, { path, headers: { 'x-dev': '1' } });
        expect(strip(r)).toBe(strip(await raw(bare, { path, headers: { 'x-dev': '1' } })));
      }
      const forged = `__Host-miniprof=${signOptIn(Buffer.from(SECRET), Date.now(), 3_600_000).value}`;
      const r = await raw(port, { path: '/page', headers: { cookie: forged } });
      expect(r.headers['x-miniprof-id']).toBeUndefined();
    });

    test('A4: for everyone else the results paths are exactly the app’s own 404, whatever the method or query', async () => {
      const store = watched();
      const { port, bare } = await both({ isDeveloper, secret: SECRET, results: { store } } as never);
      const id = (await raw(port, { path: '/page', headers: { 'x-dev': '1' } })).headers['x-miniprof-id']![0]!;
      await waitFor(() => store.saved.includes(id));
      const paths = ['/_miniprof', '/_miniprof/', `/_miniprof/${id}`, `/_miniprof/${id}.json`, `/_miniprof/${id}.txt`, '/_miniprof/miniprof.css', '/_miniprof/opt-in', '/_miniprof/opt-out', '/_miniprof/?pp=env', `/_miniprof/${id}?x=1`];
      for (const path of paths) {
        for (const req of [{ method: 'GET' }, { method: 'HEAD' }, { method: 'POST', body: 'a=1' }, { method: 'GET', headers: { cookie: 'miniprof=v1.x.1.y' } }] as RawRequest[]) {
          const r = await raw(port, { path, ...req });
          expect(strip(r), `${req.method} ${path}`).toBe(strip(await raw(bare, { path, ...req })));
        }
      }
    });

    test('A9: a developer’s non-GET/HEAD requests to the results paths get the app’s own answer', async () => {
      const store = watched();
      const { port, bare } = await both({ isDeveloper, results: { store } });
      const id = (await raw(port, { path: '/page', headers: { 'x-dev': '1' } })).headers['x-miniprof-id']![0]!;
      await waitFor(() => store.saved.includes(id));
      for (const path of ['/_miniprof/', `/_miniprof/${id}`, `/_miniprof/${id}.json`, `/_miniprof/${id}.txt`]) {
        for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
          const req: RawRequest = { method, path, headers: { 'x-dev': '1' }, body: method === 'OPTIONS' ? undefined : '{}' };
          const r = await raw(port, req);
          expect(r.status).not.toBe(200);
          expect(strip(r), `${method} ${path}`).toBe(strip(await raw(bare, req)));
        }
      }
      // Paths we do not serve, under the base, are the app's too.
      for (const path of ['/_miniprof/x', '/_miniprof/../page', `/_miniprof/${id}.html`, `/_miniprof/${id.toUpperCase()}`]) {
        const r = await raw(port, { path, headers: { 'x-dev': '1' } });
        expect(strip(r), path).toBe(strip(await raw(bare, { path, headers: { 'x-dev': '1' } })));
      }
      // A path that only starts like the base is an ordinary (profiled) request of the app.
      expect((await raw(port, { path: '/_miniprofx', headers: { 'x-dev': '1' } })).headers['x-miniprof-id']).toHaveLength(1);
    });

    test('E2: 10,000 profiled requests leave the store within its caps', async () => {
      const store = memoryStore({ maxCount: 50, maxBytes: 64 * 1024 });
      const { port } = await both({ isDeveloper: () => true, results: { store } });
      const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
      let next = 0;
      const worker = async () => {
        while (next < 10_000) {
          next++;
          await new Promise<void>((resolve, reject) => {
            http.get({ host: '127.0.0.1', port, path: '/api', agent }, (res) => {
              res.resume();
              res.once('end', resolve);
            }).once('error', reject);
          });
        }
      };
      await Promise.all(Array.from({ length: 16 }, worker));
      agent.destroy();
      await new Promise((r) => setTimeout(r, 50));
      const s = store.stats();
      expect(s.count).toBe(50);
      expect(s.bytes).toBeLessThanOrEqual(64 * 1024);
    }, 120_000);
  });
}

// ---------------------------------------------------------------- A8: escaping, with parse5

type Node = DefaultTreeAdapterMap['childNode'] | DefaultTreeAdapterMap['document'];

/** Attributes whose value is the page's text (a full command on hover, the filter's value). */
const TEXT_ATTRS = new Set(['title', 'value', 'datetime']);

/**
 * Elements and their attributes (names and values) in document order; text is left out, and so
 * are the values of TEXT_ATTRS (their names stay: no attribute may be added or lost).
 */
function skeleton(html: string): string[] {
  const out: string[] = [];
  const walk = (n: Node, depth: number) => {
    if ('tagName' in n) {
      const attrs = n.attrs.map((a) => (TEXT_ATTRS.has(a.name) ? `${a.name}=*` : `${a.name}=${JSON.stringify(a.value)}`)).sort();
      out.push(`${depth}:${n.namespaceURI === 'http://www.w3.org/2000/svg' ? 'svg:' : ''}${n.tagName}[${attrs.join(' ')}]`);
    } else if (n.nodeName === '#comment') out.push(`${depth}:#comment`);
    if ('childNodes' in n) for (const c of n.childNodes) walk(c as Node, depth + 1);
    if ('content' in n && n.content) for (const c of n.content.childNodes) walk(c as Node, depth + 1);
  };
  walk(parse(html) as Node, 0);
  return out;
}

/** Each `code.cmd`'s title attribute and its text, as the parser reads them. */
function titles(html: string): [string, string][] {
  const out: [string, string][] = [];
  const text = (n: Node): string => ('value' in n && n.nodeName === '#text' ? (n as { value: string }).value : 'childNodes' in n ? n.childNodes.map((c) => text(c as Node)).join('') : '');
  const walk = (n: Node) => {
    if ('tagName' in n && n.tagName === 'code' && n.attrs.some((a) => a.name === 'class' && a.value === 'cmd')) {
      out.push([n.attrs.find((a) => a.name === 'title')!.value, text(n)]);
    }
    if ('childNodes' in n) for (const c of n.childNodes) walk(c as Node);
  };
  walk(parse(html) as Node);
  return out;
}

function scriptText(html: string): string {
  const at = html.indexOf('<script type="application/json" id="miniprof-profile">');
  const start = html.indexOf('>', at) + 1;
  return html.slice(start, html.indexOf('</script>', start));
}

/** Replace every string of the profile by a placeholder, the same one for equal strings. */
function template(p: ProfileJSON): ProfileJSON {
  const names = new Map<string, string>();
  const ph = (s: string) => {
    if (!names.has(s)) names.set(s, `t${names.size}`);
    return names.get(s)!;
  };
  const t = (n: ProfileJSON['root'] & { fanOut?: { name: string; category?: string } }): ProfileJSON['root'] => ({
    ...n,
    ...(n.fanOut === undefined ? {} : { fanOut: { ...n.fanOut, name: ph(n.fanOut.name), ...(n.fanOut.category === undefined ? {} : { category: ph(n.fanOut.category) }) } }),
    name: ph(n.name),
    children: n.children.map(t),
    ...(n.custom === undefined ? {} : { custom: n.custom.map((c) => ({ ...c, category: ph(c.category), command: ph(c.command) })) }),
  });
  return {
    ...p,
    name: ph(p.name),
    machine: ph(p.machine),
    warnings: p.warnings.map(ph),
    request: { ...p.request!, method: ph(p.request!.method), path: ph(p.request!.path) },
    root: t(p.root),
    ...(p.similar === undefined ? {} : { similar: p.similar.map((g) => ({ ...g, category: ph(g.category), command: ph(g.command) })) }),
  };
}

const nasty = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('</script>', '<script>alert(1)</script>', '"><img src=x onerror=alert(1)>', "'><svg onload=alert(1)>", '<!--', '-->', '--!>', ']]>', '\u2028\u2029', '</title><b>', '</svg><i>', '&lt;', '<', '>', '&', '"', "'", '', '<style>*{}</style>', '\u0000\r\n'),
);

const timingArb: fc.Memo<ProfileJSON['root']> = fc.memo((d) =>
  fc.record({
    name: nasty,
    startMs: fc.double({ min: 0, max: 500, noNaN: true }),
    durationMs: fc.double({ min: 0, max: 500, noNaN: true }),
    children: d > 1 ? fc.array(timingArb(d - 1), { maxLength: 3 }) : fc.constant([]),
    custom: fc.option(
      fc.array(
        fc.record(
          {
            category: nasty,
            command: nasty,
            startMs: fc.double({ min: 0, max: 500, noNaN: true }),
            durationMs: fc.double({ min: 0, max: 50, noNaN: true }),
            duplicate: fc.constant(true as const),
            similar: fc.nat(3),
          },
          { requiredKeys: ['category', 'command', 'startMs', 'durationMs'] },
        ),
        { maxLength: 4 },
      ),
      { nil: undefined },
    ),
    error: fc.option(fc.constant(true as const), { nil: undefined }),
    blocking: fc.option(fc.constant(true as const), { nil: undefined }),
    serialized: fc.option(fc.constant(true as const), { nil: undefined }),
    parallelism: fc.option(fc.double({ min: 0, max: 9, noNaN: true }), { nil: undefined }),
    concurrency: fc.option(fc.double({ min: 1, max: 9, noNaN: true }), { nil: undefined }),
    heldMs: fc.option(fc.double({ min: 0, max: 90, noNaN: true }), { nil: undefined }),
    blockingAmbiguous: fc.option(fc.constant(true as const), { nil: undefined }),
    fanOut: fc.option(fc.record({ name: nasty, count: fc.nat(9), category: fc.option(nasty, { nil: undefined }) }).map((f) => (f.category === undefined ? { name: f.name, count: f.count } : f)), { nil: undefined }),
  }).map((r) => {
    const out = { ...r } as Record<string, unknown>;
    for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
    return out as unknown as ProfileJSON['root'];
  }),
);

const profileArb: fc.Arbitrary<ProfileJSON> = fc
  .record({
    root: timingArb(3),
    method: nasty,
    path: nasty,
    machine: nasty,
    warnings: fc.array(nasty, { maxLength: 2 }),
    id: fc.uuid({ version: 4 }),
    similar: fc.option(fc.array(fc.record({ id: fc.nat(9), category: nasty, command: nasty, count: fc.nat(9), durationMs: fc.double({ min: 0, max: 50, noNaN: true }) }), { maxLength: 2 }), { nil: undefined }),
  })
  .map(({ root, method, path, machine, warnings, id, similar }) => ({
    ...(similar === undefined ? {} : { similar }),
    v: 1 as const,
    id,
    name: `${method} ${path}`,
    machine,
    started: '2026-11-29T12:00:00.000Z',
    durationMs: root.durationMs,
    droppedSteps: 0,
    warnings,
    request: { method, path, status: 200 },
    root,
  }));

describe('A8: pages keep the template’s structure for any step names, paths and commands', () => {
  test('profile page: same elements and attributes as with placeholder text; the embedded JSON round-trips and has no "<"', () => {
    fc.assert(
      fc.property(profileArb, (p) => {
        const html = renderProfilePage(p, '/_miniprof', p.id);
        expect(skeleton(html)).toEqual(skeleton(renderProfilePage(template(p), '/_miniprof', p.id)));
        // A title is the command it is on, decoded back exactly.
        for (const [title, text] of titles(html)) expect(title).toBe(text);
        const json = scriptText(html);
        expect(json).not.toMatch(/[<>&\u2028\u2029]/);
        expect(JSON.parse(json)).toEqual(p);
      }),
      { numRuns: 300 },
    );
  });

  test('list page: same elements and attributes as with placeholder text', () => {
    fc.assert(
      fc.property(fc.array(profileArb, { maxLength: 4 }), (ps) => {
        const html = renderListPage(ps.map((p) => summarize(p, 0)), '/_miniprof', 'in');
        expect(skeleton(html)).toEqual(skeleton(renderListPage(ps.map((p) => summarize(template(p), 0)), '/_miniprof', 'in')));
      }),
      { numRuns: 200 },
    );
  });

  test('fixed cases through a real request: a hostile step name and path become text', async () => {
    const store = watched();
    const a = express();
    a.use(expressMiniprof({ isDeveloper: () => true, results: { store } }));
    a.get('/x', async (_req, res) => {
      await step('"><img src=x onerror=alert(1)></script><script>alert(2)</script>', async () => {
        await timing('sql', "select '</script><svg onload=alert(3)>' -- \u2028", async () => {});
      });
      res.json({});
    });
    const port = await serve(a);
    const r = await raw(port, { path: '/x?<script>=1' });
    const id = r.headers['x-miniprof-id']![0]!;
    await waitFor(() => store.saved.includes(id));
    const html = (await raw(port, { path: `/_miniprof/${id}` })).payload.toString();
    const tags = skeleton(html).map((s) => s.replace(/^\d+:/, '').replace(/\[.*$/, ''));
    expect(tags).not.toContain('img');
    expect(tags.filter((t) => t === 'script')).toEqual(['script']);
    expect(tags).not.toContain('svg:svg:svg');
    expect(JSON.parse(scriptText(html)).root.children[0].name).toBe('"><img src=x onerror=alert(1)></script><script>alert(2)</script>');
  });
});
