/**
 * The in-page badge in a real browser (issue 49): Debian's Chromium (`/usr/bin/chromium`) driven
 * by playwright-core, against real Express and Fastify servers on 127.0.0.1. Durations come from
 * an injected clock, so what the panel shows is exact. The page's stylesheet tries to break the
 * badge (`button { … !important }`), and its own script makes three `fetch` calls after load.
 * Content-Security-Policy is set by hand exactly as helmet and @fastify/helmet set it (neither is
 * installed): a nonce per response, in `res.locals.cspNonce` / `reply.cspNonce`.
 */
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { miniprof as expressMiniprof } from '../adapters/express.js';
import { miniprof as fastifyMiniprof } from '../adapters/fastify.js';
import { step, timing } from '../src/index.js';
import { BADGE_JS } from '../src/results/badge.js';
import { closeServers, serve } from './helpers/http.js';

// Run inside the page by playwright; the test's tsconfig has no DOM lib.
declare const document: any;
declare const window: any;
declare function getComputedStyle(el: unknown): { backgroundColor: string; fontSize: string; letterSpacing: string };

const DOCS = resolve(import.meta.dirname, '..', 'docs');
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

let browser: Browser;
let t = 0;
const fastifies: FastifyInstance[] = [];
const port = { express: 0, fastify: 0, nobody: 0 };

type Csp = 'none' | 'self' | 'nonce' | 'blocked';

/** `script-src 'self'`: the badge is a same-origin script, its styles a constructable stylesheet. */
const SELF = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'self'";

/**
 * helmet's default directives with its documented nonce (`'nonce-…'` in script-src, and in
 * style-src as @fastify/helmet's enableCSPNonces adds it), made strict: `'strict-dynamic'` instead
 * of `'self'`, so only the nonce admits a script. `upgrade-insecure-requests` is left out, as
 * for any app served over plain http in development.
 */
function helmetNonce(script: string, style: string): string {
  return (
    "default-src 'self';base-uri 'self';font-src 'self' https: data:;form-action 'self';frame-ancestors 'self';" +
    `img-src 'self' data:;object-src 'none';script-src 'nonce-${script}' 'strict-dynamic';script-src-attr 'none';` +
    `style-src 'self' https: 'unsafe-inline' 'nonce-${style}'`
  );
}

function cspOf(url: string): Csp {
  const m = /[?&]csp=(self|nonce|blocked)/.exec(url);
  return m === null ? 'none' : (m[1] as Csp);
}

/** The page: its own stylesheet, and its own script that makes three fetch calls after load. */
function html(nonce: string | undefined): string {
  const n = nonce === undefined ? '' : ` nonce="${nonce}"`;
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Ada Lovelace · Acme</title><link rel="icon" href="data:,">' +
    '<link rel="stylesheet" href="/app.css"></head><body>' +
    '<header><b>Acme</b> · Users · Orders · Stock</header><main><h1>Ada Lovelace</h1>' +
    '<p>Member since 1843 · 12 posts · 3 open orders</p><ul id="out"></ul></main>' +
    `<script src="/three.js" defer${n}></script></body></html>`
  );
}

/** The app's stylesheet: it tries hard to restyle every button and all text on the page. */
const APP_CSS =
  'body{font:16px/1.5 Georgia,serif;margin:0;color:#222;background:#fafafa}header{background:#24292f;color:#fff;padding:12px 24px}' +
  'main{padding:8px 24px}button{background:hotpink!important;color:lime!important;font:24px serif!important;border:4px dashed red!important}' +
  '*{letter-spacing:3px}';

/** Three calls after the page loaded (and an XHR with `?xhr`), then a mark the test waits for. */
const THREE_JS =
  "if (location.search.indexOf('xhr') >= 0) { var x = new XMLHttpRequest(); x.open('GET', '/api/xhr'); x.send(); }" +
  "Promise.all([fetch('/api/users/42/posts'), fetch('/api/users/42/visits', { method: 'POST' }), fetch('/api/stock?item=7')])" +
  ".then(function (rs) { return Promise.all(rs.map(function (r) { return r.json(); })); })" +
  ".then(function (all) { document.getElementById('out').textContent = all.length + ' loaded'; document.body.setAttribute('data-done', '1'); });";

