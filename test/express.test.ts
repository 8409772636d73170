// End-to-end tests of the Express middleware against real Express 5 and Express 4 apps. Plain
// request/response checks go through supertest; real sockets (`raw`, `get`) stay where the bytes
// on the wire, keep-alive, pipelining, aborts, slow uploads or TLS are what is tested.
// Non-developer responses are compared byte for byte with the same app without miniprof;
// developer responses are checked header by header (so a later miniprof header does not break
// them) and their bodies against the app's body plus exactly one comment.
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import zlib from 'node:zlib';
import compression from 'compression';
import request from 'supertest';
import express5 from 'express';
import express4 from 'express4';
import type { Express, NextFunction, Request, RequestHandler, Response } from 'express';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { miniprof, type MiniprofOptions } from '../adapters/express.js';
import { als, openProfiles } from '../src/core/context.js';
import { currentProfile, memoryStore, step, type Profile, type ProfileJSON, type TimingJSON } from '../src/index.js';
import { BADGE_VERSION } from '../src/results/badge.js';
import { closeServers, get, leaveDuringBody, raw, serve, TEST_TLS, tlsGet, track, waitFor, withoutDate, type RawResponse } from './helpers/http.js';

const EPOCH = Date.UTC(2026, 10, 29, 12, 0, 0);
const STARTED = '2026-11-29T12:00:00.000Z';
const PAGE = '<!doctype html><html><head><title>t</title></head><body><h1>Hello</h1></body></html>';
const BIG = `<!doctype html><html><body>${'<p>lorem ipsum dolor sit amet</p>'.repeat(80)}</body></html>`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const tick = () => new Promise((resolve) => setImmediate(resolve));

/** Every comment miniprof writes starts with the machine name given below. */
const COMMENT = /<!--\nweb-1 at [^]*?\n-->/g;

function comments(body: string): string[] {
  return body.match(COMMENT) ?? [];
}

/** `body` with its one miniprof comment removed; fails unless there is exactly one. */
function withoutComment(body: string): string {
  const found = comments(body);
  expect(found, 'exactly one miniprof comment').toHaveLength(1);
  return body.replace(found[0]!, '');
}

/** The comment the fixed clock gives for a page with these step lines (with steps, the root's time in none). */
function expectedComment(path: string, steps: string[], method = 'GET'): string {
  const self = steps.length > 0 ? '' : '';
  return `<!--\nweb-1 at ${STARTED}\nPath: ${method} ${path}\n ${method} ${path} = 0.0ms${self}\n${steps.map((s) => `${s} = 0.0ms\n`).join('')}-->`;
}

function names(t: TimingJSON): unknown {
  return t.children.length === 0 ? t.name : { [t.name]: t.children.map(names) };
}

/** Fault-free by default: tests that provoke a fault take it out of `faults` themselves. */
let faults: unknown[] = [];

/** Profiles seen by `capture()` in route handlers, with how often each was sealed. */
interface Seen {
  profile: Profile;
  seals: number;
}
let seen: Seen[] = [];

/** Remember the request's live profile and count its seals (every app made by `start` calls it). */
function capture(): Seen | undefined {
  const profile = currentProfile();
  if (profile === undefined) return undefined;
  const known = seen.find((s) => s.profile === profile);
  if (known !== undefined) return known;
  const s: Seen = { profile, seals: 0 };
  const seal = profile.seal;
  profile.seal = function (this: Profile) {
    s.seals++;
    return seal.call(this);
  };
  seen.push(s);
  return s;
}

async function sealed(s: Seen | undefined): Promise<ProfileJSON> {
  expect(s, 'the route saw a profile').toBeDefined();
  await waitFor(() => s!.profile.sealed, 3000, 'profile sealed');
  return s!.profile.toJSON();
}

/** A supertest parser that keeps the body's bytes, whatever its type. */
function bufferParser(res: request.Response, done: (err: Error | null, body: Buffer) => void): void {
  const stream = res as unknown as NodeJS.ReadableStream;
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  stream.on('end', () => done(null, Buffer.concat(chunks)));
}

/** The reason phrase of the status line supertest received. */
function reason(r: request.Response): string | undefined {
  return (r as unknown as { res: http.IncomingMessage }).res.statusMessage;
}

function header(r: RawResponse, name: string): string | undefined {
  const v = r.headers[name];
  return v === undefined ? undefined : v.join(', ');
}

function thrown(fn: () => unknown): Error & { code?: string } {
  try {
    fn();
  } catch (err) {
    return err as Error & { code?: string };
  }
  throw new Error('expected a throw');
}

/** Express 4 does not forward async rejections; Express 5 does. Same code for both. */
const a =
  (fn: (req: Request, res: Response, next: NextFunction) => Promise<unknown>): RequestHandler =>
  (req, res, next) => {
    fn(req, res, next).catch(next);
  };

/** Make the socket look like it comes from `addr` (a non-loopback peer without leaving 127.0.0.1). */
const fakePeer =
  (addr: string): RequestHandler =>
  (req, _res, next) => {
    Object.defineProperty(req.socket, 'remoteAddress', { value: addr, configurable: true });
    next();
  };

let dir: string;
const FILE_TEXT = '<html><body>0123456789abcdefghij</body></html>';
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'miniprof-express-'));
  writeFileSync(join(dir, 'page.html'), FILE_TEXT);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

afterEach(async () => {
  await closeServers();
  await waitFor(() => openProfiles() === 0, 3000, 'every profile closed');
  // Every developer request of every test: finalised exactly once.
  for (const s of seen) {
    await waitFor(() => s.profile.sealed, 3000, 'profile sealed');
    expect(s.seals, `${s.profile.name} sealed once`).toBe(1);
  }
  const left = faults;
  faults = [];
  seen = [];
  expect(left, 'unexpected onInternalError reports').toEqual([]);
});

describe('options are validated at setup', () => {
  it('a wrong type throws a coded TypeError naming the value', () => {
    const err = thrown(() => miniprof({ maxSteps: 'x' } as never));
    expect(err).toBeInstanceOf(TypeError);
    expect(err.code).toBe('MINIPROF_ERR_INVALID_OPTION');
    expect(err.message).toContain('maxSteps');
    expect(err.message).toContain('"x"');
    const dev = thrown(() => miniprof({ isDeveloper: 'yes' } as never));
    expect(dev.code).toBe('MINIPROF_ERR_INVALID_OPTION');
    expect(dev.message).toContain('isDeveloper');
  });

  it('an unknown key throws MINIPROF_ERR_UNKNOWN_OPTION naming the key', () => {
    const err = thrown(() => miniprof({ maxStep: 10 } as never));
    expect(err).toBeInstanceOf(TypeError);
    expect(err.code).toBe('MINIPROF_ERR_UNKNOWN_OPTION');
    expect(err.message).toContain('"maxStep"');
    expect(thrown(() => miniprof({ serverTiming: { maxByte: 100 } } as never)).code).toBe('MINIPROF_ERR_UNKNOWN_OPTION');
  });
});

