import { codedError } from '../core/errors.js';
import { jsonBytes, jsonCopy, profileBytes } from '../core/json.js';
import { LinkedSet, type Linked } from '../core/linked.js';
import { checkObject, fnOption, intOption } from '../core/options.js';
import type { ProfileJSON } from '../core/types.js';
import { CAPTURE_OWNER, DEFAULT_MAX_OPT_INS, SAVE_SEALED, summarize, UUID, type ProfileStore, type ProfileSummary, type SealedSave } from './store.js';

/** Options of {@link memoryStore}. */
export interface MemoryStoreOptions {
  /** Profiles kept, over all developers (captured ones have their own quota). Default 200. */
  maxCount?: number;
  /**
   * Bytes of profile JSON (UTF-8) kept, over all developers. Default 32 MiB. Profiles are kept
   * as objects, not strings: about twice their JSON size in the heap (1.9x for a 1 KB profile).
   */
  maxBytes?: number;
  /** A profile is dropped this long after it was saved. Default 30 minutes. */
  maxAgeMs?: number;
  /**
   * Captured profiles (the `capture` option) kept, apart from the developers': a flood of slow
   * requests evicts only older captured ones, never a developer's profile. Default 100.
   */
  captureMaxCount?: number;
  /** Bytes of captured profiles kept, apart from `maxBytes`. Default 8 MiB. */
  captureMaxBytes?: number;
  /** Epoch milliseconds. Default `Date.now`; inject one in tests. */
  now?: () => number;
  /** Opt-in tokens kept per developer; minting one more drops their oldest. Default 10. */
  maxOptIns?: number;
}

interface Entry extends Linked {
  readonly id: string;
  readonly owner: Owner;
  /**
   * The saved object itself: miniprof's sealed profiles never change after the save. Null once
   * dropped, so that a reference left to the entry (a Map's old hash table keeps one until a full
   * GC) keeps the small entry alive, not the whole profile.
   */
  profile: ProfileJSON | null;
  /** Its JSON's exact size, or -1 until needed (see `unsized`). */
  bytes: number;
  /** While `bytes` is -1: at least its size (Profile.jsonBound). */
  readonly bound: number;
  readonly savedAt: number;
  /** Made at the first `list` that shows it: most saved profiles are never listed. */
  summary: ProfileSummary | null;
  /**
   * Neighbours within the owner's own list. Save order over all owners is the LinkedSet's links
   * (`prevLink`/`nextLink`); an item has one pair of those, so the owner's list has its own.
   */
  ownOlder: Entry | null;
  ownNewer: Entry | null;
}

/** One developer's profiles, walked from the newest; the owner's Map entry goes with the last. */
interface Owner {
  readonly key: string;
  readonly pool: Pool;
  newest: Entry | null;
}

/**
 * One quota, with its entries in save order: the developers', or the captured profiles' (owner
 * CAPTURE_OWNER). Each evicts only its own oldest.
 */
interface Pool {
  readonly order: LinkedSet<Entry>;
  readonly maxCount: number;
  readonly maxBytes: number;
  /** The exact sizes of the entries that have one. */
  bytes: number;
  /**
   * The bounds of those that do not: miniprof's own saves come with a bound and are sized only
   * when `bytes + unsized` could pass maxBytes (then every entry is, once), and for stats(). Until
   * then no byte eviction can be due, so the store drops exactly what it would with every size
   * known. The default 200 profiles of a few KB never come near 32 MiB, so they are never walked.
   */
  unsized: number;
}

function pool(maxCount: number, maxBytes: number): Pool {
  return { order: new LinkedSet<Entry>(), maxCount, maxBytes, bytes: 0, unsized: 0 };
}

/** The store's size right now (expired entries are dropped first). */
export interface MemoryStoreStats {
  count: number;
  bytes: number;
}

const KEYS = ['maxCount', 'maxBytes', 'maxAgeMs', 'now', 'maxOptIns', 'captureMaxCount', 'captureMaxBytes'];