// Time passes only in the handlers, synchronously or after an await of nothing: the profiles'
// durations are exact whatever the machine's load.
const wait = async (ms: number) => {
  await null;
  t += ms;
};

async function pageWork(): Promise<void> {
  await step('authenticate', () => wait(4));
  await step('load user', async () => {
    await wait(2);
    await timing('sql', 'select * from users where id = ?', () => wait(11));
    await step('load posts', async () => {
      for (let i = 0; i < 3; i++) {
        // A pool checkout before each query (plumbing, as OpenTelemetry's pg-pool.connect spans).
        await timing('connect', 'pg-pool.connect', () => wait(0));
        await timing('sql', 'select * from posts where user_id = ?', () => wait(6.5));
      }
    });
    await wait(1);
  });
  await timing('http', 'GET https://api.example.com/avatar', () => wait(23));
  // Synchronous and over blockingMs: flagged as blocking.
  step('render', () => {
    t += 9.25;
  });
}

function apiWork(name: string, ms: number): { name: string } {
  step(name, () => {
    t += ms;
    timing('sql', `select * from ${name.split(' ')[1]} where user_id = ?`, () => {
      t += ms / 2;
    });
  });
  return { name };
}

const OPTIONS = { clock: () => t, blockingMs: 8, machine: 'web-1' };

function expressApp(developer: boolean): express.Express {
  const app = express();
  // helmet's documented pattern: a fresh nonce per response in res.locals.cspNonce.
  app.use((req, res, next) => {
    res.locals.cspNonce = randomBytes(16).toString('base64');
    const csp = cspOf(req.url);
    if (csp === 'self') res.setHeader('Content-Security-Policy', SELF);
    if (csp === 'nonce') res.setHeader('Content-Security-Policy', helmetNonce(res.locals.cspNonce, res.locals.cspNonce));
    if (csp === 'blocked') res.setHeader('Content-Security-Policy', "script-src 'none'");
    next();
  });
  app.use(expressMiniprof({ isDeveloper: () => developer, ...OPTIONS }));
  app.get('/users/42', async (req, res) => {
    await pageWork();
    res.type('html').send(html(cspOf(req.url) === 'nonce' ? res.locals.cspNonce : undefined));
  });
  app.get('/app.css', (_req, res) => res.type('css').send(APP_CSS));
  app.get('/three.js', (_req, res) => res.type('js').send(THREE_JS));
  app.get('/api/users/42/posts', (_req, res) => res.json(apiWork('load posts', 2)));
  app.post('/api/users/42/visits', (_req, res) => res.json(apiWork('record visits', 3)));
  app.get('/api/stock', (_req, res) => res.json(apiWork('check stock', 4)));
  app.get('/api/xhr', (_req, res) => res.json(apiWork('read xhr', 1)));
  return app;
}

async function fastifyApp(): Promise<number> {
  const app = Fastify();
  fastifies.push(app);
  // What @fastify/helmet does with enableCSPNonces: reply.cspNonce = { script, style }, and both in the header.
  app.decorateReply('cspNonce', null);
  app.addHook('onRequest', async (request, reply) => {
    const nonce = { script: randomBytes(16).toString('base64'), style: randomBytes(16).toString('base64') };
    (reply as never as { cspNonce: typeof nonce }).cspNonce = nonce;
    const csp = cspOf(request.url);
    if (csp === 'self') reply.header('Content-Security-Policy', SELF);
    if (csp === 'nonce') reply.header('Content-Security-Policy', helmetNonce(nonce.script, nonce.style));
  });
  await app.register(fastifyMiniprof, { isDeveloper: () => true, ...OPTIONS });
  app.get('/users/42', async (request, reply) => {
    await pageWork();
    const nonce = (reply as never as { cspNonce: { script: string } }).cspNonce.script;
    return reply.type('text/html; charset=utf-8').send(html(cspOf(request.url) === 'nonce' ? nonce : undefined));
  });
  app.get('/app.css', async (_req, reply) => reply.type('text/css').send(APP_CSS));
  app.get('/three.js', async (_req, reply) => reply.type('text/javascript').send(THREE_JS));
  app.get('/api/users/42/posts', async () => apiWork('load posts', 2));
  app.post('/api/users/42/visits', async () => apiWork('record visits', 3));
  app.get('/api/stock', async () => apiWork('check stock', 4));
  app.get('/api/xhr', async () => apiWork('read xhr', 1));
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as { port: number }).port;
}

