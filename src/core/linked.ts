/** An item of one {@link LinkedSet}: its links live in the item itself. */
export interface Linked {
  /** null while the item is in no set. */
  prevLink: Linked | null;
  nextLink: Linked | null;
}

/**
 * A set of objects that come and go once per request (open profiles, open developer responses),
 * linked through fields of their own.
 *
 * Why not a `Set`: a long-lived Set's hash table is reallocated as it grows and shrinks, and a
 * discarded table still points at the entries it held until a full GC, keeping each request's
 * profile (and all it reaches) alive past its request. Adding and removing here allocates
 * nothing and leaves no such reference behind.
 *
 * Each item can be in one LinkedSet at a time (it has one pair of links). Circular, with the set
 * itself as the sentinel, so removal needs no special case for the ends.
 */
export class LinkedSet<T extends Linked> implements Linked {
  prevLink: Linked = this;
  nextLink: Linked = this;
  size = 0;

  has(item: T): boolean {
    return item.nextLink !== null;
  }

  /** The oldest item, or null when the set is empty; no iterator made. */
  first(): T | null {
    return this.nextLink === this ? null : (this.nextLink as T);
  }

  /** Appends `item`; false if it was in the set already. */
  add(item: T): boolean {
    if (item.nextLink !== null) return false;
    const last = this.prevLink;
    item.prevLink = last;
    item.nextLink = this;
    last.nextLink = item;
    this.prevLink = item;
    this.size++;
    return true;
  }

  /** Removes `item`; false if it was not in the set. */
  delete(item: T): boolean {
    const next = item.nextLink;
    const prev = item.prevLink;
    if (next === null || prev === null) return false;
    prev.nextLink = next;
    next.prevLink = prev;
    item.prevLink = null;
    item.nextLink = null;
    this.size--;
    return true;
  }

  /**
   * Oldest first. Removing the item just yielded is safe; an item added meanwhile is visited.
   * Removing any other item while iterating may end the walk early.
   */
  *[Symbol.iterator](): IterableIterator<T> {
    let item = this.nextLink;
    while (item !== this) {
      const next = item.nextLink!;
      yield item as T;
      item = next;
    }
  }
}
