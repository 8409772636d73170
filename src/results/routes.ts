import { report, type InternalErrorHandler } from '../core/errors.js';
import type { HttpConfig } from '../http/config.js';
import { hostAllowed } from '../http/proxy.js';
import type { ProfileJSON } from '../core/types.js';
import type { ResultsConfig } from './config.js';
import { cookieSecure, hostOf, optInCookie, optOutCookie, originOf, readOptIn, sameOrigin, signOptIn, type Headers, type OptIn } from './optin.js';
import { FORM_HEADERS, renderOptInPage } from './optin-page.js';
import { BADGE_HEADERS, BADGE_JS, BADGE_PATH } from './badge.js';
import { CSS, PAGE_HEADERS, renderListPage, renderProfilePage, type ListView } from './pages.js';
import { CAPTURE_OWNER, UUID, type OptInStore, type ProfileStore, type ProfileSummary } from './store.js';
import { cpuProfileBody, cpuProfileHeaders, CPUPROFILE } from './cpu-route.js';
import { readProfile } from './view.js';
import { renderText } from '../render/text.js';
import { LIST_HEADERS, matches, parseFilter, readSummary } from './pages.js';

/** Who a developer request belongs to: profiles are keyed to `owner`. */
export interface Developer {
  owner: string;
  /** Set when the request was admitted by a valid opt-in cookie. */
  optIn: OptIn | null;
}

