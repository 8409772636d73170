// autoSteps (issue 61): the framework's own work as steps with no app code. Real Express 5 and 4,
// Fastify 5 with @fastify/view, Koa 3 with koa-views and @ladjs/koa-views, Hono with hono/jsx;
// real engines (EJS, Pug, Handlebars through express-handlebars and @fastify/view, Nunjucks).
// Templates advance an injected clock (`tick(ms)`), so every tree and comment is exact.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { channel } from 'node:diagnostics_channel';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express5 from 'express';
import express4 from 'express4';
import type { Express, NextFunction, Request, Response } from 'express';
import { engine as hbsEngine } from 'express-handlebars';
import Fastify, { type FastifyInstance } from 'fastify';
import fastifyView from '@fastify/view';
import ejs from 'ejs';
import handlebars from 'handlebars';
import { Hono } from 'hono';
import { jsx } from 'hono/jsx';
import Koa from 'koa';
import koaViews from 'koa-views';
import ladjsViews from '@ladjs/koa-views';
import request from 'supertest';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { miniprof as expressMiniprof } from '../adapters/express.js';
import { miniprof as fastifyMiniprof } from '../adapters/fastify.js';
import { miniprof as honoMiniprof } from '../adapters/hono.js';
import { miniprof as koaMiniprof } from '../adapters/koa.js';
import { openProfiles } from '../src/core/context.js';
import { currentProfile, step, type Profile, type TimingJSON } from '../src/index.js';
import { fakeClock, fixed, type FakeClock } from './helpers/clock.js';

const STARTED = '2026-11-29T12:00:00.000Z';

const dir = mkdtempSync(join(tmpdir(), 'miniprof-views-'));
writeFileSync(join(dir, 'page.ejs'), '<!doctype html><html><body><h1><%= title %></h1><% tick(5) %></body></html>');
writeFileSync(join(dir, 'broken.ejs'), '<html><body><% tick(2); throw new Error("view failed") %></body></html>');
writeFileSync(join(dir, 'page.pug'), 'doctype html\nhtml\n  body\n    h1= title\n    - tick(4)\n');
writeFileSync(join(dir, 'page.handlebars'), '<!doctype html><html><body><h1>{{title}}</h1>{{tick 3}}</body></html>');
writeFileSync(join(dir, 'user.hbs'), '<!doctype html><html><body><h1>{{name}}</h1>{{tick 3}}</body></html>');
writeFileSync(join(dir, 'page.njk'), '<!doctype html><html><body><h1>{{ title }}</h1>{{ tick(6) }}</body></html>');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let faults: unknown[] = [];
afterEach(() => {
  expect(faults).toEqual([]);
  faults = [];
});
const onInternalError = (err: unknown) => faults.push(err);

/** A developer's options with an injected clock; `tick(ms)` moves it (templates call it). */
function dev(c: FakeClock, extra: Record<string, unknown> = {}) {
  return { ...fixed(c), isDeveloper: () => true, results: false, onInternalError, ...extra };
}

function ticker(c: FakeClock) {
  return (ms: number) => {
    c.t += ms;
    return '';
  };
}

/** The text inside the one miniprof comment of a body. */
function comment(body: string): string {
  const m = body.match(/<!--\n(web-1 at [^]*?)-->/g);
  expect(m, 'exactly one miniprof comment').toHaveLength(1);
  return m![0]!.slice(5, -3);
}

/** Wait until every profile a test opened is sealed (a response's 'close' comes after the client has it). */
async function settled(): Promise<void> {
  for (let i = 0; i < 200 && openProfiles() > 0; i++) await new Promise((r) => setTimeout(r, 5));
  expect(openProfiles()).toBe(0);
}

