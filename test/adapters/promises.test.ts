/**
 * The promises every HTTP adapter makes, run against each one (test/adapters/apps.ts) on real
 * sockets: one option set validated the same way, developers only (with the same secure default),
 * cache safety, the results pages and the opt-in cookie, instrumentation, maxDurationMs, aborts,
 * and an adversarial mix of developer and non-developer requests in flight together.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { openProfiles } from '../../src/core/context.js';
import { currentProfile, step, type Profile, type TimingJSON } from '../../src/index.js';
import { catchEscapes } from '../helpers/escapes.js';
import { closeServers, raw, serve, track, waitFor, withoutDate } from '../helpers/http.js';
import { ADAPTERS, appSteps, type AdapterUnderTest, type Options, type Reply, type Routes } from './apps.js';

const HTML = 'text/html; charset=utf-8';
const PAGE = '<!doctype html><html><body><h1>hello</h1></body></html>';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const COMMENT = /<!--\n[^]*?\n-->/g;

let profiles: Profile[] = [];
let reports: unknown[] = [];
const escaped = catchEscapes();

afterEach(async () => {
  await closeServers();
  await waitFor(() => openProfiles() === 0, 3000, 'every profile closed');
  profiles = [];
  reports = [];
  expect(escaped).toEqual([]);
});

/** The shared page: two steps, then an HTML page. */
const ROUTES: Routes = {
  '/page': async () => {
    const p = currentProfile();
    if (p !== undefined) profiles.push(p);
    await step('load', () => sleep(1));
    step('render', () => undefined);
    return { headers: { 'content-type': HTML, etag: '"v1"' }, body: PAGE };
  },
};