/** A results response, written by the adapter in its own way. */
export interface ResultsReply {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Decide whether a request is a developer's, and whose. A valid opt-in cookie admits it without
 * asking `isDeveloper` (its random token is the identity), once the store confirms the token is
 * still one it minted and nobody revoked; otherwise `isDeveloper` decides and the identity is
 * `results.owner(req)`, or the peer address. Without a secret no cookie is read at all. Returns
 * null (not a developer's), a Developer, or a promise of either when `isDeveloper` is async or a
 * cookie must be checked: the common answer, a synchronous no, allocates nothing. Never throws;
 * `isDeveloper` or the store throwing or rejecting means no, and the fault is reported.
 */
export function decide<Req>(
  cfg: HttpConfig<Req>,
  req: Req,
  cookieOf: (req: Req) => unknown,
): Developer | null | Promise<Developer | null> {
  // Nobody is (production without isDeveloper, capture on): no cookie is read either.
  if (cfg.isDeveloper === null) return null;
  // DNS rebinding: another site's page, under its own host name, on this (loopback) server.
  if (cfg.allowedHosts !== null && !hostAllowed(cfg.allowedHosts, cfg.headers(req))) return null;
  const r = cfg.results;
  if (r !== null && r.secret !== null) {
    const cookie = cookieOf(req);
    if (typeof cookie === 'string' && cookie.includes('miniprof=')) {
      const optIn = readOptIn(r.secret, cookie, Date.now(), secureFor(cfg, req), r.optInGeneration, originOf(hostOf(cfg.headers(req))));
      if (optIn !== null) return known(cfg, r, req, optIn);
    }
  }
  return byIsDeveloper(cfg, req);
}

/** The cookie may be (and so must be) `__Host-` and Secure for this request. */
function secureFor<Req>(cfg: HttpConfig<Req>, req: Req): boolean {
  return cookieSecure(cfg.https(req), cfg.results!.optInSecure, hostOf(cfg.headers(req)));
}

/** A signed opt-in admits only while the store still has its token (opt-out revokes it). */
function known<Req>(cfg: HttpConfig<Req>, r: ResultsConfig, req: Req, optIn: OptIn): Promise<Developer | null> {
  const store = r.store as ProfileStore & OptInStore;
  return bounded(r, () => store.hasOptIn(optIn.token)).then(
    (ok) => (ok === true ? { owner: `optin:${optIn.token}`, optIn } : byIsDeveloper(cfg, req)),
    (err: unknown) => {
      report(cfg.core.onInternalError, err);
      return byIsDeveloper(cfg, req);
    },
  );
}

function byIsDeveloper<Req>(cfg: HttpConfig<Req>, req: Req): Developer | null | Promise<Developer | null> {
  let answer: unknown;
  try {
    answer = cfg.isDeveloper!(req);
    if (answer === true) return developer(cfg, req);
    if (answer === null || (typeof answer !== 'object' && typeof answer !== 'function')) return null;
    if (typeof (answer as { then?: unknown }).then !== 'function') return null;
  } catch (err) {
    report(cfg.core.onInternalError, err);
    return null;
  }
  return Promise.resolve(answer as unknown).then(
    (v) => (v === true ? developer(cfg, req) : null),
    (err: unknown) => {
      report(cfg.core.onInternalError, err);
      return null;
    },
  );
}

function developer<Req>(cfg: HttpConfig<Req>, req: Req): Developer | null {
  const fn = cfg.results?.owner ?? null;
  if (fn === null) return { owner: peerOwner(cfg.peer(req) ?? ''), optIn: null };
  let id: unknown;
  try {
    id = fn(req);
  } catch (err) {
    report(cfg.core.onInternalError, err);
    return null;
  }
  return typeof id === 'string' && id.length > 0 ? { owner: `app:${id}`, optIn: null } : null;
}

/** The owner of a peer's profiles, when the app gives no `results.owner`. */
function peerOwner(peer: string): string {
  return `peer:${peer}`;
}

/** One prefix test on the raw URL: the only cost results add to a developer's ordinary request. */
export function underBase(r: ResultsConfig, url: string | undefined): boolean {
  if (url === undefined || !url.startsWith(r.basePath)) return false;
  const c = url.charCodeAt(r.basePath.length);
  return Number.isNaN(c) || c === 0x2f || c === 0x3f; // end, '/', '?'
}

function reply(status: number, type: string, body: string, extra?: Record<string, string>): ResultsReply {
  return {
    status,
    headers: { ...PAGE_HEADERS, 'Content-Type': type, 'Content-Length': String(Buffer.byteLength(body)), ...extra },
    body,
  };
}

const HTML = 'text/html; charset=utf-8';
const TEXT = 'text/plain; charset=utf-8';

/**
 * `<id>.txt`: the text tree, as the HTML comment has it, for `curl`. A stored profile that is not
 * v1 JSON (a store may hand back anything) is said in one line, as the page says it.
 */
function profileText(stored: unknown): string {
  const read = readProfile(stored);
  if (!read.ok) return `miniprof: this stored profile cannot be shown: ${read.error}.\n`;
  return renderText(read.profile);
}

/**
 * Answer a developer's request under the base path (the list, `<id>` the page, `<id>.json`,
 * `<id>.txt` the text tree; the same under `/captured/`), or return null to hand it to the app (which
 * then gives its own 404 or 405): every method but GET and HEAD (and POST to the opt-in routes),
 * and every path we do not serve. Nothing here takes code, SQL or file paths; ids must be UUIDs.
 * `headers` are the request's (Node's, lowercase): `Host`, and `Origin` / `Sec-Fetch-Site` for
 * the opt-in routes.
 */
export async function serveResults(
  r: ResultsConfig,
  dev: Developer,
  method: string | undefined,
  url: string,
  https: boolean,
  onInternalError: InternalErrorHandler,
  headers?: Headers,
): Promise<ResultsReply | null> {
  const q = url.indexOf('?');
  const rest = (q === -1 ? url : url.slice(0, q)).slice(r.basePath.length);
  const base = r.basePath;
  try {
    if (r.secret !== null && (rest === '/opt-in' || rest === '/opt-out')) return await optInRoute(r, dev, method, rest.slice(1) as 'opt-in' | 'opt-out', https, headers);
    if (method !== 'GET' && method !== 'HEAD') return null;
    if (rest === '' || rest === '/') {
      return await listPage(r, dev.owner, optInState(r, dev), q === -1 ? '' : url.slice(q + 1), r.captured ? ownView(base) : undefined);
    }
    // The filter form submits to `<list>/`: `/captured/slowest/` is the slowest list too.
    if (rest === '/captured' || rest === '/captured/' || rest === '/captured/slowest' || rest === '/captured/slowest/') {
      const slowest = rest.startsWith('/captured/slowest');
      return await listPage(r, CAPTURE_OWNER, optInState(r, dev), q === -1 ? '' : url.slice(q + 1), capturedView(base, slowest), slowest);
    }
    if (rest === '/miniprof.css') return reply(200, 'text/css; charset=utf-8', CSS);
    if (rest === BADGE_PATH && r.badge !== null) return { status: 200, headers: { ...BADGE_HEADERS }, body: BADGE_JS };
    // A captured profile is every developer's to read, at its own path.
    const captured = rest.startsWith('/captured/');
    const at = captured ? rest.slice('/captured'.length) : rest;
    const json = at.endsWith('.json');
    const txt = at.endsWith('.txt');
    const cpu = at.endsWith(CPUPROFILE);
    const id = at.slice(1, json ? -5 : txt ? -4 : cpu ? -CPUPROFILE.length : undefined);
    if (at[0] !== '/' || !UUID.test(id)) return null;
    const p = await bounded(r, () => r.store.get(captured ? CAPTURE_OWNER : dev.owner, id));
    if (p === undefined) return null;
    if (json) return reply(200, 'application/json; charset=utf-8', JSON.stringify(p));
    if (txt) return reply(200, TEXT, profileText(p));
    if (cpu) {
      const body = cpuProfileBody(p);
      return body === null ? null : reply(200, 'application/json', body, cpuProfileHeaders(id));
    }
    return reply(200, HTML, renderProfilePage(p, base, id, captured ? `${base}/captured` : base));
  } catch (err) {
    report(onInternalError, err);
    return reply(503, 'text/plain; charset=utf-8', 'miniprof: the profile store failed; the fault went to onInternalError.\n');
  }
}

/**
 * `GET`: a form page with one button. `POST`, from a page of this origin only: opt-in mints a
 * token for this developer (the store keeps it, capped per owner) and sets the cookie; opt-out
 * revokes the token this request came with and removes the cookie. A cross-site POST (no
 * `Sec-Fetch-Site: same-origin`, or an `Origin` of another host) changes nothing: 403.
 */
async function optInRoute(r: ResultsConfig, dev: Developer, method: string | undefined, action: 'opt-in' | 'opt-out', https: boolean, headers: Headers | undefined): Promise<ResultsReply | null> {
  const secure = cookieSecure(https, r.optInSecure, hostOf(headers));
  if (method === 'GET' || method === 'HEAD') {
    const body = renderOptInPage(r.basePath, action, dev.optIn !== null, secure);
    return { status: 200, headers: { ...FORM_HEADERS, 'Content-Type': HTML, 'Content-Length': String(Buffer.byteLength(body)) }, body };
  }
  if (method !== 'POST') return null;
  if (!sameOrigin(headers)) return reply(403, 'text/plain; charset=utf-8', 'miniprof: refused, this request did not come from a page of this origin.\n');
  const store = r.store as ProfileStore & OptInStore;
  const back = { Location: `${r.basePath}/` };
  if (action === 'opt-out') {
    if (dev.optIn !== null) await bounded(r, () => store.revokeOptIn(dev.optIn!.token));
    return reply(303, HTML, '', { ...back, 'Set-Cookie': optOutCookie(secure) });
  }
  if (dev.optIn !== null) return reply(303, HTML, '', back);
  const { value, optIn } = signOptIn(r.secret!, Date.now(), r.optInMaxAgeMs, r.optInGeneration, originOf(hostOf(headers)));
  await bounded(r, () => store.addOptIn(dev.owner, optIn.token, optIn.expires * 1000));
  return reply(303, HTML, '', { ...back, 'Set-Cookie': optInCookie(value, r.optInMaxAgeMs, secure) });
}

/** Profiles read for a filtered or slowest-first list: it looks this far back, whatever `listLimit` is. */
const FILTER_WINDOW = 1000;

/**
 * The list page, filtered by the query's `path` and `flag` (checked in parseFilter). Rows that are
 * not summaries stay in, to be shown as malformed, unless a filter is on.
 */
async function listPage(r: ResultsConfig, owner: string, optIn: 'in' | 'out' | null, query: string, view?: ListView, slowest = false): Promise<ResultsReply> {
  const { filter, problems } = parseFilter(query);
  const on = filter.path !== '' || filter.flag !== '';
  // Slowest first is the slowest of the last FILTER_WINDOW kept (the store lists newest first),
  // not of the newest `listLimit` alone: it reads as far back as a filter does.
  const wide = on || slowest;
  let list: unknown[] = await bounded(r, () => r.store.list(owner, wide ? Math.max(r.listLimit, FILTER_WINDOW) : r.listLimit));
  if (!Array.isArray(list)) list = [];
  if (slowest) list = bySlowest(list);
  if (on) {
    list = list.filter((x) => {
      const s = readSummary(x);
      return s !== null && matches(s, filter);
    });
  }
  const html = renderListPage(list.slice(0, r.listLimit), r.basePath, optIn, { now: Date.now(), filter, problems, view });
  return reply(200, HTML, html, { 'Content-Security-Policy': LIST_HEADERS['Content-Security-Policy'] });
}

/** What the list's nav says of the opt-in cookie: nothing without a secret. */
function optInState(r: ResultsConfig, dev: Developer): 'in' | 'out' | null {
  return r.secret === null ? null : dev.optIn !== null ? 'in' : 'out';
}

/** The developer's own list, with a link to the captured requests (capture is on). */
function ownView(base: string): ListView {
  return { title: 'Recent profiles', path: base, nav: ` · <a href="${base}/captured">captured requests</a>`, empty: 'No profiles yet. Make a request as a developer, then reload.' };
}

/** `base/captured`, newest first, or `base/captured/slowest`. */
function capturedView(base: string, slowest: boolean): ListView {
  const other = slowest ? `<a href="${base}/captured">newest first</a>` : `<a href="${base}/captured/slowest">slowest first</a>`;
  return {
    title: slowest ? 'Captured requests, slowest first' : 'Captured requests',
    path: `${base}/captured`,
    list: slowest ? `${base}/captured/slowest` : `${base}/captured`,
    nav: ` · <a href="${base}/">your profiles</a> · ${other}`,
    empty: 'No captured requests kept yet: only sampled requests that were slow or failed are kept.',
  };
}

/** The same rows, slowest first (the newest first among equals). */
function bySlowest(list: unknown[]): unknown[] {
  const ms = (x: unknown) => (readSummary(x)?.durationMs ?? -1);
  return list.map((s, i) => ({ s, i })).sort((a, b) => ms(b.s) - ms(a.s) || a.i - b.i).map((x) => x.s);
}

/**
 * A store call that may throw, reject or never settle, bounded by `timeoutMs`; after one timed
 * out, skipped for a while (src/results/timeout.ts `breaker`): an opted-in developer's request
 * asks the store first, and must not wait `timeoutMs` each time while the store is away.
 */
function bounded<T>(r: ResultsConfig, call: () => Promise<T>): Promise<T> {
  return r.bounded(call, 'miniprof: the profile store');
}