describe.each([
  ['Express 5', express5],
  ['Express 4', express4],
] as const)('%s', (_label, express) => {
  /**
   * miniprof with a fixed clock, so every output is exact; developers: loopback unless told. No
   * badge unless told: its tag and Server-Timing id are test/badge.test.ts's.
   */
  function mp(o: MiniprofOptions<Request> = {}): RequestHandler {
    return miniprof({
      badge: false,
      clock: () => 0,
      now: () => EPOCH,
      machine: 'web-1',
      onInternalError: (err) => faults.push(err),
      ...o,
    }) as RequestHandler;
  }

  /** The shared routes; each test adds its own with `extra`. */
  function routes(app: Express): void {
    app.get(
      '/page',
      a(async (_req, res) => {
        await step('load user', async () => {
          await step('query', () => tick());
        });
        step('render', () => undefined);
        res.type('html').send(PAGE.replace('Hello', `Hello ${currentProfile() === undefined ? 'anon' : 'dev'}`));
      }),
    );
    app.get('/static', (_req, res) => {
      res.type('html').send(PAGE);
    });
    app.get('/json', (_req, res) => {
      res.json({ ok: true, list: [1, 2, 3], profiled: currentProfile() !== undefined });
    });
    app.get(
      '/stream',
      a(async (_req, res) => {
        res.type('html');
        res.write('<html><body>');
        await tick();
        res.write('<p>streamed</p>');
        await tick();
        res.end('</body></html>');
      }),
    );
    // What miniprof did to this request: nothing at all for a non-developer (no wrapper, no store).
    app.get('/own', (_req, res) => {
      res.json({ end: Object.hasOwn(res, 'end'), writeHead: Object.hasOwn(res, 'writeHead'), close: res.listenerCount('close'), store: als.getStore() !== undefined });
    });
    app.get('/big', (_req, res) => {
      res.type('html').send(BIG);
    });
  }

  /** An app: `pre` middleware in order, then the shared routes and `extra`. */
  function build(pre: RequestHandler[], extra?: (app: Express) => void): Express {
    const app = express();
    for (const m of pre) app.use(m);
    app.use((_req, _res, next) => {
      capture();
      next();
    });
    routes(app);
    extra?.(app);
    return app;
  }

  /** The same app on a real socket of its own: its port. */
  function start(pre: RequestHandler[], extra?: (app: Express) => void): Promise<number> {
    return serve(build(pre, extra) as unknown as http.RequestListener);
  }

  /** Same request to a plain app and a profiled one: identical bytes but for `Date`. */
  async function expectIdentical(plainPort: number, profPort: number, req: Parameters<typeof raw>[1]): Promise<RawResponse> {
    const plain = await raw(plainPort, req);
    const prof = await raw(profPort, req);
    expect(withoutDate(prof.bytes).toString('latin1')).toBe(withoutDate(plain.bytes).toString('latin1'));
    return prof;
  }

  describe('who is a developer (A1, A2)', () => {
    async function isProfiled(app: Express, path = '/page'): Promise<boolean> {
      const r = await request(app).get(path);
      expect(r.status).toBe(200);
      return r.headers['server-timing'] !== undefined && comments(r.text).length === 1;
    }

    it('A1: isDeveloper true, async true: profiled', async () => {
      expect(await isProfiled(build([mp({ isDeveloper: () => true })]))).toBe(true);
      expect(await isProfiled(build([mp({ isDeveloper: async () => (await tick(), true) })]))).toBe(true);
    });

    it('A1: isDeveloper gets the Express request (typed as express.Request)', async () => {
      const isDeveloper = (req: Request): boolean => req.get('x-dev') === 'yes' && req.path === '/page';
      const app = build([miniprof({ isDeveloper, onInternalError: (err) => faults.push(err) })]);
      const dev = await request(app).get('/page').set('X-Dev', 'yes');
      expect(dev.headers['server-timing']).toBeDefined();
      const other = await request(app).get('/page').set('X-Dev', 'no');
      expect(other.headers['server-timing']).toBeUndefined();
    });

    it('A1: isDeveloper false, or a truthy non-true value: byte-identical to the app alone', async () => {
      const plain = await start([]);
      await expectIdentical(plain, await start([mp({ isDeveloper: () => false })]), { path: '/page' });
      await expectIdentical(plain, await start([mp({ isDeveloper: async () => false })]), { path: '/page' });
      await expectIdentical(plain, await start([mp({ isDeveloper: (() => 'yes') as never })]), { path: '/page' });
    });

    it('A1: isDeveloper throws: not a developer, the error reaches onInternalError exactly once', async () => {
      const boom = new Error('isDeveloper broke');
      const plain = await start([]);
      const r = await expectIdentical(plain, await start([mp({ isDeveloper: () => { throw boom; } })]), { path: '/page' });
      expect(r.body.toString()).toContain('Hello anon');
      expect(faults).toEqual([boom]);
      expect(faults[0]).toBe(boom);
      faults = [];
    });

    it('A1: isDeveloper rejects: not a developer, the error reaches onInternalError exactly once', async () => {
      const boom = new Error('isDeveloper rejected');
      const plain = await start([]);
      await expectIdentical(plain, await start([mp({ isDeveloper: () => Promise.reject(boom) })]), { path: '/page' });
      expect(faults).toHaveLength(1);
      expect(faults[0]).toBe(boom);
      faults = [];
    });

    it('A2: unset, outside production: loopback peers only (127.0.0.0/8, mapped, ::1)', async () => {
      expect(await isProfiled(build([mp()]))).toBe(true); // really 127.0.0.1
      expect(await isProfiled(build([fakePeer('127.0.0.5'), mp()]))).toBe(true);
      expect(await isProfiled(build([fakePeer('::ffff:127.0.0.1'), mp()]))).toBe(true);
      expect(await isProfiled(build([fakePeer('::1'), mp()]))).toBe(true);
      const plain = await start([fakePeer('203.0.113.9')]);
      await expectIdentical(plain, await start([fakePeer('203.0.113.9'), mp()]), { path: '/page' });
      await expectIdentical(await start([fakePeer('10.0.0.1')]), await start([fakePeer('10.0.0.1'), mp()]), { path: '/page' });
    });

    it('A2: X-Forwarded-For: 127.0.0.1 from a non-loopback peer does not make a developer', async () => {
      const req = { path: '/page', headers: { 'X-Forwarded-For': '127.0.0.1', Forwarded: 'for=127.0.0.1' } };
      const r = await expectIdentical(
        await start([fakePeer('198.51.100.4')]),
        await start([fakePeer('198.51.100.4'), mp()]),
        req,
      );
      expect(r.body.toString()).toContain('Hello anon');
      // Even with Express's `trust proxy` on, the socket decides, not req.ip.
      const trusting = (app: Express) => app.set('trust proxy', true);
      const plain = express();
      trusting(plain);
      plain.use(fakePeer('198.51.100.4'));
      routes(plain);
      const prof = express();
      trusting(prof);
      prof.use(fakePeer('198.51.100.4'), mp());
      routes(prof);
      await expectIdentical(
        await serve(plain as unknown as http.RequestListener),
        await serve(prof as unknown as http.RequestListener),
        req,
      );
    });

    it('A2: NODE_ENV=production and no isDeveloper: a pass-through, even for loopback', async () => {
      const before = process.env.NODE_ENV;
      process.env.NODE_ENV = 'production';
      let m: RequestHandler;
      try {
        m = mp();
      } finally {
        if (before === undefined) delete process.env.NODE_ENV;
        else process.env.NODE_ENV = before;
      }
      const plain = await start([]);
      const prof = await start([m]);
      for (const path of ['/page', '/json', '/stream']) await expectIdentical(plain, prof, { path });
      expect(seen).toEqual([]);
    });
  });

  describe('non-developer responses are byte-identical to the app alone (E4)', () => {
    let plain: number;
    let prof: number;
    async function both(): Promise<void> {
      plain = await start([]);
      prof = await start([mp({ isDeveloper: () => false })]);
    }

    it('HTML, JSON, HEAD, streams, sendFile, an error page', async () => {
      await both();
      const own = await raw(prof, { path: '/own' });
      expect(JSON.parse(own.body.toString())).toEqual({ end: false, writeHead: false, close: 0, store: false });
      for (const path of ['/page', '/static', '/json', '/stream', '/big', '/own', '/missing']) {
        await expectIdentical(plain, prof, { path });
        await expectIdentical(plain, prof, { method: 'HEAD', path });
      }
      expect(seen).toEqual([]);
    });

    it('304 via If-None-Match', async () => {
      await both();
      const first = await raw(plain, { path: '/static' });
      const etag = header(first, 'etag')!;
      expect(etag).toMatch(/^W\/"/);
      const r = await expectIdentical(plain, prof, { path: '/static', headers: { 'If-None-Match': etag } });
      expect(r.status).toBe(304);
      expect(r.body.length).toBe(0);
    });

    it('with compression(): gzip, br, identity', async () => {
      plain = await start([compression()]);
      prof = await start([compression(), mp({ isDeveloper: () => false })]);
      const prof2 = await start([mp({ isDeveloper: () => false }), compression()]);
      for (const enc of ['gzip', 'br', 'identity']) {
        await expectIdentical(plain, prof, { path: '/big', headers: { 'Accept-Encoding': enc } });
        await expectIdentical(plain, prof2, { path: '/big', headers: { 'Accept-Encoding': enc } });
      }
    });
  });

  describe('developer output', () => {
    it('Server-Timing and the comment, exact with a fixed clock; cache-safe headers', async () => {
      const r = await request(build([mp()])).get('/page');
      expect(r.status).toBe(200);
      expect(r.headers['server-timing']).toBe('load_user;dur=0.0;desc="load user", render;dur=0.0, total;dur=0.0');
      expect(r.headers['cache-control']).toBe('private, no-store');
      expect(r.headers.etag).toBeUndefined();
      expect(r.headers['timing-allow-origin']).toBeUndefined();
      expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
      const comment = expectedComment('/page', ['> load user', '>> query', '> render']);
      expect(r.text).toBe(PAGE.replace('Hello', 'Hello dev').replace('</body>', `${comment}</body>`));
      expect(Number(r.headers['content-length'])).toBe(Buffer.byteLength(r.text));
      const json = await sealed(seen[0]);
      expect(seen[0]!.seals).toBe(1);
      expect(json.request).toEqual({ method: 'GET', path: '/page', status: 200 });
      expect(names(json.root)).toEqual({ 'GET /page': [{ 'load user': ['query'] }, 'render'] });
    });

    it("a developer request runs in the profile with wrappers on its own res only: no prototype changes, the next response untouched", async () => {
      const proto = Object.getPrototypeOf(express.response) as object;
      const before = { app: { ...Object.getOwnPropertyDescriptors(express.response) }, node: { ...Object.getOwnPropertyDescriptors(http.ServerResponse.prototype) } };
      const server = build([mp({ isDeveloper: (req) => req.headers['x-dev'] === '1' })]);
      const dev = await request(server).get('/own').set('x-dev', '1');
      // on-headers' writeHead and miniprof's end are own properties of this res; 'close' and
      // 'finish' listeners of its own seal the profile.
      expect(dev.body).toEqual({ end: true, writeHead: true, close: 1, store: true });
      const other = await request(server).get('/own');
      expect(other.body).toEqual({ end: false, writeHead: false, close: 0, store: false });
      expect(Object.getOwnPropertyDescriptors(express.response)).toEqual(before.app);
      expect(Object.getOwnPropertyDescriptors(http.ServerResponse.prototype)).toEqual(before.node);
      expect(Object.getPrototypeOf(express.response)).toBe(proto);
      // Behind compression() (its own res.end runs first), miniprof's wrappers go over its own.
      const behind = await raw(await start([compression(), mp()]), { path: '/own' });
      const alone = await raw(await start([compression()]), { path: '/own' });
      const closeAlone = (JSON.parse(alone.body.toString()) as { close: number }).close;
      expect(JSON.parse(behind.body.toString())).toEqual({ end: true, writeHead: true, close: closeAlone + 1, store: true });
    });

    it("an end of the app's own response prototype (app.response.end) runs after miniprof's and sees the comment", async () => {
      // miniprof's end is an own property of res, so an end the app put on its response prototype
      // is what miniprof's calls. Mounted in a sub-app, the chain has two such prototypes.
      for (const where of ['app', 'sub-app'] as const) {
        const seen: string[] = [];
        const port = await start(where === 'app' ? [mp()] : [], (app) => {
          const target = where === 'app' ? app : express();
          const response = target.response as unknown as Record<string, unknown>;
          response.end = function (this: unknown, ...args: unknown[]) {
            seen.push(String(args[0]));
            const up = Object.getPrototypeOf(response) as { end: (...a: unknown[]) => unknown };
            return up.end.apply(this, args);
          };
          if (where === 'sub-app') {
            target.use(mp());
            target.get('/page', (_req, res) => {
              step('sub', () => undefined);
              res.type('html').send(PAGE);
            });
            app.use('/sub', target);
          }
        });
        const r = await raw(port, { path: where === 'app' ? '/page' : '/sub/page' });
        expect(r.status).toBe(200);
        expect(comments(r.body.toString())).toHaveLength(1);
        expect(r.headers['server-timing']).toBeDefined();
        expect(seen).toHaveLength(1);
        expect(comments(seen[0]!)).toEqual(comments(r.body.toString()));
      }
    });

    it('after developer requests, a non-developer response is still exactly the app alone', async () => {
      const plainPort = await start([]);
      const port = await start([mp({ isDeveloper: (req) => req.headers['x-dev'] === '1' })]);
      for (const path of ['/page', '/static', '/json', '/stream', '/big']) {
        const dev = await raw(port, { path, headers: { 'x-dev': '1' } });
        expect(header(dev, 'server-timing')).toBeDefined();
        await expectIdentical(plainPort, port, { path });
        await expectIdentical(plainPort, port, { method: 'HEAD', path });
      }
    });

    it('JSON responses get Server-Timing and no body change', async () => {
      const r = await request(build([mp()])).get('/json');
      expect(r.headers['server-timing']).toBe('total;dur=0.0');
      expect(r.headers['cache-control']).toBe('private, no-store');
      expect(r.headers.etag).toBeUndefined();
      expect(r.text).toBe('{"ok":true,"list":[1,2,3],"profiled":true}');
      expect(Number(r.headers['content-length'])).toBe(Buffer.byteLength(r.text));
    });

    it('A5: the path in the profile has no query string', async () => {
      const r = await request(build([mp()])).get('/static?token=secret');
      expect(r.text).toContain('Path: GET /static\n');
      expect(r.text).not.toContain('secret');
      expect((await sealed(seen[0])).name).toBe('GET /static');
    });

    it('C3: appended to a Server-Timing the app set (string and list)', async () => {
      const port = await start([mp()], (app) => {
        app.get('/st1', (_req, res) => {
          res.set('Server-Timing', 'app;dur=1.5');
          res.type('html').send(PAGE);
        });
        app.get('/st2', (_req, res) => {
          res.setHeader('Server-Timing', ['db;dur=2', 'cache;desc="hit"']);
          res.json({});
        });
      });
      const r1 = await get(port, '/st1');
      expect(r1.headers['server-timing']).toBe('app;dur=1.5, total;dur=0.0');
      const r2 = await raw(port, { path: '/st2' });
      expect(r2.headers['server-timing']).toEqual(['db;dur=2', 'cache;desc="hit"', 'total;dur=0.0']);
    });

    describe('where the comment goes (B6)', () => {
      const cases: Array<[string, string, string]> = [
        ['before </body>', '<html><body>x</body></html>', '<html><body>x@</body></html>'],
        ['before </BODY> in any case', '<HTML><BODY>x</BODY></HTML>', '<HTML><BODY>x@</BODY></HTML>'],
        ['before the last of two </body>', '<body>a</body><body>b</body >', '<body>a</body><body>b@</body >'],
        ['appended without </body>', '<p>fragment</p>', '<p>fragment</p>@'],
        ['not before </bodyx>', '<p>a</bodyx>', '<p>a</bodyx>@'],
      ];
      it.each(cases)('%s', async (_name, input, output) => {
        const r = await request(build([mp()], (app) => app.get('/h', (_req, res) => res.type('html').send(input)))).get('/h');
        expect(r.text).toBe(output.replace('@', expectedComment('/h', [])));
        expect(Number(r.headers['content-length'])).toBe(Buffer.byteLength(r.text));
      });

      it('B6: xhtml and a 404 HTML page get it; text/plain does not', async () => {
        const app = build([mp()], (a_) => {
          a_.get('/x', (_req, res) => res.type('application/xhtml+xml').send('<html><body>x</body></html>'));
          a_.get('/t', (_req, res) => res.type('text/plain').send('<html><body>x</body></html>'));
          a_.get('/404', (_req, res) => res.status(404).type('html').send('<html><body>nope</body></html>'));
        });
        // Raw bytes as text: supertest would parse an XHTML body as XML.
        const text = (r: request.Response): string => (r.body as Buffer).toString();
        expect(comments(text(await request(app).get('/x').buffer(true).parse(bufferParser)))).toHaveLength(1);
        expect((await request(app).get('/t')).text).toBe('<html><body>x</body></html>');
        const nf = await request(app).get('/404');
        expect(nf.status).toBe(404);
        expect(withoutComment(nf.text)).toBe('<html><body>nope</body></html>');
      });
    });

    it("B6: Express's own HTML: a redirect and the default error page get one comment, lengths right", async () => {
      const pages = (app: Express) => {
        // No stack trace in the error page: its frames differ with and without miniprof.
        app.set('env', 'production');
        app.get('/redirect', (_req, res) => res.redirect('/static'));
        app.get('/fail', () => {
          throw new Error('no handler for this');
        });
      };
      const plainPort = await start([], pages);
      const port = await start([mp()], pages);
      for (const path of ['/redirect', '/fail']) {
        const req = { path, headers: { Accept: 'text/html' } };
        const plain = await raw(plainPort, req);
        const r = await raw(port, req);
        expect(r.status).toBe(plain.status);
        expect(header(r, 'location')).toBe(header(plain, 'location'));
        expect(header(r, 'content-security-policy')).toBe(header(plain, 'content-security-policy'));
        expect(Number(header(r, 'content-length'))).toBe(r.body.length);
        expect(withoutComment(r.body.toString())).toBe(plain.body.toString());
      }
    });

    describe('C1: Content-Length equals the bytes received', () => {
      const TEXT = '<html><body>café ☕ 日本語 Jež</body></html>';
      const LATIN = '<html><body>café crème à la carte</body></html>';
      it.each([
        ['res.send(string)', (res: Response) => res.type('html').send(TEXT), TEXT, 'utf8'],
        [
          // Without an ETag to compute, Express hands a short string to end() as a string.
          'res.send(string), etag off',
          (res: Response) => {
            res.app.set('etag', false);
            res.type('html').send(TEXT);
          },
          TEXT,
          'utf8',
        ],
        ['res.send(Buffer)', (res: Response) => res.type('html').send(Buffer.from(TEXT)), TEXT, 'utf8'],
        [
          "res.end(str, 'latin1')",
          (res: Response) => {
            res.setHeader('Content-Type', 'text/html; charset=iso-8859-1');
            res.end(LATIN, 'latin1');
          },
          LATIN,
          'latin1',
        ],
        [
          'app-set Content-Length',
          (res: Response) => {
            res.setHeader('Content-Type', 'text/html; charset=utf-8');
            res.setHeader('Content-Length', Buffer.byteLength(TEXT));
            res.end(TEXT);
          },
          TEXT,
          'utf8',
        ],
        [
          "app-set Content-Length with res.end(str, 'latin1')",
          (res: Response) => {
            res.setHeader('Content-Type', 'text/html; charset=latin1');
            res.setHeader('Content-Length', Buffer.byteLength(LATIN, 'latin1'));
            res.end(LATIN, 'latin1');
          },
          LATIN,
          'latin1',
        ],
      ] as const)('C1: %s', async (_name, send, text, enc) => {
        const port = await start([mp()], (app) => app.get('/c1', (_req, res) => void send(res)));
        const r = await raw(port, { path: '/c1' });
        expect(r.status).toBe(200);
        expect(Number(header(r, 'content-length'))).toBe(r.body.length);
        const body = r.body.toString(enc as BufferEncoding);
        expect(withoutComment(body)).toBe(text);
      });

      it('C1: multibyte step names in a UTF-8 page and in a latin1 page', async () => {
        const port = await start([mp()], (app) => {
          app.get('/u', (_req, res) => {
            step('naïve ☕ step', () => undefined);
            res.type('html').send(TEXT);
          });
          app.get('/l', (_req, res) => {
            step('naïve ☕ step', () => undefined);
            res.setHeader('Content-Type', 'text/html; charset=iso-8859-1');
            res.end(LATIN, 'latin1');
          });
        });
        const u = await raw(port, { path: '/u' });
        expect(Number(header(u, 'content-length'))).toBe(u.body.length);
        expect(u.body.toString()).toContain('> naïve ☕ step = 0.0ms');
        const l = await raw(port, { path: '/l' });
        expect(Number(header(l, 'content-length'))).toBe(l.body.length);
        // Not UTF-8: the comment is ASCII with escapes, so the latin1 page stays readable.
        const comment = comments(l.body.toString('latin1'))[0]!;
        expect(comment).toMatch(/^[\x0a\x20-\x7e]*$/);
        expect(withoutComment(l.body.toString('latin1'))).toBe(LATIN);
      });
    });

    it("A6: the error page sent after writeHead refused a header of the app's still gets no-store and Server-Timing", async () => {
      const bad = (app: Express) =>
        app.get('/bad', (_req, res) => {
          res.writeHead(200, { 'Content-Type': 'text/html', 'X-Bad': 'a\u0000b' });
          res.end(PAGE);
        });
      const plain = await raw(await start([], bad), { path: '/bad' });
      expect(plain.status).toBe(500);
      expect(plain.headers['cache-control']).toBeUndefined();
      const r = await raw(await start([mp()], bad), { path: '/bad' });
      expect(r.status).toBe(500);
      expect(comments(r.body.toString())).toHaveLength(1);
      expect(header(r, 'cache-control')).toBe('private, no-store');
      expect(header(r, 'server-timing')).toMatch(/total;dur=/);
      expect(r.headers['x-bad']).toBeUndefined();
    });

    it('A6: a conditional GET with the previous ETag gets 200 and a fresh profile', async () => {
      const etag = (await request(build([])).get('/static')).headers.etag as string;
      const app = build([mp()]);
      const ids: string[] = [];
      for (let i = 0; i < 2; i++) {
        const r = await request(app).get('/static').set('If-None-Match', etag).set('If-Modified-Since', new Date().toUTCString());
        expect(r.status).toBe(200);
        expect(r.headers.etag).toBeUndefined();
        expect(r.headers['cache-control']).toBe('private, no-store');
        expect(withoutComment(r.text)).toBe(PAGE);
        ids.push((await sealed(seen[i])).id);
      }
      expect(ids[0]).not.toBe(ids[1]);
    });

    it('A7: Timing-Allow-Origin: * set by the app: no Server-Timing unless serverTiming.crossOrigin', async () => {
      const tao = (app: Express) =>
        app.get('/tao', (_req, res) => {
          res.set('Timing-Allow-Origin', '*');
          res.type('html').send(PAGE);
        });
      const r = await request(build([mp()], tao)).get('/tao');
      expect(r.headers['server-timing']).toBeUndefined();
      expect(r.headers['timing-allow-origin']).toBe('*');
      expect(comments(r.text)).toHaveLength(1);
      // A list with * in it, as one value or several.
      const app = build([mp()], (a_) => {
        a_.get('/tao-list', (_req, res) => void res.set('Timing-Allow-Origin', 'https://a.example, *').json({}));
        a_.get('/tao-array', (_req, res) => void res.set('Timing-Allow-Origin', ['https://a.example', '*']).json({}));
        a_.get('/tao-one', (_req, res) => void res.set('Timing-Allow-Origin', 'https://a.example').json({}));
      });
      expect((await request(app).get('/tao-list')).headers['server-timing']).toBeUndefined();
      expect((await request(app).get('/tao-array')).headers['server-timing']).toBeUndefined();
      expect((await request(app).get('/tao-one')).headers['server-timing']).toBe('total;dur=0.0');
      const open = await request(build([mp({ serverTiming: { crossOrigin: true } })], tao)).get('/tao');
      expect(open.headers['server-timing']).toBe('total;dur=0.0');
      const off = await request(build([mp({ serverTiming: false, htmlComment: false })])).get('/page');
      expect(off.headers['server-timing']).toBeUndefined();
      expect(off.text).toBe(PAGE.replace('Hello', 'Hello dev'));
    });

    describe('left untouched: the body is exactly the app body, headers still right', () => {
      async function untouched(extra: (app: Express) => void, req: Parameters<typeof raw>[1]): Promise<RawResponse> {
        const r = await raw(await start([mp()], extra), req);
        expect(comments(r.body.toString('latin1'))).toEqual([]);
        return r;
      }

      it('C6: HEAD: no body, Server-Timing, cache headers; Content-Length of the GET body', async () => {
        const r = await untouched(() => undefined, { method: 'HEAD', path: '/static' });
        expect(r.status).toBe(200);
        expect(r.body.length).toBe(0);
        expect(header(r, 'server-timing')).toBe('total;dur=0.0');
        expect(header(r, 'cache-control')).toBe('private, no-store');
        expect(r.headers.etag).toBeUndefined();
        expect(Number(header(r, 'content-length'))).toBe(Buffer.byteLength(PAGE));
      });

      it('C7: 204, 304 set by the app, and 103 Early Hints', async () => {
        const app = (a_: Express) => {
          a_.get('/204', (_req, res) => void res.status(204).type('html').send(PAGE));
          a_.get('/304', (_req, res) => void res.status(304).type('html').send(PAGE));
          a_.get('/103', (_req, res) => {
            res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
            res.type('html').send(PAGE);
          });
        };
        const port = await start([mp()], app);
        for (const s of [204, 304]) {
          const r = await raw(port, { path: `/${s}` });
          expect(r.status).toBe(s);
          expect(r.body.length).toBe(0);
          expect(header(r, 'server-timing')).toBe('total;dur=0.0');
        }
        const plain = await raw(await start([], app), { path: '/103' });
        const r = await raw(port, { path: '/103' });
        expect(r.informational).toEqual(plain.informational);
        expect(r.informational[0]).toMatch(/^HTTP\/1\.1 103 Early Hints\r\nLink: <\/style.css>; rel=preload; as=style/);
        expect(r.status).toBe(200);
        expect(withoutComment(r.body.toString())).toBe(PAGE);
      });

      it('C2: 206: res.sendFile with Range, and res.status(206).send(html)', async () => {
        const port = await start([mp()], (app) => {
          app.get('/file', (_req, res) => res.sendFile(join(dir, 'page.html')));
          app.get('/partial', (_req, res) => void res.status(206).type('html').send(PAGE));
        });
        const f = await raw(port, { path: '/file', headers: { Range: 'bytes=12-21' } });
        expect(f.status).toBe(206);
        expect(f.body.toString()).toBe(FILE_TEXT.slice(12, 22));
        expect(header(f, 'content-range')).toBe(`bytes 12-21/${FILE_TEXT.length}`);
        expect(header(f, 'server-timing')).toBe('total;dur=0.0');
        expect(f.headers.etag).toBeUndefined();
        // A file is streamed: even whole, it is left alone.
        const whole = await raw(port, { path: '/file' });
        expect(whole.status).toBe(200);
        expect(whole.payload.toString()).toBe(FILE_TEXT);
        const p = await raw(port, { path: '/partial' });
        expect(p.status).toBe(206);
        expect(p.body.toString()).toBe(PAGE);
        expect(Number(header(p, 'content-length'))).toBe(Buffer.byteLength(PAGE));
      });

      it('B6: Content-Encoding set by the app', async () => {
        const gz = zlib.gzipSync(PAGE);
        const r = await untouched(
          (app) =>
            app.get('/gz', (_req, res) => {
              res.set('Content-Encoding', 'gzip');
              res.type('html').send(gz);
            }),
          { path: '/gz' },
        );
        expect(Buffer.compare(r.body, gz)).toBe(0);
        expect(zlib.gunzipSync(r.body).toString()).toBe(PAGE);
        expect(header(r, 'server-timing')).toBe('total;dur=0.0');
      });

      it('B6: Cache-Control: no-transform', async () => {
        const r = await untouched(
          (app) =>
            app.get('/nt', (_req, res) => {
              res.set('Cache-Control', 'no-transform');
              res.type('html').send(PAGE);
            }),
          { path: '/nt' },
        );
        expect(r.body.toString()).toBe(PAGE);
        expect(header(r, 'server-timing')).toBe('total;dur=0.0');
        expect(header(r, 'cache-control')).toBe('private, no-store, no-transform');
      });

      it('B6: a utf-16 page', async () => {
        const bytes = Buffer.from('\ufeff<html><body>x</body></html>', 'utf16le');
        const r = await untouched(
          (app) =>
            app.get('/u16', (_req, res) => {
              res.set('Content-Type', 'text/html; charset=utf-16');
              res.send(bytes);
            }),
          { path: '/u16' },
        );
        expect(Buffer.compare(r.body, bytes)).toBe(0);
        expect(Number(header(r, 'content-length'))).toBe(bytes.length);
      });

      it('C2: res.write + res.end (chunked)', async () => {
        const r = await untouched(() => undefined, { path: '/stream' });
        expect(header(r, 'transfer-encoding')).toBe('chunked');
        expect(r.payload.toString()).toBe('<html><body><p>streamed</p></body></html>');
        expect(header(r, 'server-timing')).toBe('total;dur=0.0');
        expect(await sealed(seen[0])).toMatchObject({ request: { status: 200 } });
      });

      it('C3: flushHeaders() early, then res.end(html): no throw, Server-Timing sent with the head', async () => {
        const r = await untouched(
          (app) =>
            app.get(
              '/flush',
              a(async (_req, res) => {
                res.type('html');
                res.flushHeaders();
                await step('after flush', () => tick());
                res.end(PAGE);
              }),
            ),
          { path: '/flush' },
        );
        expect(r.status).toBe(200);
        expect(r.payload.toString()).toBe(PAGE);
        expect(header(r, 'server-timing')).toBe('total;dur=0.0');
        expect(header(r, 'cache-control')).toBe('private, no-store');
        const json = await sealed(seen[0]);
        expect(names(json.root)).toEqual({ 'GET /flush': ['after flush'] });
      });
    });

    describe('C4: every writeHead call shape', () => {
      const shapes: Array<[string, (res: Response) => void]> = [
        [
          'writeHead(200)',
          (res) => {
            res.setHeader('Content-Type', 'text/html');
            res.setHeader('X-App', 'a');
            res.setHeader('Server-Timing', 'app;dur=1');
            res.writeHead(200);
          },
        ],
        ['writeHead(200, obj)', (res) => res.writeHead(200, { 'Content-Type': 'text/html', 'X-App': 'a', 'Server-Timing': 'app;dur=1' })],
        // Lowercase keys and no header set before: ours go into a copy of the object (Fastify's way).
        ['writeHead(200, lowercase obj)', (res) => res.writeHead(200, { 'content-type': 'text/html', 'x-app': 'a', 'server-timing': 'app;dur=1' })],
        [
          "writeHead(200, 'OK', obj)",
          (res) => res.writeHead(200, 'OK', { 'Content-Type': 'text/html', 'X-App': 'a', 'Server-Timing': 'app;dur=1' }),
        ],
        [
          'writeHead(200, [[k, v]])',
          (res) =>
            res.writeHead(200, [
              ['Content-Type', 'text/html'],
              ['X-App', 'a'],
              ['Server-Timing', 'app;dur=1'],
            ] as never),
        ],
        [
          'writeHead(200, [k, v, k, v])',
          (res) => res.writeHead(200, ['Content-Type', 'text/html', 'X-App', 'a', 'Server-Timing', 'app;dur=1'] as never),
        ],
        [
          "writeHead(200, 'Fine', [k, v, k, v])",
          (res) => res.writeHead(200, 'Fine', ['Content-Type', 'text/html', 'X-App', 'a', 'Server-Timing', 'app;dur=1'] as never),
        ],
      ];
      it.each(shapes)('C4: %s', async (name, write) => {
        // Without X-Powered-By no header is set before writeHead, the one case where Node itself
        // accepts the nested-array shape; so the app alone is a valid reference for every shape.
        const app = (a_: Express) =>
          a_.disable('x-powered-by').get('/wh', (_req, res) => {
            write(res);
            res.end(PAGE);
          });
        const plain = await request(build([], app)).get('/wh');
        const r = await request(build([mp()], app)).get('/wh');
        expect(reason(r)).toBe(reason(plain));
        expect(`${r.status} ${reason(r)}`).toBe(name.includes('Fine') ? '200 Fine' : '200 OK');
        expect(r.headers['content-type']).toBe('text/html');
        expect(r.headers['x-app']).toBe('a');
        expect(r.headers['server-timing']).toBe('app;dur=1, total;dur=0.0');
        expect(r.headers['cache-control']).toBe('private, no-store');
        if (r.text !== PAGE) expect(withoutComment(r.text)).toBe(PAGE);
      });

      it('C4: a second writeHead reaches Node as it would without miniprof: its error, our headers once, nothing reported', async () => {
        let second: unknown;
        const app = (a_: Express) =>
          a_.get('/twice', (_req, res) => {
            res.writeHead(200, { 'Content-Type': 'text/html' });
            try {
              res.writeHead(500, { 'X-Late': '1' });
            } catch (err) {
              second = err;
            }
            res.end(PAGE);
          });
        const server = build([mp()], app);
        const r = await request(server).get('/twice');
        expect(r.status).toBe(200);
        expect((second as { code?: string }).code).toBe('ERR_HTTP_HEADERS_SENT');
        expect(r.headers['server-timing']).toBe('total;dur=0.0');
        expect(r.headers['x-late']).toBeUndefined();
        // The profile records the status that was sent, not the one the failed call tried.
        expect((await sealed(seen[0])).request).toEqual({ method: 'GET', path: '/twice', status: 200 });
        expect(faults).toEqual([]);
      });

      it('C4: writeHead(200, obj) over headers set before, any case: obj wins as in Node, and a shared obj is not changed', async () => {
        const SHARED = Object.freeze({
          'content-TYPE': 'text/html',
          'SERVER-timing': 'app;dur=1',
          ETAG: '"2"',
          'Cache-control': 'public, max-age=60',
          LINK: '</b>; rel=preload',
        });
        const app = (a_: Express) =>
          a_.get('/shared', (_req, res) => {
            res.setHeader('ETag', '"1"');
            res.setHeader('Link', '</a>; rel=preload');
            res.setHeader('X-Before', 'kept');
            res.writeHead(200, SHARED);
            res.end(PAGE);
          });
        const server = build([mp({ isDeveloper: (req) => req.headers['x-dev'] === '1' })], app);
        const r = await request(server).get('/shared').set('X-Dev', '1');
        expect(r.status).toBe(200);
        expect(r.headers['content-type']).toBe('text/html');
        expect(r.headers['x-before']).toBe('kept');
        expect(r.headers['etag']).toBeUndefined();
        expect(r.headers['cache-control']).toBe('private, no-store');
        expect(r.headers['server-timing']).toBe('app;dur=1, total;dur=0.0');
        const id = r.headers['x-miniprof-id'];
        expect(id).toMatch(/^[0-9a-f-]{36}$/);
        // The object's Link replaced the one set before (Node's merge), and ours follows it.
        expect(r.headers['link']).toBe(`</b>; rel=preload, </_miniprof/${id}>; rel="related"; title="miniprof"`);
        // The same object, unchanged, for the next (unprofiled) response.
        const other = await request(server).get('/shared');
        expect(other.headers['etag']).toBe('"2"');
        expect(other.headers['cache-control']).toBe('public, max-age=60');
        expect(other.headers['server-timing']).toBe('app;dur=1');
        expect(other.headers['link']).toBe('</b>; rel=preload');
        expect(other.text).toBe(PAGE);
      });

      it('C4: writeHead(200, lowercase obj) with no header set before: merged as Node would, the shared obj unchanged', async () => {
        const SHARED = Object.freeze({
          'content-type': 'text/html',
          'server-timing': ['app;dur=1', 'db;dur=2'],
          etag: '"2"',
          'cache-control': 'public, max-age=60, no-transform',
          link: '</b>; rel=preload',
        });
        const app = (a_: Express) =>
          a_.disable('x-powered-by').get('/shared', (_req, res) => {
            res.writeHead(200, SHARED);
            res.end(PAGE);
          });
        const server = build([mp({ isDeveloper: (req) => req.headers['x-dev'] === '1' })], app);
        const r = await request(server).get('/shared').set('X-Dev', '1');
        expect(r.status).toBe(200);
        expect(r.headers['content-type']).toBe('text/html');
        expect(r.headers['etag']).toBeUndefined();
        expect(r.headers['cache-control']).toBe('private, no-store, no-transform');
        expect(r.headers['server-timing']).toBe('app;dur=1, db;dur=2, total;dur=0.0');
        const id = r.headers['x-miniprof-id'];
        expect(id).toMatch(/^[0-9a-f-]{36}$/);
        expect(r.headers['link']).toBe(`</b>; rel=preload, </_miniprof/${id}>; rel="related"; title="miniprof"`);
        const other = await request(server).get('/shared');
        expect(other.headers['etag']).toBe('"2"');
        expect(other.headers['cache-control']).toBe('public, max-age=60, no-transform');
        expect(other.headers['server-timing']).toBe('app;dur=1, db;dur=2');
        expect(other.headers['link']).toBe('</b>; rel=preload');
        expect(other.headers['x-miniprof-id']).toBeUndefined();
      });
    });

    describe('C5: compression() in both registration orders', () => {
      function decode(r: RawResponse): string {
        const enc = header(r, 'content-encoding');
        if (enc === 'gzip') return zlib.gunzipSync(r.payload).toString();
        if (enc === 'br') return zlib.brotliDecompressSync(r.payload).toString();
        expect(enc).toBeUndefined();
        return r.payload.toString();
      }
      for (const order of ['compression first', 'miniprof first'] as const) {
        for (const enc of ['gzip', 'br', 'identity'] as const) {
          it(`C5: ${order}, ${enc}`, async () => {
            const plain = await raw(await start([compression()]), { path: '/big', headers: { 'Accept-Encoding': enc } });
            const chain = order === 'compression first' ? [compression(), mp()] : [mp(), compression()];
            const r = await raw(await start(chain), { path: '/big', headers: { 'Accept-Encoding': enc } });
            expect(r.status).toBe(200);
            expect(header(r, 'content-encoding')).toBe(header(plain, 'content-encoding'));
            expect(header(r, 'server-timing')).toBe('total;dur=0.0');
            expect(decode(plain)).toBe(BIG);
            const body = decode(r);
            // Mounted after compression() (the documented order) miniprof sees the whole body
            // first; mounted before, compression() has sent the head by the time miniprof's
            // end() runs, so the body, even uncompressed, is left alone.
            if (order === 'compression first') expect(withoutComment(body)).toBe(BIG);
            else expect(body).toBe(BIG);
          });
        }
      }
    });

    it('C5: Cache-Control: no-transform keeps compression() away, profiled or not', async () => {
      const nt = (app: Express) =>
        app.get('/nt-big', (_req, res) => {
          res.set('Cache-Control', 'no-transform');
          res.type('html').send(BIG);
        });
      const req = { path: '/nt-big', headers: { 'Accept-Encoding': 'gzip' } };
      const plain = await raw(await start([compression()], nt), req);
      expect(plain.headers['content-encoding']).toBeUndefined();
      for (const chain of [[compression(), mp()], [mp(), compression()]]) {
        const r = await raw(await start(chain, nt), req);
        expect(r.headers['content-encoding']).toBeUndefined();
        expect(r.payload.toString()).toBe(BIG);
        expect(header(r, 'cache-control')).toBe('private, no-store, no-transform');
      }
    });

    it('C2: server-sent events that never end, closed by the client', async () => {
      let cleared = 0;
      const sse = (app: Express) =>
        app.get('/sse', (_req, res) => {
          res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
          let n = 0;
          const timer = setInterval(() => {
            step(`event ${n}`, () => res.write(`data: ${n++}\n\n`));
          }, 3);
          res.on('close', () => {
            clearInterval(timer);
            cleared++;
          });
        });
      async function firstEvents(port: number): Promise<{ headers: http.IncomingHttpHeaders; text: string }> {
        return new Promise((resolve, reject) => {
          const req = http.get({ host: '127.0.0.1', port, path: '/sse', agent: false }, (res) => {
            let text = '';
            res.setEncoding('latin1');
            res.on('data', (c: string) => {
              text += c;
              if (text.split('\n\n').length > 3) {
                req.destroy();
                resolve({ headers: res.headers, text: text.split('\n\n').slice(0, 3).join('\n\n') });
              }
            });
          });
          req.on('error', (err) => ((err as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(err)));
        });
      }
      const plain = await firstEvents(await start([], sse));
      const prof = await firstEvents(await start([mp()], sse));
      expect(prof.text).toBe(plain.text);
      expect(prof.text).toBe('data: 0\n\ndata: 1\n\ndata: 2');
      expect(prof.headers['content-type']).toBe('text/event-stream');
      expect(prof.headers['server-timing']).toBe('total;dur=0.0');
      const s = seen[0];
      const json = await sealed(s);
      expect(s!.seals).toBe(1);
      expect(json.request).toEqual({ method: 'GET', path: '/sse', status: 200, aborted: true });
      await waitFor(() => cleared === 2, 3000, 'both intervals cleared');
      const after = json.root.children.length;
      await sleep(15);
      expect(s!.profile.toJSON().root.children.length).toBe(after);
    });

    it('C8: a client that aborts mid-handler: nothing thrown, profile sealed once, request.aborted', async () => {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let started!: () => void;
      const running = new Promise<void>((resolve) => (started = resolve));
      let finished = false;
      const port = await start([mp()], (app) =>
        app.get(
          '/slow',
          a(async (_req, res) => {
            await step('before abort', async () => {
              started();
              await gate;
            });
            step('after abort', () => undefined);
            res.type('html').send(PAGE);
            finished = true;
          }),
        ),
      );
      const req = http.get({ host: '127.0.0.1', port, path: '/slow', agent: false });
      req.on('error', () => undefined);
      await running;
      req.destroy();
      const json = await sealed(seen[0]);
      release();
      await waitFor(() => finished, 3000, 'handler finished');
      await sleep(5);
      expect(seen[0]!.seals).toBe(1);
      expect(json.request).toEqual({ method: 'GET', path: '/slow', status: 200, aborted: true });
      expect(names(json.root)).toEqual({ 'GET /slow': ['before abort'] });
      expect(json.root.children[0]!.unfinished).toBe(true);
      // Sealed means frozen: the late step and the late send changed nothing.
      expect(seen[0]!.profile.toJSON()).toEqual(json);
    });

    it('C8: a client that leaves while a large body is still being written: request.aborted, on every Node', async () => {
      // Node 20 and 22 emit 'finish' for this response (the end was handed to the socket), and
      // read writableFinished true at 'close'; Node 24 does not.
      const huge = 'x'.repeat(48 << 20);
      let closed = false;
      const port = await start([mp()], (app) =>
        app.get('/huge', (_req, res) => {
          res.on('close', () => (closed = true));
          res.type('text/plain').send(huge);
        }),
      );
      await leaveDuringBody(port, '/huge');
      const json = await sealed(seen[0]);
      await waitFor(() => closed, 3000, "the response's close");
      expect(json.request).toEqual({ method: 'GET', path: '/huge', status: 200, aborted: true });
    });

    it("a second 'close' on a developer response changes nothing: sealed once, saved once, nothing reported", async () => {
      const saved: string[] = [];
      const inner = memoryStore();
      const store = { ...inner, save: async (owner: string, p: ProfileJSON) => (saved.push(p.id), inner.save(owner, p)) };
      let closes = 0;
      const port = await start([mp({ results: { store } })], (app) =>
        app.get('/twice', (_req, res) => {
          res.on('close', () => {
            // Someone emits 'close' again after the real one.
            if (++closes === 1) setImmediate(() => res.emit('close'));
          });
          res.type('html').send(PAGE);
        }),
      );
      const r = await raw(port, { path: '/twice' });
      expect(r.status).toBe(200);
      await waitFor(() => closes === 2, 3000, 'the second close');
      await tick();
      const json = await sealed(seen[0]);
      expect(seen[0]!.seals).toBe(1);
      expect(saved).toEqual([json.id]);
      expect(json.request).toEqual({ method: 'GET', path: '/twice', status: 200 });
      expect(await inner.get("peer:127.0.0.1", json.id)).toEqual(json);
      expect(faults).toEqual([]);
    });

    it('request.status is the status sent, also when the app changes res.statusCode after writeHead', async () => {
      const server = build([mp()], (app) =>
        app.get('/created', (_req, res) => {
          res.writeHead('201' as unknown as number, { 'Content-Type': 'text/html; charset=utf-8' });
          res.statusCode = 500;
          res.end(PAGE);
        }),
      );
      const r = await request(server).get('/created');
      expect(r.status).toBe(201);
      expect(r.headers['cache-control']).toBe('private, no-store');
      expect((await sealed(seen[0])).request).toEqual({ method: 'GET', path: '/created', status: 201 });
      expect(faults).toEqual([]);
    });

    it('a writeHead wrapper mounted before miniprof that sends another status: the response carries it and our headers', async () => {
      // on-headers style: the wrapper (which miniprof's writeHead calls) sets the status itself.
      // The profile records the status as the head left miniprof's hook (200 here).
      const rewrite: RequestHandler = (_req, res, next) => {
        const head = res.writeHead;
        res.writeHead = function (this: http.ServerResponse, _status: number, ...rest: unknown[]) {
          this.statusCode = 203;
          return (head as (...a: unknown[]) => http.ServerResponse).call(this, 203, ...rest);
        } as typeof res.writeHead;
        next();
      };
      const server = build([rewrite, mp()]);
      const r = await request(server).get('/static');
      expect(r.status).toBe(203);
      expect(r.headers['cache-control']).toBe('private, no-store');
      expect((await sealed(seen[0])).request).toEqual({ method: 'GET', path: '/static', status: 200 });
      expect(faults).toEqual([]);
    });

    it.each([
      ['an async isDeveloper', 'async-dev'],
      ['an async middleware before miniprof', 'slow-pre'],
    ])('C8: a client gone before miniprof runs (%s): no profile is left open', async (_name, kind) => {
      let entered!: () => void;
      const waiting = new Promise<void>((resolve) => (entered = resolve));
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let paused: http.ServerResponse | undefined;
      const pause = async (res: http.ServerResponse) => {
        paused = res;
        entered();
        await gate;
      };
      const pre: RequestHandler[] =
        kind === 'async-dev'
          ? [mp({ isDeveloper: async (req) => (await pause((req as unknown as { res: http.ServerResponse }).res), true) })]
          : [a(async (_req, res, next) => (await pause(res), next())), mp()];
      let handled = false;
      const port = await start(pre, (app) =>
        app.get('/late', (_req, res) => {
          handled = true;
          res.type('html').send(PAGE);
        }),
      );
      const req = http.get({ host: '127.0.0.1', port, path: '/late', agent: false });
      req.on('error', () => undefined);
      await waiting;
      req.destroy();
      // Waited for, not slept on: on a busy machine the server saw the close after 20 ms.
      await waitFor(() => paused!.destroyed, 3000, 'the server to see the client go');
      release();
      await waitFor(() => handled, 3000, 'handler ran');
      // Its 'close' had fired: a profile opened now would never be sealed (and would keep the
      // promise hooks on until maxDurationMs), so the request goes on unprofiled.
      expect(seen).toEqual([]);
      expect(openProfiles()).toBe(0);
    });

    it('C12: mounted twice (app and sub-app): one profile, one comment, one Server-Timing metric set', async () => {
      const sub = express();
      sub.use(mp());
      sub.get('/page', (_req, res) => {
        step('in sub-app', () => undefined);
        res.type('html').send(PAGE);
      });
      const r = await request(build([mp()], (app) => app.use('/sub', sub))).get('/sub/page');
      expect(r.status).toBe(200);
      expect(withoutComment(r.text)).toBe(PAGE);
      expect(comments(r.text)[0]).toBe(expectedComment('/sub/page', ['> in sub-app']));
      expect(r.headers['server-timing']).toBe('in_sub-app;dur=0.0;desc="in sub-app", total;dur=0.0');
      expect(seen).toHaveLength(1);
    });

    it('C10: an error thrown in a route reaches the app error handler as the same object', async () => {
      const errors = [new Error('sync'), new TypeError('in step'), new RangeError('async in step')];
      const notError = { custom: 'thrown object' };
      const got: unknown[] = [];
      const app = build([mp()], (app) => {
        app.get('/e0', () => {
          throw errors[0];
        });
        app.get('/e1', () => {
          step('sync step', () => {
            throw errors[1];
          });
        });
        app.get(
          '/e2',
          a(async () => {
            await step('async step', async () => {
              await tick();
              throw errors[2];
            });
          }),
        );
        app.get('/e3', () => {
          step('non-error', () => {
            throw notError;
          });
        });
        app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
          got.push(err);
          res.status(500).type('html').send('<html><body>error</body></html>');
        });
      });
      for (let i = 0; i < 4; i++) {
        const r = await request(app).get(`/e${i}`);
        expect(r.status).toBe(500);
        expect(withoutComment(r.text)).toBe('<html><body>error</body></html>');
      }
      expect(got).toHaveLength(4);
      for (let i = 0; i < 3; i++) expect(got[i]).toBe(errors[i]);
      expect(got[3]).toBe(notError);
      expect((await sealed(seen[1])).root.children[0]).toMatchObject({ name: 'sync step', error: true });
      expect((await sealed(seen[2])).root.children[0]).toMatchObject({ name: 'async step', error: true });
    });

    it('B2: a step named "a\\r\\nSet-Cookie: x=1" injects no header and the response is valid', async () => {
      const evil = 'a\r\nSet-Cookie: x=1';
      const port = await start([mp()], (app) =>
        app.get('/b2', (_req, res) => {
          step(evil, () => undefined);
          step('caf\u00e9 \u2615 "q" \\ \u0000', () => undefined);
          res.type('html').send(PAGE);
        }),
      );
      const r = await raw(port, { path: '/b2' });
      expect(r.status).toBe(200);
      expect(r.headers['set-cookie']).toBeUndefined();
      expect(r.head).not.toMatch(/\r\nSet-Cookie/i);
      const st = header(r, 'server-timing')!;
      expect(st).toMatch(/^[\x20-\x7e]+$/);
      expect(st).toBe('a_Set-Cookie_x_1;dur=0.0;desc="a%0D%0ASet-Cookie: x=1", caf_q;dur=0.0;desc="caf%C3%A9 %E2%98%95 \\"q\\" \\\\ %00", total;dur=0.0');
      const body = withoutComment(r.body.toString());
      expect(body).toBe(PAGE);
      expect(comments(r.body.toString())[0]).toContain('> a\\r\\nSet-Cookie: x=1 = 0.0ms\n');
      const viaClient = await get(port, '/b2');
      expect(viaClient.headers['set-cookie']).toBeUndefined();
    });

    it('B5: 10,000 steps keep Server-Timing within 2048 bytes and readable by Node\u2019s client', async () => {
      const port = await start([mp()], (app) =>
        app.get('/b5', (_req, res) => {
          for (let i = 0; i < 10_000; i++) step(`step number ${i}`, () => undefined);
          res.type('html').send(PAGE);
        }),
      );
      const r = await get(port, '/b5');
      expect(r.status).toBe(200);
      const st = r.headers['server-timing'] as string;
      expect(Buffer.byteLength(st)).toBeLessThanOrEqual(2048);
      expect(st).toMatch(/^step_number_0;dur=0\.0;desc="step number 0", /);
      expect(st).toMatch(/, more;desc="\d+ more", total;dur=0\.0$/);
      const json = await sealed(seen[0]);
      expect(json.root.children).toHaveLength(1000);
      expect(json.droppedSteps).toBe(9000);
      const body = withoutComment(r.body.toString());
      expect(body).toBe(PAGE);
      expect(r.body.toString()).toContain('! 9000 more steps were not recorded');
    });
  });

  describe('async context', () => {
    // Between requests miniprof releases the ALS hooks when no profile is open, which would hide
    // a leaking enterWith; so it is also run while another developer's request holds one open.
    it.each([false, true])('D1: keep-alive socket, 5 requests: code before miniprof never sees a profile (another open: %s)', async (hold) => {
      const before: Array<unknown> = [];
      const sockets = new Set<unknown>();
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const port = await start(
        [
          (req, _res, next) => {
            if (req.path.startsWith('/ka/')) {
              sockets.add(req.socket);
              // The raw store too: a leaked, sealed root would read as "no profile" through the API.
              before.push(als.getStore());
              before.push(currentProfile());
              before.push(step('before miniprof', () => currentProfile()));
            }
            next();
          },
          mp(),
        ],
        (app) => {
          app.get(
            '/ka/:n',
            a(async (req, res) => {
              await step(`request ${req.params.n}`, () => sleep(1));
              res.type('html').send(PAGE);
            }),
          );
          app.get(
            '/hold',
            a(async (_req, res) => {
              await gate;
              res.json({});
            }),
          );
        },
      );
      const held = hold ? get(port, '/hold') : undefined;
      if (hold) await waitFor(() => openProfiles() === 1, 3000, 'the held request is profiled');
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      try {
        for (let n = 0; n < 5; n++) {
          const r = await get(port, `/ka/${n}`, { agent });
          expect(r.status).toBe(200);
          expect(comments(r.body.toString())[0]).toBe(expectedComment(`/ka/${n}`, [`> request ${n}`]));
        }
      } finally {
        agent.destroy();
        release();
      }
      if (held !== undefined) expect((await held).status).toBe(200);
      expect(sockets.size).toBe(1);
      expect(before).toEqual(new Array(15).fill(undefined));
      const ka = seen.filter((s) => s.profile.name.startsWith('GET /ka/'));
      for (let n = 0; n < 5; n++) expect(names((await sealed(ka[n])).root)).toEqual({ [`GET /ka/${n}`]: [`request ${n}`] });
    });

    it('D1: three pipelined requests on one socket: each its own profile, nothing before miniprof sees one', async () => {
      const before: unknown[] = [];
      const port = await start(
        [
          (_req, _res, next) => {
            before.push(als.getStore(), currentProfile());
            next();
          },
          mp(),
        ],
        (app) =>
          app.get(
            '/pl/:n',
            a(async (req, res) => {
              const n = Number(req.params.n);
              // The first one finishes last, so their work overlaps.
              await step(`pipelined ${n}`, () => sleep(6 - 2 * n));
              res.type('html').send(PAGE);
            }),
          ),
      );
      const socket = net.connect(port, '127.0.0.1');
      const chunks: Buffer[] = [];
      socket.on('data', (c: Buffer) => chunks.push(c));
      const closed = new Promise((resolve) => socket.once('close', resolve));
      const req = (n: number, last: boolean) => `GET /pl/${n} HTTP/1.1\r\nHost: x\r\n${last ? 'Connection: close\r\n' : ''}\r\n`;
      socket.write(req(0, false) + req(1, false) + req(2, true));
      await closed;
      const all = Buffer.concat(chunks).toString('latin1');
      const bodies: string[] = [];
      for (let at = 0; at < all.length; ) {
        const end = all.indexOf('\r\n\r\n', at);
        const length = Number(/\r\nContent-Length: (\d+)/i.exec(all.slice(at, end))![1]);
        bodies.push(Buffer.from(all.slice(end + 4, end + 4 + length), 'latin1').toString());
        at = end + 4 + length;
      }
      expect(bodies).toEqual([0, 1, 2].map((n) => PAGE.replace('</body>', `${expectedComment(`/pl/${n}`, [`> pipelined ${n}`])}</body>`)));
      expect(before).toEqual(new Array(6).fill(undefined));
    });

    const syncDev = (): boolean => true;
    const asyncDev = async (): Promise<boolean> => (await tick(), true);
    it.each([
      ['sync', syncDev],
      ['async', asyncDev],
    ] as const)('D2: express.json() and express.urlencoded() on slow chunked POSTs > 64 KiB (%s isDeveloper): steps land in the own profile', async (_kind, isDeveloper) => {
      const early = new Map<string, Profile | undefined>();
      const port = await start(
        [
          mp({ isDeveloper }),
          (req, _res, next) => {
            early.set(String(req.headers['x-id']), currentProfile());
            next();
          },
          express.json({ limit: '1mb' }),
          express.urlencoded({ extended: false, limit: '1mb' }),
        ],
        (app) =>
          app.post(
            '/upload',
            a(async (req, res) => {
              const s = capture();
              const id = String((req.body as { id: string }).id);
              expect(s?.profile).toBe(early.get(id));
              await step(`handler ${id}`, async () => {
                await tick();
                await step(`inner ${id}`, () => sleep(1));
              });
              res.json({ id, pad: (req.body as { pad: string }).pad.length });
            }),
          ),
      );
      const pad = 'x'.repeat(70 * 1024);
      const split = (s: string) => Array.from({ length: 6 }, (_, i) => s.slice((i * s.length) / 6, ((i + 1) * s.length) / 6));
      const uploads = [
        { id: 'j1', type: 'application/json', body: JSON.stringify({ id: 'j1', pad }) },
        { id: 'u1', type: 'application/x-www-form-urlencoded', body: `id=u1&pad=${pad}` },
        { id: 'j2', type: 'application/json', body: JSON.stringify({ id: 'j2', pad }) },
        { id: 'u2', type: 'application/x-www-form-urlencoded', body: `id=u2&pad=${pad}` },
      ];
      const results = await Promise.all(
        uploads.map((u) =>
          raw(port, {
            method: 'POST',
            path: '/upload',
            headers: { 'Content-Type': u.type, 'X-Id': u.id },
            body: split(u.body),
            chunkDelayMs: 4,
          }),
        ),
      );
      for (const [i, r] of results.entries()) {
        expect(r.status).toBe(200);
        expect(JSON.parse(r.payload.toString())).toEqual({ id: uploads[i]!.id, pad: pad.length });
        expect(header(r, 'server-timing')).toMatch(/^handler_/);
      }
      expect(seen).toHaveLength(4);
      for (const s of seen) {
        const json = await sealed(s);
        const id = [...early].find(([, p]) => p === s.profile)![0];
        expect(names(json.root)).toEqual({ 'POST /upload': [{ [`handler ${id}`]: [`inner ${id}`] }] });
      }
    });

    it('D5: 200 concurrent real-socket requests with random awaits: each tree holds only its own steps', async () => {
      const rnd = () => sleep(Math.random() * 4);
      const port = await start([mp()], (app) =>
        app.get(
          '/d5/:id',
          a(async (req, res) => {
            const id = req.params.id as string;
            await rnd();
            await step(`${id}:outer`, async () => {
              await rnd();
              await step(`${id}:inner`, rnd);
            });
            await Promise.all(
              [0, 1, 2].map((k) =>
                step(`${id}:p${k}`, async () => {
                  await rnd();
                  await step(`${id}:p${k}:leaf`, rnd);
                }),
              ),
            );
            if (Number(id.slice(1)) % 2 === 0) res.type('html').send(PAGE);
            else res.json(currentProfile()!.toJSON());
          }),
        ),
      );
      const ids = Array.from({ length: 200 }, (_, i) => `r${i}`);
      const responses = await Promise.all(ids.map((id) => get(port, `/d5/${id}`)));
      for (const [i, r] of responses.entries()) {
        const id = ids[i]!;
        expect(r.status).toBe(200);
        const tree = [`> ${id}:outer`, `>> ${id}:inner`];
        for (const k of [0, 1, 2]) tree.push(`> ${id}:p${k}`, `>> ${id}:p${k}:leaf`);
        if (i % 2 === 0) {
          expect(r.body.toString()).toBe(PAGE.replace('</body>', `${expectedComment(`/d5/${id}`, tree)}</body>`));
        } else {
          const json = JSON.parse(r.body.toString()) as ProfileJSON;
          expect(names(json.root)).toEqual({
            [`GET /d5/${id}`]: [
              { [`${id}:outer`]: [`${id}:inner`] },
              ...[0, 1, 2].map((k) => ({ [`${id}:p${k}`]: [`${id}:p${k}:leaf`] })),
            ],
          });
        }
      }
    });
  });
});

