/**
 * What is Hono's alone, on real sockets (@hono/node-server) unless `app.request()` is the point:
 * exact outputs with an injected clock, which bodies are read (only one already complete, at most
 * 1 MiB; never `streamSSE`), a Response with immutable headers, and the profile sealed without
 * Node bindings. The shared promises are in test/adapters/.
 */
import http from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { afterEach, describe, expect, it } from 'vitest';
import { miniprof } from '../adapters/hono.js';
import { MAX_READ_BYTES } from '../src/http/fetch.js';
import { openProfiles } from '../src/core/context.js';
import { currentProfile, step, type Profile } from '../src/index.js';
import { BADGE_VERSION } from '../src/results/badge.js';
import { memoryStore } from '../src/results/memory-store.js';
import { CAPTURE_OWNER } from '../src/results/store.js';
import { closeServers, raw, serve, waitFor } from './helpers/http.js';

const fixed = { clock: () => 0, now: () => Date.UTC(2026, 10, 29, 12), machine: 'web-1', isDeveloper: () => true, badge: false };
const COMMENT = '<!--\nweb-1 at 2026-11-29T12:00:00.000Z\nPath: GET /page\n GET /page = 0.0ms\n> load = 0.0ms\n-->';

afterEach(async () => {
  await closeServers();
  await waitFor(() => openProfiles() === 0, 3000, 'every profile closed');
});

function app(options: object = fixed): Hono {
  const a = new Hono();
  a.use(miniprof(options));
  return a;
}

