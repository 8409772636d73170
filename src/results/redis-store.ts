import { createHash } from 'node:crypto';
import { codedError, describe } from '../core/errors.js';
import { checkObject, intOption, invalid } from '../core/options.js';
import type { ProfileJSON } from '../core/types.js';
import { CAPTURE_OWNER, DEFAULT_MAX_OPT_INS, summarize, UUID, type ProfileStore, type ProfileSummary } from './store.js';
import { breaker, RETRY_AFTER_MS } from './timeout.js';

/** An ioredis client (`call`) or a node-redis client (`sendCommand`), connected by the app. */
export type RedisClientLike =
  | { call(command: string, ...args: string[]): Promise<unknown> }
  | { sendCommand(args: string[]): Promise<unknown> };

/** Options of {@link redisStore}. */
export interface RedisStoreOptions {
  /** Prefix of every key. Default `'miniprof:'`. */
  prefix?: string;
  /** Profiles kept per developer. Default 100. */
  maxCount?: number;
  /**
   * Captured profiles (the `capture` option) kept, over all instances: their own list, so they
   * never push out a developer's. Default 100.
   */
  captureMaxCount?: number;
  /** TTL of every key, from the last save. Default 30 minutes. */
  maxAgeMs?: number;
  /** A larger profile is not saved (the fault is reported). Default 1 MiB. */
  maxBytes?: number;
  /** A command that takes longer fails (and is reported) instead of waiting for a reconnect. Default 2000. */
  timeoutMs?: number;
  /**
   * After a command timed out or failed, commands fail at once for this long (reported once, not
   * per request), then one tries Redis again: while Redis is away, nobody waits `timeoutMs` on
   * every request. Default 10000.
   */
  retryAfterMs?: number;
  /** Opt-in tokens kept per developer; minting one more drops their oldest. Default 10. */
  maxOptIns?: number;
}

const KEYS = ['prefix', 'maxCount', 'maxAgeMs', 'maxBytes', 'timeoutMs', 'retryAfterMs', 'maxOptIns', 'captureMaxCount'];

/**
 * One atomic opt-in: the token's key with its TTL, pushed on the owner's list of tokens, the list
 * cut to `maxOptIns` (the tokens cut off are deleted: they admit nothing any more).
 * KEYS: token key, owner's token list. ARGV: ttl ms, max tokens, key prefix of tokens.
 */
const MINT = `
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
redis.call('LPUSH', KEYS[2], KEYS[1])
local max = tonumber(ARGV[2])
local gone = redis.call('LRANGE', KEYS[2], max, -1)
for _, k in ipairs(gone) do
  if string.sub(k, 1, string.len(ARGV[3])) == ARGV[3] then redis.call('DEL', k) end
end
redis.call('LTRIM', KEYS[2], 0, max - 1)
local ttl = redis.call('PTTL', KEYS[2])
if ttl < tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[2], ARGV[1]) end
return #gone`;

/**
 * One atomic save: the profile with a TTL, its summary pushed on the owner's list, the list cut
 * to `maxCount` (the profiles cut off are deleted with it) and its TTL renewed.
 * KEYS: profile key, list key. ARGV: profile JSON, summary JSON, ttl ms, max count, key prefix of profiles.
 */
const SAVE = `
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
redis.call('LPUSH', KEYS[2], ARGV[2])
local max = tonumber(ARGV[4])
local gone = redis.call('LRANGE', KEYS[2], max, -1)
for _, s in ipairs(gone) do
  local ok, v = pcall(cjson.decode, s)
  if ok and type(v) == 'table' and type(v.id) == 'string' then redis.call('DEL', ARGV[5] .. v.id) end
end
redis.call('LTRIM', KEYS[2], 0, max - 1)
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return #gone`;

/**
 * A store in Redis, so every instance of an app shows every instance's profiles. The app passes
 * its own connected client, node-redis (`createClient()`) or ioredis (`new Redis()`); miniprof
 * imports neither. Keys: `<prefix>p:<owner hash>:<id>` (the JSON) and `<prefix>l:<owner hash>`
 * (the owner's list, newest first, at most `maxCount`), all with a TTL of `maxAgeMs`. Owners are
 * hashed so no identity appears in a key name.
 *
 * Commands are bounded by `timeoutMs`: while Redis is away a save fails and goes to
 * `onInternalError` (the request it belongs to has already been answered), and after the first
 * timeout or failure every command fails at once for `retryAfterMs` (src/results/timeout.ts `breaker`).
 *
 * @example
 * import { createClient } from 'redis';
 * const client = await createClient({ url: process.env.REDIS_URL }).connect();
 * app.use(miniprof({ results: { store: redisStore(client, { prefix: 'myapp:miniprof:' }) } }));
 */
