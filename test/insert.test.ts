// F3 (issue 51): the comment goes only where it is inert. parse5 (the HTML standard's parser) is
// the oracle: for any page and any step names, the page with the comment parses to the page's
// own tree plus exactly one comment node, or the page is left as it was. Then Chromium on a real
// Express app: the crafted path `/docs/x*/alert(document.domain)/*` in a page whose only
// `</body>` is inside a script runs nothing. F8: a body with a UTF-16 byte order mark gets no
// comment.
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import fc from 'fast-check';
import { parse, type DefaultTreeAdapterMap } from 'parse5';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { miniprof } from '../adapters/express.js';
import { injectable, splice } from '../src/http/inject.js';
import { renderHtmlComment, step, withProfile } from '../src/index.js';
import { chromiumPath } from './helpers/services.js';
import { closeServers, raw, serve } from './helpers/http.js';
import { fakeClock, fixed } from './helpers/clock.js';

type Node = DefaultTreeAdapterMap['node'];

/** A tree as plain data: comments and text kept, adjacent text nodes merged. */
function shape(n: Node, drop: string | null, dropped: { count: number }): unknown {
  const out: Record<string, unknown> = { name: n.nodeName };
  const el = n as Node & { attrs?: { name: string; value: string }[]; childNodes?: Node[]; content?: Node; data?: string; value?: string };
  if (el.attrs !== undefined) out.attrs = el.attrs.map((a) => [a.name, a.value]);
  if (n.nodeName === '#comment') out.data = el.data;
  if (n.nodeName === '#text') out.value = el.value;
  const kids: unknown[] = [];
  for (const c of el.childNodes ?? []) {
    if (c.nodeName === '#comment' && drop !== null && (c as { data: string }).data === drop) {
      dropped.count++;
      continue;
    }
    const s = shape(c, drop, dropped) as { name: string; value?: string };
    const last = kids[kids.length - 1] as { name: string; value?: string } | undefined;
    // A comment put between two runs of text splits one text node in two: merged back here.
    if (s.name === '#text' && last?.name === '#text') last.value += s.value!;
    else kids.push(s);
  }
  out.children = kids;
  if (el.content !== undefined) out.content = shape(el.content, drop, dropped);
  return out;
}

/** The comment's text, as parse5 reads it back. */
function inner(comment: string): string {
  return comment.slice(4, -3);
}

/**
 * `page` with the comment either parses to `page`'s tree plus exactly one comment node (the
 * comment itself, never inside a <template>) or is unchanged; returns whether it was added.
 */
function checkInert(page: string, comment: string): boolean {
  const out = splice(page, comment);
  if (out === null) return false;
  expect(typeof out).toBe('string');
  const dropped = { count: 0 };
  const withComment = shape(parse(out as string), inner(comment), dropped);
  expect(dropped.count, 'exactly one more comment node, where a comment node can be').toBe(1);
  const own = { count: 0 };
  expect(withComment).toEqual(shape(parse(page), inner(comment), own));
  expect(own.count).toBe(0);
  // Never inside a template's content.
  expect(JSON.stringify(shape(parse(out as string), null, { count: 0 }))).toContain(JSON.stringify(inner(comment)));
  return true;
}

/** Pieces of pages: raw-text and escapable raw-text elements, `</body>` where it is no tag, missing end tags. */
const text = fc.constantFrom('hello', ' ', '\n', '\r\n', 'a &amp; b', '&', '>', '\0');
const piece: fc.Arbitrary<string> = fc.oneof(
  text,
  fc.constantFrom(
    '<', 'x</bodyx', '</ body>', '</body>', '</BODY >', '</body/>', '</html>', '<body>', '<html>', '<head>', '</head>', '<!doctype html>',
    '<p>', '</p>', '<div class="</body>">', '</div>', '<table>', '<tr><td>', '</table>', '<select>', '<svg>', '</svg>', '<math>',
    '<![CDATA[ </body> ]]>', '<!-- </body> -->', '<!--', '-->', '<!', '<a href="/x/</body>', "<img alt='</body>'>", '<br/>',
    '<script>', '</script>', '<script>/* </body> */</script>', '<script>document.write("</body>")</script>',
    '<style>', '</style>', '<style>p::after{content:"</body>"}</style>',
    '<textarea>', '</textarea>', '<textarea></body></textarea>',
    '<title>', '</title>', '<title></body></title>',
    '<template>', '</template>', '<template></body></template>',
    '<noscript>', '</noscript>', '<noscript></body></noscript>', '<xmp></body></xmp>', '<iframe></body></iframe>',
    '<plaintext>', '<frameset>', '<frame>',
  ),
  fc.string({ maxLength: 6 }),
);
const page = fc.array(piece, { maxLength: 14 }).map((ps) => ps.join(''));
const names = fc.array(fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('*/alert(document.domain)/*', '--></body><script>alert(1)</script>', '</script>', '<!--', '--!>')), { maxLength: 4 });

