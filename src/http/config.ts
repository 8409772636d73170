import { codedError, describe } from '../core/errors.js';
import { boolOption, checkObject, CORE_KEYS, fnOption, intOption, invalid, resolveCore, type CoreConfig, type CoreOptions } from '../core/options.js';
import { instrument } from '../instrument/channels.js';
import { DEFAULT_MAX_BYTES, MIN_MAX_BYTES } from '../render/server-timing.js';
import { localDeveloper, type Headers } from './proxy.js';
import type { BadgeOptions } from './badge.js';
import { RESULTS_KEYS, resolveResults, type ResultsConfig, type ResultsOptions } from '../results/config.js';
import { resolveCapture, type CaptureConfig, type CaptureOptions } from './capture.js';

export type { CaptureOptions } from './capture.js';

/** Options of the Express middleware and the Fastify plugin. */
export interface MiniprofOptions<Req> extends CoreOptions {
  /**
   * Who is profiled. Sync or async. When unset: nobody under `NODE_ENV=production`, otherwise
   * only loopback peers (127.0.0.0/8, ::1), judged from the socket, never from `X-Forwarded-For`,
   * and never a request that came through a proxy (one with `Forwarded`, `X-Forwarded-For`,
   * `X-Real-IP` or `Via`): to profile through a proxy or tunnel, set `isDeveloper` or use opt-in.
   * If it throws or rejects, the request is not a developer's (and the fault is reported).
   */
  isDeveloper?: (req: Req) => boolean | Promise<boolean>;
  /**
   * Add the text tree as an HTML comment to whole `text/html` bodies. Default true. `maxBytes`
   * (default 1048576, 1 MiB) bounds the pages that get it: a bigger page gets neither the
   * comment nor the badge (the header still), and its profile a warning. Finding the comment's
   * place costs time linear in the page (see docs/security.md).
   *
   * @example
   * app.use(miniprof({ htmlComment: { maxBytes: 4 * 1024 * 1024 } }));
   */
  htmlComment?: boolean | { maxBytes?: number };
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
   * passes `isDeveloper` opens `<basePath>/opt-in` and presses its button (a same-origin POST) to
   * get a signed, expiring cookie whose token the store keeps; with it their requests are
   * profiled even where `isDeveloper` says no, until it expires, they opt out, or the secret or
   * `optInGeneration` changes. Default: unset (no opt-in).
   */
  secret?: string | Buffer;
  /** How long an opt-in lasts. Default 8 hours. */
  optInMaxAgeMs?: number;
  /**
   * Signed into every opt-in cookie; change it (say, add 1) to void every opt-in at once.
   * Default 0.
   */
  optInGeneration?: number;
  /**
   * The opt-in cookie is `__Host-miniprof` with `Secure` even where the app sees plain HTTP: for
   * apps behind a proxy that ends TLS. Without it the cookie is `Secure` when the request is
   * HTTPS as the app sees it, or its host is loopback (`localhost`, `*.localhost`, 127.0.0.0/8,
   * `[::1]`). Default false.
   */
  optInSecure?: boolean;
  /**
   * The host names (optionally `name:port`) this app answers to, for example
   * `['localhost', '127.0.0.1', 'app.example.com']`. When set, a request whose `Host` is not one
   * of them is nobody's: never profiled, and the results pages give the app's own answer. This
   * is the defence against DNS rebinding, where a page of another site reaches a development
   * server on loopback under its own host name. Default: unset (any host).
   */
  allowedHosts?: readonly string[];
  /**
   * The in-page badge: pages that get the comment also get one external
   * `<script src="<basePath>/badge.js?v=…" defer>` (with the app's CSP nonce), a corner button
   * with the page's time that opens its tree and lists the page's later `fetch`/XHR profiles.
   * Default true when `results` is on; `false` turns it off; or `{ position, nonce }`.
   */
  badge?: boolean | BadgeOptions<Req>;
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
  /**
   * The framework's own work as steps, for developers, with no app code: each view rendered
   * (`render <view>`: Express's `res.render`, @fastify/view's `reply.view`, Koa's `ctx.render`,
   * Hono's `c.render`) and Fastify's route handler (`handler GET /users/:id`, from Fastify's
   * tracing channel), with the app's own steps nested inside. Nobody else's request is touched.
   * Default true; `false` for only the app's own steps. See docs/auto-steps.md.
   */
  autoSteps?: boolean;
}

/** @internal */
export interface HttpConfig<Req> {
  core: CoreConfig;
  /** null: nobody is a developer, decided once at setup. */
  isDeveloper: ((req: Req) => unknown) | null;
  htmlComment: boolean;
  /** Pages above this many bytes get no comment and no badge. */
  htmlMaxBytes: number;
  serverTiming: { maxBytes: number; crossOrigin: boolean } | null;
  maxDurationMs: number;
  /** null: no store, no routes, no id header. */
  results: ResultsConfig | null;
  /** The socket's address: the developer's identity when there is no opt-in. */
  peer: (req: Req) => string | undefined;
  /** The request's headers (Node's, lowercase names). */
  headers: (req: Req) => Headers | undefined;
  /** The request came over HTTPS as the app sees it. */
  https: (req: Req) => boolean;
  /** null: any host. Lowercase `name` (any port) or `name:port` entries. */
  allowedHosts: ReadonlySet<string> | null;
  /** null: capture is off, and nothing but `isDeveloper` is asked per request. */
  capture: CaptureConfig | null;
  /** Views and Fastify's handler as steps on a developer's request (src/http/views.ts, fastify-handler.ts). */
  autoSteps: boolean;
}

