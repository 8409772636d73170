// Behind a real reverse proxy on the same host (Debian's nginx on a loopback port in front of a
// real Express 5 or Fastify 5 app): who is a developer by default (F1), and that a shared cache
// (`proxy_cache`) never keeps a profiled response for someone else (F2).
import http from 'node:http';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { miniprof as expressMiniprof, type MiniprofOptions } from '../adapters/express.js';
import { miniprof as fastifyMiniprof } from '../adapters/fastify.js';
import { closeServers, raw, serve, type RawResponse } from './helpers/http.js';
import { startNginx, type Nginx } from './helpers/nginx.js';

const PAGE = '<!doctype html><html><head><title>t</title></head><body><h1>Hello</h1></body></html>';

let faults: unknown[] = [];
const proxies: Nginx[] = [];
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
  const n = await startNginx(
    `location / {
      proxy_pass http://127.0.0.1:${appPort};
      proxy_set_header Host $host;
      proxy_set_header X-Real-IP $remote_addr;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      ${extra}
    }`,
    http,
  );
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
});
