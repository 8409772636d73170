import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LinkedSet, type Linked } from '../src/core/linked.js';

class Item implements Linked {
  prevLink: Linked | null = null;
  nextLink: Linked | null = null;
  constructor(readonly n: number) {}
}

const ids = (s: LinkedSet<Item>) => [...s].map((i) => i.n);

describe('LinkedSet', () => {
  it('adds once, deletes once, and iterates oldest first', () => {
    const s = new LinkedSet<Item>();
    const [a, b, c] = [new Item(1), new Item(2), new Item(3)];
    expect(s.add(a)).toBe(true);
    expect(s.add(b)).toBe(true);
    expect(s.add(a)).toBe(false);
    expect(s.add(c)).toBe(true);
    expect(ids(s)).toEqual([1, 2, 3]);
    expect(s.size).toBe(3);
    expect(s.delete(b)).toBe(true);
    expect(s.delete(b)).toBe(false);
    expect(s.has(b)).toBe(false);
    expect(b.prevLink).toBeNull();
    expect(b.nextLink).toBeNull();
    expect(ids(s)).toEqual([1, 3]);
    // Back in at the end, as a Set re-adds.
    s.add(b);
    expect(ids(s)).toEqual([1, 3, 2]);
    expect(s.size).toBe(3);
  });

  it('lets the item just yielded be deleted while iterating, and visits one added meanwhile', () => {
    const s = new LinkedSet<Item>();
    const items = [1, 2, 3, 4].map((n) => new Item(n));
    for (const i of items) s.add(i);
    const seen: number[] = [];
    const late = new Item(5);
    for (const i of s) {
      seen.push(i.n);
      if (i.n % 2 === 0) s.delete(i);
      if (i.n === 1) s.add(late);
    }
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    expect(ids(s)).toEqual([1, 3, 5]);
  });

  it('behaves as a Set under any sequence of adds and deletes, first() its oldest item', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 7 })), { maxLength: 60 }), (ops) => {
        const items = Array.from({ length: 8 }, (_, n) => new Item(n));
        const s = new LinkedSet<Item>();
        const model = new Set<Item>();
        for (const [add, n] of ops) {
          const it = items[n]!;
          if (add) expect(s.add(it)).toBe(!model.has(it));
          else expect(s.delete(it)).toBe(model.has(it));
          if (add) model.add(it);
          else model.delete(it);
          expect(s.size).toBe(model.size);
          for (const i of items) expect(s.has(i)).toBe(model.has(i));
          expect(s.first()).toBe(model.values().next().value ?? null);
        }
        expect([...s]).toEqual([...model]);
      }),
    );
  });
});
