/**
 * The badge on the server side (issue 49): the `badge` option, the one `<script>` tag injected
 * with the comment (and its CSP nonce), `<basePath>/badge.js` and its headers, the id in
 * Server-Timing, and nothing at all for non-developers. The browser side is test/badge-browser.test.ts.
 */
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import fc from 'fast-check';
import { parse, parseFragment } from 'parse5';
import { afterEach, describe, expect, test } from 'vitest';
import { miniprof as expressMiniprof } from '../adapters/express.js';
import { miniprof as fastifyMiniprof } from '../adapters/fastify.js';
import { renderServerTiming, step, withProfile } from '../src/index.js';
import { BADGE_JS, BADGE_VERSION } from '../src/results/badge.js';
import { closeServers, raw, serve, withoutDate } from './helpers/http.js';

const fastifies: FastifyInstance[] = [];
afterEach(async () => {
  await closeServers();
  for (const f of fastifies.splice(0)) await f.close();
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const PAGE = '<!doctype html><html><head><title>t</title></head><body><h1>Hi</h1></body></html>';
const SRC = `/_miniprof/badge.js?v=${BADGE_VERSION}`;

function tag(id: string, position = 'bottom-right', nonce?: string): string {
  return `<script src="${SRC}" data-position="${position}" defer data-id="${id}"${nonce === undefined ? '' : ` nonce="${nonce}"`}></script>`;
}

/** The page as the developer gets it: the comment, then the tag, before `</body>`. */
function withBadge(body: string, id: string, position?: string, nonce?: string): RegExp {
  const at = body.lastIndexOf('</body>');
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${esc(body.slice(0, at))}<!--\\n[^]*?\\n-->${esc(tag(id, position, nonce))}${esc(body.slice(at))}$`);
}

type Locals = { locals: Record<string, unknown> };

function expressApp(options: Parameters<typeof expressMiniprof>[0] | null, setup?: (app: express.Express) => void): express.Express {
  const app = express();
  setup?.(app);
  if (options !== null) app.use(expressMiniprof(options));
  app.get('/page', (_req, res) => {
    step('render', () => undefined);
    res.type('html').send(PAGE);
  });
  app.get('/api', (_req, res) => res.json({ ok: true }));
  app.get('/stream', (_req, res) => {
    res.type('html');
    res.write('<html><body>');
    res.end('</body></html>');
  });
  return app;
}

async function fastifyApp(options: Record<string, unknown> | null, setup?: (app: FastifyInstance) => void): Promise<number> {
  const app = Fastify();
  fastifies.push(app);
  setup?.(app);
  if (options !== null) await app.register(fastifyMiniprof, options);
  app.get('/page', async (_req, reply) => reply.type('text/html; charset=utf-8').send(PAGE));
  app.get('/api', async () => ({ ok: true }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as { port: number }).port;
}

const text = (r: { payload: Buffer }) => r.payload.toString('utf8');
const one = (r: { headers: Record<string, string[]> }, name: string) => r.headers[name]?.join(', ');

describe('the badge option', () => {
  test('bad values are coded errors at setup, naming what was given (Express and Fastify)', async () => {
    const bad: [unknown, string, RegExp][] = [
      [{ badge: 'yes' }, 'MINIPROF_ERR_INVALID_OPTION', /"badge" must be a boolean or \{ position, nonce \}, got "yes"/],
      [{ badge: null }, 'MINIPROF_ERR_INVALID_OPTION', /"badge" must be/],
      [{ badge: [] }, 'MINIPROF_ERR_INVALID_OPTION', /"badge" must be/],
      [{ badge: { position: 'middle' } }, 'MINIPROF_ERR_INVALID_OPTION', /"badge\.position" must be one of bottom-right, bottom-left, top-right, top-left, got "middle"/],
      [{ badge: { nonce: 'abc' } }, 'MINIPROF_ERR_INVALID_OPTION', /"badge\.nonce" must be a function/],
      [{ badge: { corner: 'top' } }, 'MINIPROF_ERR_UNKNOWN_OPTION', /unknown option "badge\.corner"/],
      [{ badge: true, results: false }, 'MINIPROF_ERR_INVALID_OPTION', /"badge" must be unset or false when results is false/],
      [{ badge: {}, results: false }, 'MINIPROF_ERR_INVALID_OPTION', /"badge" must be unset or false when results is false/],
    ];
    for (const [opts, code, message] of bad) {
      expect(() => expressMiniprof({ isDeveloper: () => true, ...(opts as object) }), JSON.stringify(opts)).toThrow(expect.objectContaining({ code, message: expect.stringMatching(message) }));
      await expect(Fastify().register(fastifyMiniprof, { isDeveloper: () => true, ...(opts as object) }).ready()).rejects.toEqual(expect.objectContaining({ code }));
    }
    // What is fine: off, on, every corner, a nonce function; off with results off.
    for (const ok of [{ badge: false }, { badge: true }, { badge: {} }, { badge: { position: 'top-left', nonce: () => undefined } }, { results: false }, { results: false, badge: false }]) {
      expect(() => expressMiniprof(ok as never)).not.toThrow();
    }
  });
});

describe('the tag, for developers', () => {
  test('Express: one external script after the comment, before </body>, with the page profile id; Server-Timing carries the same id before total', async () => {
    const port = await serve(expressApp({ isDeveloper: () => true }));
    const r = await raw(port, { path: '/page' });
    const id = one(r, 'x-miniprof-id')!;
    expect(id).toMatch(UUID);
    expect(text(r)).toMatch(withBadge(PAGE, id));
    expect(one(r, 'content-length')).toBe(String(r.payload.length));
    // miniprof's own time (issue 58) when it reaches 0.1 ms on the real clock.
    const self = /miniprof-self;dur=\d+\.\d, /.exec(one(r, 'server-timing')!)?.[0] ?? '';
    expect(one(r, 'server-timing')).toBe(`render;dur=${/render;dur=(\d+\.\d)/.exec(one(r, 'server-timing')!)![1]}, ${self}miniprof;desc="${id}", total;dur=${/total;dur=(\d+\.\d)/.exec(one(r, 'server-timing')!)![1]}`);
    // One script element, external, no inline code, no style attribute: parse5 sees exactly that.
    const scripts = (parse(text(r)).childNodes[1] as never as { childNodes: { nodeName: string; childNodes: { nodeName: string; attrs: { name: string; value: string }[]; childNodes: unknown[] }[] }[] }).childNodes[1]!.childNodes.filter((n) => n.nodeName === 'script');
    expect(scripts.length).toBe(1);
    expect(scripts[0]!.attrs).toEqual([
      { name: 'src', value: SRC },
      { name: 'data-position', value: 'bottom-right' },
      { name: 'defer', value: '' },
      { name: 'data-id', value: id },
    ]);
    expect(scripts[0]!.childNodes).toEqual([]);
  });

  test('Fastify: the same tag; position from the option', async () => {
    const port = await fastifyApp({ isDeveloper: () => true, badge: { position: 'top-left' } });
    const r = await raw(port, { path: '/page' });
    const id = one(r, 'x-miniprof-id')!;
    expect(text(r)).toMatch(withBadge(PAGE, id, 'top-left'));
    expect(one(r, 'server-timing')).toMatch(new RegExp(`^(?:miniprof-self;dur=\\d+\\.\\d, )?miniprof;desc="${id}", total;dur=\\d+\\.\\d$`));
  });

  test('the app’s CSP nonce: res.locals.cspNonce (Express, helmet’s pattern), reply.cspNonce.script (@fastify/helmet), or badge.nonce', async () => {
    const nonce = 'q2hRr4x/Zz+09_-aA==';
    const a = await serve(
      expressApp({ isDeveloper: () => true }, (app) =>
        app.use((_req, res, next) => {
          (res as never as Locals).locals.cspNonce = nonce;
          next();
        }),
      ),
    );
    const r1 = await raw(a, { path: '/page' });
    expect(text(r1)).toMatch(withBadge(PAGE, one(r1, 'x-miniprof-id')!, 'bottom-right', nonce));

    const seen: unknown[] = [];
    const b = await serve(
      expressApp({
        isDeveloper: () => true,
        badge: {
          nonce: (req, res) => {
            seen.push(req.url, typeof (res as { setHeader?: unknown }).setHeader);
            return 'abc123';
          },
        },
      }),
    );
    const r2 = await raw(b, { path: '/page' });
    expect(text(r2)).toMatch(withBadge(PAGE, one(r2, 'x-miniprof-id')!, 'bottom-right', 'abc123'));
    expect(seen).toEqual(['/page', 'function']);

    const c = await fastifyApp({ isDeveloper: () => true }, (app) => {
      // What @fastify/helmet with enableCSPNonces does: a reply decorator set in onRequest.
      app.decorateReply('cspNonce', null);
      app.addHook('onRequest', async (_req, reply) => {
        (reply as never as { cspNonce: unknown }).cspNonce = { script: 'c2NyaXB0', style: 'c3R5bGU' };
      });
    });
    const r3 = await raw(c, { path: '/page' });
    expect(text(r3)).toMatch(withBadge(PAGE, one(r3, 'x-miniprof-id')!, 'bottom-right', 'c2NyaXB0'));

    const fseen: unknown[] = [];
    const d = await fastifyApp({
      isDeveloper: () => true,
      badge: {
        nonce: (request: { url: string }, reply: { statusCode: number }) => {
          fseen.push(request.url, reply.statusCode);
          return 'ZmFzdGlmeQ';
        },
      },
    });
    const r4 = await raw(d, { path: '/page' });
    expect(text(r4)).toMatch(withBadge(PAGE, one(r4, 'x-miniprof-id')!, 'bottom-right', 'ZmFzdGlmeQ'));
    expect(fseen).toEqual(['/page', 200]);
  });

  test('a nonce that is not base64, or a nonce function that throws: no tag (the comment stays), the fault goes to onInternalError', async () => {
    const reported: unknown[] = [];
    let give: () => unknown = () => '" onload="alert(1)';
    const port = await serve(
      expressApp({
        isDeveloper: () => true,
        onInternalError: (e) => reported.push(e),
        badge: { nonce: () => give() as string },
      }),
    );
    for (const bad of [() => '" onload="alert(1)', () => 42, () => 'a b', () => { throw new Error('nonce store down'); }]) {
      give = bad;
      const r = await raw(port, { path: '/page' });
      expect(text(r)).not.toContain('<script');
      expect(text(r)).toMatch(/<!--\n[^]*\n--><\/body><\/html>$/);
    }
    expect(reported.map((e) => (e as Error).message)).toEqual([
      "miniprof: the badge's CSP nonce must be base64, got a string of 18 characters; the badge was left out of this page",
      "miniprof: the badge's CSP nonce must be base64, got 42 (number); the badge was left out of this page",
      "miniprof: the badge's CSP nonce must be base64, got a string of 3 characters; the badge was left out of this page",
      'nonce store down',
    ]);
  });

  test('property: whatever string the app gives as a nonce, the page parses to its own nodes plus one comment and at most one script, whose nonce is that string exactly', async () => {
    let given = '';
    const port = await serve(expressApp({ isDeveloper: () => true, onInternalError: () => {}, badge: { nonce: () => given } }));
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string({ maxLength: 40 }), fc.base64String({ maxLength: 40 }), fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/)), async (nonce) => {
        given = nonce;
        const r = await raw(port, { path: '/page' });
        const body = parseFragment(text(r).slice(text(r).indexOf('<h1>'), text(r).lastIndexOf('</body>'))).childNodes as { nodeName: string; attrs?: { name: string; value: string }[] }[];
        expect(body[0]!.nodeName).toBe('h1');
        expect(body[1]!.nodeName).toBe('#comment');
        const rest = body.slice(2);
        expect(rest.length).toBeLessThanOrEqual(1);
        if (rest.length === 1) {
          expect(rest[0]!.nodeName).toBe('script');
          const attr = rest[0]!.attrs!.find((x) => x.name === 'nonce');
          if (nonce === '') expect(attr).toBeUndefined();
          else expect(attr!.value).toBe(nonce);
          expect(rest[0]!.attrs!.map((x) => x.name)).toEqual(['src', 'data-position', 'defer', 'data-id', ...(nonce === '' ? [] : ['nonce'])]);
        } else {
          expect(nonce).not.toMatch(/^[A-Za-z0-9+/_-]+={0,2}$/);
        }
      }),
      { numRuns: 150 },
    );
  });

  test('same skip rules as the comment: JSON, a streamed page, HEAD get no tag; htmlComment: false keeps the tag alone; badge: false the comment alone', async () => {
    const port = await serve(expressApp({ isDeveloper: () => true }));
    expect(text(await raw(port, { path: '/api' }))).toBe('{"ok":true}');
    expect(text(await raw(port, { path: '/stream' }))).not.toContain('<script');
    expect((await raw(port, { path: '/page', method: 'HEAD' })).payload.length).toBe(0);

    const tagOnly = await serve(expressApp({ isDeveloper: () => true, htmlComment: false }));
    const r = await raw(tagOnly, { path: '/page' });
    expect(text(r)).toBe(PAGE.replace('</body>', tag(one(r, 'x-miniprof-id')!) + '</body>'));

    const off = await serve(expressApp({ isDeveloper: () => true, badge: false }));
    const r2 = await raw(off, { path: '/page' });
    expect(text(r2)).not.toContain('<script');
    expect(text(r2)).toContain('<!--');
    // The id metric is the badge's: off with it (X-Miniprof-Id stays, for other tools).
    expect(one(r2, 'server-timing')).not.toContain('miniprof;');
    expect(one(r2, 'x-miniprof-id')).toMatch(UUID);
    expect((await raw(off, { path: SRC })).status).toBe(404);

    const noResults = await serve(expressApp({ isDeveloper: () => true, results: false }));
    const r3 = await raw(noResults, { path: '/page' });
    expect(text(r3)).not.toContain('<script');
    expect(one(r3, 'server-timing')).not.toContain('miniprof;');
  });
});

describe('badge.js', () => {
  test('served to developers with a year-long private cache, the right type and nosniff; at most 20 KB', async () => {
    expect(Buffer.byteLength(BADGE_JS)).toBeLessThanOrEqual(20_000);
    // It parses as a classic script, and defines no global: one IIFE.
    expect(() => new Function(BADGE_JS)).not.toThrow();
    expect(BADGE_JS.trim()).toMatch(/^\/\* miniprof badge \*\/\n\(function \(\) \{[^]*\}\)\(\);$/);
    const e = await serve(expressApp({ isDeveloper: () => true }));
    const f = await fastifyApp({ isDeveloper: () => true });
    for (const port of [e, f]) {
      const r = await raw(port, { path: SRC });
      expect(r.status).toBe(200);
      expect(one(r, 'content-type')).toBe('text/javascript; charset=utf-8');
      expect(one(r, 'cache-control')).toBe('private, max-age=31536000, immutable');
      expect(one(r, 'x-content-type-options')).toBe('nosniff');
      expect(one(r, 'cross-origin-resource-policy')).toBe('same-origin');
      expect(one(r, 'content-length')).toBe(String(Buffer.byteLength(BADGE_JS)));
      expect(text(r)).toBe(BADGE_JS);
      // Not profiled itself: no Server-Timing, no id (the badge would list its own script).
      expect(r.headers['server-timing']).toBeUndefined();
      expect(r.headers['x-miniprof-id']).toBeUndefined();
    }
    expect(BADGE_VERSION).toMatch(/^[A-Za-z0-9_-]{12}$/);
  });

  test('non-developers: the page and /_miniprof/badge.js are byte for byte what the app alone sends (Express and Fastify)', async () => {
    const alone = await serve(expressApp(null));
    const withMp = await serve(expressApp({ isDeveloper: () => false }));
    for (const path of ['/page', SRC, '/_miniprof/badge.js']) {
      const a = await raw(alone, { path });
      const b = await raw(withMp, { path });
      expect(withoutDate(b.bytes).toString('latin1'), path).toBe(withoutDate(a.bytes).toString('latin1'));
    }
    expect((await raw(alone, { path: SRC })).status).toBe(404);
    const fAlone = await fastifyApp(null);
    const fWith = await fastifyApp({ isDeveloper: () => false });
    for (const path of ['/page', SRC]) {
      const a = await raw(fAlone, { path });
      const b = await raw(fWith, { path });
      expect(withoutDate(b.bytes).toString('latin1'), path).toBe(withoutDate(a.bytes).toString('latin1'));
    }
  });
});

describe('the id in Server-Timing', () => {
  test('renderServerTiming({ id: true }): the id metric before total, both kept through any cut; a step cannot take the name', async () => {
    const { profile } = await withProfile('GET /', () => {
      for (let i = 0; i < 200; i++) step(`step ${i}`, () => undefined);
      step('miniprof', () => undefined);
    });
    const id = profile.id;
    const whole = renderServerTiming(profile, { maxBytes: 1 << 20, id: true });
    expect(whole).toMatch(new RegExp(`, miniprof_;dur=\\d+\\.\\d;desc="miniprof", (?:miniprof-self;dur=\\d+\\.\\d, )?miniprof;desc="${id}", total;dur=\\d+\\.\\d$`));
    expect(renderServerTiming(profile, { maxBytes: 1 << 20 })).not.toContain(id);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4000 }), (maxBytes) => {
        const v = renderServerTiming(profile, { maxBytes, id: true });
        expect(Buffer.byteLength(v)).toBeLessThanOrEqual(Math.max(128, maxBytes));
        expect(v).toMatch(new RegExp(`(^|, )(?:miniprof-self;dur=\\d+\\.\\d, )?miniprof;desc="${id}", total;dur=\\d+\\.\\d$`));
      }),
    );
  });

  test('an adapter’s header at the smallest maxBytes still carries the id, equal to X-Miniprof-Id', async () => {
    const app = express();
    app.use(expressMiniprof({ isDeveloper: () => true, serverTiming: { maxBytes: 128 } }));
    app.get('/', (_req, res) => {
      for (let i = 0; i < 50; i++) step(`a long step name number ${i}`, () => undefined);
      res.json({});
    });
    const r = await raw(await serve(app), { path: '/' });
    const st = one(r, 'server-timing')!;
    expect(st.length).toBeLessThanOrEqual(128);
    expect(st).toMatch(new RegExp(`^more;desc="\\d+ more", (?:miniprof-self;dur=\\d+\\.\\d, )?miniprof;desc="${one(r, 'x-miniprof-id')}", total;dur=\\d+\\.\\d$`));
    expect(() => expressMiniprof({ serverTiming: { maxBytes: 127 } })).toThrow(expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_OPTION' }));
  });
});
