// Behind a real reverse proxy on the same host (Debian's nginx on a loopback port in front of a
// real Express 5 or Fastify 5 app): who is a developer by default (F1), and that a shared cache
// (`proxy_cache`) never keeps a profiled response for someone else (F2). And F8's
// `allowedHosts`: DNS rebinding, another site's name on this loopback server.
import http from 'node:http';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { miniprof as expressMiniprof, type MiniprofOptions } from '../adapters/express.js';
import { miniprof as fastifyMiniprof } from '../adapters/fastify.js';
import { closeServers, raw, serve, type RawResponse } from './helpers/http.js';
import { startNginx, type NginxServer } from './helpers/services.js';

const PAGE = '<!doctype html><html><head><title>t</title></head><body><h1>Hello</h1></body></html>';

let faults: unknown[] = [];
const proxies: NginxServer[] = [];
const apps: FastifyInstance[] = [];

afterEach(async () => {
  await Promise.all(proxies.splice(0).map((p) => p.stop()));
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await closeServers();
  expect(faults).toEqual([]);
  faults = [];
});

type Opts = MiniprofOptions<any>;

/** The app's page, optionally with cache headers a shared cache obeys. */
async function expressApp(o: Opts, headers: Record<string, string> = {}): Promise<number> {
  const app = express();
  app.use(expressMiniprof({ machine: 'web-1', onInternalError: (e) => faults.push(e), ...o }));
  app.get('/page', (_req, res) => {
    res.set(headers);
    res.type('html').send(PAGE);
  });
  return serve(app as unknown as http.RequestListener);
}

