import type { ProfileJSON, TimingJSON } from '../core/types.js';

/**
 * One row of the results list: what a developer needs to pick a profile, computed once when the
 * profile is saved so a list never has to read whole trees.
 */
export interface ProfileSummary {
  id: string;
  /** ISO time the request started (the profile's `started`). */
  started: string;
  /** Epoch milliseconds when the store took it: the age bound counts from here. */
  savedAt: number;
  method: string;
  path: string;
  status?: number;
  durationMs: number;
  /** Steps below the root. */
  steps: number;
  /** Custom timings (sql, http…). */
  custom: number;
  /** A captured request's `captureLabel`, when the app gave one. */
  label?: string;
  /** Marks worth a look: `error`, `aborted`, `unfinished`, `blocking`, `dropped`, `warnings`, `duplicates`, `n+1`. */
  flags: string[];
}

/**
 * Where developer profiles go when their request finishes. Every method is async and may fail;
 * the adapters catch every rejection and send it to `onInternalError`, so a store fault never
 * reaches the app. Profiles are keyed to an owner (the developer's identity): `get` and `list`
 * never return another owner's profiles. Both built-in stores pass `test/store-conformance.ts`.
 *
 * @example
 * const store: ProfileStore = memoryStore({ maxCount: 100 });
 * app.use(miniprof({ results: { store } }));
 */
export interface ProfileStore {
  /**
   * Keep `profile` for `owner`; the store applies its own bounds (count, bytes, age). `profile`
   * is miniprof's own sealed JSON, also read by its outputs: serialize or copy it, never change it
   * (parts of it are frozen and shared between nodes).
   */
  save(owner: string, profile: ProfileJSON): Promise<void>;
  /** The profile `id` if it belongs to `owner` and has not expired, else `undefined`. */
  get(owner: string, id: string): Promise<ProfileJSON | undefined>;
  /** `owner`'s most recent profiles, newest first, at most `limit`. */
  list(owner: string, limit: number): Promise<ProfileSummary[]>;
}

/**
 * @internal How miniprof saves a profile it sealed itself, where the store offers it (the memory
 * store): synchronously, and sized field by field (`profileBytes`), since such a tree has only the
 * fields miniprof writes, and only once its byte bound could be reached. `save` is for everything
 * else (a promise, and the `catch` the caller must put on it). A symbol private to this copy of
 * miniprof.
 */
export const SAVE_SEALED: unique symbol = Symbol('miniprof.saveSealed');

/** @internal */
export interface SealedSave {
  [SAVE_SEALED]: {
    /** The store's own `save`: the fast path is taken only while `store.save` is still this. */
    readonly save: ProfileStore['save'];
    /**
     * Throws what `save` would reject with. Only for an id the store was never given (a sealed
     * profile is saved once, under its own random id): the memory store does not look it up.
     * `bound`: at least the profile's JSON size in bytes (Profile.jsonBound), or -1 for unknown.
     */
    put(owner: string, profile: ProfileJSON, bound: number): void;
  };
}

/**
 * The owner of captured profiles (the `capture` option): every developer may list and read them,
 * and the built-in stores keep them under a quota of their own. No developer's identity has this
 * form (those are `peer:…`, `app:…` or `optin:…`).
 */
export const CAPTURE_OWNER = 'capture:';

/** Profile ids are random UUIDs (crypto.randomUUID); anything else cannot be one of ours. */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The list row of a profile; `savedAt` is the store's clock. Iterative: no tree can overflow the stack. */
export function summarize(p: ProfileJSON, savedAt: number): ProfileSummary {
  let steps = 0;
  let custom = 0;
  let error = p.root.error === true;
  let unfinished = false;
  let duplicates = false;
  let blocking = false;
  const stack: TimingJSON[] = [p.root];
  while (stack.length > 0) {
    const t = stack.pop()!;
    for (const c of t.children) {
      steps++;
      if (c.error === true) error = true;
      if (c.unfinished === true) unfinished = true;
      if (c.blocking === true) blocking = true;
      stack.push(c);
    }
    if (t.custom !== undefined) {
      custom += t.custom.length;
      if (!duplicates && hasDuplicate(t.custom)) duplicates = true;
      for (const c of t.custom) {
        if (c.error === true) error = true;
        if (c.duplicate === true) duplicates = true;
      }
    }
  }
  const flags: string[] = [];
  if (error) flags.push('error');
  if (p.request?.aborted === true) flags.push('aborted');
  if (unfinished) flags.push('unfinished');
  if (blocking || p.root.blocking === true || p.eventLoopDelayMs !== undefined) flags.push('blocking');
  if (p.droppedSteps > 0) flags.push('dropped');
  if (p.warnings.length > 0) flags.push('warnings');
  if (duplicates) flags.push('duplicates');
  if (p.similar !== undefined && p.similar.length > 0) flags.push('n+1');
  const out: ProfileSummary = {
    id: p.id,
    started: p.started,
    savedAt,
    method: p.request?.method ?? '',
    path: p.request?.path ?? p.name,
    durationMs: p.durationMs,
    steps,
    custom,
    flags,
  };
  if (p.request?.status !== undefined) out.status = p.request.status;
  if (typeof p.request?.label === 'string') out.label = p.request.label;
  return out;
}

/** The same command run more than once under one step: the shape of an N+1. */
export function hasDuplicate(custom: readonly { category: string; command: string }[]): boolean {
  if (custom.length < 2) return false;
  const seen = new Set<string>();
  for (const c of custom) {
    const key = `${c.category}\u0000${c.command}`;
    if (seen.has(key)) return true;
    seen.add(key);
  }
  return false;
}