// ---------------------------------------------------------------------------------------------
describe.each([
  ['Express 5', express5],
  ['Express 4', express4 as unknown as typeof express5],
])('%s: res.render', (_label, express) => {
  function app(c: FakeClock, options: Record<string, unknown> = {}): Express {
    const a = express();
    a.set('views', dir);
    a.engine('handlebars', hbsEngine({ defaultLayout: false, helpers: { tick: ticker(c) } }));
    a.set('view engine', 'ejs');
    a.use(expressMiniprof(dev(c, options)));
    a.get('/page', async (_req, res) => {
      c.t += 1;
      await step('load user', async () => {
        c.t += 2;
      });
      res.render('page', { title: 'Hi', tick: ticker(c) });
    });
    return a;
  }

  it('a view rendered with no callback is a step `render <view>`, and the root says how long was in no step', async () => {
    const c = fakeClock();
    const r = await request(app(c)).get('/page').expect(200);
    expect(comment(r.text)).toBe(`web-1 at ${STARTED}\nPath: GET /page\n GET /page = 8.0ms (1.0ms in no step)\n> load user = 2.0ms\n> render page = 5.0ms\n`);
    expect(r.text.startsWith('<!doctype html><html><body><h1>Hi</h1></body>')).toBe(false);
    expect(r.text.replace(/<!--[^]*?-->/, '')).toBe('<!doctype html><html><body><h1>Hi</h1></body></html>');
    expect(r.headers['server-timing']).toBe('load_user;dur=2.0;desc="load user", render_page;dur=5.0;desc="render page", total;dur=8.0');
  });

  it("with the app's callback: the step ends when the engine hands the page back, and the callback runs as before", async () => {
    const c = fakeClock();
    const a = express();
    a.set('views', dir);
    a.set('view engine', 'pug');
    a.use(expressMiniprof(dev(c)));
    a.get('/', (_req, res) => {
      res.render('page', { title: 'Pug', tick: ticker(c) }, (err: unknown, html: string) => {
        // Runs where the render step was current, after it ended: one level up, and no warning.
        step('after render', () => {
          c.t += 1;
        });
        res.type('html').send(err === null || err === undefined ? html.replace('Pug', 'Pug!') : 'no');
      });
    });
    const r = await request(a).get('/').expect(200);
    expect(comment(r.text)).toBe(`web-1 at ${STARTED}\nPath: GET /\n GET / = 5.0ms\n> render page = 4.0ms\n> after render = 1.0ms\n`);
    expect(r.text).toContain('<h1>Pug!</h1>');
  });

  it('the callback as the second argument, and an async engine (express-handlebars)', async () => {
    const c = fakeClock();
    const a = express();
    a.set('views', dir);
    a.engine('handlebars', hbsEngine({ defaultLayout: false, helpers: { tick: ticker(c) } }));
    a.set('view engine', 'handlebars');
    a.use(expressMiniprof(dev(c)));
    a.locals.title = 'Hbs';
    a.get('/', (_req, res) => res.render('page', (err: unknown, html: string) => res.type('html').send(err == null ? html : 'no')));
    const r = await request(a).get('/').expect(200);
    expect(comment(r.text)).toBe(`web-1 at ${STARTED}\nPath: GET /\n GET / = 3.0ms\n> render page = 3.0ms\n`);
    expect(r.text).toContain('<h1>Hbs</h1>');
  });

  it("an error in the view marks the step errored; the app's error handler gets the very same error", async () => {
    const c = fakeClock();
    const a = express();
    a.set('views', dir);
    a.set('view engine', 'ejs');
    a.use(expressMiniprof(dev(c)));
    a.get('/', (_req, res) => res.render('broken', { tick: ticker(c) }));
    let seen: unknown;
    a.use((err: Error, _req: Request, res: Response, _next: NextFunction) => {
      seen = err;
      res.status(500).type('html').send('<html><body>sorry</body></html>');
    });
    const r = await request(a).get('/').expect(500);
    expect((seen as Error).message).toContain('view failed');
    expect(comment(r.text)).toBe(`web-1 at ${STARTED}\nPath: GET /\n GET / = 2.0ms\n> render broken = 2.0ms (error)\n`);
    // With the app's callback, the callback gets the error instead, and nothing else happens.
    const b = express();
    b.set('views', dir);
    b.set('view engine', 'ejs');
    b.use(expressMiniprof(dev(c)));
    b.get('/', (_req, res) => res.render('broken', { tick: ticker(c) }, (err: Error) => res.status(503).type('html').send(`<p>${err.constructor.name}</p>`)));
    const r2 = await request(b).get('/').expect(503);
    expect(comment(r2.text)).toContain('\n> render broken = 2.0ms (error)\n');
  });

  it('autoSteps: false leaves res.render alone; a non-developer response is byte-identical and its res untouched', async () => {
    const c = fakeClock();
    const off = await request(app(c, { autoSteps: false })).get('/page').expect(200);
    expect(comment(off.text)).toBe(`web-1 at ${STARTED}\nPath: GET /page\n GET /page = 8.0ms (6.0ms in no step)\n> load user = 2.0ms\n`);
    let own: boolean[] = [];
    const make = (mp: boolean) => {
      const a = express();
      a.set('views', dir);
      a.set('view engine', 'ejs');
      if (mp) a.use(expressMiniprof({ isDeveloper: () => false }));
      a.get('/', (_req, res) => {
        own.push(Object.hasOwn(res, 'render'));
        res.render('page', { title: 'x', tick: () => '' });
      });
      return a;
    };
    const bare = await request(make(false)).get('/');
    const other = await request(make(true)).get('/');
    expect(other.text).toBe(bare.text);
    expect(other.headers['server-timing']).toBeUndefined();
    expect(own).toEqual([false, false]);
    own = [];
  });
});

