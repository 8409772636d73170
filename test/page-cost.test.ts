// Issue 58: a developer's visit costs the page, not the server. A page above htmlComment.maxBytes
// gets no comment and no badge (the header still, a warning in the profile); what miniprof spent
// on the response is shown (comment line, `miniprof-self` metric, `miniprofMs` in the JSON), with
// exact outputs under an injected clock; and a request of anyone else is not held up by a
// developer's megabyte of messy HTML beyond the scan.
import http from 'node:http';
import express from 'express';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { miniprof } from '../adapters/express.js';
import { miniprof as fastifyMiniprof } from '../adapters/fastify.js';
import { closeServers, get, serve } from './helpers/http.js';
import { fakeClock, fixed } from './helpers/clock.js';
import { renderServerTiming, renderText, step, withProfile, type ProfileJSON } from '../src/index.js';

afterEach(() => closeServers());

const PAGE = '<!doctype html><html><body><p>hello</p></body></html>';

describe('htmlComment: { maxBytes }', () => {
  it.each([
    [{ maxBytes: 0 }, 'MINIPROF_ERR_INVALID_OPTION', /"htmlComment\.maxBytes" must be an integer from 1 to 2147483647, got 0/],
    [{ maxBytes: 1.5 }, 'MINIPROF_ERR_INVALID_OPTION', /"htmlComment\.maxBytes".*1\.5/],
    [{ maxBytes: '1MB' }, 'MINIPROF_ERR_INVALID_OPTION', /"htmlComment\.maxBytes".*1MB/],
    [{ max: 10 }, 'MINIPROF_ERR_UNKNOWN_OPTION', /"htmlComment\.max" \(10 \(number\)\); known: maxBytes/],
    ['yes', 'MINIPROF_ERR_INVALID_OPTION', /"htmlComment" must be a boolean or \{ maxBytes \}/],
    [null, 'MINIPROF_ERR_INVALID_OPTION', /"htmlComment" must be a boolean or \{ maxBytes \}/],
  ])('htmlComment %j: a coded TypeError at setup (Express and Fastify)', async (v, code, message) => {
    expect(() => miniprof({ htmlComment: v as never })).toThrow(expect.objectContaining({ code, message: expect.stringMatching(message) }));
    const app = Fastify();
    await expect(app.register(fastifyMiniprof, { htmlComment: v as never }).ready()).rejects.toMatchObject({ code });
    await app.close();
  });

  it('a page above maxBytes: no comment, no badge, the header and the id still; the profile says why', async () => {
    const big = `<!doctype html><html><body>${'<p>x</p>'.repeat(200)}</body></html>`; // 1,643 bytes
    const app = express();
    app.use(miniprof({ isDeveloper: () => true, htmlComment: { maxBytes: 1000 }, onInternalError: (e) => { throw e; } }));
    app.get('/big', (_req, res) => res.type('html').send(big));
    app.get('/small', (_req, res) => res.type('html').send(PAGE));
    const port = await serve(app as unknown as http.RequestListener);
    const r = await get(port, '/big');
    expect(r.body.toString()).toBe(big);
    expect(Number(r.headers['content-length'])).toBe(big.length);
    expect(String(r.headers['server-timing'])).toMatch(/total;dur=/);
    const id = String(r.headers['x-miniprof-id']);
    const json = JSON.parse((await get(port, `/_miniprof/${id}.json`)).body.toString()) as ProfileJSON;
    expect(json.warnings).toEqual(['page of 1.6 KB: no comment above 1000 bytes (htmlComment.maxBytes)']);
    // At the bound and below, the comment and the badge as before.
    const small = await get(port, '/small');
    expect(small.body.toString()).toContain('<!--\n');
    expect(small.body.toString()).toContain('/_miniprof/badge.js');
  });

  it('the bound is in bytes, not characters: a UTF-8 page of 400 characters and 1,200 bytes is above 1000', async () => {
    const page = `<body>${'€'.repeat(400)}</body>`;
    const app = express();
    app.use(miniprof({ isDeveloper: () => true, htmlComment: { maxBytes: 1000 }, badge: false }));
    app.get('/', (_req, res) => res.type('html').send(page));
    const port = await serve(app as unknown as http.RequestListener);
    expect((await get(port, '/')).body.toString()).toBe(page);
  });
});