beforeAll(async () => {
  mkdirSync(DOCS, { recursive: true });
  port.express = await serve(expressApp(true));
  port.nobody = await serve(expressApp(false));
  port.fastify = await fastifyApp();
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ARGS });
});

afterAll(async () => {
  await browser?.close();
  await closeServers();
  for (const f of fastifies.splice(0)) await f.close();
});

interface Watched {
  page: Page;
  /** CSP violations (securitypolicyviolation events), console errors and uncaught page errors. */
  problems: string[];
}

async function open(url: string, scale = 1): Promise<Watched> {
  const ctx = await browser.newContext({ viewport: { width: 1100, height: 720 }, deviceScaleFactor: scale });
  const page = await ctx.newPage();
  const problems: string[] = [];
  // Installed by the browser before any script of the page, and not subject to its CSP.
  await page.addInitScript(() => {
    window.__violations = [];
    document.addEventListener('securitypolicyviolation', (e: any) => window.__violations.push(`${e.violatedDirective} ${e.blockedURI}`));
  });
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`console.${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  const res = await page.goto(url);
  expect(res!.status()).toBe(200);
  return { page, problems };
}

async function violations(w: Watched): Promise<string[]> {
  return [...w.problems, ...((await w.page.evaluate(() => window.__violations)) as string[])];
}

const badge = (p: Page) => p.locator('miniprof-badge button.badge');

/** Every row of the list: method, path, duration. */
async function listed(p: Page): Promise<string[]> {
  return p.locator('miniprof-badge ol .row').evaluateAll((rows) =>
    rows.map((r: any) => [...r.querySelectorAll('.meth, .path, .dur')].map((s: any) => s.textContent).join(' ')),
  );
}

const PAGE_ROWS = [
  'GET /users/42 69.8 ms',
  'GET /api/users/42/posts 3.0 ms',
  'POST /api/users/42/visits 4.5 ms',
  'GET /api/stock 6.0 ms',
];

describe.each(['express', 'fastify'] as const)('%s', (framework) => {
  for (const csp of ['none', 'self', 'nonce'] as const) {
    test(`CSP ${csp}: the badge shows the page's time and marks, opens on the tree, and lists the three fetch calls; no violation, no console error`, async () => {
      const w = await open(`http://127.0.0.1:${port[framework]}/users/42${csp === 'none' ? '' : `?csp=${csp}`}`);
      const p = w.page;
      await p.locator('body[data-done="1"]').waitFor();
      const parts = () => badge(p).evaluate((b: any) => [...b.querySelectorAll('.t, .f, .n')].map((s: any) => s.textContent));
      await expect.poll(parts).toEqual(['69.8 ms', 'blocking', 'N+1', '+3']);
      expect(await badge(p).getAttribute('aria-label')).toBe('miniprof: 69.8 ms, blocking, N+1, 3 more requests');
      // The app's `button { … !important }` and `* { letter-spacing }` do not reach inside.
      const style = await badge(p).evaluate((b: any) => {
        const s = getComputedStyle(b);
        return [s.backgroundColor, s.fontSize, s.letterSpacing].join(' ');
      });
      expect(style).toBe('rgb(255, 255, 255) 12px normal');

      await badge(p).click();
      const panel = p.locator('miniprof-badge section.panel');
      await panel.waitFor();
      // Sorted by the server's ids would be random: the page first, then in the order seen.
      expect((await listed(p)).sort()).toEqual([...PAGE_ROWS].sort());
      expect((await listed(p))[0]).toBe(PAGE_ROWS[0]);
      const tree = () => panel.locator('table tr').evaluateAll((rows) =>
        rows.map((r: any) => (r.hidden ? 'hidden: ' : '') + [...r.querySelectorAll('.fx, .cat, .tx, .f, td.ms')].map((x: any) => x.textContent).join(' ')),
      );
      // The loop's step names its N+1; its three queries fold into one row with their wall time,
      // as on the results page (issue 59 items 5, 9). `?` with no values: similar, not duplicates.
      const member = 'sql select * from posts where user_id = ? similar #1 6.5 ms';
      const folded = [
        'GET /users/42 69.8 ms',
        // Fastify's handler as an automatic step (issue 61).
        ...(framework === 'fastify' ? ['handler GET /users/42 69.8 ms'] : []),
        'authenticate 4.0 ms',
        'load user 33.5 ms',
        'sql select * from users where id = ? 11.0 ms',
        'load posts N+1 ×3 19.5 ms',
        // The first checkout comes before the run; the others, between its members, fold with them.
        'connect pg-pool.connect 0.0 ms',
        '▸ sql 3 × select * from posts where user_id = ? 19.5 ms',
        `hidden: ${member}`,
        'hidden: connect pg-pool.connect 0.0 ms',
        `hidden: ${member}`,
        'hidden: connect pg-pool.connect 0.0 ms',
        `hidden: ${member}`,
        'http GET https://api.example.com/avatar 23.0 ms',
        'render blocking 9.3 ms',
      ];
      expect(await tree()).toEqual(folded);
      await panel.locator('tr.fold button.fx').click();
      expect(await tree()).toEqual(folded.map((r) => r.replace('▸', '▾').replace('hidden: ', '')));
      expect(await panel.locator('tr.fold button.fx').getAttribute('aria-expanded')).toBe('true');
      const id = await p.evaluate(() => document.querySelector('script[data-id]').getAttribute('data-id'));
      expect(await panel.locator('.facts a').getAttribute('href')).toBe(`/_miniprof/${id}`);

      // Each fetch has its own tree.
      await panel.locator('ol .row', { hasText: '/api/users/42/visits' }).click();
      await expect.poll(async () => (await panel.locator('table tr').allInnerTexts()).filter((r) => !r.startsWith('handler '))).toEqual([
        expect.stringMatching(/^POST \/api\/users\/42\/visits\s+4\.5 ms/),
        expect.stringMatching(/^record visits\s+4\.5 ms/),
        expect.stringMatching(/^sql\s*select \* from visits where user_id = \?\s+1\.5 ms/),
      ]);
      expect(await violations(w)).toEqual([]);
      await p.context().close();
    });
  }
});