export function redisStore(client: RedisClientLike, options?: RedisStoreOptions): ProfileStore {
  const send = commandFn(client);
  const o = checkObject(options, KEYS, 'redisStore');
  const prefix = o.prefix ?? 'miniprof:';
  if (typeof prefix !== 'string' || prefix.length > 200) throw invalid('prefix', 'a string of at most 200 characters', prefix);
  const maxCount = intOption(o, 'maxCount', 100, 1, 100_000);
  const captureMaxCount = intOption(o, 'captureMaxCount', 100, 1, 100_000);
  const countOf = (owner: string) => (owner === CAPTURE_OWNER ? captureMaxCount : maxCount);
  const maxAgeMs = intOption(o, 'maxAgeMs', 30 * 60_000, 1, 365 * 24 * 3_600_000);
  const maxBytes = intOption(o, 'maxBytes', 1 << 20, 1024, 512 << 20);
  const timeoutMs = intOption(o, 'timeoutMs', 2000, 1, 600_000);
  const retryAfterMs = intOption(o, 'retryAfterMs', RETRY_AFTER_MS, 1, 3_600_000);
  const maxOptIns = intOption(o, 'maxOptIns', DEFAULT_MAX_OPT_INS, 1, 10_000);
  // Any failure trips it: a client gives up on a refused connection after its own retries (ioredis's
  // maxRetriesPerRequest), and an error reply (OOM, READONLY) means the store cannot take ours either.
  const bounded = breaker(timeoutMs, retryAfterMs, true);

  function run(args: string[]): Promise<unknown> {
    return bounded(() => send(args), `miniprof redis store: ${args[0]}`);
  }

  const owned = (owner: string) => createHash('sha256').update(owner).digest('hex').slice(0, 32);
  /** Tokens are hashed too: a key listing shows no token (it would still need the secret's MAC). */
  const tokenKey = (token: string) => `${prefix}o:${createHash('sha256').update(token).digest('hex').slice(0, 32)}`;

  return {
    async save(owner, profile) {
      const json = JSON.stringify(profile);
      const size = Buffer.byteLength(json);
      if (size > maxBytes) throw codedError('MINIPROF_ERR_INVALID_ARGUMENT', `profile of ${size} bytes is larger than the store's maxBytes (${maxBytes})`);
      if (!UUID.test(profile.id)) throw codedError('MINIPROF_ERR_INVALID_ARGUMENT', `profile id must be a UUID, got ${describe(profile.id)}`);
      const h = owned(owner);
      const summary = JSON.stringify(summarize(profile, Date.now()));
      await run(['EVAL', SAVE, '2', `${prefix}p:${h}:${profile.id}`, `${prefix}l:${h}`, json, summary, String(maxAgeMs), String(countOf(owner)), `${prefix}p:${h}:`]);
    },
    async get(owner, id) {
      if (!UUID.test(id)) return undefined;
      const v = await run(['GET', `${prefix}p:${owned(owner)}:${id}`]);
      if (v === null || v === undefined) return undefined;
      return JSON.parse(String(v)) as ProfileJSON;
    },
    async addOptIn(owner, token, expiresAt) {
      const ttl = Math.max(1, Math.ceil(expiresAt - Date.now()));
      await run(['EVAL', MINT, '2', tokenKey(token), `${prefix}ol:${owned(owner)}`, String(ttl), String(maxOptIns), `${prefix}o:`]);
    },
    async hasOptIn(token) {
      return Number(await run(['EXISTS', tokenKey(token)])) === 1;
    },
    async revokeOptIn(token) {
      await run(['DEL', tokenKey(token)]);
    },
    async list(owner, limit) {
      if (limit < 1) return [];
      const v = await run(['LRANGE', `${prefix}l:${owned(owner)}`, '0', String(Math.min(limit, countOf(owner)) - 1)]);
      if (!Array.isArray(v)) return [];
      const since = Date.now() - maxAgeMs;
      const out: ProfileSummary[] = [];
      for (const s of v) {
        // Redis may be shared, so a row may be anything: one that is not a summary is passed on
        // for the list page to show as malformed (pages.ts readSummary), never thrown on.
        let row: unknown = null;
        try {
          row = JSON.parse(String(s));
        } catch {
          // Not JSON: shown as malformed.
        }
        const savedAt = row !== null && typeof row === 'object' ? (row as { savedAt?: unknown }).savedAt : undefined;
        // The list's TTL is renewed by each save; its older rows may have outlived their profile.
        if (typeof savedAt !== 'number' || savedAt > since) out.push(row as ProfileSummary);
      }
      return out;
    },
  };
}

function commandFn(client: RedisClientLike): (args: string[]) => unknown {
  const c = client as { call?: unknown; sendCommand?: unknown } | null;
  if (c !== null && typeof c === 'object') {
    // ioredis has both; its sendCommand takes a Command object, so `call` comes first.
    if (typeof c.call === 'function') {
      const call = c.call as (command: string, ...args: string[]) => unknown;
      return (args) => call.apply(client, args as [string, ...string[]]);
    }
    if (typeof c.sendCommand === 'function') {
      const sendCommand = c.sendCommand as (args: string[]) => unknown;
      return (args) => sendCommand.call(client, args);
    }
  }
  throw codedError('MINIPROF_ERR_INVALID_ARGUMENT', `redisStore() takes a node-redis or ioredis client, got ${describe(client)}`);
}