// ---------------------------------------------------------------------------------------------
describe('Fastify: the route handler and @fastify/view', () => {
  const apps: FastifyInstance[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
    await settled();
  });

  async function build(c: FakeClock, options: Record<string, unknown> = {}, mp = true): Promise<FastifyInstance> {
    const app = Fastify();
    apps.push(app);
    if (mp) await app.register(fastifyMiniprof, { badge: false, ...dev(c), ...options });
    const hb = handlebars.create();
    hb.registerHelper('tick', (ms: number) => ticker(c)(ms));
    await app.register(fastifyView, { engine: { handlebars: hb }, root: dir });
    app.get('/users/:id', async (req, reply) => {
      c.t += 1;
      const user = await step('load user', async () => {
        c.t += 2;
        return { name: `user ${(req.params as { id: string }).id}` };
      });
      return reply.view('user.hbs', user);
    });
    app.get('/sync', (_req, reply) => {
      c.t += 4;
      reply.type('text/html').send('<html><body>sync</body></html>');
    });
    app.get('/throws', () => {
      c.t += 1;
      throw new Error('handler failed');
    });
    app.get('/rejects', async () => {
      c.t += 2;
      throw new Error('handler rejected');
    });
    app.setErrorHandler((err, _req, reply) => {
      c.t += 1;
      void reply.code(500).type('text/html').send(`<html><body>${(err as Error).message}</body></html>`);
    });
    await app.ready();
    return app;
  }

  it('a handler with no step() shows its step, named after the route; step() and the view nest inside it', async () => {
    const c = fakeClock();
    const app = await build(c);
    const r = await app.inject('/users/42');
    expect(r.statusCode).toBe(200);
    expect(comment(r.body)).toBe(
      `web-1 at ${STARTED}\nPath: GET /users/42\n GET /users/42 = 6.0ms\n> handler GET /users/:id = 6.0ms\n>> load user = 2.0ms\n>> render user.hbs = 3.0ms\n`,
    );
    expect(r.body.replace(/<!--[^]*?-->/, '')).toBe('<!doctype html><html><body><h1>user 42</h1></body></html>');
    // Server-Timing looks through the handler to the app's own steps, as without it.
    expect(r.headers['server-timing']).toBe('load_user;dur=2.0;desc="load user", render_user.hbs;dur=3.0;desc="render user.hbs", total;dur=6.0');
    const bare = await app.inject('/sync');
    expect(comment(bare.body)).toBe(`web-1 at ${STARTED}\nPath: GET /sync\n GET /sync = 4.0ms\n> handler GET /sync = 4.0ms\n`);
  });

  it('a handler that throws or rejects: its step is errored, and setErrorHandler answers as before', async () => {
    const c = fakeClock();
    const app = await build(c);
    const t = await app.inject('/throws');
    expect(t.statusCode).toBe(500);
    expect(comment(t.body)).toBe(`web-1 at ${STARTED}\nPath: GET /throws\n GET /throws = 2.0ms (1.0ms in no step)\n> handler GET /throws = 1.0ms (error)\n`);
    const r = await app.inject('/rejects');
    expect(comment(r.body)).toBe(`web-1 at ${STARTED}\nPath: GET /rejects\n GET /rejects = 3.0ms (1.0ms in no step)\n> handler GET /rejects = 2.0ms (error)\n`);
    expect(r.body.replace(/<!--[^]*?-->/, '')).toBe('<html><body>handler rejected</body></html>');
  });

  it('an error in the view: the render step is errored, the error reaches setErrorHandler', async () => {
    const c = fakeClock();
    const app = Fastify();
    apps.push(app);
    await app.register(fastifyMiniprof, { badge: false, ...dev(c) });
    await app.register(fastifyView, { engine: { ejs }, root: dir });
    app.get('/', (_req, reply) => reply.view('broken.ejs', { tick: ticker(c) }));
    let seen: unknown;
    app.setErrorHandler((err, _req, reply) => {
      seen = err;
      void reply.code(500).type('text/html').send('<html><body>sorry</body></html>');
    });
    const r = await app.inject('/');
    expect(r.statusCode).toBe(500);
    expect(String((seen as Error).message)).toContain('view failed');
    expect(comment(r.body)).toBe(`web-1 at ${STARTED}\nPath: GET /\n GET / = 2.0ms\n> handler GET / = 2.0ms (error)\n>> render broken.ejs = 2.0ms (error)\n`);
  });

  it('autoSteps: false: no handler step, no render step', async () => {
    const c = fakeClock();
    const app = await build(c, { autoSteps: false });
    const r = await app.inject('/users/7');
    expect(comment(r.body)).toBe(`web-1 at ${STARTED}\nPath: GET /users/7\n GET /users/7 = 6.0ms (4.0ms in no step)\n> load user = 2.0ms\n`);
  });

  it("the channel's store is bound only while a developer request is open; anyone else's response is the app's own", async () => {
    const start = channel('tracing:fastify.request.handler:start');
    const c = fakeClock();
    const bare = await build(c, {}, false);
    const other = await build(c, { isDeveloper: () => false });
    const a = await bare.inject('/users/1');
    const b = await other.inject('/users/1');
    expect(b.body).toBe(a.body);
    expect(b.headers).toEqual(a.headers);
    expect(start.hasSubscribers).toBe(false);
    const devApp = await build(c);
    await devApp.inject('/users/1');
    await settled();
    expect(start.hasSubscribers).toBe(false);
  });

  it('200 concurrent requests on real sockets, 1 in 4 not a developer\'s: each tree has its own handler step with its own steps inside', async () => {
    const app = Fastify();
    apps.push(app);
    await app.register(fastifyMiniprof, { badge: false, results: false, isDeveloper: (req) => req.headers['x-dev'] === '1', onInternalError });
    const profiles = new Map<number, Profile | undefined>();
    app.get('/r/:n', async (req) => {
      const n = (req.params as { n: string }).n;
      await step(`a${n}`, async () => {
        await new Promise((r) => setTimeout(r, Math.random() * 5));
        await Promise.all([step(`b${n}`, () => new Promise((r) => setTimeout(r, Math.random() * 5))), step(`c${n}`, () => new Promise((r) => setImmediate(r)))]);
      });
      profiles.set(Number(n), currentProfile());
      return { n };
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as net.AddressInfo).port;
    const results = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const res = await fetch(`http://127.0.0.1:${port}/r/${i}`, { headers: i % 4 === 0 ? {} : { 'x-dev': '1' } });
        await res.text();
        return { i, st: res.headers.get('server-timing') };
      }),
    );
    for (const { i, st } of results) {
      if (i % 4 === 0) expect(st).toBeNull();
      // The handler is looked through: the top steps are this request's own `a<i>`.
      else expect(st).toMatch(new RegExp(`^a${i};dur=[^]*total;dur=`));
    }
    await settled();
    const shape = (t: TimingJSON): unknown => (t.children.length === 0 ? t.name : { [t.name]: t.children.map(shape) });
    for (let i = 0; i < 200; i++) {
      const p = profiles.get(i);
      if (i % 4 === 0) expect(p).toBeUndefined();
      else expect(shape(p!.toJSON().root)).toEqual({ [`GET /r/${i}`]: [{ 'handler GET /r/:n': [{ [`a${i}`]: [`b${i}`, `c${i}`] }] }] });
    }
  });
});

