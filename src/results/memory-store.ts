import { codedError } from '../errors.js';
import { jsonBytes, jsonCopy, profileBytes } from '../json.js';
import { checkObject, fnOption, intOption } from '../options.js';
import { SEALED, type ProfileJSON } from '../profile.js';
import { summarize, UUID, type ProfileStore, type ProfileSummary } from './store.js';

/** Options of {@link memoryStore}. */
export interface MemoryStoreOptions {
  /** Profiles kept, over all developers. Default 200. */
  maxCount?: number;
  /**
   * Bytes of profile JSON (UTF-8) kept, over all developers. Default 32 MiB. Profiles are kept
   * as objects, not strings: about twice their JSON size in the heap (1.9x for a 1 KB profile).
   */
  maxBytes?: number;
  /** A profile is dropped this long after it was saved. Default 30 minutes. */
  maxAgeMs?: number;
  /** Epoch milliseconds. Default `Date.now`; inject one in tests. */
  now?: () => number;
}

interface Entry {
  owner: string;
  /**
   * The saved object itself: miniprof's sealed profiles never change after the save. Null once
   * dropped: a Map's discarded hash tables still point at the entries they held until a full GC,
   * and the scavenger then keeps (and promotes) whatever those entries reach. With the profile
   * let go, that is the small entry alone (bench/RESULTS.md Run 8).
   */
  profile: ProfileJSON | null;
  bytes: number;
  savedAt: number;
  /** Made at the first `list` that shows it: most saved profiles are never listed. */
  summary: ProfileSummary | null;
}

/** The store's size right now (expired entries are dropped first). */
export interface MemoryStoreStats {
  count: number;
  bytes: number;
}

const KEYS = ['maxCount', 'maxBytes', 'maxAgeMs', 'now'];

/**
 * The default store: profiles in this process's memory, bounded by count, bytes and age, the
 * oldest evicted first. A profile is kept as the object `save` was given, and its size is counted
 * without serializing it: writing the JSON string cost a developer request more than any other
 * part of miniprof. So the caller must not change a profile after saving it (miniprof never
 * does: `Profile.toJSON()` hands out copies); `get` returns a copy.
 *
 * A Map keeps insertion order, so the oldest entry is always the first one and eviction is O(1);
 * each owner's ids are kept in save order for the list. No timer runs: expired entries go on the
 * next call, and the count bound caps what can wait until then.
 *
 * @example
 * app.use(miniprof({ results: { store: memoryStore({ maxCount: 50, maxAgeMs: 10 * 60_000 }) } }));
 */
export function memoryStore(options?: MemoryStoreOptions): ProfileStore & { stats(): MemoryStoreStats } {
  const o = checkObject(options, KEYS, 'memoryStore');
  const maxCount = intOption(o, 'maxCount', 200, 1, 1_000_000);
  const maxBytes = intOption(o, 'maxBytes', 32 << 20, 1024, 2 ** 40);
  const maxAgeMs = intOption(o, 'maxAgeMs', 30 * 60_000, 1, 365 * 24 * 3_600_000);
  const now = fnOption<() => number>(o, 'now', Date.now);

  const entries = new Map<string, Entry>();
  const byOwner = new Map<string, string[]>();
  let bytes = 0;

  function drop(id: string, e: Entry): void {
    entries.delete(id);
    e.profile = null;
    e.summary = null;
    bytes -= e.bytes;
    const ids = byOwner.get(e.owner)!;
    // Eviction is oldest-first everywhere, so this owner's oldest id is the one going.
    if (ids[0] === id) ids.shift();
    else ids.splice(ids.indexOf(id), 1);
    if (ids.length === 0) byOwner.delete(e.owner);
  }

  function expire(t: number): void {
    for (const [id, e] of entries) {
      if (t - e.savedAt < maxAgeMs) return;
      drop(id, e);
    }
  }

  function live(owner: string, id: string, t: number): Entry | undefined {
    const e = entries.get(id);
    return e !== undefined && e.owner === owner && t - e.savedAt < maxAgeMs ? e : undefined;
  }

  return {
    async save(owner, profile) {
      const t = now();
      const size = (profile as { [SEALED]?: true })[SEALED] === true ? profileBytes(profile) : jsonBytes(profile);
      if (size > maxBytes) throw codedError('MINIPROF_ERR_INVALID_ARGUMENT', `profile of ${size} bytes is larger than the store's maxBytes (${maxBytes})`);
      const old = entries.get(profile.id);
      if (old !== undefined) drop(profile.id, old);
      expire(t);
      while (entries.size >= maxCount || bytes + size > maxBytes) {
        const first = entries.entries().next().value!;
        drop(first[0], first[1]);
      }
      entries.set(profile.id, { owner, profile, bytes: size, savedAt: t, summary: null });
      bytes += size;
      const ids = byOwner.get(owner);
      if (ids === undefined) byOwner.set(owner, [profile.id]);
      else ids.push(profile.id);
    },
    async get(owner, id) {
      if (!UUID.test(id)) return undefined;
      const e = live(owner, id, now());
      return e === undefined ? undefined : jsonCopy(e.profile!);
    },
    async list(owner, limit) {
      const t = now();
      expire(t);
      const ids = byOwner.get(owner);
      const out: ProfileSummary[] = [];
      if (ids === undefined) return out;
      for (let i = ids.length - 1; i >= 0 && out.length < limit; i--) {
        const e = entries.get(ids[i]!)!;
        const s = (e.summary ??= summarize(e.profile!, e.savedAt));
        out.push({ ...s, flags: s.flags.slice() });
      }
      return out;
    },
    stats() {
      expire(now());
      return { count: entries.size, bytes };
    },
  };
}