/**
 * The default store: profiles in this process's memory, bounded by count, bytes and age, the
 * oldest evicted first. A profile is kept as the object `save` was given, and its size is counted
 * without serializing it: writing the JSON string cost a developer request more than any other
 * part of miniprof. miniprof's own saves are not even sized until the byte bound could be
 * reached (see `unsized`). So the caller must not change a profile after saving it (miniprof never
 * does: `Profile.toJSON()` hands out copies); `get` returns a copy.
 *
 * Entries are linked in save order, over all owners of a quota (a LinkedSet) and per owner, so the oldest is
 * always at hand: eviction, expiry and a list cost no iterator, no array and no search. No timer
 * runs: expired entries go on the next call, and the count bound caps what can wait until then.
 *
 * miniprof's own save (every developer request) touches no Map in the steady state: its ids are
 * fresh, so it looks none up; the owner is nearly always the one saved last; and `get` (a page
 * view, rare) walks the owner's own list instead of an index. A Map by id is built only for the
 * public `save`, which may be handed an id the store holds already, and kept from then on.
 *
 * @example
 * app.use(miniprof({ results: { store: memoryStore({ maxCount: 50, maxAgeMs: 10 * 60_000 }) } }));
 */
export function memoryStore(options?: MemoryStoreOptions): ProfileStore & { stats(): MemoryStoreStats } {
  const o = checkObject(options, KEYS, 'memoryStore');
  const developers = pool(intOption(o, 'maxCount', 200, 1, 1_000_000), intOption(o, 'maxBytes', 32 << 20, 1024, 2 ** 40));
  const maxAgeMs = intOption(o, 'maxAgeMs', 30 * 60_000, 1, 365 * 24 * 3_600_000);
  const now = fnOption<() => number>(o, 'now', Date.now);
  const captured = pool(intOption(o, 'captureMaxCount', 100, 1, 1_000_000), intOption(o, 'captureMaxBytes', 8 << 20, 1024, 2 ** 40));
  const pools = [developers, captured];
  const poolOf = (owner: string): Pool => (owner === CAPTURE_OWNER ? captured : developers);
  const maxOptIns = intOption(o, 'maxOptIns', DEFAULT_MAX_OPT_INS, 1, 10_000);
  /** Opt-in token -> its expiry (epoch ms); and per owner, their tokens, oldest first. */
  const optIns = new Map<string, { owner: string; expiresAt: number }>();
  const optInsOf = new Map<string, string[]>();

  const owners = new Map<string, Owner>();
  /** The owner saved last: what the next save's owner nearly always is. Null once dropped. */
  let lastOwner: Owner | null = null;
  /** By id, for the public `save` only: null until its first call. */
  let byId: Map<string, Entry> | null = null;

  function sizeOf(e: Entry): void {
    if (e.bytes !== -1) return;
    const p = e.owner.pool;
    e.bytes = profileBytes(e.profile!);
    p.unsized -= e.bound;
    p.bytes += e.bytes;
  }

  function sizeAll(p: Pool): void {
    if (p.unsized === 0) return;
    for (const e of p.order) sizeOf(e);
  }

  function drop(e: Entry): void {
    // Checked: the index must keep pointing at the entry that holds the id now.
    if (byId !== null && byId.get(e.id) === e) byId.delete(e.id);
    e.profile = null;
    e.summary = null;
    const o = e.owner;
    const p = o.pool;
    if (e.bytes === -1) p.unsized -= e.bound;
    else p.bytes -= e.bytes;
    p.order.delete(e);
    if (e.ownOlder !== null) e.ownOlder.ownNewer = e.ownNewer;
    if (e.ownNewer === null) o.newest = e.ownOlder;
    else e.ownNewer.ownOlder = e.ownOlder;
    if (o.newest === null) {
      owners.delete(o.key);
      if (lastOwner === o) lastOwner = null;
    }
    // Cut loose, so a dropped entry that something still reaches keeps no neighbour alive.
    e.ownOlder = e.ownNewer = null;
  }

  function expire(t: number): void {
    for (const p of pools) for (let e = p.order.first(); e !== null && t - e.savedAt >= maxAgeMs; e = p.order.first()) drop(e);
  }

  function live(owner: string, id: string, t: number): Entry | undefined {
    // The owner's own list, newest first: the profile a developer opens is nearly always recent.
    for (let e = owners.get(owner)?.newest ?? null; e !== null; e = e.ownOlder) {
      if (e.id === id) return t - e.savedAt < maxAgeMs ? e : undefined;
    }
    return undefined;
  }

  function ownerOf(key: string): Owner {
    if (lastOwner !== null && lastOwner.key === key) return lastOwner;
    let o = owners.get(key);
    if (o === undefined) {
      o = { key, pool: poolOf(key), newest: null };
      owners.set(key, o);
    }
    return (lastOwner = o);
  }

  /**
   * The save itself, synchronous; `size` is the profile's JSON size in bytes, or -1 with `bound`
   * at least that (then `profile` is one miniprof sealed, which profileBytes can size). `fresh`:
   * the id is one the store cannot hold (a profile miniprof sealed is saved once, under a new
   * random id).
   */
  function put(owner: string, profile: ProfileJSON, size: number, bound: number, fresh: boolean): void {
    const t = now();
    const p = poolOf(owner);
    if (size === -1 && bound < 0) size = profileBytes(profile);
    let need = size === -1 ? bound : size;
    if (p.bytes + p.unsized + need > p.maxBytes) {
      // The bounds could pass the cap: judged on exact sizes from here on, as without them.
      sizeAll(p);
      if (size === -1) size = profileBytes(profile);
      need = size;
    }
    if (size > p.maxBytes) {
      throw codedError('MINIPROF_ERR_INVALID_ARGUMENT', `profile of ${size} bytes is larger than the store's ${p === captured ? 'captureMaxBytes' : 'maxBytes'} (${p.maxBytes})`);
    }
    if (!fresh) {
      if (byId === null) {
        byId = new Map();
        for (const q of pools) for (const e of q.order) byId.set(e.id, e);
      }
      const old = byId.get(profile.id);
      if (old !== undefined) drop(old);
    }
    expire(t);
    // With sizes still unknown, `bytes + unsized + need` was within maxBytes above, and drops only
    // lower it: the byte test below stays false, as it would on the exact sizes.
    for (let e = p.order.first(); e !== null && (p.order.size >= p.maxCount || p.bytes + p.unsized + need > p.maxBytes); e = p.order.first()) drop(e);
    const o = ownerOf(owner);
    const e: Entry = { id: profile.id, owner: o, profile, bytes: size, bound: size === -1 ? bound : 0, savedAt: t, summary: null, prevLink: null, nextLink: null, ownOlder: o.newest, ownNewer: null };
    p.order.add(e);
    if (o.newest !== null) o.newest.ownNewer = e;
    o.newest = e;
    if (byId !== null) byId.set(profile.id, e);
    if (size === -1) p.unsized += bound;
    else p.bytes += size;
  }

  async function save(owner: string, profile: ProfileJSON): Promise<void> {
    put(owner, profile, jsonBytes(profile), 0, false);
  }

  const store: ProfileStore & { stats(): MemoryStoreStats } & SealedSave = {
    save,
    [SAVE_SEALED]: { save, put: (owner, profile, bound) => put(owner, profile, -1, bound, true) },
    async get(owner, id) {
      if (!UUID.test(id)) return undefined;
      const e = live(owner, id, now());
      return e === undefined ? undefined : jsonCopy(e.profile!);
    },
    async list(owner, limit) {
      const t = now();
      expire(t);
      const out: ProfileSummary[] = [];
      for (let e = owners.get(owner)?.newest ?? null; e !== null && out.length < limit; e = e.ownOlder) {
        const s = (e.summary ??= summarize(e.profile!, e.savedAt));
        out.push({ ...s, flags: s.flags.slice() });
      }
      return out;
    },
    async addOptIn(owner, token, expiresAt) {
      const t = now();
      // Opting in is rare (a developer's button): expired tokens of every owner go here, so the
      // maps hold only live ones.
      for (const [k, e] of optIns) if (e.expiresAt <= t) void store.revokeOptIn!(k);
      const mine = optInsOf.get(owner) ?? [];
      mine.push(token);
      optIns.set(token, { owner, expiresAt });
      while (mine.length > maxOptIns) optIns.delete(mine.shift()!);
      optInsOf.set(owner, mine);
    },
    async hasOptIn(token) {
      const e = optIns.get(token);
      return e !== undefined && e.expiresAt > now();
    },
    async revokeOptIn(token) {
      const e = optIns.get(token);
      if (e === undefined) return;
      optIns.delete(token);
      const mine = optInsOf.get(e.owner)?.filter((k) => k !== token) ?? [];
      if (mine.length === 0) optInsOf.delete(e.owner);
      else optInsOf.set(e.owner, mine);
    },
    stats() {
      expire(now());
      sizeAll(developers);
      sizeAll(captured);
      return { count: developers.order.size + captured.order.size, bytes: developers.bytes + captured.bytes };
    },
  };
  return store;
}
