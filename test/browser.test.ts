/**
 * The pages in a real browser: Debian's Chromium (`/usr/bin/chromium`, apt-installed by
 * `npm test` first, scripts/services.mjs) driven by playwright-core, each run with a fresh
 * user-data dir. Screenshots go to test-artifacts/ (git-ignored). Durations come from an injected clock so the drawing is exact.
 */
import express from 'express';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { miniprof } from '../adapters/express.js';
import { memoryStore, step, timing, type ProfileJSON } from '../src/index.js';
import { closeServers, serve, waitFor } from './helpers/http.js';
import { chromiumPath } from './helpers/services.js';

// Run inside the page by playwright; the test's tsconfig has no DOM lib.
declare const document: { querySelectorAll(s: string): { length: number }; scrollingElement: { scrollWidth: number } };
declare function getComputedStyle(el: unknown): { borderCollapse: string };

const ARTIFACTS = resolve(import.meta.dirname, '..', 'test-artifacts');
/** `UPDATE_DOCS=1 npx vitest run test/browser.test.ts` also writes the README's screenshots. */
const DOCS = resolve(import.meta.dirname, '..', 'docs');
const README_SHOTS = new Set(['results-list.png', 'results-profile.png', 'results-profile-narrow.png']);

async function shoot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, name), fullPage: true });
  if (process.env.UPDATE_DOCS === '1' && README_SHOTS.has(name)) await page.screenshot({ path: join(DOCS, name), fullPage: true });
}
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
      await timing('sql', 'select id, name, email, created_at, updated_at, last_login_at, settings from users where id = 42 and deleted_at is null and tenant_id = 7 order by created_at desc', () => wait(11));
      await step('load posts', async () => {
        // The N+1: one query per author, values differ (similar, not duplicate).
        for (let i = 0; i < 12; i++) await timing('sql', `select * from posts where author_id = ${100 + i}`, () => wait(2 + (i % 4) * 0.5));
      });
      // The same query with the same values, twice: duplicate.
      for (let i = 0; i < 2; i++) await timing('sql', 'select * from settings where user_id = 42', () => wait(1.5));
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
  // The favicon is the app's own 404 with nothing timed: not kept.
  for (const path of ['/api/health', '/users/42', '/favicon.ico']) {
    const r = await fetch(base + path);
    await r.arrayBuffer();
    ids.push(r.headers.get('x-miniprof-id')!);
  }
  await waitFor(() => ids.slice(0, 2).every((id) => saved.includes(id)));
});

