/**
 * Issue 57 item 3: Redis keys, outgoing URLs and captured request paths keep their namespace
 * words and lose every value-like segment, value argument, password, query value and matrix
 * parameter.
 */
import { describe, expect, test } from 'vitest';
import fc from 'fast-check';
import { redact } from '../src/analysis/normalize.js';
import { requestPath } from '../src/analysis/url-mask.js';

/** Namespace words: letters, `_` and `-`, with at most a short version number. */
const word = fc.oneof(fc.stringMatching(/^[a-z][a-z_]{0,11}$/), fc.constantFrom('v1', 'v2', 'oauth2', 'api', 'users', 'session', 'apikey', 'cache'));

const hex = (min: number, max: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: min, maxLength: max });
const b64 = (min: number, max: number) => fc.string({ unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'), minLength: min, maxLength: max });

/**
 * Value-like segments (the issue's list): digits, hex, UUIDs, base64 and JWT-like tokens,
 * anything with `=` or `%` (and `.` in a Redis key), long letters, long mixed letters and digits.
 * The properties assert the exact masked shape, so a segment that survives fails them.
 */
const withDigit = (g: fc.Arbitrary<string>) => g.filter((x) => /[0-9]/.test(x));
const urlValue = fc.oneof(
  fc.integer({ min: 0, max: 1e12 }).map(String),
  withDigit(hex(6, 24)),
  fc.uuid(),
  fc.tuple(b64(20, 40), b64(20, 40)).map(([a, b]) => `eyJ${a}.${b}`),
  b64(15, 24).map((t) => `sk_live_4${t}`),
  fc.tuple(b64(1, 8), b64(1, 8)).map(([a, b]) => `sid=${a}%3A${b}`),
  fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCXYZ'), minLength: 20, maxLength: 30 }),
  withDigit(b64(12, 24)),
);
const keyValue = fc.oneof(urlValue, fc.tuple(word, word).map(([a, b]) => `${a}.${b}`));
const valueSegment = keyValue;

const flat = (parts: string[]) => parts.join(':');

describe('Redis', () => {
  test.each([
    ['GET apikey:sk_live_4eC39HqLyjWDarjtT1zdp7dc', 'GET apikey:?'],
    ['SET session:sid=s%3Aj1F2.abcDEF value-secret EX 60', 'SET session:? ?'],
    ['AUTH hunter2', 'AUTH ?'],
    ['AUTH default hunter2', 'AUTH ?'],
    ['HELLO 3 AUTH default hunter2', 'HELLO ?'],
    ['CONFIG SET requirepass hunter2', 'CONFIG ?'],
    ['HGETALL user:42:profile', 'HGETALL user:?:profile'],
    ['GET {user:550e8400-e29b-41d4-a716-446655440000}:cart', 'GET {user:?}:cart'],
    ['GET bull:emails:wait', 'GET bull:emails:wait'],
    ['MULTI (3 commands)', 'MULTI (3 commands)'],
    ['EVAL return redis.call("get",KEYS[1]) 1 k', 'EVAL ?'],
    ['set user:42 [1 other arguments]', 'set user:? ?'],
  ])('%s → %s', (command, out) => {
    expect(redact(command, 'redis')).toBe(out);
  });

  test('property: the command and the namespace words stay; every value-like segment, value argument and AUTH password is masked', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('GET', 'SET', 'HGET', 'DEL', 'EXPIRE', 'SADD'),
        fc.array(fc.oneof(word.map((w) => ({ w, secret: false })), valueSegment.map((w) => ({ w, secret: true }))), { minLength: 1, maxLength: 5 }),
        fc.array(fc.string({ maxLength: 10 }).map((s) => `ZQX${s.replace(/\s/g, '')}`), { maxLength: 3 }),
        (name, segments, args) => {
          const key = flat(segments.map((s) => s.w));
          const out = redact([name, key, ...args].join(' '), 'redis');
          expect(out).not.toContain('ZQX');
          expect(out.startsWith(`${name} `)).toBe(true);
          // Each namespace word is where it was, and each value is one `?`.
          expect(out.split(' ')[1]).toBe(flat(segments.map((s) => (s.secret ? '?' : s.w))));
          expect(redact(`AUTH ${args.join(' ') || 'x'}ZQX`, 'redis')).not.toContain('ZQX');
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('outgoing URLs', () => {
  test.each([
    ['POST https://hooks.slack.com/services/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', 'POST https://hooks.slack.com/services/?/?/?'],
    ['POST https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX', 'POST https://hooks.slack.com/services/?/?/?'],
    ['GET http://alice:pw@api.example.com/app;jsessionid=1A2B3C4D5E6F/page.html?q=secret&page=2#frag', 'GET http://api.example.com/app;jsessionid=?/page.html?q=?&page=?#?'],
    ['GET https://api.example.com/v2/users/me/avatar.png', 'GET https://api.example.com/v2/users/me/avatar.png'],
    ['GET https://api.example.com/reset/tok_8f3KqLzP2xW9vR4mN7bC', 'GET https://api.example.com/reset/?'],
    ['GET https://api.example.com/?sk_live_4eC39HqLyjWDarjtT1zdp7dc', 'GET https://api.example.com/??'],
  ])('%s → %s', (command, out) => {
    expect(redact(command, 'http')).toBe(out);
  });

  const userinfo = fc.string({ unit: fc.constantFrom(...'abcXYZ019:@!$&()*+,;=._~-'), maxLength: 12 }).map((s) => `ZQX${s}ZQX`);
  const queryValue = fc.string({ maxLength: 10 }).map((s) => `ZQX${encodeURIComponent(s)}`);

  test('property: no userinfo, query value, fragment, matrix parameter or value-like path segment survives; the host and path words do', () => {
    fc.assert(
      fc.property(
        fc.option(userinfo, { nil: undefined }),
        fc.array(fc.oneof(word.map((w) => ({ w, secret: false })), urlValue.map((w) => ({ w, secret: true }))), { maxLength: 5 }),
        fc.option(urlValue, { nil: undefined }),
        fc.array(fc.tuple(word, queryValue), { maxLength: 3 }),
        fc.option(queryValue, { nil: undefined }),
        (user, segments, matrix, query, fragment) => {
          const path = segments.map((s) => s.w).join('/') + (matrix === undefined ? '' : `;jsessionid=${matrix}`);
          const q = query.length === 0 ? '' : `?${query.map(([k, v]) => `${k}=${v}`).join('&')}`;
          const url = `https://${user === undefined ? '' : `${user}@`}api.example.com/${path}${q}${fragment === undefined ? '' : `#${fragment}`}`;
          const out = redact(`GET ${url}`, 'http');
          expect(out).not.toContain('ZQX');
          expect(out).toContain('GET https://api.example.com/');
          const shown = segments.map((s) => (s.secret ? '?' : s.w)).join('/') + (matrix === undefined ? '' : ';jsessionid=?');
          expect(out.startsWith(`GET https://api.example.com/${shown}`)).toBe(true);
          for (const [k] of query) expect(out).toContain(`${k}=?`);
          // Inside any other text (a span name, an app's own category) too.
          expect(redact(`call ${url} done`, 'custom')).not.toContain('ZQX');
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('captured request paths', () => {
  test.each([
    ['http://alice:pw@127.0.0.1:3000/err', true, '/err'],
    ['http://alice:pw@127.0.0.1:3000/err', false, '/err'],
    ['http://alice:pw@127.0.0.1:3000', true, '/'],
    ['/reset/tok_8f3KqLzP2xW9vR4mN7bC?x=1', true, '/reset/?'],
    ['/reset/tok_8f3KqLzP2xW9vR4mN7bC?x=1', false, '/reset/tok_8f3KqLzP2xW9vR4mN7bC'],
    ['/users/42/orders;jsessionid=ABC123', true, '/users/?/orders;jsessionid=?'],
    ['*', true, '*'],
    ['127.0.0.1:443', true, '?'],
  ] as const)('%s (masked: %s) → %s', (url, mask, out) => {
    expect(requestPath(url, mask)).toBe(out);
  });

  test('property: an absolute-form target keeps only its path, with no value-like segment, no query and no userinfo', () => {
    fc.assert(
      fc.property(
        userinfo(),
        fc.array(fc.oneof(word.map((w) => ({ w, secret: false })), urlValue.map((w) => ({ w, secret: true }))), { minLength: 1, maxLength: 5 }),
        fc.string({ maxLength: 10 }),
        (user, segments, query) => {
          const path = '/' + segments.map((s) => s.w).join('/');
          const out = requestPath(`http://${user}@host.example:8080${path}?ZQX${encodeURIComponent(query)}`, true);
          expect(out).not.toContain('ZQX');
          expect(out).not.toContain('host.example');
          expect(out).toBe('/' + segments.map((s) => (s.secret ? '?' : s.w)).join('/'));
        },
      ),
      { numRuns: 1000 },
    );
    function userinfo() {
      return fc.string({ unit: fc.constantFrom(...'abcXYZ019:!$&()*+,;=._~-'), maxLength: 12 }).map((s) => `ZQX${s}ZQX`);
    }
  });
});