describe('HTTPS: Express 5 behind https.createServer, on a real TLS socket', () => {
  async function serveTls(app: Express): Promise<number> {
    const server = https.createServer(TEST_TLS, app as unknown as http.RequestListener);
    track(server as unknown as http.Server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as net.AddressInfo).port;
  }

  it('a developer gets the outputs with a Content-Length that counts the comment; anyone else the app\'s own response; the opt-in cookie is Secure from the socket alone (no proxy header)', async () => {
    const store = memoryStore();
    const app = express5();
    app.use(
      miniprof({
        isDeveloper: (req) => req.headers['x-dev'] === '1',
        machine: 'web-1',
        results: { store },
        secret: 's'.repeat(32),
        onInternalError: (err) => faults.push(err),
      }),
    );
    app.get('/page', (_req, res, next) => {
      step('work', () => sleep(1)).then(() => res.type('html').send(PAGE), next);
    });
    const port = await serveTls(app);

    const plain = await tlsGet(port, '/page');
    expect(plain.body.toString()).toBe(PAGE);
    expect(plain.res.headers['server-timing']).toBeUndefined();
    expect(plain.res.headers['x-miniprof-id']).toBeUndefined();

    const r = await tlsGet(port, '/page', { 'x-dev': '1' });
    expect(r.res.statusCode).toBe(200);
    const id = r.res.headers['x-miniprof-id'] as string;
    const self = /miniprof-self;dur=\d+\.\d, /.exec(String(r.res.headers['server-timing']))?.[0] ?? '';
    expect(r.res.headers['server-timing']).toBe(`${/^work;dur=\d+\.\d/.exec(String(r.res.headers['server-timing']))![0]}, ${self}miniprof;desc="${id}", ${/total;dur=\d+\.\d$/.exec(String(r.res.headers['server-timing']))![0]}`);
    expect(r.res.headers['cache-control']).toBe('private, no-store');
    expect(Number(r.res.headers['content-length'])).toBe(r.body.length);
    // The comment, then the badge's tag (on by default), before </body>.
    const tag = `<script src="/_miniprof/badge.js?v=${BADGE_VERSION}" data-position="bottom-right" defer data-id="${id}"></script>`;
    expect(withoutComment(r.body.toString()).replace(tag, '')).toBe(PAGE);
    expect(r.body.toString()).toContain(`-->${tag}</body>`);
    // Saved when the response closes, which may come after the client has the whole body.
    await waitFor(() => openProfiles() === 0, 3000, 'the profile sealed and saved');
    const saved = await store.get('peer:127.0.0.1', r.res.headers['x-miniprof-id'] as string);
    expect(saved?.request).toEqual({ method: 'GET', path: '/page', status: 200 });

    // A public host name, so only the TLS socket can make the cookie Secure (F5: __Host-).
    const site = { 'x-dev': '1', Host: 'app.example.test', Origin: 'https://app.example.test' };
    const optIn = await tlsGet(port, '/_miniprof/opt-in', site, 'POST');
    expect(optIn.res.statusCode).toBe(303);
    expect(optIn.res.headers['set-cookie']![0]).toMatch(/^__Host-miniprof=[^;]+; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Strict; Secure$/);
  });
});

