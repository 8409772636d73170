import { codedError, describe } from '../core/errors.js';
import { fnOption, intOption, invalid } from '../core/options.js';
import { memoryStore } from './memory-store.js';
import type { ProfileStore } from './store.js';

/** The `results` option: where profiles are kept and where the pages are served. */
export interface ResultsOptions<Req = any> {
  /** Where the pages live. Default `'/_miniprof'`. Letters, digits and `/_.~-` only. */
  basePath?: string;
  /** Default: a {@link memoryStore} with its defaults (200 profiles, 32 MiB, 30 minutes). */
  store?: ProfileStore;
  /** Rows on the list page. Default 50. */
  listLimit?: number;
  /** A store read slower than this answers the developer 503 (and is reported). Default 5000. */
  timeoutMs?: number;
  /**
   * Whose profiles a developer's request makes and sees, for apps that know their users (a
   * session's user id, say). Default: the socket's peer address. An opt-in cookie, when valid,
   * is the identity instead. If it throws or returns anything but a non-empty string, the
   * request is not treated as a developer's: profiles are never filed under a guess.
   */
  owner?: (req: Req) => string;
}

/** @internal */
export interface ResultsConfig {
  basePath: string;
  store: ProfileStore;
  listLimit: number;
  timeoutMs: number;
  owner: ((req: unknown) => unknown) | null;
  /** null: no opt-in route, and cookies are never read. */
  secret: Buffer | null;
  optInMaxAgeMs: number;
  /** Capture is on: the list links to `basePath/captured`. Set by resolveHttp. */
  captured: boolean;
}

export const RESULTS_KEYS = ['results', 'secret', 'optInMaxAgeMs'] as const;

const RESULT_KEYS = ['basePath', 'store', 'listLimit', 'timeoutMs', 'owner'];
const BASE = /^(?:\/[A-Za-z0-9_.~-]+)+$/;
const MIN_SECRET_BYTES = 32;

/** Resolve `results`, `secret` and `optInMaxAgeMs` once, at setup. */
export function resolveResults(o: Record<string, unknown>): ResultsConfig | null {
  const r = o.results;
  const secret = secretOption(o.secret);
  const optInMaxAgeMs = intOption(o, 'optInMaxAgeMs', 8 * 3_600_000, 60_000, 366 * 24 * 3_600_000);
  if (r === false) {
    if (secret !== null) throw invalid('secret', 'unset when results is false (the opt-in route lives under the results path)', '[secret]');
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
  return {
    basePath,
    store: store as ProfileStore,
    listLimit: intOption(ro, 'listLimit', 50, 1, 1000),
    timeoutMs: intOption(ro, 'timeoutMs', 5000, 1, 600_000),
    owner: fnOption<((req: unknown) => unknown) | null>(ro, 'owner', null),
    secret,
    optInMaxAgeMs,
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