// ---------------------------------------------------------------------------------------------
describe('Koa: ctx.render from koa-views and @ladjs/koa-views', () => {
  const servers: { close(): void }[] = [];
  afterEach(() => {
    for (const s of servers.splice(0)) s.close();
  });

  it('koa-views mounted after miniprof (EJS): ctx.render is a step', async () => {
    const c = fakeClock();
    const app = new Koa();
    app.use(koaMiniprof(dev(c)));
    app.use(koaViews(dir, { extension: 'ejs' }));
    app.use(async (ctx) => {
      c.t += 1;
      await ctx.render('page', { title: 'Koa', tick: ticker(c) });
    });
    const r = await request(app.callback()).get('/').expect(200);
    expect(comment(r.text)).toBe(`web-1 at ${STARTED}\nPath: GET /\n GET / = 6.0ms (1.0ms in no step)\n> render page = 5.0ms\n`);
    expect(r.text.replace(/<!--[^]*?-->/, '')).toBe('<!doctype html><html><body><h1>Koa</h1></body></html>');
  });

  it('@ladjs/koa-views mounted before miniprof (Nunjucks); an error in the view is errored and reaches Koa as before', async () => {
    const c = fakeClock();
    const app = new Koa();
    app.use(ladjsViews(dir, { map: { njk: 'nunjucks', ejs: 'ejs' } }));
    app.use(koaMiniprof(dev(c)));
    app.use(async (ctx) => {
      if (ctx.path === '/broken') return ctx.render('broken.ejs', { tick: ticker(c) });
      await ctx.render('page.njk', { title: 'Njk', tick: ticker(c) });
    });
    const errors: unknown[] = [];
    app.on('error', (err) => errors.push(err));
    const r = await request(app.callback()).get('/').expect(200);
    expect(comment(r.text)).toBe(`web-1 at ${STARTED}\nPath: GET /\n GET / = 6.0ms\n> render page.njk = 6.0ms\n`);
    const b = await request(app.callback()).get('/broken').expect(500);
    expect(b.text).toBe('Internal Server Error');
    expect(errors).toHaveLength(1);
    expect(String((errors[0] as Error).message)).toContain('view failed');
  });

  it('autoSteps: false, and a non-developer: ctx.render left as koa-views set it', async () => {
    const c = fakeClock();
    const kinds: string[] = [];
    for (const options of [{ autoSteps: false }, { isDeveloper: () => false }]) {
      const app = new Koa();
      app.use(koaMiniprof(dev(c, options)));
      app.use(koaViews(dir, { extension: 'ejs' }));
      app.use(async (ctx) => {
        kinds.push(typeof Object.getOwnPropertyDescriptor(ctx, 'render')?.get);
        await ctx.render('page', { title: 'K', tick: ticker(c) });
      });
      const r = await request(app.callback()).get('/').expect(200);
      if (options.autoSteps === false) expect(comment(r.text)).toBe(`web-1 at ${STARTED}\nPath: GET /\n GET / = 5.0ms\n`);
      else expect(r.text).toBe('<!doctype html><html><body><h1>K</h1></body></html>');
    }
    expect(kinds).toEqual(['undefined', 'undefined']);
  });
});