/** Listen on 127.0.0.1; with `peer`, every socket claims that remote address (a non-loopback client). */
async function listen(listener: http.RequestListener, peer?: string): Promise<number> {
  if (peer === undefined) return serve(listener);
  const server = http.createServer(listener);
  server.on('connection', (s) => Object.defineProperty(s, 'remoteAddress', { value: peer, configurable: true }));
  track(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function start(a: AdapterUnderTest, options: Options | null, routes: Routes = ROUTES, peer?: string): Promise<number> {
  return listen(await a.listener(options === null ? null : { onInternalError: (e: unknown) => reports.push(e), ...options }, routes), peer);
}

async function rejection(p: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await p;
  } catch (err) {
    return err as Error & { code?: string };
  }
  throw new Error('expected a rejection');
}

const profiled = (r: { headers: Record<string, string[]> }) => r.headers['server-timing'] !== undefined;

describe.each(ADAPTERS)('$name', (a) => {
  const dev = { isDeveloper: a.byHeader('x-dev') };

  it('setup: a wrong option is a coded TypeError naming it; an unknown key names the key', async () => {
    const bad = await rejection(a.listener({ maxSteps: 'x' }, ROUTES));
    expect(bad).toBeInstanceOf(TypeError);
    expect(bad.code).toBe('MINIPROF_ERR_INVALID_OPTION');
    expect(bad.message).toContain('"x"');
    const unknown = await rejection(a.listener({ maxStep: 10 }, ROUTES));
    expect(unknown.code).toBe('MINIPROF_ERR_UNKNOWN_OPTION');
    expect(unknown.message).toContain('"maxStep"');
  });

  it('A2: unset isDeveloper: a loopback peer is profiled; another peer is not, X-Forwarded-For: 127.0.0.1 or not', async () => {
    expect(profiled(await raw(await start(a, {}), { path: '/page' }))).toBe(true);
    const base = await start(a, null, ROUTES, '203.0.113.9');
    const far = await start(a, {}, ROUTES, '203.0.113.9');
    for (const headers of [{}, { 'X-Forwarded-For': '127.0.0.1' }] as Record<string, string>[]) {
      const want = await raw(base, { path: '/page', headers });
      const got = await raw(far, { path: '/page', headers });
      expect(withoutDate(got.bytes).toString('latin1')).toBe(withoutDate(want.bytes).toString('latin1'));
    }
    expect(profiles).toHaveLength(1);
  });

  it('F1: unset isDeveloper: a loopback request that came through a proxy (Forwarded, X-Forwarded-For, X-Real-IP, Via) is the app alone', async () => {
    const base = await start(a, null);
    const port = await start(a, {});
    const proxied: Record<string, string>[] = [{ Forwarded: 'for=203.0.113.9' }, { 'X-Forwarded-For': '203.0.113.9' }, { 'X-Real-IP': '203.0.113.9' }, { Via: '1.1 nginx' }];
    for (const headers of proxied) {
      const want = await raw(base, { path: '/page', headers });
      const got = await raw(port, { path: '/page', headers });
      expect(withoutDate(got.bytes).toString('latin1'), JSON.stringify(headers)).toBe(withoutDate(want.bytes).toString('latin1'));
    }
    expect(profiles).toHaveLength(0);
  });

  it("allowedHosts: the adapter hands the request's Host on; a listed Host is profiled, any other is the app alone", async () => {
    // raw() sends `Host: 127.0.0.1:<port>`.
    expect(profiled(await raw(await start(a, { ...dev, allowedHosts: ['127.0.0.1'] }), { path: '/page', headers: { 'x-dev': '1' } }))).toBe(true);
    const base = await start(a, null);
    const other = await start(a, { ...dev, allowedHosts: ['localhost'] });
    const got = await raw(other, { path: '/page', headers: { 'x-dev': '1' } });
    expect(withoutDate(got.bytes).toString('latin1')).toBe(withoutDate((await raw(base, { path: '/page', headers: { 'x-dev': '1' } })).bytes).toString('latin1'));
    expect(profiles).toHaveLength(1);
    expect(reports).toEqual([]);
  });

  it('A2: NODE_ENV=production and no isDeveloper: the app alone, even for loopback', async () => {
    const env = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    try {
      const port = await start(a, {});
      const base = await start(a, null);
      const got = await raw(port, { path: '/page' });
      expect(withoutDate(got.bytes).toString('latin1')).toBe(withoutDate((await raw(base, { path: '/page' })).bytes).toString('latin1'));
      expect(profiles).toEqual([]);
    } finally {
      process.env.NODE_ENV = env;
    }
  });

  it('A1: isDeveloper async true profiles; throwing or rejecting: the app alone, reported once each', async () => {
    expect(profiled(await raw(await start(a, { isDeveloper: async () => (await sleep(1), true) }), { path: '/page' }))).toBe(true);
    const base = withoutDate((await raw(await start(a, null), { path: '/page' })).bytes).toString('latin1');
    const throws = await start(a, {
      isDeveloper: () => {
        throw new Error('auth');
      },
    });
    const rejects = await start(a, { isDeveloper: () => Promise.reject(new Error('auth')) });
    for (const port of [throws, rejects]) expect(withoutDate((await raw(port, { path: '/page' })).bytes).toString('latin1')).toBe(base);
    expect(reports.map(String)).toEqual(['Error: auth', 'Error: auth']);
    reports = [];
  });

  it('A6: a developer response is private, no-store and has no ETag; a conditional developer GET gets a fresh 200', async () => {
    const port = await start(a, dev);
    const r = await raw(port, { path: '/page', headers: { 'x-dev': '1', 'If-None-Match': '"v1"' } });
    expect(r.status).toBe(200);
    expect(r.headers['cache-control']).toEqual(['private, no-store']);
    expect(r.headers.etag).toBeUndefined();
    expect(r.payload.toString().match(COMMENT)).toHaveLength(1);
  });

  it("A3 A4: results pages for the developer (list, profile JSON); anyone else gets the app's own 404", async () => {
    const port = await start(a, dev);
    const base = await start(a, null);
    const page = await raw(port, { path: '/page', headers: { 'x-dev': '1' } });
    const id = page.headers['x-miniprof-id']![0]!;
    await waitFor(() => profiles[0]?.sealed === true, 3000, 'sealed');
    const json = await raw(port, { path: `/_miniprof/${id}.json`, headers: { 'x-dev': '1' } });
    expect(json.status).toBe(200);
    const got = JSON.parse(json.payload.toString()) as { id: string; name: string; root: TimingJSON };
    expect([got.id, got.name, appSteps(got.root).map((c) => c.name)]).toEqual([id, 'GET /page', ['load', 'render']]);
    const list = await raw(port, { path: '/_miniprof/', headers: { 'x-dev': '1' } });
    expect([list.status, list.headers['content-type']]).toEqual([200, ['text/html; charset=utf-8']]);
    expect(list.payload.toString()).toContain(id);
    for (const path of ['/_miniprof/', `/_miniprof/${id}.json`]) {
      const want = await raw(base, { path });
      expect(want.status).toBe(404);
      expect(withoutDate((await raw(port, { path })).bytes).toString('latin1')).toBe(withoutDate(want.bytes).toString('latin1'));
    }
  });

  it('opt-in: a developer POSTs /_miniprof/opt-in from the same origin and gets a signed cookie; with it a request isDeveloper refuses is profiled', async () => {
    const port = await start(a, { ...dev, secret: 'a'.repeat(32) });
    // A GET only shows the form: no cookie.
    const form = await raw(port, { path: '/_miniprof/opt-in', headers: { 'x-dev': '1' } });
    expect([form.status, form.headers['set-cookie']]).toEqual([200, undefined]);
    // Another site's page cannot opt anyone in: the adapter hands the request's headers on.
    const post = (headers: Record<string, string>) => raw(port, { method: 'POST', path: '/_miniprof/opt-in', headers: { 'x-dev': '1', ...headers }, body: '' });
    const cross = await post({ Origin: 'https://evil.example' });
    expect([cross.status, cross.headers['set-cookie']]).toEqual([403, undefined]);
    const optIn = await post({ Origin: `http://127.0.0.1:${port}` });
    expect(optIn.status).toBe(303);
    expect(optIn.headers.location).toEqual(['/_miniprof/']);
    // Loopback: the adapter passed the Host on, so the cookie is the __Host- one.
    expect(optIn.headers['set-cookie']![0]).toMatch(/^__Host-miniprof=[^;]+; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Strict; Secure$/);
    const cookie = optIn.headers['set-cookie']![0]!.split(';')[0]!;
    expect((await post({ 'Sec-Fetch-Site': 'same-origin' })).status).toBe(303);
    expect(profiled(await raw(port, { path: '/page', headers: { Cookie: cookie } }))).toBe(true);
    expect(profiled(await raw(port, { path: '/page', headers: { Cookie: '__Host-miniprof=forged' } }))).toBe(false);
    expect(profiles).toHaveLength(1);
  });

  it('instrumentation: a fetch() inside the request is a custom timing of its profile', async () => {
    const target = await serve((_req, res) => res.end('ok'));
    const routes: Routes = {
      '/calls': async () => {
        profiles.push(currentProfile()!);
        await step('remote', async () => (await fetch(`http://127.0.0.1:${target}/x`)).text());
        return { headers: { 'content-type': HTML }, body: PAGE };
      },
    };
    const r = await raw(await start(a, dev, routes), { path: '/calls', headers: { 'x-dev': '1' } });
    const metrics = r.headers['server-timing']![0]!.split(', ').map((m) => m.split(';')[0]).filter((m) => m !== 'miniprof-self');
    expect(metrics.filter((m) => m !== 'event-loop')).toEqual(['remote', 'http', 'total']);
    await waitFor(() => profiles[0]!.sealed, 3000, 'sealed');
    const custom = appSteps(profiles[0]!.toJSON().root)[0]!.custom as { category: string; command: string }[];
    expect(custom.map((c) => [c.category, c.command])).toEqual([['http', `GET http://127.0.0.1:${target}/x`]]);
  });

  it('E3: a stream that outlives maxDurationMs is sealed while it still streams, and goes on untouched', async () => {
    let written = 0;
    const routes: Routes = {
      '/events': async (): Promise<Reply> => {
        profiles.push(currentProfile()!);
        return { headers: { 'content-type': 'text/event-stream' }, chunks: Array.from({ length: 1000 }, () => 'data: x\n\n'), everyMs: 5, endless: true, onChunk: () => step('event', () => written++) };
      },
    };
    const port = await start(a, { ...dev, maxDurationMs: 60 }, routes);
    const got: string[] = [];
    const req = http.get({ host: '127.0.0.1', port, path: '/events', headers: { 'x-dev': '1' }, agent: false });
    const res = await new Promise<http.IncomingMessage>((resolve) => req.once('response', resolve));
    res.on('data', (c: Buffer) => got.push(c.toString()));
    await waitFor(() => profiles[0]?.sealed === true, 3000, 'sealed by maxDurationMs');
    const at = got.length;
    const json = JSON.stringify(profiles[0]!.toJSON());
    await waitFor(() => got.length > at + 3, 3000, 'more events after the seal');
    req.destroy();
    expect(got.join('').replaceAll('data: x\n\n', '')).toBe('');
    expect(JSON.stringify(profiles[0]!.toJSON())).toBe(json);
    expect(profiles[0]!.toJSON().warnings).toEqual(['sealed after maxDurationMs while the response was still open']);
  });

  it('C8: a client that leaves mid-handler: nothing thrown, the profile sealed once, marked aborted', async () => {
    const routes: Routes = {
      '/slow': async () => {
        profiles.push(currentProfile()!);
        await step('wait', () => sleep(50));
        step('after', () => undefined);
        return { headers: { 'content-type': HTML }, body: PAGE };
      },
    };
    const port = await start(a, dev, routes);
    const req = http.get({ host: '127.0.0.1', port, path: '/slow', headers: { 'x-dev': '1' }, agent: false });
    req.on('error', () => {});
    await waitFor(() => profiles.length === 1, 3000, 'handler entered');
    req.destroy();
    await waitFor(() => profiles[0]!.sealed, 3000, 'sealed');
    expect(profiles[0]!.toJSON().request!.aborted).toBe(true);
    await sleep(80);
    expect(reports).toEqual([]);
  });

  it('D5: 120 interleaved developer and non-developer requests in flight together: every developer tree exactly its own, every other response byte-identical', async () => {
    const seen = new Map<string, Profile>();
    const leaks: string[] = [];
    const jitter = () => (Math.random() < 0.5 ? Promise.resolve() : sleep(Math.floor(Math.random() * 3)));
    const routes: Routes = {
      '/load': async (req) => {
        const id = new URL(req.url, 'http://x').searchParams.get('id')!;
        const p = currentProfile();
        if (p !== undefined) seen.set(id, p);
        if ((p !== undefined) !== (req.header('x-dev') === '1')) leaks.push(id);
        await step(`${id} a`, jitter);
        await Promise.all([0, 1, 2].map((i) => step(`${id} p${i}`, async () => {
          await jitter();
          await step(`${id} p${i} leaf`, jitter);
        })));
        return { headers: { 'content-type': HTML }, body: `<html><body>${id}</body></html>` };
      },
    };
    const port = await start(a, dev, routes);
    const base = await start(a, null, routes);
    const ids = Array.from({ length: 120 }, (_, n) => `r${n}`);
    const isDev = (id: string) => Number(id.slice(1)) % 2 === 0;
    const got = await Promise.all(ids.map(async (id) => {
      await jitter();
      return raw(port, { path: `/load?id=${id}`, headers: isDev(id) ? { 'x-dev': '1' } : {} });
    }));
    const failures: string[] = [];
    for (const [n, id] of ids.entries()) {
      const r = got[n]!;
      if (!isDev(id)) {
        const want = await raw(base, { path: `/load?id=${id}` });
        if (!withoutDate(r.bytes).equals(withoutDate(want.bytes))) failures.push(`${id}: not the app's bytes`);
        continue;
      }
      const metrics = r.headers['server-timing']![0]!.split(', ').map((m) => m.split(';')[0]).filter((m) => m !== 'event-loop' && m !== 'miniprof-self');
      if (metrics.join() !== [`${id}_a`, `${id}_p0`, `${id}_p1`, `${id}_p2`, 'total'].join()) failures.push(`${id}: Server-Timing ${metrics.join()}`);
      if (r.payload.toString().replace(COMMENT, '') !== `<html><body>${id}</body></html>`) failures.push(`${id}: body`);
    }
    expect(failures).toEqual([]);
    expect(leaks).toEqual([]);
    expect(seen.size).toBe(60);
    await waitFor(() => [...seen.values()].every((p) => p.sealed), 5000, 'every profile sealed');
    const shape = (t: TimingJSON): unknown => ({ [t.name]: t.children.map(shape) });
    for (const [id, p] of seen) {
      const steps = [{ [`${id} a`]: [] }, ...[0, 1, 2].map((i) => ({ [`${id} p${i}`]: [{ [`${id} p${i} leaf`]: [] }] }))];
      // On Fastify, inside the route handler's own step (autoSteps).
      expect(shape(p.toJSON().root)).toEqual({ 'GET /load': a.name === 'fastify' ? [{ 'handler GET /load': steps }] : steps });
    }
    expect(reports).toEqual([]);
  });
});
