/**
 * The response matrix on real sockets, run against every adapter (test/adapters/apps.ts): the
 * same routes answered by a real app of each framework. Non-developer responses are compared byte
 * for byte with the same app without miniprof; developer responses header by header, and their
 * bodies against the app's body plus exactly one comment. Hazard IDs are reliability.md's.
 */
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openProfiles } from '../../src/core/context.js';
import { currentProfile, step, type Profile } from '../../src/index.js';
import { memoryStore } from '../../src/results/memory-store.js';
import { CAPTURE_OWNER } from '../../src/results/store.js';
import { closeServers, raw, serve, waitFor, withoutDate, type RawResponse } from '../helpers/http.js';
import { ADAPTERS, appSteps, type Handler, type Reply, type Routes } from './apps.js';

const HTML = 'text/html; charset=utf-8';
const PAGE = '<!doctype html><html><head><title>t</title></head><body><h1>café ☕</h1></body></html>';
const tick = () => new Promise((resolve) => setImmediate(resolve));

/** Profiles the routes saw, with how often each was sealed. */
interface Seen {
  profile: Profile;
  seals: number;
}
let seen: Seen[] = [];

function capture(): void {
  const profile = currentProfile();
  if (profile === undefined || seen.some((s) => s.profile === profile)) return;
  const s: Seen = { profile, seals: 0 };
  const seal = profile.seal;
  profile.seal = function (this: Profile) {
    s.seals++;
    return seal.call(this);
  };
  seen.push(s);
}

/** A route that records its profile, takes a few steps, then replies `reply`. */
function route(reply: Reply | ((req: Parameters<Handler>[0]) => Reply)): Handler {
  return async (req) => {
    capture();
    await step('load', async () => {
      await step('query', tick);
    });
    step('render', () => undefined);
    return typeof reply === 'function' ? reply(req) : reply;
  };
}

/**
 * Every CDN's own cache header, each obeyed by its CDN before `Cache-Control`: RFC 9213's
 * `CDN-Cache-Control` and its targeted fields (`<cdn>-CDN-Cache-Control`), Akamai's, Fastly's and
 * Edge-Control, Surrogate-Control, nginx's `X-Accel-Expires`, and `Expires` for HTTP/1.0 caches.
 */
const CDN_HEADERS: Record<string, string> = {
  'cdn-cache-control': 'max-age=600',
  'cloudflare-cdn-cache-control': 'max-age=600',
  'vercel-cdn-cache-control': 'max-age=600',
  'akamai-cache-control': 'max-age=600',
  'edge-control': 'cache-maxage=600s',
  'fastly-surrogate-control': 'max-age=600',
  'surrogate-control': 'max-age=600',
  'x-accel-expires': '600',
  expires: 'Thu, 01 Jan 2037 00:00:00 GMT',
};

const html = (body: string | Buffer, headers: Record<string, string | string[]> = {}, status?: number): Reply => ({ status, headers: { 'content-type': HTML, ...headers }, body });

