/**
 * What is Koa's alone, on Koa 3 and Koa 2 over real sockets: exact outputs with an injected clock,
 * `await next()` inside the profile (steps of middleware after ours and of the route), a string and
 * a Buffer `ctx.body`, `ctx.respond = false`, Koa's own error page, and mounting twice. The shared
 * promises are in test/adapters/.
 */
import http from 'node:http';
import Koa3 from 'koa';
import Koa2 from 'koa2';
import { afterEach, describe, expect, it } from 'vitest';
import { miniprof } from '../adapters/koa.js';
import { openProfiles } from '../src/core/context.js';
import { currentProfile, step } from '../src/index.js';
import { BADGE_VERSION } from '../src/results/badge.js';
import { closeServers, raw, serve, waitFor } from './helpers/http.js';

const fixed = { clock: () => 0, now: () => Date.UTC(2026, 10, 29, 12), machine: 'web-1', isDeveloper: () => true, badge: false };
const comment = (steps: string[]) =>
  `<!--\nweb-1 at 2026-11-29T12:00:00.000Z\nPath: GET /page\n GET /page = 0.0ms${steps.length > 0 ? '' : ''}\n${steps.map((s) => `${s} = 0.0ms\n`).join('')}-->`;

afterEach(async () => {
  await closeServers();
  await waitFor(() => openProfiles() === 0, 3000, 'every profile closed');
});

describe.each([
  ['Koa 3', Koa3],
  ['Koa 2', Koa2 as typeof Koa3],
] as const)('%s', (_name, Koa) => {
  function start(build: (app: Koa3) => void, options: object = fixed): Promise<number> {
    const app = new Koa();
    app.silent = true;
    app.use(miniprof(options));
    build(app);
    return serve(app.callback() as http.RequestListener);
  }

  it('`await next()` runs inside the profile: a later middleware and the route nest; the comment and header are exact', async () => {
    const port = await start((app) => {
      app.use(async (_ctx, next) => {
        await step('auth', async () => {});
        await step('route', () => next());
      });
      app.use(async (ctx) => {
        await step('load', async () => {});
        ctx.body = '<html><body>hi</body></html>';
      });
    });
    const r = await raw(port, { path: '/page?token=1' });
    expect(r.payload.toString()).toBe(`<html><body>hi${comment(['> auth', '> route', '>> load'])}</body></html>`);
    expect(r.headers['server-timing']).toEqual(['auth;dur=0.0, route;dur=0.0, total;dur=0.0']);
    expect(r.headers['content-type']).toEqual(['text/html; charset=utf-8']);
    expect(r.headers['content-length']).toEqual([String(r.payload.byteLength)]);
  });

  it('a Buffer body stays a Buffer with the comment; a JSON body is left alone', async () => {
    const port = await start((app) =>
      app.use((ctx) => {
        if (ctx.path === '/page') {
          ctx.type = 'html';
          ctx.body = Buffer.from('<html><body>café</body></html>');
        } else ctx.body = { ok: true };
      }),
    );
    const r = await raw(port, { path: '/page' });
    expect(r.payload.toString()).toBe(`<html><body>café${comment([])}</body></html>`);
    expect(r.headers['content-length']).toEqual([String(r.payload.byteLength)]);
    const j = await raw(port, { path: '/json' });
    expect([j.payload.toString(), j.headers['server-timing']]).toEqual(['{"ok":true}', ['total;dur=0.0']]);
  });

  it('ctx.respond = false: the app writes the response itself; our headers go with its head, no comment', async () => {
    const port = await start((app) =>
      app.use((ctx) => {
        ctx.respond = false;
        ctx.res.writeHead(200, { 'content-type': 'text/html' });
        ctx.res.end('<html><body>raw</body></html>');
      }),
    );
    const r = await raw(port, { path: '/page' });
    expect(r.payload.toString()).toBe('<html><body>raw</body></html>');
    expect(r.headers['server-timing']).toEqual(['total;dur=0.0']);
    expect(r.headers['cache-control']).toEqual(['private, no-store']);
  });

  it("an error thrown by the route reaches Koa's error handler as the same object; its page carries our headers", async () => {
    const boom = new Error('boom');
    const seen: unknown[] = [];
    const port = await start((app) => {
      app.on('error', (err) => seen.push(err));
      app.use(async () => {
        await step('load', async () => {});
        throw boom;
      });
    });
    const r = await raw(port, { path: '/page' });
    expect([r.status, r.payload.toString()]).toEqual([500, 'Internal Server Error']);
    expect(r.headers['server-timing']).toEqual(['load;dur=0.0, total;dur=0.0']);
    expect(seen).toEqual([boom]);
  });

  it('mounted twice: one profile, one comment', async () => {
    let profiles = 0;
    const port = await start((app) => {
      app.use(miniprof(fixed));
      app.use((ctx) => {
        profiles += currentProfile() === undefined ? 0 : 1;
        ctx.body = '<html><body>x</body></html>';
      });
    });
    const r = await raw(port, { path: '/page' });
    expect(r.payload.toString()).toBe(`<html><body>x${comment([])}</body></html>`);
    expect(r.headers['server-timing']).toEqual(['total;dur=0.0']);
    expect(profiles).toBe(1);
  });

  it('badge.nonce is given the Koa context, as isDeveloper is (ctx.state holds the nonce); the tag carries it', async () => {
    const faults: unknown[] = [];
    const port = await start(
      (app) => {
        app.use((ctx) => {
          ctx.body = '<html><body>x</body></html>';
        });
      },
      {
        ...fixed,
        onInternalError: (err: unknown) => faults.push(err),
        badge: {
          nonce: (ctx: Koa3.Context) => {
            ctx.state.asked = true;
            return ctx.state.nonce ?? 'a29h';
          },
        },
      },
    );
    const r = await raw(port, { path: '/page' });
    const id = r.headers['x-miniprof-id']![0]!;
    const tag = `<script src="/_miniprof/badge.js?v=${BADGE_VERSION}" data-position="bottom-right" defer data-id="${id}" nonce="a29h"></script>`;
    expect(r.payload.toString()).toBe(`<html><body>x${comment([])}${tag}</body></html>`);
    expect(faults).toEqual([]);
  });
});
