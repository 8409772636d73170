/**
 * The default `isDeveloper` outside production: a request from this machine that came straight
 * to the app, not through a proxy, tunnel or sidecar on it.
 *
 * A loopback socket alone is not enough: nginx, an ngrok or cloudflared tunnel, a sidecar or the
 * app's own fetch of a fragment all connect from 127.0.0.1 on behalf of someone else, and every
 * outsider behind them would be a developer (and share the owner `peer:127.0.0.1`). Such hops say
 * so in one of these headers (RFC 7239 `Forwarded`, the de-facto `X-Forwarded-For` and
 * `X-Real-IP`, RFC 9110 `Via`). A header can only take developer status away, never give it: a
 * client can send them, but it cannot change the socket's address.
 */
const PROXY_HEADERS = ['forwarded', 'x-forwarded-for', 'x-real-ip', 'via'] as const;

/** Node's `req.headers`: lowercase names. */
export type Headers = Record<string, string | string[] | undefined>;

/** One of the proxy headers is present (with any value, even empty). */
export function viaProxy(headers: Headers | undefined): boolean {
  if (headers === undefined || headers === null) return true;
  for (const name of PROXY_HEADERS) if (headers[name] !== undefined) return true;
  return false;
}

/** 127.0.0.0/8 and ::1, also as IPv4-mapped IPv6. The socket's address, never a header. */
export function isLoopback(addr: string | undefined): boolean {
  if (addr === undefined) return false;
  if (addr === '::1') return true;
  if (addr.startsWith('::ffff:')) addr = addr.slice(7);
  return addr.startsWith('127.') && /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(addr);
}

/** The default rule, for an adapter's way of reading the peer address and the headers. */
export function localDeveloper<Req>(peer: (req: Req) => string | undefined, headers: (req: Req) => Headers | undefined): (req: Req) => boolean {
  return (req) => isLoopback(peer(req)) && !viaProxy(headers(req));
}

/**
 * The request's `Host` (or HTTP/2's `:authority`) is one of `allowed`: an entry with a port
 * matches that host and port, one without matches the host on any port. No `Host` is not allowed.
 */
export function hostAllowed(allowed: ReadonlySet<string>, headers: Headers | undefined): boolean {
  const given = headers?.host ?? headers?.[':authority'];
  if (typeof given !== 'string') return false;
  const host = given.trim().toLowerCase();
  if (allowed.has(host)) return true;
  const bracket = host.startsWith('[') ? host.indexOf(']') : -1;
  const colon = host.indexOf(':', bracket === -1 ? 0 : bracket);
  const name = (colon === -1 ? host : host.slice(0, colon)).replace(/\.$/, '');
  return allowed.has(name) || (colon !== -1 && allowed.has(name + host.slice(colon)));
}
