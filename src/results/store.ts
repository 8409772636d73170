import type { ProfileJSON, TimingJSON } from '../core/types.js';
import { readProfile } from './view.js';

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
  /** Marks worth a look, from {@link FLAGS}. */
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
  /**
   * The opt-in tokens, needed when `secret` is set (both built-in stores have them). A signed
   * cookie admits a request only while its token is here: opt-out removes it, and it expires.
   * `addOptIn` records a token minted for `owner` (the developer who opted in) until `expiresAt`
   * (epoch ms); a store may cap the tokens per owner, dropping the oldest.
   */
  addOptIn?(owner: string, token: string, expiresAt: number): Promise<void>;
  /** The token was minted here, is not revoked and has not expired. */
  hasOptIn?(token: string): Promise<boolean>;
  /** Opt-out: the token admits nothing from now on. */
  revokeOptIn?(token: string): Promise<void>;
}

/** A store that keeps opt-in tokens (checked at setup when `secret` is set). */
export type OptInStore = Required<Pick<ProfileStore, 'addOptIn' | 'hasOptIn' | 'revokeOptIn'>>;

/** Opt-in tokens kept per owner by the built-in stores, by default: the oldest beyond go. */
export const DEFAULT_MAX_OPT_INS = 10;

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

/**
 * The flags a list row can carry, in the order it shows them. `duplicate`: a custom timing ran
 * again with the same category, command and values (the JSON's `duplicate`); `n+1`: a group of
 * similar commands (same shape once values are masked, the JSON's `similar`); `serialized`: a
 * step's fan-out ran one at a time.
 */
export const FLAGS = ['error', 'aborted', 'unfinished', 'blocking', 'serialized', 'dropped', 'warnings', 'duplicate', 'n+1', 'malformed'] as const;

/**
 * The list row of a profile; `savedAt` is the store's clock. Iterative: no tree can overflow the
 * stack. Never throws: a profile that is not v1 JSON (a store may be handed anything) gets the
 * `malformed` flag and whatever of its fields are strings.
 */
export function summarize(stored: ProfileJSON, savedAt: number): ProfileSummary {
  const read = readProfile(stored);
  if (!read.ok) return malformed(stored, savedAt);
  const p = read.profile;
  let steps = 0;
  let custom = 0;
  let error = p.root.error === true;
  let unfinished = false;
  let duplicate = false;
  let similar = false;
  let blocking = p.root.blocking === true || p.eventLoopDelayMs !== undefined;
  let serialized = p.root.serialized === true;
  const stack: TimingJSON[] = [p.root];
  while (stack.length > 0) {
    const t = stack.pop()!;
    for (const c of t.children) {
      steps++;
      if (c.error === true) error = true;
      if (c.unfinished === true) unfinished = true;
      if (c.blocking === true) blocking = true;
      if (c.serialized === true) serialized = true;
      stack.push(c);
    }
    if (t.custom !== undefined) {
      custom += t.custom.length;
      for (const c of t.custom) {
        if (c.error === true) error = true;
        if (c.unfinished === true) unfinished = true;
        if (c.duplicate === true) duplicate = true;
        if (c.similar !== undefined) similar = true;
      }
    }
  }
  const on: Record<(typeof FLAGS)[number], boolean> = {
    error,
    aborted: p.request?.aborted === true,
    unfinished,
    blocking,
    serialized,
    dropped: p.droppedSteps > 0,
    warnings: p.warnings.length > 0,
    duplicate,
    'n+1': similar,
    malformed: false,
  };
  const out: ProfileSummary = {
    id: p.id,
    started: p.started,
    savedAt,
    method: p.request?.method ?? '',
    path: p.request?.path ?? p.name,
    durationMs: p.durationMs,
    steps,
    custom,
    flags: FLAGS.filter((f) => on[f]),
  };
  if (p.request?.status !== undefined) out.status = p.request.status;
  if (typeof p.request?.label === 'string') out.label = p.request.label;
  return out;
}

function malformed(stored: unknown, savedAt: number): ProfileSummary {
  const o = (stored !== null && typeof stored === 'object' ? stored : {}) as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === 'string' ? v : '');
  let path = '';
  let method = '';
  try {
    path = text(o.name);
    const r = o.request as Record<string, unknown> | null | undefined;
    if (r !== null && typeof r === 'object') {
      method = text(r.method);
      path = text(r.path) || path;
    }
    return { id: text(o.id), started: text(o.started), savedAt, method, path, durationMs: 0, steps: 0, custom: 0, flags: ['malformed'] };
  } catch {
    // A getter that throws: nothing of it is shown.
    return { id: '', started: '', savedAt, method: '', path: '', durationMs: 0, steps: 0, custom: 0, flags: ['malformed'] };
  }
}