async function fastifyApp(o: Opts, headers: Record<string, string> = {}): Promise<number> {
  const app = Fastify({ logger: false });
  apps.push(app);
  await app.register(fastifyMiniprof, { machine: 'web-1', onInternalError: (e: unknown) => faults.push(e), ...o });
  app.get('/page', (_req, reply) => {
    reply.headers(headers).type('text/html; charset=utf-8').send(PAGE);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as { port: number }).port;
}

const ADAPTERS = [
  ['Express', expressApp],
  ['Fastify', fastifyApp],
] as const;

/** nginx as most guides configure it in front of a Node app. */
async function proxy(appPort: number, extra = '', http = ''): Promise<number> {
  const n = await startNginx({
    server: `location / {
      proxy_pass http://127.0.0.1:${appPort};
      proxy_set_header Host $host;
      proxy_set_header X-Real-IP $remote_addr;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      ${extra}
    }`,
    http,
  });
  proxies.push(n);
  return n.port;
}

function profiled(r: RawResponse): boolean {
  return r.headers['server-timing'] !== undefined || r.headers['x-miniprof-id'] !== undefined || r.payload.toString().includes('<!--\nweb-1 at ');
}

describe.each(ADAPTERS)('%s', (_name, start) => {
  it('F1: through nginx on the same host, nobody is a developer by default; results are the app’s 404', async () => {
    const app = await start({});
    const front = await proxy(app);
    // Straight to the app from loopback: a developer.
    const direct = await raw(app, { path: '/page' });
    expect(profiled(direct)).toBe(true);
    // The same client through nginx: the socket the app sees is loopback too, but nginx said so.
    const via = await raw(front, { path: '/page' });
    expect(via.status).toBe(200);
    expect(profiled(via)).toBe(false);
    expect(via.payload.toString()).toBe(PAGE);
    const list = await raw(front, { path: '/_miniprof/' });
    expect(list.status).toBe(404);
    expect(profiled(list)).toBe(false);
    expect(list.payload.toString()).not.toContain('<table');
  });

  it.each([
    ['Forwarded', 'for=192.0.2.60;proto=https'],
    ['X-Forwarded-For', '192.0.2.60'],
    ['X-Real-IP', '192.0.2.60'],
    ['Via', '1.1 tunnel'],
    ['X-Forwarded-For', ''],
  ])('F1: a direct loopback request carrying %s: %j is not a developer’s', async (name, value) => {
    const app = await start({});
    const r = await raw(app, { path: '/page', headers: { [name]: value } });
    expect(r.status).toBe(200);
    expect(profiled(r)).toBe(false);
    expect(r.payload.toString()).toBe(PAGE);
  });

  it('F1: the headers never make a developer: isDeveloper set by the app still decides', async () => {
    const app = await start({ isDeveloper: () => true });
    const r = await raw(app, { path: '/page', headers: { 'X-Forwarded-For': '192.0.2.60', Via: '1.1 x' } });
    expect(profiled(r)).toBe(true);
  });

  it('F2: a developer’s profiled page through nginx proxy_cache (X-Accel-Expires: 60) is never served to the next visitor', async () => {
    // The app's own opt-in through the proxy: a header the developer's browser sends.
    const app = await start(
      { isDeveloper: (req: { headers: Record<string, unknown> }) => req.headers['x-dev'] === 'yes' },
      { 'X-Accel-Expires': '60', 'Surrogate-Control': 'max-age=60', 'CDN-Cache-Control': 'max-age=60', Expires: 'Thu, 01 Jan 2099 00:00:00 GMT', 'Cache-Control': 'public, max-age=60' },
    );
    const front = await proxy(
      app,
      `proxy_cache mp; add_header X-Cache $upstream_cache_status always;`,
      `proxy_cache_path cache keys_zone=mp:1m;`,
    );
    const dev = await raw(front, { path: '/page', headers: { 'X-Dev': 'yes' } });
    expect(dev.status).toBe(200);
    expect(profiled(dev)).toBe(true);
    const anon = await raw(front, { path: '/page' });
    expect(anon.status).toBe(200);
    expect(profiled(anon)).toBe(false);
    expect(anon.payload.toString()).toBe(PAGE);
    expect(anon.headers['x-cache']).toEqual(['MISS']);
    for (const name of ['x-accel-expires', 'surrogate-control', 'cdn-cache-control', 'expires', 'etag']) {
      expect(dev.headers[name], name).toBeUndefined();
    }
    expect(dev.headers['cache-control']).toEqual(['private, no-store']);
    expect(dev.headers['vary']).toEqual(['*']);
    // The app's unprofiled page is cached as the app asked: the promise only covers profiled ones.
    const again = await raw(front, { path: '/page' });
    expect(again.headers['x-cache']).toEqual(['HIT']);
    expect(again.payload.toString()).toBe(PAGE);
    expect(again.headers['x-accel-expires']).toBeUndefined(); // nginx consumes it
    expect(again.headers['cache-control']).toEqual(['public, max-age=60']);
  });

  it('F2: an unprofiled response keeps every cache header the app set', async () => {
    const set = { 'X-Accel-Expires': '60', 'Surrogate-Control': 'max-age=60', 'CDN-Cache-Control': 'max-age=60', Expires: 'Thu, 01 Jan 2099 00:00:00 GMT', Vary: 'Accept-Language' };
    const app = await start({ isDeveloper: () => false }, set);
    const r = await raw(app, { path: '/page' });
    for (const [k, v] of Object.entries(set)) expect(r.headers[k.toLowerCase()], k).toEqual([v]);
  });

  /** A GET with a `Host` of the test's choosing (raw() sends the loopback one). */
  function getAs(port: number, path: string, host: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
    return new Promise((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path, headers: { Host: host }, agent: false }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
        })
        .on('error', reject);
    });
  }

  it('F8: with allowedHosts, a rebound host name (DNS rebinding to loopback) is nobody: no profile, results are the app’s 404', async () => {
    const app = await start({ allowedHosts: ['localhost', '127.0.0.1', '[::1]', 'dev.example.test:8443'] });
    for (const host of [`localhost:${app}`, `127.0.0.1:${app}`, 'LOCALHOST', `[::1]:${app}`, 'dev.example.test:8443', 'localhost.']) {
      const r = await getAs(app, '/page', host);
      expect(r.headers['x-miniprof-id'], host).toBeDefined();
      expect((await getAs(app, '/_miniprof/', host)).status, host).toBe(200);
    }
    for (const host of [`evil.example:${app}`, 'evil.example', 'dev.example.test:8444', 'localhost.evil.example', '127.0.0.1.nip.io']) {
      const r = await getAs(app, '/page', host);
      expect(r.status).toBe(200);
      expect(r.headers['x-miniprof-id'], host).toBeUndefined();
      expect(r.headers['server-timing'], host).toBeUndefined();
      expect(r.body, host).toBe(PAGE);
      const list = await getAs(app, '/_miniprof/', host);
      expect(list.status, host).toBe(404);
      expect(list.body).not.toContain('<table');
    }
    // Without the option any Host is served (what DNS rebinding uses): documented.
    const open = await start({});
    expect((await getAs(open, '/_miniprof/', `evil.example:${open}`)).status).toBe(200);
  });
});

it.each([[[]], ['localhost'], [['http://localhost']], [['a/b']], [['']], [[42]], [['exa mple']]])('F8: allowedHosts %j is a coded TypeError at setup', (v) => {
  expect(() => expressMiniprof({ allowedHosts: v as never })).toThrow(expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_OPTION', message: expect.stringContaining('allowedHosts') }));
});