describe("a response prototype that has its own end, writeHead and emit before miniprof's", () => {
  // An older copy of miniprof (its hook symbols are versioned) or an agent that patched Express's
  // response prototype: miniprof's shared methods go on top and call these for every response.
  it('a developer response is profiled and sealed, and every response still reaches them', async () => {
    const calls: string[] = [];
    const base = Object.create(http.ServerResponse.prototype) as Record<string, unknown>;
    for (const m of ['end', 'writeHead', 'emit'] as const) {
      const inherited = http.ServerResponse.prototype[m] as (...args: unknown[]) => unknown;
      base[m] = function (this: http.ServerResponse, ...args: unknown[]) {
        if (m !== 'emit' || args[0] === 'close') calls.push(m);
        return inherited.apply(this, args);
      };
    }
    // Laid out as Express lays a response out: res -> the app's prototype -> base -> ServerResponse's.
    const perApp = Object.create(base) as object;
    const mw = miniprof({ isDeveloper: (req) => req.headers['x-dev'] === '1', machine: 'web-1', now: () => EPOCH, clock: () => 0, results: false, onInternalError: (err) => faults.push(err) });
    const port = await serve((req, res) => {
      Object.setPrototypeOf(res, perApp);
      mw(req, res, () => {
        capture();
        step('work', () => undefined);
        res.setHeader('Content-Type', 'text/html');
        res.end(PAGE);
      });
    });

    const dev = await raw(port, { path: '/p', headers: { 'x-dev': '1' } });
    expect(header(dev, 'server-timing')).toBe('work;dur=0.0, total;dur=0.0');
    expect(dev.body.toString()).toBe(PAGE.replace('</body>', `${expectedComment('/p', ['> work'])}</body>`));
    const json = await sealed(seen[0]);
    expect(json.request).toEqual({ method: 'GET', path: '/p', status: 200 });
    await waitFor(() => calls.length === 3, 3000, "the developer response's close");
    expect(calls).toEqual(['end', 'writeHead', 'emit']);

    const plain = await raw(port, { path: '/p' });
    expect(plain.body.toString()).toBe(PAGE);
    expect(header(plain, 'server-timing')).toBeUndefined();
    await waitFor(() => calls.length === 6, 3000, "the other response's close");
    expect(calls.slice(3)).toEqual(['end', 'writeHead', 'emit']);
  });
});
