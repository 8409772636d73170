import { expect, test } from 'vitest';
import fc from 'fast-check';
import { isoTime } from '../src/iso.js';

const MAX = 8.64e15;

test('isoTime gives what Date#toISOString gives, for any valid time, in any order of calls', () => {
  const time = fc.oneof(
    fc.integer({ min: -MAX, max: MAX }),
    fc.double({ min: -MAX, max: MAX, noNaN: true }),
    // Around now and around day boundaries, where the cached day must be swapped.
    fc.integer({ min: 1_700_000_000_000, max: 1_900_000_000_000 }),
    fc.integer({ min: -3, max: 3 }).chain((d) => fc.integer({ min: -2, max: 2 }).map((e) => 1_764_460_800_000 + d * 86_400_000 + e)),
    // Within a second and across its edges, where the cached second must be kept or swapped,
    // on both sides of the epoch.
    fc.integer({ min: -3, max: 3 }).chain((k) => fc.integer({ min: -1001, max: 1001 }).map((e) => 1_764_460_800_000 + k * 1000 + e)),
    fc.integer({ min: -3000, max: 3000 }),
    fc.constantFrom(0, -0, -0.5, 0.999, -1, -1.5, 253402300799999, 253402300800000, -62167219200000, -62167219200001, MAX, -MAX),
  );
  fc.assert(
    fc.property(fc.array(time, { minLength: 1, maxLength: 20 }), (ms) => {
      for (const m of ms) expect(isoTime(m)).toBe(new Date(m).toISOString());
    }),
    { numRuns: 3000 },
  );
});
