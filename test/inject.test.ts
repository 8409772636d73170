import { describe, expect, test } from 'vitest';
import { injectable, splice } from '../src/http/inject.js';

// Where the comment goes is test/insert.test.ts (F3: parse5 as the oracle, Chromium).
describe('splice', () => {
  test('exact cases', () => {
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