const MATRIX_ROUTES: Routes = {
  '/html': route(html(PAGE)),
  '/xhtml': route(html(PAGE, { 'content-type': 'application/xhtml+xml; charset=utf-8' })),
  '/buffer': route(html(Buffer.from(PAGE))),
  '/latin1': route(html(Buffer.from('<html><body>caf\xe9</body></html>', 'latin1'), { 'content-type': 'text/html; charset=iso-8859-1' })),
  '/no-body-tag': route(html('<p>a fragment</p>')),
  '/two-bodies': route(html('<html><body><pre></body></pre></BODY ></html>')),
  '/app-server-timing': route(html(PAGE, { 'server-timing': 'app;dur=1.5' })),
  '/etag': route((req) => (req.header('if-none-match') === '"v1"' ? { status: 304, headers: { etag: '"v1"' } } : html(PAGE, { etag: '"v1"' }))),
  '/cookies': route(html(PAGE, { 'set-cookie': ['a=1; Path=/', 'b=2; HttpOnly'] })),
  '/missing-page': route(html('<html><body>not here</body></html>', {}, 404)),
  '/utf16': route(html(Buffer.from('<html><body>x</body></html>', 'utf16le'), { 'content-type': 'text/html; charset=utf-16le' })),
  '/no-transform': route(html(PAGE, { 'cache-control': 'no-transform' })),
  '/encoded': route(html(gzipSync(PAGE), { 'content-encoding': 'gzip' })),
  '/empty-html': route(html('')),
  '/json': route({ headers: { 'content-type': 'application/json; charset=utf-8' }, body: '{"ok":true}' }),
  '/text': route({ headers: { 'content-type': 'text/plain; charset=utf-8' }, body: 'plain' }),
  '/stream': route({ headers: { 'content-type': HTML }, chunks: ['<html><body>', '<p>streamed</p>', '</body></html>'], everyMs: 5 }),
  '/204': route({ status: 204 }),
  '/304': route({ status: 304 }),
  '/cdn': route(html(PAGE, CDN_HEADERS)),
  // Streamed: written with `writeHead(status, headers)`, the object form, on Node-style adapters.
  '/cdn-stream': route({ headers: { 'content-type': HTML, ...CDN_HEADERS }, chunks: ['<html><body>', '</body></html>'], everyMs: 5 }),
};

/** A sampled request this slow or slower is kept; every matrix route is far faster. */
const SLOW_MS = 300;

/** The matrix routes, and one that takes longer than SLOW_MS. */
const CAPTURE_ROUTES: Routes = {
  ...MATRIX_ROUTES,
  '/slow': async (req) => {
    await new Promise((resolve) => setTimeout(resolve, SLOW_MS + 50));
    return route(html(PAGE))(req);
  },
};

interface Row {
  path: string;
  method?: string;
  headers?: Record<string, string>;
  body: 'comment' | 'same';
  status?: number;
}

const ROWS: Row[] = [
  ...['/html', '/xhtml', '/buffer', '/latin1', '/no-body-tag', '/two-bodies', '/app-server-timing', '/etag', '/cookies'].map((path): Row => ({ path, body: 'comment' })),
  { path: '/missing-page', body: 'comment', status: 404 },
  { path: '/etag', headers: { 'If-None-Match': '"v1"' }, body: 'comment' },
  ...['/utf16', '/no-transform', '/encoded', '/empty-html', '/json', '/text', '/stream'].map((path): Row => ({ path, body: 'same' })),
  { path: '/204', body: 'same', status: 204 },
  { path: '/304', body: 'same', status: 304 },
  { path: '/html', method: 'HEAD', body: 'same' },
  { path: '/cdn', body: 'comment' },
  { path: '/cdn-stream', body: 'same' },
];

/** Every comment miniprof writes starts with the machine name given below. */
const COMMENT = /<!--\nweb-1 at [^]*?\n-->/g;

function header(r: RawResponse, name: string): string | undefined {
  return r.headers[name]?.join(', ');
}

/** Headers miniprof sets or may legitimately change (the framing may change with the length). */
const OURS = new Set(['date', 'content-length', 'transfer-encoding', 'etag', 'cache-control', 'vary', 'server-timing', 'x-miniprof-id', 'link', ...Object.keys(CDN_HEADERS)]);

