import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { quoted, token } from '../src/render/server-timing.js';
import { ms1 } from '../src/render/format.js';

/** What ms1() was before its digit table: the reference. */
function ms1Ref(ms: number): string {
  if (!(ms > 0)) return '0.0';
  const tenths = Math.round(ms * 10);
  return `${Math.floor(tenths / 10)}.${tenths % 10}`;
}

/** The regex definitions token() and quoted() had before their fast paths: the reference. */
const TCHAR = /[^A-Za-z0-9!#$%&'*+.^_`|~-]+/g;
function tokenRef(name: string): string {
  let t = name.replace(TCHAR, '_');
  if (t.length > 32) t = t.slice(0, 32);
  t = t.replace(/^_+|_+$/g, '');
  if (t === '') return 'step';
  return t === 'total' || t === 'more' || t === 'event-loop' ? `${t}_` : t;
}

const names = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: fc.constantFrom(...'ab_-.!#$%&\'*+^`|~ "\\é\u0000'.split('')), maxLength: 40 }),
  // Past the length token() remembers: computed every time.
  fc.string({ unit: fc.constantFrom(...'ab_ -'.split('')), minLength: 90, maxLength: 140 }),
  fc.constantFrom('total', 'more', 'event-loop', '_x', 'x_', '', 'a'.repeat(32), 'a'.repeat(33), 'load user', 'sort'),
);

describe('Server-Timing fast paths give what the general path gives', () => {
  test('B3: token() equals the regex definition for any name', () => {
    fc.assert(fc.property(names, (s) => {
      expect(token(s)).toBe(tokenRef(s));
    }), { numRuns: 2000 });
  });

  test('B3: quoted() is printable ASCII without an unescaped quote or backslash, and returns plain text whole', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 120 }), (s) => {
        const q = quoted(s);
        expect(q).toMatch(/^(?:[\x20-\x21\x23-\x5b\x5d-\x7e]|\\["\\])*$/);
        if (s.length <= 96 && /^[\x20-\x7e]*$/.test(s) && !/["\\%]/.test(s)) expect(q).toBe(s);
      }),
      { numRuns: 2000 },
    );
    expect(quoted('a "b" \\ 5%')).toBe('a \\"b\\" \\\\ 5%25');
  });

  test('ms1() equals its two-conversion definition for any number', () => {
    fc.assert(
      fc.property(fc.oneof(fc.double(), fc.double({ min: 0, max: 1e7, noNaN: true }), fc.integer({ min: 0, max: 10_000_000 }).map((n) => n / 1000)), (x) => {
        expect(ms1(x)).toBe(ms1Ref(x));
      }),
      { numRuns: 5000 },
    );
    expect([ms1(0.04), ms1(0.05), ms1(12.345), ms1(1e21)]).toEqual(['0.0', '0.1', '12.3', '1e+21.0']);
  });
});