describe("miniprof's own time", () => {
  it('exact outputs with an injected clock: a comment line, a miniprof-self metric kept with total, miniprofMs in the JSON; absent when it is 0', async () => {
    const c = fakeClock(1000);
    const app = express();
    app.use(
      miniprof({
        ...fixed(c),
        isDeveloper: () => true,
        // Called by miniprof while it prepares the page: 2.5 ms of miniprof's time on this clock.
        badge: { nonce: () => { c.t += 2.5; return undefined; } },
        onInternalError: (e) => { throw e; },
      }),
    );
    app.get('/', (_req, res) => {
      c.t += 4;
      res.type('html').send(PAGE);
    });
    app.get('/json', (_req, res) => {
      c.t += 1;
      res.json({ ok: true });
    });
    const port = await serve(app as unknown as http.RequestListener);
    const r = await get(port, '/');
    const id = String(r.headers['x-miniprof-id']);
    const tag = `<script src="/_miniprof/badge.js?v=`;
    const body = r.body.toString();
    expect(body.slice(0, body.indexOf(tag))).toBe(
      '<!doctype html><html><body><p>hello</p><!--\nweb-1 at 2026-11-29T12:00:00.000Z\nPath: GET /\n GET / = 4.0ms\n' +
        "miniprof's own time: 2.5ms (not in the times above)\n-->",
    );
    expect(r.headers['server-timing']).toBe(`miniprof-self;dur=2.5, miniprof;desc="${id}", total;dur=4.0`);
    const json = JSON.parse((await get(port, `/_miniprof/${id}.json`)).body.toString()) as ProfileJSON;
    expect(json.durationMs).toBe(4);
    expect(json.miniprofMs).toBe(2.5);
    expect(json.root.children).toEqual([]);
    const text = (await get(port, `/_miniprof/${id}`)).body.toString();
    expect(text).toMatch(/miniprof(&#39;|&#x27;|')s own time<\/dt><dd>2\.5 ?ms/);
    // Nothing of miniprof's measurable on this clock: no line, no metric, no field.
    const j = await get(port, '/json');
    const jid = String(j.headers['x-miniprof-id']);
    expect(j.headers['server-timing']).toBe(`miniprof;desc="${jid}", total;dur=1.0`);
    const jjson = JSON.parse((await get(port, `/_miniprof/${jid}.json`)).body.toString()) as ProfileJSON;
    expect(jjson.miniprofMs).toBeUndefined();
  });
});

describe("miniprof's own time in the renderers", () => {
  it('kept with total when the header is cut, a step named miniprof-self cannot pass for it, and shown from 0.05 ms (0.1 at one decimal)', async () => {
    const c = fakeClock();
    const { profile } = await withProfile('GET /', () => {
      for (let i = 0; i < 40; i++) step(i === 0 ? 'miniprof-self' : `step number ${i}`, () => (c.t += 0.5));
    }, fixed(c));
    const json = { ...profile.toJSON(), miniprofMs: 2.5 };
    const st = renderServerTiming(json, { maxBytes: 128 });
    expect(st).toMatch(/^miniprof-self_;dur=0\.5;desc="miniprof-self", more;desc="39 more", miniprof-self;dur=2\.5, total;dur=20\.0$/);
    expect(Buffer.byteLength(st)).toBeLessThanOrEqual(128);
    expect(renderText({ ...json, miniprofMs: 0.05 })).toContain("\nminiprof's own time: 0.1ms (not in the times above)\n");
    expect(renderText({ ...json, miniprofMs: 0.04 })).not.toContain('own time');
    expect(renderServerTiming({ ...json, miniprofMs: 0.04 })).not.toContain('miniprof-self;');
  });
});

describe('everyone else is not held up by a developer page', () => {
  it('a non-developer request sent while a developer loads 1 MB of messy HTML is answered within a bound relative to the same page without the comment', async () => {
    const messy = `<!doctype html><html><body>${'<p><b>x</p>'.repeat(90000)}</body></html>`;
    const make = (htmlComment: boolean) => {
      const app = express();
      app.use(miniprof({ isDeveloper: (req) => req.headers['x-dev'] === '1', htmlComment, badge: htmlComment ? undefined : false }));
      app.get('/page', (_req, res) => res.type('html').send(messy));
      app.get('/hi', (_req, res) => res.send('hi'));
      return serve(app as unknown as http.RequestListener);
    };
    const on = await make(true);
    const off = await make(false);
    /** The non-developer's latency while the developer's request for the page is being answered. */
    const during = async (port: number): Promise<number> => {
      const dev = get(port, '/page', { headers: { 'x-dev': '1' } });
      // Sent right after: it waits for whatever the developer's request holds the event loop with.
      await new Promise((r) => setImmediate(r));
      const t0 = performance.now();
      await get(port, '/hi');
      const ms = performance.now() - t0;
      await dev;
      return ms;
    };
    const withComment: number[] = [];
    const without: number[] = [];
    for (let i = 0; i < 5; i++) {
      withComment.push(await during(on));
      without.push(await during(off));
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
    // The developer's page gets the comment (the scan ran).
    expect((await get(on, '/page', { headers: { 'x-dev': '1' } })).body.toString()).toContain('<!--\n');
    // parse5's tree took seconds here; the scan of a megabyte takes milliseconds. Generous: a
    // loaded machine moves both sides.
    expect(median(withComment), `with ${withComment.map((x) => x.toFixed(1))} / without ${without.map((x) => x.toFixed(1))}`).toBeLessThan(5 * median(without) + 100);
  });
});