describe.each(ADAPTERS)('$name', (adapter) => {
  let basePort = 0;
  let devPort = 0;
  /** The same app with capture at rate 1 (every other request sampled) and the badge on. */
  let capPort = 0;
  const store = memoryStore();
  const reported: unknown[] = [];

  beforeAll(async () => {
    basePort = await serve(await adapter.listener(null, MATRIX_ROUTES));
    const options = { isDeveloper: adapter.byHeader('x-dev'), machine: 'web-1', onInternalError: (e: unknown) => reported.push(e) };
    devPort = await serve(await adapter.listener(options, MATRIX_ROUTES));
    const capture = { rate: 1, slowerThanMs: SLOW_MS, maxPerMinute: 10_000 };
    capPort = await serve(await adapter.listener({ ...options, results: { store }, capture, badge: true }, CAPTURE_ROUTES));
  });
  afterAll(async () => {
    await closeServers();
    seen = [];
  });

  for (const row of ROWS) {
    const method = row.method ?? 'GET';
    const label = `${method} ${row.path}${row.headers ? ' (conditional)' : ''}`;
    const status = row.headers ? 304 : (row.status ?? 200);

    it(`E4: non-developer ${label}: byte-identical to the app alone`, async () => {
      const want = await raw(basePort, { method, path: row.path, headers: row.headers });
      const got = await raw(devPort, { method, path: row.path, headers: row.headers });
      expect(got.status).toBe(status);
      expect(withoutDate(got.bytes).toString('latin1')).toBe(withoutDate(want.bytes).toString('latin1'));
    });

    it(`E4 capture: sampled non-developer ${label}: byte-identical to capture off, run in a profile sealed once`, async () => {
      const before = seen.length;
      const want = await raw(devPort, { method, path: row.path, headers: row.headers });
      expect(seen.length, 'capture off: no profile').toBe(before);
      const got = await raw(capPort, { method, path: row.path, headers: row.headers });
      // Conditionals are left alone: a sampled conditional request is answered 304 as without us.
      expect(got.status).toBe(status);
      expect(withoutDate(got.bytes).toString('latin1')).toBe(withoutDate(want.bytes).toString('latin1'));
      await waitFor(() => seen.length > before && seen[seen.length - 1]!.profile.sealed, 3000, 'the captured profile sealed');
      expect(seen.length).toBe(before + 1);
      const s = seen[seen.length - 1]!;
      expect(s.seals).toBe(1);
      // Someone else's path: its number segments (ids) masked (issue 57 item 3).
      expect(s.profile.toJSON().request).toEqual({ method, path: row.path.replace(/\/\d+(?=\/|$)/g, '/?'), status: got.status });
      expect(reported).toEqual([]);
    });

    it(`C1 C6 C7 B6 A6: developer ${label}: ${row.body === 'comment' ? 'one comment more' : 'the same body'}, our headers, sealed once`, async () => {
      const before = seen.length;
      const base = await raw(basePort, { method, path: row.path });
      const got = await raw(devPort, { method, path: row.path, headers: { ...row.headers, 'x-dev': '1' } });
      // A6: a developer's conditional request is answered in full, never 304 with an old page.
      expect(got.status).toBe(row.status ?? 200);
      expect(got.status).toBe(base.status);
      const body = got.payload.toString('latin1');
      if (row.body === 'comment') {
        const found = body.match(COMMENT) ?? [];
        expect(found, 'exactly one miniprof comment').toHaveLength(1);
        expect(body.replace(found[0]!, '')).toBe(base.payload.toString('latin1'));
      } else {
        expect(body).toBe(base.payload.toString('latin1'));
      }
      const length = header(got, 'content-length');
      if (method === 'HEAD' || got.status === 304 || got.status === 204) expect(got.payload.length).toBe(0);
      else if (length !== undefined) expect(Number(length)).toBe(got.payload.length);
      if (method === 'HEAD') expect(length).toBe(header(base, 'content-length'));
      expect(header(got, 'server-timing')).toMatch(/(^|, )total;dur=\d+\.\d$/);
      if (row.path === '/app-server-timing') expect(header(got, 'server-timing')).toMatch(/^app;dur=1.5, /);
      expect(header(got, 'cache-control')).toBe(row.path === '/no-transform' ? 'private, no-store, no-transform' : 'private, no-store');
      expect(got.headers.etag).toBeUndefined();
      // Every CDN's own cache header is gone: each CDN obeys its own before Cache-Control.
      if (row.path.startsWith('/cdn')) expect(Object.keys(base.headers)).toEqual(expect.arrayContaining(Object.keys(CDN_HEADERS)));
      expect(Object.keys(got.headers).filter((name) => name in CDN_HEADERS)).toEqual([]);
      // No cache may match a developer's response to another request (RFC 9110 12.5.5).
      expect(got.headers.vary).toEqual(['*']);
      for (const [name, values] of Object.entries(base.headers)) {
        if (!OURS.has(name)) expect(got.headers[name], name).toEqual(values);
      }
      for (const name of Object.keys(got.headers)) {
        if (!OURS.has(name)) expect(base.headers[name], `added header ${name}`).toBeDefined();
      }
      await waitFor(() => seen.length > before && seen[seen.length - 1]!.profile.sealed, 3000, 'the profile sealed');
      expect(seen.length).toBe(before + 1);
      const s = seen[seen.length - 1]!;
      expect(s.seals).toBe(1);
      expect(s.profile.toJSON().request).toEqual({ method, path: row.path, status: got.status });
      const root = s.profile.toJSON().root;
      // Fastify's route handler is a step of its own (autoSteps), with the app's steps inside.
      expect(root.children.some((c) => c.handler === true)).toBe(adapter.name === 'fastify');
      expect(appSteps(root).map((c) => c.name)).toEqual(['load', 'render']);
      expect(reported).toEqual([]);
    });
  }

  it('capture: a slow sampled request is kept (the fast ones are not) and listed at /_miniprof/captured', async () => {
    await waitFor(() => openProfiles() === 0, 3000, 'earlier profiles closed');
    const kept = (await store.list(CAPTURE_OWNER, 100)).length;
    const r = await raw(capPort, { path: '/slow' });
    expect(r.status).toBe(200);
    expect(r.payload.toString()).toBe(PAGE);
    expect(r.headers['server-timing']).toBeUndefined();
    await waitFor(() => openProfiles() === 0, 3000, 'the captured profile closed');
    const list = await store.list(CAPTURE_OWNER, 100);
    expect(list.map((x) => x.path)).toEqual(['/slow']);
    expect(kept).toBe(0);
    expect(list[0]!.durationMs).toBeGreaterThanOrEqual(SLOW_MS);
    const page = await raw(capPort, { path: '/_miniprof/captured', headers: { 'x-dev': '1' } });
    expect(page.status).toBe(200);
    expect(page.payload.toString()).toContain(`href="/_miniprof/captured/${list[0]!.id}"`);
    const one = await raw(capPort, { path: `/_miniprof/captured/${list[0]!.id}.json`, headers: { 'x-dev': '1' } });
    expect([one.status, (JSON.parse(one.payload.toString()) as { name: string }).name]).toEqual([200, 'GET /slow']);
    expect(reported).toEqual([]);
  });

  it("badge on: a developer's page gets the badge's tag after the comment, and Server-Timing its id before total", async () => {
    const base = await raw(basePort, { path: '/html' });
    const got = await raw(capPort, { path: '/html', headers: { 'x-dev': '1' } });
    const id = /(?:^|, )miniprof;desc="([0-9a-f-]{36})", total;dur=\d+\.\d$/.exec(header(got, 'server-timing') ?? '')?.[1];
    expect(id, 'the id metric').toBeDefined();
    const body = got.payload.toString('latin1');
    const found = body.match(COMMENT) ?? [];
    expect(found).toHaveLength(1);
    const tag = new RegExp(`^<script src="/_miniprof/badge\\.js\\?v=[\\w-]+" data-position="bottom-right" defer data-id="${id}"></script>`);
    const after = body.slice(body.indexOf(found[0]!) + found[0]!.length);
    expect(after).toMatch(tag);
    expect(body.replace(found[0]!, '').replace(tag.exec(after)![0], '')).toBe(base.payload.toString('latin1'));
    expect(reported).toEqual([]);
  });
});
