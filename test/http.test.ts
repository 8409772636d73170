/**
 * What is miniprof/http's alone, on real sockets: `wrap(listener)` for `http.createServer`, the
 * middleware on connect (mounted on the app and on a sub-app) and polka, and that it is the
 * Express middleware's own code. The shared promises are in test/adapters/.
 */
import http from 'node:http';
import connect from 'connect';
import polka from 'polka';
import { afterEach, describe, expect, it } from 'vitest';
import { miniprof, wrap } from '../adapters/http.js';
import { openProfiles } from '../src/core/context.js';
import { currentProfile, step } from '../src/index.js';
import { closeServers, raw, serve, waitFor } from './helpers/http.js';

const fixed = { clock: () => 0, now: () => Date.UTC(2026, 10, 29, 12), machine: 'web-1', isDeveloper: () => true, badge: false };
const comment = (path: string) => `<!--\nweb-1 at 2026-11-29T12:00:00.000Z\nPath: GET ${path}\n GET ${path} = 0.0ms\n> load = 0.0ms\n-->`;

afterEach(async () => {
  await closeServers();
  await waitFor(() => openProfiles() === 0, 3000, 'every profile closed');
});

function page(_req: http.IncomingMessage, res: http.ServerResponse): void {
  step('load', async () => {}).then(() => {
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.end('<html><body>hi</body></html>');
  });
}

describe('miniprof/http', () => {
  it('wrap(listener): exact comment and Server-Timing, Content-Length counted; options checked when wrap is called', async () => {
    const r = await raw(await serve(wrap(page, fixed)), { path: '/page?x=1' });
    expect(r.payload.toString()).toBe(`<html><body>hi${comment('/page')}</body></html>`);
    expect(r.headers['server-timing']).toEqual(['load;dur=0.0, total;dur=0.0']);
    expect(r.headers['content-length']).toEqual([String(r.payload.byteLength)]);
    expect(() => wrap(page, { htmlComment: 'yes' } as never)).toThrow(expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_OPTION' }));
  });

  it("C4: writeHead with a valid header and then an invalid one, caught by the app: the developer's error page carries the app's headers exactly as everyone else's", async () => {
    const listener = (req: http.IncomingMessage, res: http.ServerResponse) => {
      try {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'x-ok': 'valid', 'x-bad': 'a\u0000b' });
      } catch (err) {
        res.statusCode = 500;
        res.end(`failed: ${(err as { code?: string }).code}`);
        return;
      }
      res.end('<html><body>hi</body></html>');
    };
    const isDeveloper = (req: http.IncomingMessage) => req.headers['x-dev'] === '1';
    const port = await serve(wrap(listener, { ...fixed, isDeveloper }));
    const other = await raw(port, { path: '/' });
    const mine = await raw(port, { path: '/', headers: { 'x-dev': '1' } });
    expect([other.status, mine.status]).toEqual([500, 500]);
    expect(mine.payload.toString()).toBe('failed: ERR_INVALID_CHAR');
    expect(other.payload.toString()).toBe('failed: ERR_INVALID_CHAR');
    const ours = new Set(['date', 'cache-control', 'vary', 'server-timing', 'x-miniprof-id', 'link']);
    const appOnly = (r: typeof mine) => Object.entries(r.headers).filter(([name]) => !ours.has(name));
    expect(appOnly(mine)).toEqual(appOnly(other));
    expect(other.headers['x-ok']).toBeUndefined();
    expect(mine.headers['server-timing']).toEqual(['total;dur=0.0']);
    expect(mine.headers['cache-control']).toEqual(['private, no-store']);
  });

  it('connect: on the app and again on a sub-app mounted at /admin: one profile, the full path, one comment', async () => {
    let profiles = 0;
    const sub = connect();
    sub.use(miniprof(fixed));
    sub.use((req: http.IncomingMessage, res: http.ServerResponse) => {
      profiles += currentProfile() === undefined ? 0 : 1;
      page(req, res);
    });
    const app = connect();
    app.use(miniprof(fixed));
    app.use('/admin', sub);
    const r = await raw(await serve(app), { path: '/admin/page' });
    expect(r.payload.toString()).toBe(`<html><body>hi${comment('/admin/page')}</body></html>`);
    expect(profiles).toBe(1);
  });

  it('polka: the middleware before the routes', async () => {
    const app = polka();
    app.use(miniprof(fixed), page);
    const r = await raw(await serve((req, res) => app.handler(req, res)), { path: '/page' });
    expect(r.payload.toString()).toBe(`<html><body>hi${comment('/page')}</body></html>`);
  });

  it('is the Express middleware: the same function body, from src/http/node.ts', async () => {
    const { miniprof: express } = await import('../adapters/express.js');
    expect(String(miniprof(fixed))).toBe(String(express(fixed)));
  });
});