test.each(['express', 'fastify'] as const)('%s: an XMLHttpRequest is listed like a fetch', async (framework) => {
  const w = await open(`http://127.0.0.1:${port[framework]}/users/42?xhr=1`);
  const p = w.page;
  await expect.poll(() => badge(p).locator('.n').innerText()).toBe('+4');
  await badge(p).click();
  await expect.poll(async () => (await listed(p)).sort()).toEqual([...PAGE_ROWS, 'GET /api/xhr 1.5 ms'].sort());
  expect(await violations(w)).toEqual([]);
  await p.context().close();
});

test('a non-developer gets no badge, and no badge.js', async () => {
  const w = await open(`http://127.0.0.1:${port.nobody}/users/42?csp=self`);
  await w.page.locator('body[data-done="1"]').waitFor();
  expect(await w.page.locator('miniprof-badge').count()).toBe(0);
  expect(await w.page.evaluate(() => document.querySelectorAll('script').length)).toBe(1);
  const js = await w.page.request.get(`http://127.0.0.1:${port.nobody}/_miniprof/badge.js`);
  expect(js.status()).toBe(404);
  expect(await js.text()).toContain('Cannot GET /_miniprof/badge.js');
  expect(await violations(w)).toEqual([]);
  await w.page.context().close();
});

test('a policy that blocks the badge anyway: the page works, the comment is there, only the violation is reported', async () => {
  const w = await open(`http://127.0.0.1:${port.express}/users/42?csp=blocked`);
  const p = w.page;
  expect(await p.locator('h1').innerText()).toBe('Ada Lovelace');
  const comment = await p.evaluate(() => [...document.body.childNodes].filter((n: any) => n.nodeType === 8).map((n: any) => n.data.split('\n')[2]));
  expect(comment).toEqual(['Path: GET /users/42']);
  expect(await p.locator('miniprof-badge').count()).toBe(0);
  await expect.poll(() => violations(w)).toContainEqual(expect.stringMatching(/^script-src-elem http:\/\/127\.0\.0\.1:\d+\/_miniprof\/badge\.js\?v=/));
  await p.context().close();
});

