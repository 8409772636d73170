/**
 * The pages in a real browser: Debian's Chromium (`/usr/bin/chromium`, apt-installed by
 * `npm test` first, scripts/services.mjs) driven by playwright-core, each run with a fresh
 * user-data dir. Screenshots go to test-artifacts/ (git-ignored). Durations come from an injected clock so the drawing is exact.
 */
import express from 'express';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { miniprof } from '../adapters/express.js';
import { memoryStore, step, timing, type ProfileJSON } from '../src/index.js';
import { closeServers, serve, waitFor } from './helpers/http.js';
import { chromiumPath } from './helpers/services.js';

// Run inside the page by playwright; the test's tsconfig has no DOM lib.
declare const document: { querySelectorAll(s: string): { length: number } };
declare function getComputedStyle(el: unknown): { borderCollapse: string };

const ARTIFACTS = resolve(import.meta.dirname, '..', 'test-artifacts');
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

let base = '';
let ids: string[] = [];
const dirs: string[] = [];
const contexts: BrowserContext[] = [];

const open = new Map<boolean, Promise<BrowserContext>>();

/** One Chromium per JavaScript setting, shared by the tests (a launch takes seconds). */
function browser(javaScriptEnabled: boolean): Promise<BrowserContext> {
  let ctx = open.get(javaScriptEnabled);
  if (ctx === undefined) open.set(javaScriptEnabled, (ctx = launch(javaScriptEnabled)));
  return ctx;
}

async function launch(javaScriptEnabled: boolean): Promise<BrowserContext> {
  const dir = mkdtempSync(join(tmpdir(), 'miniprof-chromium-'));
  dirs.push(dir);
  const ctx = await chromium.launchPersistentContext(dir, {
    executablePath: chromiumPath(),
    headless: true,
    args: ARGS,
    javaScriptEnabled,
    viewport: { width: 1200, height: 900 },
  });
  contexts.push(ctx);
  return ctx;
}

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  let t = 0;
  const store = memoryStore();
  const saved: string[] = [];
  const app = express();
  app.use(
    miniprof({
      isDeveloper: () => true,
      clock: () => t,
      machine: 'web-1',
      blockingMs: 5,
      results: {
        store: {
          save: async (o, p) => {
            await store.save(o, p);
            saved.push(p.id);
          },
          get: (o, id) => store.get(o, id),
          list: (o, n) => store.list(o, n),
        },
      },
    }),
  );
  // Time passes only after an await, so no async step has a long synchronous part.
  const wait = async (ms: number) => {
    await null;
    t += ms;
  };
  app.get('/users/:id', async (_req, res) => {
    await step('authenticate', () => wait(4));
    await step('load user <42>', async () => {
      await wait(2);
      await timing('sql', 'select * from users where id = ?', () => wait(11));
      await step('load posts', async () => {
        for (let i = 0; i < 3; i++) await timing('sql', 'select * from posts where user_id = ?', () => wait(6.5));
      });
      await wait(1);
    });
    await timing('http', 'GET https://api.example.com/avatar', () => wait(23));
    // Synchronous and over blockingMs: marked as blocking.
    step('render', () => {
      t += 9.25;
    });
    res.type('html').send('<!doctype html><html><body><h1>User 42</h1></body></html>');
  });
  app.get('/api/health', async (_req, res) => {
    t += 1.5;
    res.json({ ok: true });
  });
  const port = await serve(app);
  base = `http://127.0.0.1:${port}`;
  for (const path of ['/api/health', '/users/42']) {
    const r = await fetch(base + path);
    await r.arrayBuffer();
    ids.push(r.headers.get('x-miniprof-id')!);
  }
  await waitFor(() => ids.every((id) => saved.includes(id)));
});