afterAll(async () => {
  for (const c of contexts) await c.close();
  await closeServers();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Each visible row of the steps table: its text, its marks, and where its bars are drawn. */
async function stepRows(page: Page) {
  return page.locator('table.steps tbody tr:visible').evaluateAll((trs) =>
    trs.map((tr) => {
      const svg = tr.querySelector('svg.bar')!.getBoundingClientRect();
      return {
        cls: tr.getAttribute('class')!,
        name: tr.querySelector('td.name')!.textContent!.replace(/\s+/g, ' ').trim(),
        marks: [...tr.querySelectorAll('td.marks .flag')].map((f) => f.textContent!),
        svg: { x: svg.x, width: svg.width },
        bars: [...tr.querySelectorAll('svg.bar rect')].map((r) => {
          const b = r.getBoundingClientRect();
          return { x: b.x, width: b.width, startMs: Number(r.getAttribute('data-start-ms')), durationMs: Number(r.getAttribute('data-duration-ms')) };
        }),
      };
    }),
  );
}

test('the list page: newest first, relative times, flags, no favicon; styled by its own stylesheet under the CSP', async () => {
  const ctx = await browser(true);
  const page = await ctx.newPage();
  const refused: string[] = [];
  page.on('console', (m) => {
    if (/Refused|Content Security Policy/i.test(m.text())) refused.push(m.text());
  });
  await page.setViewportSize({ width: 1280, height: 800 });
  const res = await page.goto(`${base}/_miniprof/`);
  expect(res!.status()).toBe(200);
  const rows = await page.locator('table.profiles tbody tr').allInnerTexts();
  expect(rows.length).toBe(2);
  expect(rows[0]).toContain('/users/42');
  expect(rows[1]).toContain('/api/health');
  expect(rows.join('\n')).not.toContain('favicon');
  expect(ids[2]).toMatch(/^[0-9a-f-]{36}$/);
  expect(await page.locator(`a[href$="${ids[2]}"]`).count()).toBe(0);
  expect(await page.locator('table.profiles tbody tr').first().locator('.flag').allInnerTexts()).toEqual(['blocking', 'duplicate', 'n+1']);
  for (const when of await page.locator('table.profiles time').allInnerTexts()) expect(when).toMatch(/^(just now|\d+ s ago)$/);
  expect(await page.locator('table').first().evaluate((el) => getComputedStyle(el).borderCollapse)).toBe('collapse');
  await shoot(page, 'results-list.png');
  expect(refused).toEqual([]);
});

test('the list filter: a plain GET form by path and by flag; a bad flag is named, not obeyed', async () => {
  const ctx = await browser(true);
  const page = await ctx.newPage();
  await page.goto(`${base}/_miniprof/`);
  await page.fill('form.filter input[name="path"]', 'HEALTH');
  await page.click('form.filter button[type="submit"]');
  await page.waitForURL(/path=HEALTH/);
  expect(new URL(page.url()).search).toBe('?path=HEALTH&flag=');
  expect(await page.locator('table.profiles tbody tr').allInnerTexts()).toEqual([expect.stringContaining('/api/health')]);
  expect(await page.inputValue('form.filter input[name="path"]')).toBe('HEALTH');
  await page.fill('form.filter input[name="path"]', '');
  await page.selectOption('form.filter select[name="flag"]', 'n+1');
  await page.click('form.filter button[type="submit"]');
  await page.waitForURL(/flag=n%2B1/);
  expect(await page.locator('table.profiles tbody tr').allInnerTexts()).toEqual([expect.stringContaining('/users/42')]);
  await page.selectOption('form.filter select[name="flag"]', 'error');
  await page.click('form.filter button[type="submit"]');
  await page.waitForURL(/flag=error/);
  expect(await page.locator('table.profiles').count()).toBe(0);
  expect(await page.locator('body').innerText()).toContain('No recent profile matches.');
  // Hostile query values come back as text, never as markup.
  await page.goto(`${base}/_miniprof/?path=%22%3E%3Cscript%3Ealert(1)%3C/script%3E&flag=%3Cb%3E`);
  expect(await page.inputValue('form.filter input[name="path"]')).toBe('"><script>alert(1)</script>');
  expect(await page.locator('ul.problems').innerText()).toBe('“<b>” is not a flag: showing every profile.');
  expect(await page.locator('b').count()).toBe(0);
  expect(await page.locator('script').count()).toBe(0);
});

test('the profile page: one table is timeline and tree; bars are the JSON to scale; marks as in the JSON; JavaScript off', async () => {
  const ctx = await browser(false);
  const page = await ctx.newPage();
  await page.setViewportSize({ width: 1280, height: 900 });
  const res = await page.goto(`${base}/_miniprof/${ids[1]}`);
  expect(res!.status()).toBe(200);
  const json = (await (await fetch(`${base}/_miniprof/${ids[1]}.json`)).json()) as ProfileJSON;
  expect(json.durationMs).toBe(86.25);
  expect(await page.locator('svg.timeline').count()).toBe(0);
  expect(await page.locator('table.steps').count()).toBe(1);
  await shoot(page, 'results-profile.png');
  // Folded: the 12 queries are one row until it is opened.
  const folded = await stepRows(page);
  expect(folded.map((r) => r.name)).toEqual([
    'GET /users/42',
    'authenticate',
    'load user <42>',
    'sql select id, name, email, created_at, updated_at, last_login_at, settings from users where id = ? and deleted_at is null and tenant_id = ? order by created_at desc',
    'load posts',
    '12 × sql select * from posts where author_id = ?',
    '2 × sql select * from settings where user_id = ?',
    'http GET https://api.example.com/avatar',
    'render',
  ]);
  const group = (shape: string) => json.similar!.find((g) => g.command === shape)!.id;
  const posts = group('select * from posts where author_id = ?');
  const settings = group('select * from settings where user_id = ?');
  const foldHead = folded[5]!;
  expect(foldHead.bars).toHaveLength(12);
  expect(foldHead.marks).toEqual([`similar #${posts}`]);
  expect(await page.locator('tr.fold-head .range').first().innerText()).toBe('2.0 ms–3.5 ms each');
  expect(folded[6]!.marks).toEqual(['duplicate', `similar #${settings}`]);
  expect(folded[8]!.marks).toEqual(['blocking 9.3 ms']);
  for (const s of await page.locator('summary').all()) await s.click();
  const all = await stepRows(page);
  expect(all).toHaveLength(1 + 1 + 1 + 1 + 1 + 1 + 12 + 1 + 2 + 1 + 1);
  // Every step and custom timing of the JSON, in the page's order: a step, then what ran inside it by start time.
  type Want = { name: string; durationMs: number; startMs: number; duplicate?: true; similar?: number; children?: ProfileJSON['root'][] };
  const want: Want[] = [];
  const walk = (t: ProfileJSON['root']) => {
    want.push(t);
    const inside: Want[] = [...(t.custom ?? []).map((c) => ({ ...c, name: c.command })), ...t.children];
    inside.sort((a, b) => a.startMs - b.startMs);
    for (const x of inside) if (x.children === undefined) want.push(x);
    else walk(x as ProfileJSON['root']);
  };
  walk(json.root);
  const plain = all.filter((r) => !r.cls.includes('fold-head'));
  expect(plain).toHaveLength(want.length);
  const span = json.durationMs;
  plain.forEach((r, i) => {
    const w = want[i]!;
    expect(r.name.replace(/^(sql|http) /, '')).toBe(w.name);
    expect(r.bars).toHaveLength(1);
    const bar = r.bars[0]!;
    expect(bar.durationMs).toBe(w.durationMs);
    expect(bar.width).toBeCloseTo((w.durationMs / span) * r.svg.width, 1);
    expect(bar.x - r.svg.x).toBeCloseTo((w.startMs / span) * r.svg.width, 1);
    // The page marks a row duplicate and similar exactly where the JSON does.
    expect(r.marks.includes('duplicate'), w.name).toBe(w.duplicate === true);
    expect(r.marks.some((m) => m.startsWith('similar #')), w.name).toBe(w.similar !== undefined);
  });
  expect(plain.filter((r) => r.marks.includes('duplicate'))).toHaveLength(2);
  expect(plain.filter((r) => r.marks.includes(`similar #${posts}`))).toHaveLength(12);
  await shoot(page, 'results-profile-open.png');
});

test('folded rows open and close on click, without JavaScript', async () => {
  const ctx = await browser(false);
  const page = await ctx.newPage();
  await page.goto(`${base}/_miniprof/${ids[1]}`);
  const members = page.locator('tbody.fold').first().locator('tr.member');
  expect(await members.count()).toBe(12);
  expect(await members.first().isVisible()).toBe(false);
  await page.locator('tbody.fold summary').first().click();
  for (const m of await members.all()) expect(await m.isVisible()).toBe(true);
  expect(await page.locator('tbody.fold').nth(1).locator('tr.member').first().isVisible()).toBe(false);
  await page.locator('tbody.fold summary').first().click();
  expect(await members.first().isVisible()).toBe(false);
});

test('a long command is cut to three lines and shown in full on hover', async () => {
  const ctx = await browser(false);
  const page = await ctx.newPage();
  await page.setViewportSize({ width: 420, height: 900 });
  await page.goto(`${base}/_miniprof/${ids[1]}`);
  const cmd = page.locator('code.cmd', { hasText: 'select id, name, email' });
  const size = () => cmd.evaluate((el) => ({ client: (el as unknown as { clientHeight: number }).clientHeight, scroll: (el as unknown as { scrollHeight: number }).scrollHeight }));
  const before = await size();
  expect(before.scroll).toBeGreaterThan(before.client);
  expect(await cmd.getAttribute('title')).toBe('select id, name, email, created_at, updated_at, last_login_at, settings from users where id = ? and deleted_at is null and tenant_id = ? order by created_at desc');
  await cmd.hover();
  const after = await size();
  expect(after.client).toBe(after.scroll);
  expect(after.client).toBeGreaterThan(before.client);
});

test('at 420 px nothing scrolls sideways: list, profile, and the profile with its folds open', async () => {
  const ctx = await browser(false);
  const page = await ctx.newPage();
  await page.setViewportSize({ width: 420, height: 900 });
  const width = () => page.evaluate(() => document.scrollingElement.scrollWidth);
  await page.goto(`${base}/_miniprof/`);
  expect(await width()).toBeLessThanOrEqual(420);
  await shoot(page, 'results-list-narrow.png');
  await page.goto(`${base}/_miniprof/${ids[1]}`);
  expect(await width()).toBeLessThanOrEqual(420);
  await shoot(page, 'results-profile-narrow.png');
  for (const s of await page.locator('summary').all()) await s.click();
  expect(await page.locator('tr.member:visible').count()).toBe(14);
  expect(await width()).toBeLessThanOrEqual(420);
  // Still readable: each row's bar keeps a usable width.
  for (const w of await page.locator('table.steps tbody tr:visible svg.bar').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().width))) {
    expect(w).toBeGreaterThan(150);
  }
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
