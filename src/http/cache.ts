import type { HeaderTarget } from '../results/save.js';
import { noTransform } from './inject.js';

/**
 * Headers through which some cache other than the browser's may keep a response: nginx's
 * `X-Accel-Expires` (it outranks `Cache-Control` in `proxy_cache`), `Surrogate-Control` (Varnish,
 * Fastly, Akamai), `CDN-Cache-Control` (RFC 9213: a CDN obeys it instead of `Cache-Control`) and
 * `Expires` (an HTTP/1.0 cache reads it when it does not understand `Cache-Control`).
 */
const CACHE_HEADERS = ['x-accel-expires', 'surrogate-control', 'cdn-cache-control', 'expires', 'etag'] as const;

/**
 * Make a profiled response one that no cache, shared or private, keeps or reuses: it carries a
 * developer's profile (comment, Server-Timing, X-Miniprof-Id), and a shared cache would serve it
 * to the next anonymous visitor. `private, no-store` (RFC 9111 5.2.2.5, 5.2.2.7) for caches that
 * read `Cache-Control`; every header that lets one override it removed; `Vary: *` (RFC 9110
 * 12.5.5), so a cache that stored it anyway can never match it to another request. An app's
 * `no-transform` stays: compression middleware reads it in a header hook that runs after this one.
 */
export function uncacheable(h: HeaderTarget): void {
  h.setHeader('Cache-Control', noTransform(h) ? 'private, no-store, no-transform' : 'private, no-store');
  // Looked up first: most responses have none of them, and there is nothing to remove.
  for (const name of CACHE_HEADERS) if (h.getHeader(name) !== undefined) h.removeHeader(name);
  h.setHeader('Vary', '*');
}
