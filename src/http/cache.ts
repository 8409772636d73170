import type { HeaderTarget } from '../results/save.js';
import { noTransform } from './inject.js';

/**
 * Headers through which some cache other than the browser's may keep a response, each obeyed by
 * its cache before `Cache-Control`: nginx's `X-Accel-Expires` (it outranks `Cache-Control` in
 * `proxy_cache`), `Surrogate-Control` (Varnish, Fastly, Akamai), `Fastly-Surrogate-Control`,
 * `Akamai-Cache-Control` and `Edge-Control` (Akamai), `CDN-Cache-Control` (RFC 9213), and `Expires`
 * (an HTTP/1.0 cache reads it when it does not understand `Cache-Control`). Lowercase, as
 * `getHeaderNames()` gives them.
 */
const CACHE_HEADERS = new Set(['x-accel-expires', 'surrogate-control', 'fastly-surrogate-control', 'akamai-cache-control', 'edge-control', 'cdn-cache-control', 'expires', 'etag']);

/**
 * RFC 9213's targeted fields: `<cdn>-CDN-Cache-Control` (Cloudflare's, Vercel's, any CDN's own),
 * which its CDN obeys before `CDN-Cache-Control` and `Cache-Control`. The list is open, so the
 * names are matched by their suffix.
 */
const TARGETED = '-cdn-cache-control';

function cacheHeader(name: string): boolean {
  return CACHE_HEADERS.has(name) || name.endsWith(TARGETED);
}

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
  // Collected first: removing while walking the names must not skip one.
  for (const name of h.getHeaderNames().filter((n) => cacheHeader(n.toLowerCase()))) h.removeHeader(name);
  h.setHeader('Vary', '*');
}
