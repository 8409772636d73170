import { codedError, describe, report, type InternalErrorHandler } from '../core/errors.js';
import { invalid } from '../core/options.js';
import { BADGE_PATH, BADGE_VERSION } from '../results/badge.js';

/** Which corner of the page the badge sits in. */
export type BadgePosition = 'bottom-right' | 'bottom-left' | 'top-right' | 'top-left';

/**
 * The `badge` option as an object (`true` is all defaults).
 *
 * @example
 * app.use(miniprof({ badge: { position: 'top-left', nonce: (req, res) => res.locals.nonce } }));
 */
export interface BadgeOptions<Req = any, Res = any> {
  /** Default `'bottom-right'`. */
  position?: BadgePosition;
  /**
   * The CSP nonce for the script tag, for this request: Express passes `(req, res)`, Fastify
   * `(request, reply)`, Koa `(ctx, ctx.res)`, Hono `(c, headers)`: first what `isDeveloper` is given. Return undefined for none. Default: `res.locals.cspNonce` (Express,
   * helmet's documented pattern), then `reply.cspNonce.script` (`@fastify/helmet` with
   * `enableCSPNonces`). A value that is not base64 (or base64url) is never written: the badge is
   * left out of that page and the fault goes to `onInternalError`.
   */
  nonce?: (req: Req, res: Res) => string | undefined;
}

/** @internal */
export interface BadgeConfig {
  /** `<script src="…" data-position="…" defer data-id="`: all but the id and the nonce. */
  readonly open: string;
  readonly nonce: ((req: unknown, res: unknown) => unknown) | null;
}

export const BADGE_KEYS = ['position', 'nonce'];
const POSITIONS: readonly string[] = ['bottom-right', 'bottom-left', 'top-right', 'top-left'];

/**
 * Resolve `badge` once, at setup. `basePath` null means results are off: there is nothing to
 * serve the script from, so asking for the badge then is a mistake, and unset means off.
 */
export function resolveBadge(v: unknown, basePath: string | null): BadgeConfig | null {
  if (v === false) return null;
  if (basePath === null) {
    if (v === undefined) return null;
    throw invalid('badge', 'unset or false when results is false (the script is served from the results path)', v);
  }
  if (v === undefined || v === true) return config(basePath, 'bottom-right', null);
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw invalid('badge', 'a boolean or { position, nonce }', v);
  const o = v as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (!BADGE_KEYS.includes(key)) {
      throw codedError('MINIPROF_ERR_UNKNOWN_OPTION', `unknown option "badge.${key}" (${describe(o[key])}); known: ${BADGE_KEYS.join(', ')}`);
    }
  }
  const position = o.position ?? 'bottom-right';
  if (typeof position !== 'string' || !POSITIONS.includes(position)) throw invalid('badge.position', `one of ${POSITIONS.join(', ')}`, position);
  if (o.nonce !== undefined && typeof o.nonce !== 'function') throw invalid('badge.nonce', 'a function (req, res) => string', o.nonce);
  return config(basePath, position, (o.nonce as BadgeConfig['nonce']) ?? null);
}

function config(basePath: string, position: string, nonce: BadgeConfig['nonce']): BadgeConfig {
  // basePath is checked at setup to `[A-Za-z0-9/_.~-]`, the version is base64url, the position
  // one of four: nothing here needs escaping.
  return { open: `<script src="${basePath}${BADGE_PATH}?v=${BADGE_VERSION}" data-position="${position}" defer data-id="`, nonce };
}

/**
 * A CSP nonce as CSP 3 writes it (base64-value: base64 or base64url, `=` padding), and what
 * helmet's examples make (hex). Checked before it goes into an attribute.
 */
const NONCE = /^[A-Za-z0-9+/_-]{1,512}={0,2}$/;

/**
 * The tag for one page: `id` is the profile's (a UUID), `req` the request as the app knows it
 * (what `isDeveloper` is given: Express's `req`, Fastify's `request`, Koa's `ctx`, Hono's `c`),
 * `h` the adapter's response object (Express's `res`, Fastify's `reply`), where the app's nonce
 * is looked up. Returns '' (and reports why) when the app's nonce cannot be used: a tag without
 * it would only be blocked.
 */
export function badgeTag(b: BadgeConfig, id: string, req: unknown, h: unknown, onInternalError: InternalErrorHandler): string {
  let nonce: unknown;
  try {
    nonce = b.nonce === null ? defaultNonce(h) : b.nonce(req, h);
  } catch (err) {
    report(onInternalError, err);
    return '';
  }
  if (nonce === undefined || nonce === null || nonce === '') return `${b.open}${id}"></script>`;
  if (typeof nonce !== 'string' || !NONCE.test(nonce)) {
    const what = typeof nonce === 'string' ? `a string of ${nonce.length} characters` : describe(nonce);
    report(onInternalError, codedError('MINIPROF_ERR_INVALID_OPTION', `the badge's CSP nonce must be base64, got ${what}; the badge was left out of this page`));
    return '';
  }
  return `${b.open}${id}" nonce="${nonce}"></script>`;
}

/** `res.locals.cspNonce` (Express, helmet's pattern), else `reply.cspNonce.script` (@fastify/helmet). */
function defaultNonce(h: unknown): unknown {
  const r = h as { locals?: { cspNonce?: unknown }; cspNonce?: { script?: unknown } };
  const locals = r.locals;
  if (locals !== undefined && locals !== null && locals.cspNonce !== undefined) return locals.cspNonce;
  const fastify = r.cspNonce;
  return fastify !== undefined && fastify !== null && typeof fastify === 'object' ? fastify.script : undefined;
}
