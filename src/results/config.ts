import { codedError, describe } from '../core/errors.js';
import { boolOption, fnOption, intOption, invalid } from '../core/options.js';
import { resolveBadge, type BadgeConfig } from '../http/badge.js';
import { memoryStore } from './memory-store.js';
import type { ProfileStore } from './store.js';
import { breaker, RETRY_AFTER_MS } from './timeout.js';

/** The `results` option: where profiles are kept and where the pages are served. */
export interface ResultsOptions<Req = any> {
  /** Where the pages live. Default `'/_miniprof'`. Letters, digits and `/_.~-` only. */
  basePath?: string;
  /** Default: a {@link memoryStore} with its defaults (200 profiles, 32 MiB, 30 minutes). */
  store?: ProfileStore;
  /** Rows on the list page. Default 50. */
  listLimit?: number;
  /**
   * A store read slower than this answers the developer 503 (and is reported); after one, the
   * store is skipped for 10 s (reported once), then tried again. Default 5000.
   */
  timeoutMs?: number;
  /**
   * Whose profiles a developer's request makes and sees, for apps that know their users (a
   * session's user id, say). Default: the socket's peer address. An opt-in cookie, when valid,
   * is the identity instead. If it throws or returns anything but a non-empty string, the
   * request is not treated as a developer's: profiles are never filed under a guess.
   */
  owner?: (req: Req) => string;
  /**
   * Keep the profiles of requests the app answered 404 without a single step or custom timing
   * (`/favicon.ico`, a probe for `/.env`): by default they are not saved, so they never crowd the
   * list. Default false.
   */
  keepNotFound?: boolean;
}

/** @internal */
export interface ResultsConfig {
  basePath: string;
  store: ProfileStore;
  listLimit: number;
  timeoutMs: number;
  /** A store call bounded by `timeoutMs`, skipped for a while after one timed out (timeout.ts `breaker`). */
  bounded: <T>(call: () => T | PromiseLike<T>, message: string) => Promise<T>;
  owner: ((req: unknown) => unknown) | null;
  /** Save a 404 with nothing timed (src/results/save.ts worthKeeping). */
  keepNotFound: boolean;
  /** null: no opt-in route, and cookies are never read. */
  secret: Buffer | null;
  optInMaxAgeMs: number;
  /** Signed into every opt-in cookie: a cookie of another generation admits nothing. */
  optInGeneration: number;
  /** The cookie is `__Host-` and Secure even where the app sees plain HTTP (TLS ends at a proxy). */
  optInSecure: boolean;
  /** null: no badge, and `badge.js` is not served. */
  badge: BadgeConfig | null;
  /** Capture is on: the list links to `basePath/captured`. Set by resolveHttp. */
  captured: boolean;
}

export const RESULTS_KEYS = ['results', 'secret', 'optInMaxAgeMs', 'optInGeneration', 'optInSecure', 'badge'] as const;

const RESULT_KEYS = ['basePath', 'store', 'listLimit', 'timeoutMs', 'owner', 'keepNotFound'];
const BASE = /^(?:\/[A-Za-z0-9_.~-]+)+$/;
const MIN_SECRET_BYTES = 32;

/** Resolve `results`, `secret`, `optInMaxAgeMs` and `badge` once, at setup. */
export function resolveResults(o: Record<string, unknown>): ResultsConfig | null {
  const r = o.results;
  const secret = secretOption(o.secret);
  const optInMaxAgeMs = intOption(o, 'optInMaxAgeMs', 8 * 3_600_000, 60_000, 366 * 24 * 3_600_000);
  const optInGeneration = intOption(o, 'optInGeneration', 0, 0, 999_999_999);
  const optInSecure = boolOption(o, 'optInSecure', false);
  if (r === false) {
    if (secret !== null) throw invalid('secret', 'unset when results is false (the opt-in route lives under the results path)', '[secret]');
    resolveBadge(o.badge, null);
    return null;
  }
  if (r !== undefined && r !== true && (r === null || typeof r !== 'object' || Array.isArray(r))) {
    throw invalid('results', `a boolean or { ${RESULT_KEYS.join(', ')} }`, r);
  }
  const ro = (typeof r === 'object' ? r : {}) as Record<string, unknown>;
  for (const key of Object.keys(ro)) {
    if (!RESULT_KEYS.includes(key)) {
      throw codedError('MINIPROF_ERR_UNKNOWN_OPTION', `unknown option "results.${key}" (${describe(ro[key])}); known: ${RESULT_KEYS.join(', ')}`);
    }
  }
  const basePath = ro.basePath ?? '/_miniprof';
  if (typeof basePath !== 'string' || basePath.length > 200 || !BASE.test(basePath) || /(?:^|\/)\.\.?(?:\/|$)/.test(basePath)) {
    throw invalid('results.basePath', 'a path such as "/_miniprof" (letters, digits, "/_.~-"; no trailing slash)', basePath);
  }
  const store = ro.store ?? memoryStore();
  const s = store as Partial<ProfileStore> | null;
  if (s === null || typeof s !== 'object' || typeof s.save !== 'function' || typeof s.get !== 'function' || typeof s.list !== 'function') {
    throw invalid('results.store', 'a store with save, get and list methods', store);
  }
  if (secret !== null && (typeof s.addOptIn !== 'function' || typeof s.hasOptIn !== 'function' || typeof s.revokeOptIn !== 'function')) {
    throw invalid('results.store', 'a store with addOptIn, hasOptIn and revokeOptIn when secret is set (memoryStore and redisStore have them)', store);
  }
  const keepNotFound = ro.keepNotFound === undefined ? false : ro.keepNotFound;
  if (typeof keepNotFound !== 'boolean') throw invalid('results.keepNotFound', 'a boolean', keepNotFound);
  const timeoutMs = intOption(ro, 'timeoutMs', 5000, 1, 600_000);
  return {
    basePath,
    store: store as ProfileStore,
    listLimit: intOption(ro, 'listLimit', 50, 1, 1000),
    timeoutMs,
    bounded: breaker(timeoutMs, RETRY_AFTER_MS),
    owner: fnOption<((req: unknown) => unknown) | null>(ro, 'owner', null),
    keepNotFound,
    secret,
    optInMaxAgeMs,
    optInGeneration,
    optInSecure,
    badge: resolveBadge(o.badge, basePath),
    captured: false,
  };
}

function secretOption(v: unknown): Buffer | null {
  if (v === undefined) return null;
  const bytes = typeof v === 'string' ? Buffer.from(v, 'utf8') : v instanceof Uint8Array ? Buffer.from(v) : null;
  // The message never shows the secret itself.
  if (bytes === null) throw invalid('secret', `a string or Buffer of at least ${MIN_SECRET_BYTES} bytes`, v);
  if (bytes.length < MIN_SECRET_BYTES) {
    throw codedError('MINIPROF_ERR_INVALID_OPTION', `option "secret" must be at least ${MIN_SECRET_BYTES} bytes, got ${bytes.length}`);
  }
  return bytes;
}