test('keyboard: Tab reaches the button, Enter opens the panel with focus on the page row, Escape closes it and gives focus back', async () => {
  const w = await open(`http://127.0.0.1:${port.express}/users/42?csp=nonce`);
  const p = w.page;
  await expect.poll(() => badge(p).innerText()).toContain('+3');
  const focused = () => p.evaluate(() => {
    const host = document.activeElement;
    const inner = host?.shadowRoot?.activeElement;
    return inner ? `${host.localName} ${inner.localName}.${inner.classList[0]} ${inner.getAttribute('aria-expanded') ?? ''}`.trim() : host?.localName;
  });
  await p.keyboard.press('Tab');
  expect(await focused()).toBe('miniprof-badge button.badge false');
  await p.keyboard.press('Enter');
  expect(await p.locator('miniprof-badge section.panel').isVisible()).toBe(true);
  expect(await focused()).toBe('miniprof-badge button.row');
  expect(await p.evaluate(() => document.activeElement.shadowRoot.activeElement.textContent)).toContain('/users/42');
  await p.keyboard.press('Tab');
  await p.keyboard.press('Enter');
  expect(await p.locator('miniprof-badge ol .row[aria-current="true"]').innerText()).toContain('/api/');
  await p.keyboard.press('Escape');
  expect(await p.locator('miniprof-badge section.panel').isVisible()).toBe(false);
  expect(await focused()).toBe('miniprof-badge button.badge false');
  await p.keyboard.press('Enter');
  expect(await p.locator('miniprof-badge section.panel').isVisible()).toBe(true);
  expect(await violations(w)).toEqual([]);
  await p.context().close();
});

test('at 420 px the tree keeps its commands readable: no bars, commands wrap in the whole width, never cut to a few letters', async () => {
  const ctx = await browser.newContext({ viewport: { width: 420, height: 800 } });
  const p = await ctx.newPage();
  await p.goto(`http://127.0.0.1:${port.express}/users/42`);
  await expect.poll(() => badge(p).innerText()).toContain('+3');
  await badge(p).click();
  const panel = p.locator('miniprof-badge section.panel');
  await expect.poll(() => panel.locator('tr.fold').count()).toBe(1);
  await panel.locator('tr.fold button.fx').click();
  const cells = await panel.locator('tr.c .tx, tr.fold .tx').evaluateAll((els) =>
    els.map((e: any) => ({ text: e.textContent, w: e.getBoundingClientRect().width, sw: e.scrollWidth, cw: e.clientWidth, sh: e.scrollHeight, ch: e.clientHeight })),
  );
  expect(cells.length).toBe(9);
  const panelWidth = (await panel.boundingBox())!.width;
  // calc(100vw - 24px) and its 1 px borders.
  expect(panelWidth).toBeLessThanOrEqual(420 - 24 + 2);
  for (const c of cells) {
    // Whole: nothing cut off to the side or below, in at least half the panel's width.
    expect(c.sw, c.text).toBeLessThanOrEqual(c.cw);
    expect(c.sh, c.text).toBeLessThanOrEqual(c.ch + 1);
    expect(c.w, c.text).toBeGreaterThanOrEqual(Math.min(panelWidth / 2, c.sw));
  }
  expect(await panel.locator('td.bar').evaluateAll((els) => els.filter((e: any) => e.getBoundingClientRect().width > 0).length)).toBe(0);
  await p.screenshot({ path: resolve(DOCS, 'badge-420.png') });
  await ctx.close();
});

test('screenshot of the open panel for the README (docs/badge.png); the script is at most 20 KB', async () => {
  expect(Buffer.byteLength(BADGE_JS)).toBeLessThanOrEqual(20_000);
  const w = await open(`http://127.0.0.1:${port.express}/users/42?csp=nonce`, 2);
  const p = w.page;
  await expect.poll(() => badge(p).innerText()).toContain('+3');
  await badge(p).click();
  await expect.poll(() => listed(p).then((l) => l.length)).toBe(4);
  const box = (await p.locator('miniprof-badge').boundingBox())!;
  const m = 16;
  await p.screenshot({ path: resolve(DOCS, 'badge.png'), clip: { x: box.x - m, y: box.y - m, width: box.width + 2 * m, height: box.height + 2 * m } });
  expect(await violations(w)).toEqual([]);
  await p.context().close();
});
