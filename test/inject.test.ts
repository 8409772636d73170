import { describe, expect, test } from 'vitest';
import fc from 'fast-check';
import { injectable, lastBodyClose, splice } from '../src/http/inject.js';

/**
 * What lastBodyClose must return, written the plain way: the last index where `</body`, in any
 * case, is followed by the end, `>`, `/` or HTML whitespace (tab, LF, VT, FF, CR, space).
 */
function expected(s: string): number {
  for (let i = s.length - 6; i >= 0; i--) {
    if (s.slice(i, i + 6).toLowerCase() !== '</body') continue;
    const next = s[i + 6];
    if (next === undefined || next === '>' || next === '/' || ' \t\n\v\f\r'.includes(next)) return i;
  }
  return -1;
}

/** Pieces a page's end is made of, near misses included (`</bodyx`, `< /body`, `</bod`). */
const piece = fc.oneof(
  fc.constantFrom('</body>', '</BODY>', '</BoDy ', '</body/', '</body\t', '</body\f', '</body', '</bodyx', '</bod', '< /body>', '</', '<', '/', '>', '</html>', '\n', ' '),
  fc.string({ maxLength: 8 }),
  // Characters that lowercase oddly (the Kelvin sign, dotted I) or are `B`, `O`, `D`, `Y` plus 0x80.
  fc.constantFrom('\u212a', '\u0130', '\u00c2', '\u00cf', '\u00c4', '\u00d9', '\u0142'),
);

/** Filler that puts a page's pieces on either side of the stretch read by hand (256 characters from the end). */
const filler = fc.nat({ max: 600 }).map((n) => 'a'.repeat(n));

describe('lastBodyClose', () => {
  test('finds what the plain search finds, near the end and far from it', () => {
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), filler, fc.array(piece, { maxLength: 6 }), (head, mid, tail) => {
        const s = head.join('') + mid + tail.join('');
        expect(lastBodyClose(s)).toBe(expected(s));
      }),
      { numRuns: 3000 },
    );
  });

  test('a `</body>` just past the stretch read by hand, with later near misses', () => {
    for (let pad = 240; pad <= 270; pad++) {
      const s = '<html><body>x</body>' + '</bodyx'.padEnd(pad, 'y');
      expect(lastBodyClose(s)).toBe(13);
    }
  });

  test('exact cases', () => {
    expect(lastBodyClose('')).toBe(-1);
    expect(lastBodyClose('</body')).toBe(0);
    expect(lastBodyClose('</BODY\n')).toBe(0);
    expect(lastBodyClose('x</body></body >')).toBe(8);
    expect(lastBodyClose('</bodies>')).toBe(-1);
    expect(lastBodyClose('</b\u212ady>')).toBe(-1);
    expect(splice('<body>a</BODY></html>', '<!--c-->')).toBe('<body>a<!--c--></BODY></html>');
    expect(splice(Buffer.from('<body>\u00e9</body>', 'utf8'), '<!--c-->')).toEqual(Buffer.from('<body>\u00e9<!--c--></body>', 'utf8'));
  });
});

describe('injectable', () => {
  const view = (headers: Record<string, unknown>) => ({ getHeader: (name: string) => headers[name] });
  const html = (type: unknown, more: Record<string, unknown> = {}) => injectable(view({ 'content-type': type, ...more }), 200, 'GET', '<p>x</p>');

  test('the content type and charset decide the mode', () => {
    expect(html('text/html; charset=utf-8')).toBe('utf8');
    expect(html('Text/HTML; Charset=UTF-8')).toBe('utf8');
    expect(html(['text/html; charset=utf-8'])).toBe('utf8');
    expect(html('application/xhtml+xml; charset=utf8')).toBe('utf8');
    expect(html(' text/html ')).toBe('ascii');
    expect(html('text/html; charset="ISO-8859-1"')).toBe('ascii');
    expect(html('text/html; charset=utf-16')).toBeNull();
    expect(html('text/plain; charset=utf-8')).toBeNull();
    expect(html('text/htmlx; charset=utf-8')).toBeNull();
    expect(html(undefined)).toBeNull();
  });

  test('an encoded or no-transform body is left alone, whatever its type', () => {
    for (const type of ['text/html; charset=utf-8', 'text/html']) {
      expect(html(type, { 'content-encoding': 'gzip' })).toBeNull();
      expect(html(type, { 'content-encoding': ['br'] })).toBeNull();
      expect(html(type, { 'cache-control': 'public, no-transform' })).toBeNull();
      expect(html(type, { 'content-encoding': ' Identity ' })).not.toBeNull();
      expect(html(type, { 'content-encoding': '' })).not.toBeNull();
      expect(html(type, { 'content-encoding': null })).not.toBeNull();
    }
  });

  test('no body to put a comment in', () => {
    const h = view({ 'content-type': 'text/html; charset=utf-8' });
    expect(injectable(h, 200, 'HEAD', '<p>x</p>')).toBeNull();
    expect(injectable(h, 204, 'GET', '<p>x</p>')).toBeNull();
    expect(injectable(h, 304, 'GET', '<p>x</p>')).toBeNull();
    expect(injectable(h, 101, 'GET', '<p>x</p>')).toBeNull();
    expect(injectable(h, 200, 'GET', '')).toBeNull();
    expect(injectable(h, 200, 'GET', { html: '<p>x</p>' })).toBeNull();
    expect(injectable(h, 404, 'GET', Buffer.from('<p>x</p>'))).toBe('utf8');
  });
});
