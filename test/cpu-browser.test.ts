/**
 * A CPU-sampled request in a real browser (Debian's Chromium through playwright-core): the page's
 * icicle chart draws under the results pages' strict CSP (no script, no inline style), and the
 * badge's "Profile CPU" button makes the next load of the page sampled, once. Screenshots go to
 * test-artifacts/; `UPDATE_DOCS=1` also writes docs/cpu-profile.png for the README.
 */
import express from 'express';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { miniprof } from '../adapters/express.js';
import { memoryStore, step, timing, type ProfileJSON } from '../src/index.js';
import { resetCpuCooldown } from '../src/analysis/cpu-sampler.js';
import { closeServers, serve, waitFor } from './helpers/http.js';
import { chromiumPath } from './helpers/services.js';
// @ts-expect-error plain JavaScript fixture, typed below
import * as work from './fixtures/cpu-work.mjs';

const { scoreRows, renderReport, churn } = work as { scoreRows: (n: number) => unknown[]; renderReport: (n: number) => string; churn: (mb: number) => number };

declare const document: { cookie: string };

const ARTIFACTS = resolve(import.meta.dirname, '..', 'test-artifacts');
const DOCS = resolve(import.meta.dirname, '..', 'docs');

let base = '';
let ctx: BrowserContext;
let dir = '';
const store = memoryStore();
const saved: ProfileJSON[] = [];

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  const app = express();
  app.use(
    miniprof({
      isDeveloper: () => true,
      results: {
        store: {
          save: async (o, p) => {
            await store.save(o, p);
            saved.push(p);
          },
          get: (o, id) => store.get(o, id),
          list: (o, n) => store.list(o, n),
        },
      },
    }),
  );
  app.get('/report', async (_req, res) => {
    await step('authenticate', () => new Promise((r) => setTimeout(r, 3)));
    const rows = await step('load rows', async () => {
      await timing('sql', 'select * from rows where owner_id = 7', () => new Promise((r) => setTimeout(r, 8)));
      return 4000;
    });
    await step('score', async () => {
      await new Promise((r) => setTimeout(r, 1));
      scoreRows(20000);
      churn(6);
    });
    const html = step('render', () => renderReport(rows));
    res.type('html').send(`<!doctype html><html><head><title>Report</title></head><body><h1>Report</h1>${html.length} bytes</body></html>`);
  });
  base = `http://127.0.0.1:${await serve(app)}`;
  dir = mkdtempSync(join(tmpdir(), 'miniprof-chromium-'));
  ctx = await chromium.launchPersistentContext(dir, {
    executablePath: chromiumPath(),
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1200, height: 900 },
  });
});

afterAll(async () => {
  await ctx?.close();
  await closeServers();
  rmSync(dir, { recursive: true, force: true });
});

describe('the CPU section in Chromium', () => {
  // Each test samples once: no cooldown between them (test/cpu.test.ts tests the cooldown).
  beforeEach(() => resetCpuCooldown());

  it('draws the icicle chart under the strict CSP, with each function named on hover', async () => {
    const r = await fetch(`${base}/report`, { headers: { 'x-miniprof-cpu': '1' } });
    await r.text();
    const id = r.headers.get('x-miniprof-id')!;
    await waitFor(() => saved.some((p) => p.id === id));
    const page = await ctx.newPage();
    const refused: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy|Refused/.test(m.text())) refused.push(m.text());
    });
    await page.goto(`${base}/_miniprof/${id}`);
    const flame = page.locator('svg.flame');
    await expect(flame.isVisible()).resolves.toBe(true);
    const box = (await flame.boundingBox())!;
    expect(box.width).toBeGreaterThan(600);
    expect(box.height).toBeGreaterThan(30);
    const titles = await page.locator('svg.flame g title').allTextContents();
    expect(titles.some((t) => t.startsWith('scoreRows test/fixtures/cpu-work.mjs:'))).toBe(true);
    // The render step's work: renderReport, or (where V8 inlined it, as Node 22 did once) the
    // arrow in this file that calls it, or its escape(). V8 names what it sampled.
    expect(titles.some((t) => /^(?:renderReport|escape) /.test(t) || t.includes('cpu-browser.test.ts'))).toBe(true);
    // Boxes are drawn inside the chart, none wider than it.
    const rects = await page.locator('svg.flame rect').evaluateAll((rs) => rs.map((r) => r.getBoundingClientRect()).map((b) => [b.x, b.width]));
    for (const [x, w] of rects) expect(x! + w!).toBeLessThanOrEqual(box.x + box.width + 1);
    await page.locator('#cpu').scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(ARTIFACTS, 'cpu-profile.png'), fullPage: true });
    if (process.env.UPDATE_DOCS === '1') await page.screenshot({ path: join(DOCS, 'cpu-profile.png'), fullPage: true });
    expect(refused).toEqual([]);
    await page.close();
  });

  it("the badge's Profile CPU button samples the next load of the page, once", async () => {
    const page = await ctx.newPage();
    await page.goto(`${base}/report`);
    const before = saved.length;
    await page.locator('miniprof-badge').locator('button.badge').click();
    await Promise.all([page.waitForEvent('load'), page.locator('miniprof-badge').locator('button.cpu').click()]);
    await waitFor(() => saved.length > before);
    const sampled = saved[saved.length - 1]!;
    expect(sampled.cpu?.top.length).toBeGreaterThan(0);
    // One load only: the response cleared the cookie, and the next load is not sampled.
    expect(await page.evaluate(() => document.cookie)).not.toContain('miniprof-cpu');
    await page.reload();
    await waitFor(() => saved.length > before + 1);
    expect(saved[saved.length - 1]!.cpu).toBeUndefined();
    await page.close();
  });
});