export const HTTP_KEYS = [...CORE_KEYS, 'isDeveloper', 'htmlComment', 'serverTiming', 'maxDurationMs', 'allowedHosts', ...RESULTS_KEYS, 'capture', 'captureLabel', 'autoSteps'] as const;

/** Validate and resolve once, at setup: a wrong option throws a coded TypeError naming it. */
export function resolveHttp<Req>(
  options: unknown,
  what: string,
  peer: (req: Req) => string | undefined,
  extraKeys: readonly string[] = [],
  headers: (req: Req) => Headers | undefined = (req) => (req as { headers?: Headers }).headers,
  https: (req: Req) => boolean = httpsOf,
): HttpConfig<Req> {
  const o = checkObject(options, [...HTTP_KEYS, ...extraKeys], what);
  const core = resolveCore(o);
  let isDeveloper = fnOption<((req: Req) => unknown) | undefined>(o, 'isDeveloper', undefined);
  if (isDeveloper === undefined && process.env.NODE_ENV !== 'production') {
    isDeveloper = localDeveloper(peer, headers);
  }
  const results = resolveResults(o);
  const cfg: HttpConfig<Req> = {
    core,
    isDeveloper: isDeveloper ?? null,
    htmlComment: o.htmlComment !== false,
    htmlMaxBytes: htmlMaxBytes(o.htmlComment),
    serverTiming: serverTimingOption(o.serverTiming),
    maxDurationMs: intOption(o, 'maxDurationMs', 120_000, 1, 2 ** 31 - 1),
    results,
    peer,
    headers,
    https,
    allowedHosts: allowedHostsOption(o.allowedHosts),
    capture: resolveCapture(o, core, results !== null),
    autoSteps: boolOption(o, 'autoSteps', true),
  };
  if (results !== null) results.captured = cfg.capture !== null;
  // Subscribed only once every option is valid, and never when nobody can be profiled
  // (production without isDeveloper or capture): then the libraries keep their untraced fast path.
  if (core.instrument && (cfg.isDeveloper !== null || cfg.capture !== null)) instrument();
  return cfg;
}

/** Pages up to 1 MiB: the scan of a messy megabyte takes 6–10 ms of CPU (bench/RESULTS.md, issue 58). */
export const DEFAULT_HTML_MAX_BYTES = 1 << 20;

function htmlMaxBytes(v: unknown): number {
  if (v === undefined || typeof v === 'boolean') return DEFAULT_HTML_MAX_BYTES;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw invalid('htmlComment', 'a boolean or { maxBytes }', v);
  const o = v as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (key !== 'maxBytes') throw codedError('MINIPROF_ERR_UNKNOWN_OPTION', `unknown option "htmlComment.${key}" (${describe(o[key])}); known: maxBytes`);
  }
  const max = o.maxBytes;
  if (max === undefined) return DEFAULT_HTML_MAX_BYTES;
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 1 || max > 2 ** 31 - 1) throw invalid('htmlComment.maxBytes', 'an integer from 1 to 2147483647', max);
  return max;
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

/**
 * HTTPS as the app sees it: the socket is TLS, or the framework says so (Express's `req.secure`,
 * Fastify's `request.protocol`, which follow the app's own `trust proxy` settings).
 */
function httpsOf(req: unknown): boolean {
  const r = req as { secure?: unknown; protocol?: unknown; socket?: { encrypted?: unknown }; raw?: { socket?: { encrypted?: unknown } } };
  return r.secure === true || r.protocol === 'https' || r.socket?.encrypted === true || r.raw?.socket?.encrypted === true;
}

/** `name`, `name:port`, `[v6]` or `[v6]:port`: letters, digits, `.` and `-` in a name. */
const HOST_ENTRY = /^(?:[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\])(?::\d{1,5})?$/;

function allowedHostsOption(v: unknown): ReadonlySet<string> | null {
  if (v === undefined) return null;
  const what = 'a non-empty array of host names, optionally with a port ("localhost", "app.example.com:8080")';
  if (!Array.isArray(v) || v.length === 0) throw invalid('allowedHosts', what, v);
  const out = new Set<string>();
  for (const h of v) {
    const entry = typeof h === 'string' ? h.trim().toLowerCase().replace(/\.(?=:|$)/, '') : '';
    if (!HOST_ENTRY.test(entry)) throw invalid('allowedHosts', what, h);
    out.add(entry);
  }
  return out;
}