async function commentFor(stepNames: string[], path = '/'): Promise<string> {
  const { profile } = await withProfile(
    `GET ${path}`,
    () => {
      for (const n of stepNames) step(n, () => 0);
    },
    fixed(fakeClock()),
  );
  return renderHtmlComment(profile);
}

describe('F3: where the comment goes (parse5 as the oracle)', () => {
  it('F3 property: for any page (raw text, templates, missing end tags) and any step names, one more comment node and no other change, or none', async () => {
    await fc.assert(
      fc.asyncProperty(page, names, async (p, n) => {
        checkInert(p, await commentFor(n));
      }),
      { numRuns: 1500 },
    );
  });

  it('F3 property: a page closed by a real </body> outside any template always gets the comment', async () => {
    const closed = fc.array(fc.oneof(text, fc.constantFrom('<p>x</p>', '<script>/* </body> */</script>', '<style>a{}</style>', '<textarea></body></textarea>', '<title>t</title>', '<template></body></template>', '<!-- </body> -->', '<div title="</body>"></div>')), { maxLength: 8 });
    await fc.assert(
      fc.asyncProperty(closed, fc.constantFrom('', '\n', '</html>', '</html>\n'), names, async (body, after, n) => {
        const p = `<!doctype html><html><head><title>t</title></head><body>${body.join('')}</body>${after}`;
        expect(checkInert(p, await commentFor(n))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it.each([
    ['a </body> only inside a script', '<html><body><script>/* </body> */</script>', '<html><body><script>/* </body> */</script>C'],
    ['a </body> only inside a style, a textarea, a title, a comment, an attribute', '<title></body></title><style>/*</body>*/</style><textarea></body></textarea><!-- </body> --><p title="</body>">x', '<title></body></title><style>/*</body>*/</style><textarea></body></textarea><!-- </body> --><p title="</body>">xC'],
    ['the real </body> before a later one in a script', '<body>a</body><script>"</body>"</script>', '<body>aC</body><script>"</body>"</script>'],
    ['the last real </body>', '<body>a</body>b</BODY >', '<body>a</body>bC</BODY >'],
    ['a </body> inside a template is not the one', '<body><template></body></template>x</body>', '<body><template></body></template>xC</body>'],
    ['an unclosed script at the end', '<body><p>x</p><script>/* ', null],
    ['an unclosed style, textarea, title, noscript, comment, tag, attribute at the end', '<body><style>', null],
    ['an unclosed textarea', '<body><textarea>', null],
    ['an unclosed title', '<title>', null],
    ['an unclosed noscript', '<body><noscript>', null],
    ['an unclosed comment', '<body><!-- x', null],
    ['an unclosed tag', '<body><p class="a', null],
    ['plaintext', '<body><plaintext></body>', null],
    ['an unclosed template', '<body><template><p>', null],
    ['no </body>, ending in text', '<p>hello', '<p>helloC'],
    ['a frameset after </body> (it drops the body)', '<frame></BODY ><frameset>', null],
  ])('F3: %s', (_what, p, want) => {
    expect(splice(p, 'C')).toBe(want);
  });

  it('F3: bytes keep their offsets (UTF-8 and latin1 text before the tag, CR LF)', () => {
    expect(splice(Buffer.from('<body>\u00e9\r\n<script>"</body>"</script></body>', 'utf8'), '<!--c-->')).toEqual(
      Buffer.from('<body>\u00e9\r\n<script>"</body>"</script><!--c--></body>', 'utf8'),
    );
    expect(splice(Buffer.from('<body>\u00e9</body>', 'latin1'), '<!--c-->')).toEqual(Buffer.from('<body>\u00e9<!--c--></body>', 'latin1'));
  });
});

describe('F8: UTF-16 recognised by its byte order mark', () => {
  const view = (type: string) => ({ getHeader: (name: string) => (name === 'content-type' ? type : undefined) });
  it.each([
    ['UTF-16LE BOM, no charset', 'text/html', Buffer.from('\ufeff<p>x</p></body>', 'utf16le')],
    ['UTF-16LE BOM, a wrong utf-8 charset', 'text/html; charset=utf-8', Buffer.from('\ufeff<p>x</p></body>', 'utf16le')],
    ['UTF-16BE BOM, a wrong utf-8 charset', 'text/html; charset=UTF-8', Buffer.from('\ufeff<p>x</p></body>', 'utf16le').swap16()],
    ['UTF-16BE BOM, latin1', 'text/html; charset=iso-8859-1', Buffer.from('\ufeff<p>x</p></body>', 'utf16le').swap16()],
  ])('F8: %s: no comment', (_what, type, body) => {
    expect(injectable(view(type), 200, 'GET', body)).toBeNull();
  });

  it('F8: a UTF-8 BOM is UTF-8: the comment goes in', () => {
    expect(injectable(view('text/html'), 200, 'GET', Buffer.from('\ufeff<p>x</p>', 'utf8'))).toBe('ascii');
    expect(injectable(view('text/html; charset=utf-8'), 200, 'GET', Buffer.from('\ufeff<p>x</p>', 'utf8'))).toBe('utf8');
  });

  it('F8: end to end on Express: a UTF-16 page sent as bytes with a utf-8 charset is sent untouched', async () => {
    const body = Buffer.from('\ufeff<!doctype html><html><body><p>x</p></body></html>', 'utf16le');
    const app = express();
    app.use(miniprof({ isDeveloper: () => true, onInternalError: (e) => { throw e; } }));
    app.get('/', (_req, res) => res.type('text/html; charset=utf-8').send(body));
    const port = await serve(app as unknown as http.RequestListener);
    const r = await raw(port, { path: '/' });
    expect(r.headers['server-timing']).toBeDefined();
    expect(r.payload.equals(body)).toBe(true);
  });
});

describe('F3 in Chromium', () => {
  const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
  let ctx: BrowserContext | null = null;
  let dir = '';
  afterEach(() => closeServers());
  afterAll(async () => {
    await ctx?.close();
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  /** Pages whose only `</body>` (if any) is not a tag, served under any path. */
  const PAGES: Record<string, string> = {
    script: '<!doctype html><html><head><title>docs</title></head><body><h1>Docs</h1><script>/* </body> */ window.ran = (window.ran || 0) + 1;</script></html>',
    write: '<!doctype html><html><body><h1>Docs</h1><script>var s = "</body>"; window.ran = 1;</script>',
    unclosed: '<!doctype html><html><body><h1>Docs</h1><script>window.ran = 1; /*',
    closed: '<!doctype html><html><body><h1>Docs</h1><script>/* </body> */ window.ran = 1;</script></body></html>',
  };

  it.each(Object.keys(PAGES))('F3: the crafted path /docs/x*/alert(document.domain)/* on the %s page runs no added script', async (kind) => {
    const app = express();
    // No badge: its one <script src> would be the page's second script, and this test counts them.
    app.use(miniprof({ isDeveloper: () => true, machine: 'web-1', badge: false, onInternalError: (e) => { throw e; } }));
    app.get('/:kind/*rest', (req, res) => res.type('html').send(PAGES[req.params.kind as string]!));
    const port = await serve(app as unknown as http.RequestListener);
    if (ctx === null) {
      dir = mkdtempSync(join(tmpdir(), 'miniprof-chromium-'));
      ctx = await chromium.launchPersistentContext(dir, { executablePath: chromiumPath(), headless: true, args: ARGS });
    }
    const page = await ctx.newPage();
    const dialogs: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const path = `/${kind}/x*/alert(document.domain)/*`;
    const sent = await raw(port, { path });
    const body = sent.payload.toString();
    await page.goto(`http://127.0.0.1:${port}${path}`);
    await page.waitForLoadState('load');
    const seen = await page.evaluate(() => {
      const w = globalThis as unknown as { ran?: number; document: { querySelectorAll(s: string): { length: number; [i: number]: { textContent: string } } } };
      const scripts = w.document.querySelectorAll('script');
      return { ran: w.ran ?? 0, scripts: scripts.length, script: scripts.length > 0 ? scripts[0]!.textContent : '' };
    });
    await page.close();
    expect(dialogs).toEqual([]);
    expect(errors).toEqual([]);
    expect(seen.scripts).toBe(1);
    // The script is the app's own, byte for byte.
    const own = /<script>([^]*?)(?:<\/script>|$)/.exec(PAGES[kind]!)![1];
    expect(seen.script).toBe(own);
    if (kind === 'unclosed') {
      // An unclosed script at the end: no comment at all (an unclosed script never runs).
      expect(body).toBe(PAGES[kind]);
      expect(seen.ran).toBe(0);
    } else {
      expect(body).toContain('<!--\nweb-1 at ');
      expect(seen.ran).toBe(1);
    }
  });
});