describe('miniprof/hono', () => {
  it('exact comment before </body> and exact Server-Timing; the length counted by node-server', async () => {
    const a = app();
    a.get('/page', async (c) => {
      await step('load', async () => {});
      return c.html('<html><body><p>hi</p></body></html>');
    });
    const r = await raw(await serve(getRequestListener(a.fetch)), { path: '/page?secret=1' });
    expect(r.payload.toString()).toBe(`<html><body><p>hi</p>${COMMENT}</body></html>`);
    expect(r.headers['server-timing']).toEqual(['load;dur=0.0, total;dur=0.0']);
    expect(r.headers['content-length']).toEqual([String(r.payload.byteLength)]);
  });

  it('an HTML body over 1 MiB, or one still streaming, goes out as the app wrote it, with our headers', async () => {
    const big = `<html><body>${'x'.repeat(MAX_READ_BYTES)}</body></html>`;
    const a = app();
    a.get('/big', (c) => c.html(big));
    a.get('/slow', (c) =>
      c.body(
        new ReadableStream({
          async start(ctl) {
            ctl.enqueue(new TextEncoder().encode('<html><body>'));
            await new Promise((resolve) => setTimeout(resolve, 20));
            ctl.enqueue(new TextEncoder().encode('</body></html>'));
            ctl.close();
          },
        }),
        200,
        { 'content-type': 'text/html' },
      ),
    );
    const port = await serve(getRequestListener(a.fetch));
    const r = await raw(port, { path: '/big' });
    expect(r.payload.toString()).toBe(big);
    expect(r.headers['cache-control']).toEqual(['private, no-store']);
    const s = await raw(port, { path: '/slow' });
    expect(s.payload.toString()).toBe('<html><body></body></html>');
    expect(s.headers['server-timing']![0]).toMatch(/^total;dur=0\.0$/);
  });

  it('streamSSE: never read; the events arrive as they are written and the profile seals when the client leaves', async () => {
    const profiles: Profile[] = [];
    const a = app();
    a.get('/events', (c) => {
      profiles.push(currentProfile()!);
      return streamSSE(c, async (s) => {
        for (let i = 0; i < 1000 && !s.aborted; i++) {
          await step('event', () => s.writeSSE({ data: String(i) }));
          await s.sleep(5);
        }
      });
    });
    const port = await serve(getRequestListener(a.fetch));
    const got: string[] = [];
    const req = http.get({ host: '127.0.0.1', port, path: '/events', agent: false });
    const res = await new Promise<http.IncomingMessage>((resolve) => req.once('response', resolve));
    expect(res.headers['content-type']).toBe('text/event-stream');
    // streamSSE runs the callback before it returns the Response: its first step is in the header.
    expect(res.headers['server-timing']).toBe('event;dur=0.0, total;dur=0.0');
    res.on('data', (c: Buffer) => got.push(c.toString()));
    await waitFor(() => got.join('').includes('data: 2\n'), 3000, 'three events');
    expect(got.join('').startsWith('data: 0\n\ndata: 1\n\n')).toBe(true);
    req.destroy();
    await waitFor(() => profiles[0]!.sealed, 3000, 'sealed on close');
    expect(profiles[0]!.toJSON().request!.aborted).toBe(true);
  });

  it('an HTML body stream that fails before it is complete fails for the client as it does without miniprof, and nothing escapes', async () => {
    const reports: unknown[] = [];
    const escapes: unknown[] = [];
    const onEscape = (e: unknown) => escapes.push(e);
    process.on('unhandledRejection', onEscape);
    const failing = (c: import('hono').Context) =>
      c.body(
        new ReadableStream({
          start(ctl) {
            ctl.enqueue(new TextEncoder().encode('<html><body>'));
            ctl.error(new Error('disk gone'));
          },
        }),
        200,
        { 'content-type': 'text/html' },
      );
    const base = new Hono();
    base.get('/page', failing);
    const a = app({ ...fixed, onInternalError: (e: unknown) => reports.push(e) });
    a.get('/page', failing);
    const outcome = (port: number) => raw(port, { path: '/page' }, 2000).then((r) => r.body.toString().replace(/^[0-9a-f]+\r\n/, ''), (e: Error) => `failed: ${e.message.slice(0, 20)}`);
    const want = await outcome(await serve(getRequestListener(base.fetch)));
    const got = await outcome(await serve(getRequestListener(a.fetch)));
    await new Promise((resolve) => setTimeout(resolve, 20));
    process.off('unhandledRejection', onEscape);
    expect(got).toBe(want);
    expect([reports, escapes]).toEqual([[], []]);
  });

  it('a Response with immutable headers (Response.redirect) still gets our headers, on a copy', async () => {
    const a = app();
    a.get('/away', () => Response.redirect('http://127.0.0.1/elsewhere', 302));
    const r = await raw(await serve(getRequestListener(a.fetch)), { path: '/away' });
    expect(r.status).toBe(302);
    expect(r.headers.location).toEqual(['http://127.0.0.1/elsewhere']);
    expect(r.headers['server-timing']).toEqual(['total;dur=0.0']);
    expect(r.headers['cache-control']).toEqual(['private, no-store']);
  });

  it('app.request() without Node bindings: an explicit isDeveloper profiles, the profile is sealed as the Response is handed back; the default rule profiles nobody', async () => {
    const profiles: Profile[] = [];
    const a = app();
    a.get('/page', async (c) => {
      profiles.push(currentProfile()!);
      await step('load', async () => {});
      return c.html('<html><body>x</body></html>');
    });
    const res = await a.request('/page');
    expect(await res.text()).toBe(`<html><body>x${COMMENT}</body></html>`);
    expect(profiles[0]!.sealed).toBe(true);
    const plain = app({});
    plain.get('/page', (c) => c.html('<p>x</p>'));
    const r2 = await plain.request('/page');
    expect([await r2.text(), r2.headers.get('server-timing')]).toEqual(['<p>x</p>', null]);
  });

  it('app.request() with capture: a sampled request runs in a profile closed once as the Response is handed back, kept, and the Response is as with capture off', async () => {
    const store = memoryStore();
    const routes = (a: Hono, profiles: (Profile | undefined)[]) => {
      a.get('/page', async (c) => {
        profiles.push(currentProfile());
        await step('load', async () => {});
        return c.html('<html><body>x</body></html>', 200, { etag: '"v1"' });
      });
      a.get('/boom', () => {
        throw new Error('boom');
      });
      a.onError((_err, c) => c.text('failed', 500));
      return a;
    };
    const seen: (Profile | undefined)[] = [];
    const off = routes(app({ ...fixed, isDeveloper: () => false }), []);
    const on = routes(app({ ...fixed, isDeveloper: () => false, results: { store }, capture: { rate: 1, slowerThanMs: 0 } }), seen);
    for (const [path, headers] of [['/page', {}], ['/page', { 'if-none-match': '"v1"' }], ['/boom', {}]] as const) {
      const want = await off.request(path, { headers });
      const got = await on.request(path, { headers });
      expect([got.status, [...got.headers], await got.text()]).toEqual([want.status, [...want.headers], await want.text()]);
      expect(openProfiles(), 'closed before the Response is handed back').toBe(0);
    }
    expect(seen.map((p) => p?.sealed)).toEqual([true, true]);
    await waitFor(() => store.stats().count === 3, 3000, 'three captured profiles saved');
    const list = await store.list(CAPTURE_OWNER, 10);
    expect(list.map((x) => [x.path, x.status]).sort()).toEqual([['/boom', 500], ['/page', 200], ['/page', 200]]);
  });

  it('mounted on the app and on a routed sub-app: one profile, one comment', async () => {
    const sub = app();
    sub.get('/page', async (c) => {
      await step('load', async () => {});
      return c.html('<html><body>x</body></html>');
    });
    const a = app();
    a.route('/', sub);
    const r = await raw(await serve(getRequestListener(a.fetch)), { path: '/page' });
    expect(r.payload.toString()).toBe(`<html><body>x${COMMENT}</body></html>`);
    expect(r.headers['server-timing']).toEqual(['load;dur=0.0, total;dur=0.0']);
  });

  it("badge.nonce is given Hono's context, as isDeveloper is (secureHeaders keeps its nonce there); the tag carries it", async () => {
    const faults: unknown[] = [];
    const a = app({
      ...fixed,
      onInternalError: (err: unknown) => faults.push(err),
      badge: { nonce: (c: { get(key: string): unknown }) => (c.get('nonce') as string | undefined) ?? 'aG9ubw' },
    });
    a.get('/page', async (c) => {
      await step('load', async () => {});
      return c.html('<html><body>x</body></html>');
    });
    const r = await raw(await serve(getRequestListener(a.fetch)), { path: '/page' });
    const id = r.headers['x-miniprof-id']![0]!;
    const tag = `<script src="/_miniprof/badge.js?v=${BADGE_VERSION}" data-position="bottom-right" defer data-id="${id}" nonce="aG9ubw"></script>`;
    expect(r.payload.toString()).toBe(`<html><body>x${COMMENT}${tag}</body></html>`);
    expect(faults).toEqual([]);
  });
});
