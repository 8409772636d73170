import { expect, test } from 'vitest';
import { uuid } from '../src/id.js';

const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('uuid gives version 4 UUIDs, none repeated, across many refills of its pool', () => {
  const seen = new Set<string>();
  // 20,000 ids: 78 refills of the 256-id pool.
  for (let i = 0; i < 20_000; i++) {
    const id = uuid();
    expect(id).toMatch(V4);
    seen.add(id);
  }
  expect(seen.size).toBe(20_000);
});

test('every random digit of uuid takes every value: no position is stuck (bytes used once, in order)', () => {
  // 4,096 ids: a digit stuck at some value would show as fewer than 16 values at its position.
  const values = Array.from({ length: 36 }, () => new Set<string>());
  for (let i = 0; i < 4096; i++) {
    const id = uuid();
    for (let p = 0; p < 36; p++) values[p]!.add(id[p]!);
  }
  const sizes = values.map((v) => v.size);
  // Dashes at 8, 13, 18, 23; the version digit at 14; the variant digit at 19 takes 8, 9, a, b.
  const expected = Array.from({ length: 36 }, (_, p) => ([8, 13, 18, 23, 14].includes(p) ? 1 : p === 19 ? 4 : 16));
  expect(sizes).toEqual(expected);
});
