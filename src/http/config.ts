import { codedError, describe } from '../core/errors.js';
import { boolOption, checkObject, CORE_KEYS, fnOption, intOption, invalid, resolveCore, type CoreConfig, type CoreOptions } from '../core/options.js';
import { instrument } from '../instrument/channels.js';
import { DEFAULT_MAX_BYTES, MIN_MAX_BYTES } from '../render/server-timing.js';
import { RESULTS_KEYS, resolveResults, type ResultsConfig, type ResultsOptions } from '../results/config.js';
import { resolveCapture, type CaptureConfig, type CaptureOptions } from './capture.js';

export type { CaptureOptions } from './capture.js';

/** Options of the Express middleware and the Fastify plugin. */
export interface MiniprofOptions<Req> extends CoreOptions {
  /**
   * Who is profiled. Sync or async. When unset: nobody under `NODE_ENV=production`, otherwise
   * only loopback peers (127.0.0.0/8, ::1), judged from the socket, never from `X-Forwarded-For`.
   * If it throws or rejects, the request is not a developer's (and the fault is reported).
   */
  isDeveloper?: (req: Req) => boolean | Promise<boolean>;
  /** Add the text tree as an HTML comment to whole `text/html` bodies. Default true. */
  htmlComment?: boolean;
  /**
   * Send a `Server-Timing` header. Default true. `maxBytes` (default 2048) caps its size;
   * `crossOrigin: true` keeps it even when the app sets `Timing-Allow-Origin: *` (default false:
   * then the timings, which DevTools of another origin could read, are left out).
   */
  serverTiming?: boolean | { maxBytes?: number; crossOrigin?: boolean };
  /**
   * A developer response still open after this long (server-sent events, long polls) has its
   * profile sealed: later steps are pass-throughs. Default 120000 (2 minutes).
   */
  maxDurationMs?: number;
  /**
   * Keep each developer's profiles and serve them under `basePath` (default `/_miniprof`) to
   * that developer only; every profiled response carries `X-Miniprof-Id`. Default true (an
   * in-memory store); `false` keeps nothing and mounts nothing.
   */
  results?: boolean | ResultsOptions<Req>;
  /**
   * Turns on the opt-in cookie (at least 32 bytes; keep it out of the code). A developer who
   * passes `isDeveloper` opens `<basePath>/opt-in` and gets a signed, expiring cookie; with it
   * their requests are profiled even where `isDeveloper` says no. Default: unset (no opt-in).
   */
  secret?: string | Buffer;
  /** How long an opt-in lasts. Default 8 hours. */
  optInMaxAgeMs?: number;
  /**
   * Profile a sample of the requests that are not a developer's, with no change at all to their
   * responses, and keep the slow and failed ones in the results store (under their own quota),
   * listed for developers at `<basePath>/captured`. `true` takes every default. Default: off.
   * Needs `results`. A captured profile holds the path without its query, redacted commands,
   * no header or cookie values, and no user identity but `captureLabel`'s.
   *
   * @example
   * app.use(miniprof({ isDeveloper, capture: { rate: 0.01, slowerThanMs: 1000 } }));
   */
  capture?: boolean | CaptureOptions;
  /**
   * A label for a kept captured request (a tenant or user id the app chooses to show), asked for
   * when the response has closed. Anything but a non-empty string is ignored; cut to 100
   * characters. Default: none (captured profiles name nobody).
   */
  captureLabel?: (req: Req) => string;
}

/** @internal */
export interface HttpConfig<Req> {
  core: CoreConfig;
  /** null: nobody is a developer, decided once at setup. */
  isDeveloper: ((req: Req) => unknown) | null;
  htmlComment: boolean;
  serverTiming: { maxBytes: number; crossOrigin: boolean } | null;
  maxDurationMs: number;
  /** null: no store, no routes, no id header. */
  results: ResultsConfig | null;
  /** The socket's address: the developer's identity when there is no opt-in. */
  peer: (req: Req) => string | undefined;
  /** null: capture is off, and nothing but `isDeveloper` is asked per request. */
  capture: CaptureConfig | null;
}

export const HTTP_KEYS = [...CORE_KEYS, 'isDeveloper', 'htmlComment', 'serverTiming', 'maxDurationMs', ...RESULTS_KEYS, 'capture', 'captureLabel'] as const;

/** Validate and resolve once, at setup: a wrong option throws a coded TypeError naming it. */
export function resolveHttp<Req>(
  options: unknown,
  what: string,
  peer: (req: Req) => string | undefined,
  extraKeys: readonly string[] = [],
): HttpConfig<Req> {
  const o = checkObject(options, [...HTTP_KEYS, ...extraKeys], what);
  const core = resolveCore(o);
  let isDeveloper = fnOption<((req: Req) => unknown) | undefined>(o, 'isDeveloper', undefined);
  if (isDeveloper === undefined && process.env.NODE_ENV !== 'production') {
    isDeveloper = (req) => isLoopback(peer(req));
  }
  const results = resolveResults(o);
  const cfg: HttpConfig<Req> = {
    core,
    isDeveloper: isDeveloper ?? null,
    htmlComment: boolOption(o, 'htmlComment', true),
    serverTiming: serverTimingOption(o.serverTiming),
    maxDurationMs: intOption(o, 'maxDurationMs', 120_000, 1, 2 ** 31 - 1),
    results,
    peer,
    capture: resolveCapture(o, core, results !== null),
  };
  if (results !== null) results.captured = cfg.capture !== null;
  // Subscribed only once every option is valid, and never when nobody can be profiled
  // (production without isDeveloper or capture): then the libraries keep their untraced fast path.
  if (core.instrument && (cfg.isDeveloper !== null || cfg.capture !== null)) instrument();
  return cfg;
}

function serverTimingOption(v: unknown): HttpConfig<unknown>['serverTiming'] {
  if (v === undefined || v === true) return { maxBytes: DEFAULT_MAX_BYTES, crossOrigin: false };
  if (v === false) return null;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw invalid('serverTiming', 'a boolean or { maxBytes, crossOrigin }', v);
  }
  const o = v as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (key !== 'maxBytes' && key !== 'crossOrigin') {
      throw codedError('MINIPROF_ERR_UNKNOWN_OPTION', `unknown option "serverTiming.${key}" (${describe(o[key])}); known: maxBytes, crossOrigin`);
    }
  }
  return {
    maxBytes: intOption(o, 'maxBytes', DEFAULT_MAX_BYTES, MIN_MAX_BYTES, 1 << 20),
    crossOrigin: boolOption(o, 'crossOrigin', false),
  };
}

/** 127.0.0.0/8 and ::1, also as IPv4-mapped IPv6. The socket's address, never a header. */
export function isLoopback(addr: string | undefined): boolean {
  if (addr === undefined) return false;
  if (addr === '::1') return true;
  if (addr.startsWith('::ffff:')) addr = addr.slice(7);
  return addr.startsWith('127.') && /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(addr);
}
