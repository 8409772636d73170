import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';

/** The opt-in cookie's name where the browser cannot keep it `Secure` (plain HTTP, not localhost). */
export const COOKIE = 'miniprof';
/**
 * Its name wherever it can be `Secure`. A `__Host-` cookie is accepted by the browser only with
 * `Secure`, `Path=/` and no `Domain`, from a secure origin: a sibling subdomain or a plain-HTTP
 * page cannot plant one (RFC 6265bis, 4.1.3.2).
 */
export const HOST_COOKIE = '__Host-miniprof';

const MAC_BYTES = 32;

/** What a valid opt-in cookie says: whose it is and until when. */
export interface OptIn {
  token: string;
  /** Epoch seconds. */
  expires: number;
}

/**
 * The MAC signs the origin too: the request's `Host` (host and port, lowercased) when the cookie
 * was minted, which is not in the cookie. Browsers do not isolate cookies by port (RFC 6265 8.5):
 * a page on another port of the same host (another app on localhost, say) can set
 * `__Host-miniprof`, and the browser sends this app's cookie to every port of the host. Bound to
 * its origin, a cookie minted by another port's app (the same secret copied into both, a shared
 * store) admits nothing here, nor does ours there.
 */
function mac(secret: Buffer, payload: string, origin: string): Buffer {
  return createHmac('sha256', secret).update(`${payload}\n${origin}`).digest();
}

/** The origin a cookie is bound to: the `Host` header as sent, lowercased ('' without one). */
export function originOf(host: unknown): string {
  return typeof host === 'string' ? host.trim().toLowerCase() : '';
}

/**
 * `v3.<token>.<expires, epoch seconds>.<generation>.<HMAC-SHA256, base64url>`, the MAC over those
 * and `origin` (see mac). The token is random per opt-in, so two developers behind one address get
 * two identities; the store keeps the tokens it minted (opt-out removes one), and
 * `optInGeneration` is signed in, so changing it voids all.
 */
export function signOptIn(secret: Buffer, nowMs: number, maxAgeMs: number, generation = 0, origin = ''): { value: string; optIn: OptIn } {
  const token = randomUUID();
  const expires = Math.floor((nowMs + maxAgeMs) / 1000);
  const payload = `v3.${token}.${expires}.${generation}`;
  return { value: `${payload}.${mac(secret, payload, origin).toString('base64url')}`, optIn: { token, expires } };
}

/**
 * The opt-in in a `Cookie` header, or null when there is none or it is forged, tampered with,
 * malformed, expired, of another generation, or minted for another origin than this request's
 * (`origin`, see originOf). Only the cookie name this request may carry is read (`secure`:
 * `__Host-miniprof`, else `miniprof`). The MAC is compared in constant time. Whether the store
 * still knows the token is the caller's next question.
 */
export function readOptIn(secret: Buffer, cookieHeader: unknown, nowMs: number, secure: boolean, generation = 0, origin = ''): OptIn | null {
  if (typeof cookieHeader !== 'string') return null;
  const value = cookieValue(cookieHeader, secure ? HOST_COOKIE : COOKIE);
  if (value === null) return null;
  const m = /^v3\.([0-9a-f-]{36})\.(\d{1,12})\.(\d{1,9})\.([A-Za-z0-9_-]{43})$/.exec(value);
  if (m === null) return null;
  const given = Buffer.from(m[4]!, 'base64url');
  const want = mac(secret, `v3.${m[1]}.${m[2]}.${m[3]}`, origin);
  if (given.length !== MAC_BYTES || !timingSafeEqual(given, want)) return null;
  if (Number(m[3]) !== generation) return null;
  const expires = Number(m[2]);
  if (expires * 1000 <= nowMs) return null;
  return { token: m[1]!, expires };
}

/** The first `name=value` pair in a Cookie header; only our own cookie name is looked for. */
export function cookieValue(header: string, name: string): string | null {
  let at = header.indexOf(name + '=');
  while (at !== -1) {
    if (at === 0 || header[at - 1] === ' ' || header[at - 1] === ';') {
      const start = at + name.length + 1;
      const end = header.indexOf(';', start);
      return (end === -1 ? header.slice(start) : header.slice(start, end)).trim();
    }
    at = header.indexOf(name + '=', at + 1);
  }
  return null;
}

/**
 * `Set-Cookie` for an opt-in: HttpOnly, SameSite=Strict, Path=/, and where the browser allows it
 * `__Host-` and Secure.
 */
export function optInCookie(value: string, maxAgeMs: number, secure: boolean): string {
  return `${secure ? HOST_COOKIE : COOKIE}=${value}; Path=/; Max-Age=${Math.floor(maxAgeMs / 1000)}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

/** `Set-Cookie` that removes the opt-in. */
export function optOutCookie(secure: boolean): string {
  return `${secure ? HOST_COOKIE : COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

/** Node's `req.headers`. */
export type Headers = Record<string, string | string[] | undefined>;

/**
 * The cookie can be `Secure` (and so `__Host-`): the request came over HTTPS as the app sees it,
 * the app says so (`optInSecure: true`, for TLS ended by a proxy in front of it), or it is for a
 * loopback host, which browsers treat as a secure origin even over HTTP (Chromium accepts a
 * `__Host-` cookie from `http://localhost`, `http://*.localhost` and `http://127.0.0.1`:
 * test/optin.test.ts).
 */
export function cookieSecure(https: boolean, forced: boolean, host: unknown): boolean {
  return https || forced || loopbackHost(hostname(host));
}

/** The host name of a `Host` header value, lowercased, without port or IPv6 brackets. */
export function hostname(host: unknown): string {
  if (typeof host !== 'string') return '';
  const h = host.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end === -1 ? h : h.slice(1, end);
  }
  const colon = h.indexOf(':');
  return colon === -1 ? h : h.slice(0, colon);
}

function loopbackHost(name: string): boolean {
  return name === 'localhost' || name.endsWith('.localhost') || name === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);
}

/**
 * A state-changing request (opt-in, opt-out) came from a page of this same origin. Browsers send
 * `Sec-Fetch-Site` (must be `same-origin`) and, on every POST, `Origin` (its host must be the
 * request's `Host`; the scheme is not compared, so it holds behind a TLS-terminating proxy).
 * With neither header there is no proof, and the answer is no.
 */
export function sameOrigin(headers: Headers | undefined): boolean {
  if (headers === undefined) return false;
  const site = headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin';
  const origin = headers.origin;
  const host = hostOf(headers);
  if (typeof origin !== 'string' || typeof host !== 'string' || origin === 'null') return false;
  try {
    return new URL(origin).host === new URL(`http://${host}`).host;
  } catch {
    return false;
  }
}

/** The request's host: `Host`, or HTTP/2's `:authority` (Node's compatibility headers have no `host`). */
export function hostOf(headers: Headers | undefined): string | undefined {
  if (headers === undefined) return undefined;
  const h = headers.host ?? headers[':authority'];
  return typeof h === 'string' ? h : undefined;
}