afterAll(async () => {
  for (const c of contexts) await c.close();
  await closeServers();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test('the list page renders, newest first, styled by its own stylesheet under the CSP', async () => {
  const ctx = await browser(true);
  const page = await ctx.newPage();
  const refused: string[] = [];
  page.on('console', (m) => {
    if (/Refused|Content Security Policy/i.test(m.text())) refused.push(m.text());
  });
  const res = await page.goto(`${base}/_miniprof/`);
  expect(res!.status()).toBe(200);
  const rows = await page.locator('table.profiles tbody tr').allInnerTexts();
  expect(rows.length).toBe(2);
  expect(rows[0]).toContain('/users/42');
  expect(rows[1]).toContain('/api/health');
  expect(rows[0]).toContain('duplicates');
  expect(await page.locator('table').first().evaluate((el) => getComputedStyle(el).borderCollapse)).toBe('collapse');
  await page.screenshot({ path: join(ARTIFACTS, 'results-list.png'), fullPage: true });
  expect(refused).toEqual([]);
});

test('the profile page: timeline bars are the JSON durations to scale, and it works with JavaScript off', async () => {
  const ctx = await browser(false);
  const page = await ctx.newPage();
  const res = await page.goto(`${base}/_miniprof/${ids[1]}`);
  expect(res!.status()).toBe(200);
  const json = (await (await fetch(`${base}/_miniprof/${ids[1]}.json`)).json()) as ProfileJSON;
  expect(json.durationMs).toBe(69.75);
  // Every step and custom timing of the JSON: a step, then what ran inside it by start time.
  type Want = { name: string; durationMs: number; startMs: number; children?: ProfileJSON['root'][] };
  const want: Want[] = [];
  const walk = (t: ProfileJSON['root']) => {
    want.push(t);
    const inside: Want[] = [...(t.custom ?? []).map((c) => ({ name: `[${c.category}] ${c.command}`, durationMs: c.durationMs, startMs: c.startMs })), ...t.children];
    inside.sort((a, b) => a.startMs - b.startMs);
    for (const x of inside) if (x.children === undefined) want.push(x);
    else walk(x as ProfileJSON['root']);
  };
  walk(json.root);
  expect(want.map((w) => w.name)).toEqual([
    'GET /users/42',
    'authenticate',
    'load user <42>',
    '[sql] select * from users where id = ?',
    'load posts',
    '[sql] select * from posts where user_id = ?',
    '[sql] select * from posts where user_id = ?',
    '[sql] select * from posts where user_id = ?',
    '[http] GET https://api.example.com/avatar',
    'render',
  ]);
  const bars = await page.locator('svg.timeline rect.bar').evaluateAll((els) =>
    els.map((el) => {
      const b = el.getBoundingClientRect();
      return { x: b.x, width: b.width, title: el.querySelector('title')!.textContent! };
    }),
  );
  expect(bars.length).toBe(want.length);
  const rootBar = bars[0]!;
  const pxPerMs = rootBar.width / json.durationMs;
  expect(pxPerMs).toBeCloseTo(640 / 69.75, 3);
  want.forEach((w, i) => {
    expect(bars[i]!.title.startsWith(w.name)).toBe(true);
    expect(bars[i]!.width).toBeCloseTo(w.durationMs * pxPerMs, 2);
    expect(bars[i]!.x - rootBar.x).toBeCloseTo(w.startMs * pxPerMs, 2);
  });
  // Readable without JavaScript: the tree and the marks are in the HTML itself.
  const tree = await page.locator('table.tree').innerText();
  expect(tree).toContain('load user <42>');
  expect(tree).toContain('select * from posts where user_id = ?');
  expect(await page.locator('table.tree .flag.duplicate').count()).toBe(3);
  expect(await page.locator('table.tree .flag.blocking').count()).toBe(1);
  expect(await page.locator('svg.timeline rect.bar.blocking').count()).toBe(1);
  expect(await page.locator('table').first().evaluate((el) => getComputedStyle(el).borderCollapse)).toBe('collapse');
  await page.screenshot({ path: join(ARTIFACTS, 'results-profile.png'), fullPage: true });
});

test('no script runs on the pages: an inline script in the document would be blocked by the CSP', async () => {
  const ctx = await browser(true);
  const page = await ctx.newPage();
  await page.goto(`${base}/_miniprof/${ids[1]}`);
  const csp = await page.evaluate(() => document.querySelectorAll('script:not([type="application/json"])').length);
  expect(csp).toBe(0);
  // The embedded JSON is a data block: it parses back to the profile.
  const embedded = await page.locator('#miniprof-profile').textContent();
  expect(JSON.parse(embedded!).id).toBe(ids[1]);
});
