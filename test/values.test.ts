/**
 * The digest that stands in for parameter values (issue 57 item 2): duplicates need equal values
 * to give equal digests and different values different ones; the values themselves never show.
 */
import { describe, expect, test } from 'vitest';
import fc from 'fast-check';
import { valuesDigest } from '../src/instrument/values.js';

describe('valuesDigest', () => {
  test('no values: undefined (nothing was sent apart from the text)', () => {
    for (const v of [undefined, null, [], 'x', { 0: 1 }]) expect(valuesDigest(v)).toBeUndefined();
  });

  test('types and boundaries count: 1 and "1", ["a,b"] and ["a", "b"], null and undefined, a Date and its ISO text', () => {
    const d = new Date(Date.UTC(2026, 11, 6));
    const pairs: [unknown[], unknown[]][] = [
      [[1], ['1']],
      [['a,b'], ['a', 'b']],
      [[null], [undefined]],
      [[d], [d.toISOString()]],
      [[Buffer.from('ab')], ['ab']],
      [[true], ['true']],
      [[1n], [1]],
      [[{ a: 1 }], ['{"a":1}']],
    ];
    for (const [a, b] of pairs) expect(valuesDigest(a)).not.toBe(valuesDigest(b));
  });

  test('property: equal values, equal digests; different values, different digests; 16 characters that hold no value', () => {
    const value = fc.oneof(fc.string(), fc.integer(), fc.double({ noNaN: true }), fc.boolean(), fc.constant(null), fc.uint8Array().map((u) => Buffer.from(u)), fc.dictionary(fc.string(), fc.string()));
    fc.assert(
      fc.property(fc.array(value, { minLength: 1, maxLength: 4 }), fc.array(value, { minLength: 1, maxLength: 4 }), (a, b) => {
        const da = valuesDigest(a)!;
        expect(da).toMatch(/^[A-Za-z0-9_-]{16}$/);
        expect(valuesDigest(structuredClone(a).map((v, i) => (Buffer.isBuffer(a[i]) ? Buffer.from(a[i] as Buffer) : v)))).toBe(da);
        // JSON tells these generated values apart as the digest must (0 and -0 are one SQL value).
        if (JSON.stringify(a) !== JSON.stringify(b)) expect(valuesDigest(b)).not.toBe(da);
      }),
      { numRuns: 2000 },
    );
  });

  test('a value that cannot be serialised is never told equal to another (no false duplicate)', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(valuesDigest([cyclic])).not.toBe(valuesDigest([cyclic]));
  });
});
