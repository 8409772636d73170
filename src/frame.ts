import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';

/**
 * Entering a callback step on Node 24+, where AsyncLocalStorage is built on AsyncContextFrame.
 *
 * There `als.run(t, fn)` copies the context frame (a Map of every AsyncLocalStorage's store) on
 * the way in, and copies it again on the way out to put the previous store back: ~950 B and
 * ~170 ns a step with two stores in the frame, most of what a step costs there (bench/RESULTS.md
 * Run 37). A step here makes the one copy it needs, the step's own frame, and runs `fn` in an
 * AsyncResource's scope with it; the scope puts the caller's frame itself back on the way out.
 *
 * That alone would differ from `als.run` in a way an app could see: what `fn` entered in another
 * AsyncLocalStorage with `enterWith` (or took away with `disable()`) would be undone when the
 * step returns, where without miniprof it stays for the rest of the caller's synchronous code
 * and for what that code awaits. So a step checks whether the frame changed under `fn` (a new
 * frame, or the same one smaller) and, if it did, does those changes again in the caller's.
 *
 * This rests on two things Node does not document: an AsyncResource keeps the frame it was made
 * in under an own symbol property, which `runInAsyncScope` enters, and the frames' class is
 * made with `(store, value)` as a copy of the current frame plus that store. Both are looked for
 * at load and the whole path is tried once; if anything is not as expected (another Node), the
 * steps use `als.run`. test/frame.test.ts holds the path to Node 24 and the app's stores to what
 * a direct call leaves.
 */

interface Frame {
  readonly size: number;
  get(key: unknown): unknown;
  has(key: unknown): boolean;
  keys(): Iterable<unknown>;
  [Symbol.iterator](): Iterator<[unknown, unknown]>;
}

/** The class of the frames: made with `(store, value)`, a copy of the current frame plus that. */
type FrameClass = new (store: unknown, value: unknown) => Frame;

/** How a callback step runs `fn` with its timing as the store. */
export type Enter<S> = <T>(store: S, fn: () => T) => T;

const TYPE = 'MINIPROF_STEP';
// Destroyed by hand right after use: a destroy hook (if an app has one) then fires at once
// instead of when the GC gets to the resource.
const MANUAL = { requireManualDestroy: true };

function isFrame(v: unknown): v is Frame {
  return v !== null && typeof v === 'object' && typeof (v as Frame).get === 'function' && typeof (v as Frame).has === 'function';
}

/** The frame `r` keeps under `key` (checked to be one at load, so not again per step). */
function frameOf(r: AsyncResource, key: symbol): Frame | undefined {
  return (r as unknown as Record<symbol, Frame | undefined>)[key];
}

/** `fn()` in a scope of its own: what it enters in any store is gone when it returns. */
function scoped(fn: () => void): void {
  const r = new AsyncResource(TYPE, MANUAL);
  try {
    r.runInAsyncScope(fn);
  } finally {
    r.emitDestroy();
  }
}

/**
 * The own symbol under which an AsyncResource keeps the frame it was made in, and the frames'
 * class, if there are such.
 */
function frameKey<S>(als: AsyncLocalStorage<S>): { key: symbol; FrameOf: FrameClass } | undefined {
  const mark = {} as S;
  let found: { key: symbol; FrameOf: FrameClass } | undefined;
  scoped(() => {
    als.enterWith(mark);
    const r = new AsyncResource(TYPE, MANUAL);
    const rec = r as unknown as Record<symbol, unknown>;
    for (const s of Object.getOwnPropertySymbols(r)) {
      const v = rec[s];
      if (isFrame(v) && v.get(als) === mark) found = { key: s, FrameOf: v.constructor as FrameClass };
    }
    r.emitDestroy();
  });
  return found;
}

/**
 * The entering described above, on the frames kept under `key`, made with `FrameOf`. A change
 * that cannot be carried out (another store's `enterWith` threw) goes to `onFault`, never to the
 * app.
 */
function frameEnter<S>(als: AsyncLocalStorage<S>, key: symbol, FrameOf: FrameClass, onFault: (store: S, err: unknown) => void): Enter<S> {
  /** The frame `fn` left, when it is not the one the step entered. */
  let changed: Frame | undefined;

  // `enterWith` makes a new frame; `disable()` deletes from the current one in place, hence the size.
  function callAndCheck<T>(entered: Frame, size: number, fn: () => T): T {
    try {
      return fn();
    } finally {
      const left = new AsyncResource(TYPE, MANUAL);
      const f = frameOf(left, key);
      left.emitDestroy();
      if (f !== entered || f.size !== size) changed = f;
    }
  }

  /**
   * Enter again, in the caller's frame, what `fn` changed in other stores, and disable what it
   * disabled: as a direct call would have left them (a store disabled with nothing entered after
   * it is deleted from the caller's frame itself, as Node deletes it from the current frame).
   */
  function carry(before: Frame | undefined, after: Frame): void {
    for (const [k, v] of after) {
      if (k === als || (before !== undefined && before.has(k) && before.get(k) === v)) continue;
      (k as AsyncLocalStorage<unknown>).enterWith(v);
    }
    if (before === undefined) return;
    for (const k of before.keys()) if (k !== als && !after.has(k)) (k as AsyncLocalStorage<unknown>).disable();
  }

  return <T>(store: S, fn: () => T): T => {
    // The resource is made in the caller's frame and runs `fn` in the step's: its scope puts the
    // caller's frame back on the way out, and the step's frame is the one copy made.
    const r = new AsyncResource(TYPE, MANUAL);
    const before = frameOf(r, key);
    const entered = new FrameOf(als, store);
    (r as unknown as Record<symbol, Frame>)[key] = entered;
    try {
      return r.runInAsyncScope(callAndCheck, null, entered, entered.size, fn) as T;
    } finally {
      r.emitDestroy();
      if (changed !== undefined) {
        const f = changed;
        changed = undefined;
        try {
          carry(before, f);
        } catch (err) {
          onFault(store, err);
        }
      }
    }
  };
}

/** Whether `enter` does what `als.run` does, checked once on this Node. */
function behaves<S>(als: AsyncLocalStorage<S>, enter: Enter<S>): boolean {
  const other = new AsyncLocalStorage<object>();
  const store = {} as S;
  const kept = {};
  let ok = false;
  scoped(() => {
    const before = als.getStore();
    let inside: S | undefined;
    enter(store, () => {
      inside = als.getStore();
      other.enterWith(kept);
    });
    ok = inside === store && als.getStore() === before && other.getStore() === kept;
  });
  return ok;
}

/** The cheaper entering where this Node has it (see above), else undefined. */
export function frameEntering<S>(als: AsyncLocalStorage<S>, onFault: (store: S, err: unknown) => void): Enter<S> | undefined {
  try {
    const found = frameKey(als);
    if (found === undefined) return undefined;
    const enter = frameEnter(als, found.key, found.FrameOf, onFault);
    return behaves(als, enter) ? enter : undefined;
  } catch {
    return undefined;
  }
}