// ---------------------------------------------------------------------------------------------
describe('Hono: c.render', () => {
  it('setRenderer and a hono/jsx page: `render Page`, with the steps the page starts inside', async () => {
    const c = fakeClock();
    const app = new Hono();
    app.use(honoMiniprof(dev(c)));
    app.use(async (ctx, next) => {
      ctx.setRenderer((content) => ctx.html(`<!doctype html><html><body>${String(content)}</body></html>`));
      await next();
    });
    function Page(): unknown {
      c.t += 3;
      step('inside the page', () => {
        c.t += 1;
      });
      return jsx('h1', {}, 'Hono');
    }
    app.get('/', (ctx) => ctx.render(jsx(Page as never, {}) as never));
    app.get('/text', (ctx) => ctx.render('plain'));
    const r = await app.request('/');
    const body = await r.text();
    expect(comment(body)).toBe(`web-1 at ${STARTED}\nPath: GET /\n GET / = 4.0ms\n> render Page = 4.0ms\n>> inside the page = 1.0ms\n`);
    expect(body.replace(/<!--[^]*?-->/, '')).toBe('<!doctype html><html><body><h1>Hono</h1></body></html>');
    const t = await (await app.request('/text')).text();
    expect(comment(t)).toBe(`web-1 at ${STARTED}\nPath: GET /text\n GET /text = 0.0ms\n> render = 0.0ms\n`);
  });

  it('autoSteps: false leaves c.render alone', async () => {
    const c = fakeClock();
    const app = new Hono();
    app.use(honoMiniprof(dev(c, { autoSteps: false })));
    app.get('/', (ctx) => ctx.render('<html><body>x</body></html>'));
    const body = await (await app.request('/')).text();
    expect(comment(body)).toBe(`web-1 at ${STARTED}\nPath: GET /\n GET / = 0.0ms\n`);
  });
});

describe('autoSteps option', () => {
  it('a non-boolean is a coded TypeError at setup, naming what was given', () => {
    for (const make of [expressMiniprof, koaMiniprof, honoMiniprof] as ((o: unknown) => unknown)[]) {
      expect(() => make({ autoSteps: 'no' })).toThrow(expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_OPTION', message: expect.stringContaining('"autoSteps" must be a boolean, got "no" (string)') }));
    }
  });
});
