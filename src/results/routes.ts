import { report, type InternalErrorHandler } from '../core/errors.js';
import type { HttpConfig } from '../http/config.js';
import type { ProfileJSON } from '../core/types.js';
import type { ResultsConfig } from './config.js';
import { optInCookie, optOutCookie, readOptIn, signOptIn, type OptIn } from './optin.js';
import { CSS, PAGE_HEADERS, renderListPage, renderProfilePage, type ListView } from './pages.js';
import { CAPTURE_OWNER, UUID, type ProfileSummary } from './store.js';
import { withTimeout } from './timeout.js';

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
 * asking `isDeveloper` (its random token is the identity); otherwise `isDeveloper` decides and
 * the identity is `results.owner(req)`, or the peer address. Without a secret no cookie is read
 * at all. Returns null (not a developer's), a Developer, or a promise of either when
 * `isDeveloper` is async: the common answer, a synchronous no, allocates nothing. Never throws;
 * `isDeveloper` throwing or rejecting means no, and the fault is reported.
 */
export function decide<Req>(
  cfg: HttpConfig<Req>,
  req: Req,
  cookieOf: (req: Req) => unknown,
): Developer | null | Promise<Developer | null> {
  // Nobody is (production without isDeveloper, capture on): no cookie is read either.
  if (cfg.isDeveloper === null) return null;
  const secret = cfg.results?.secret ?? null;
  if (secret !== null) {
    const cookie = cookieOf(req);
    if (typeof cookie === 'string' && cookie.includes('miniprof=')) {
      const optIn = readOptIn(secret, cookie, Date.now());
      if (optIn !== null) return { owner: `optin:${optIn.token}`, optIn };
    }
  }
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

/**
 * Answer a developer's request under the base path, or return null to hand it to the app (which
 * then gives its own 404 or 405): every method but GET and HEAD, and every path we do not serve.
 * Read-only: nothing here takes code, SQL or file paths; ids must be UUIDs.
 */
export async function serveResults(
  r: ResultsConfig,
  dev: Developer,
  method: string | undefined,
  url: string,
  https: boolean,
  onInternalError: InternalErrorHandler,
): Promise<ResultsReply | null> {
  if (method !== 'GET' && method !== 'HEAD') return null;
  const q = url.indexOf('?');
  const rest = (q === -1 ? url : url.slice(0, q)).slice(r.basePath.length);
  const base = r.basePath;
  const optIn = r.secret === null ? null : dev.optIn !== null ? 'in' : 'out';
  try {
    if (rest === '' || rest === '/') {
      const list = await bounded(r, () => r.store.list(dev.owner, r.listLimit));
      return reply(200, HTML, renderListPage(list, base, optIn, r.captured ? ownView(base) : undefined));
    }
    if (rest === '/captured' || rest === '/captured/' || rest === '/captured/slowest') {
      const list = await bounded(r, () => r.store.list(CAPTURE_OWNER, r.listLimit));
      const slowest = rest.endsWith('/slowest');
      return reply(200, HTML, renderListPage(slowest ? bySlowest(list) : list, base, optIn, capturedView(base, slowest)));
    }
    if (rest === '/miniprof.css') return reply(200, 'text/css; charset=utf-8', CSS);
    if (r.secret !== null && rest === '/opt-in') {
      if (dev.optIn !== null) return reply(303, HTML, '', { Location: `${base}/` });
      const { value } = signOptIn(r.secret, Date.now(), r.optInMaxAgeMs);
      return reply(303, HTML, '', { Location: `${base}/`, 'Set-Cookie': optInCookie(value, r.optInMaxAgeMs, https) });
    }
    if (r.secret !== null && rest === '/opt-out') {
      return reply(303, HTML, '', { Location: `${base}/`, 'Set-Cookie': optOutCookie(https) });
    }
    // A captured profile is every developer's to read, at its own path.
    const captured = rest.startsWith('/captured/');
    const at = captured ? rest.slice('/captured'.length) : rest;
    const json = at.endsWith('.json');
    const id = at.slice(1, json ? -5 : undefined);
    if (at[0] !== '/' || !UUID.test(id)) return null;
    const p = await bounded(r, () => r.store.get(captured ? CAPTURE_OWNER : dev.owner, id));
    if (p === undefined) return null;
    if (json) return reply(200, 'application/json; charset=utf-8', JSON.stringify(p));
    return reply(200, HTML, renderProfilePage(p, base, captured ? `${base}/captured` : base));
  } catch (err) {
    report(onInternalError, err);
    return reply(503, 'text/plain; charset=utf-8', 'miniprof: the profile store failed; the fault went to onInternalError.\n');
  }
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
    nav: ` · <a href="${base}/">your profiles</a> · ${other}`,
    empty: 'No captured requests kept yet: only sampled requests that were slow or failed are kept.',
  };
}

/** The same rows, slowest first (the newest first among equals). */
function bySlowest(list: ProfileSummary[]): ProfileSummary[] {
  return list.map((s, i) => ({ s, i })).sort((a, b) => b.s.durationMs - a.s.durationMs || a.i - b.i).map((x) => x.s);
}

/** A store call that may throw, reject or never settle, bounded by `timeoutMs`. */
function bounded<T>(r: ResultsConfig, call: () => Promise<T>): Promise<T> {
  return withTimeout(call, r.timeoutMs, `miniprof: the profile store did not answer within ${r.timeoutMs} ms`);
}
