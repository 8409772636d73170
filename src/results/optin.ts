import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';

/** The opt-in cookie's name. */
export const COOKIE = 'miniprof';

const MAC_BYTES = 32;

/** What a valid opt-in cookie says: whose it is and until when. */
export interface OptIn {
  token: string;
  expires: number;
}

function mac(secret: Buffer, payload: string): Buffer {
  return createHmac('sha256', secret).update(payload).digest();
}

/**
 * `v1.<token>.<expires, epoch seconds>.<HMAC-SHA256, base64url>`. The token is random per opt-in,
 * so two developers behind one address get two identities.
 */
export function signOptIn(secret: Buffer, nowMs: number, maxAgeMs: number): { value: string; optIn: OptIn } {
  const token = randomUUID();
  const expires = Math.floor((nowMs + maxAgeMs) / 1000);
  const payload = `v1.${token}.${expires}`;
  return { value: `${payload}.${mac(secret, payload).toString('base64url')}`, optIn: { token, expires } };
}

/**
 * The opt-in in a `Cookie` header, or null when there is none or it is forged, tampered with,
 * malformed or expired. The MAC is compared in constant time; every cookie of ours has the same
 * MAC length, so only a malformed one is rejected early.
 */
export function readOptIn(secret: Buffer, cookieHeader: unknown, nowMs: number): OptIn | null {
  if (typeof cookieHeader !== 'string') return null;
  const value = cookieValue(cookieHeader, COOKIE);
  if (value === null) return null;
  const m = /^v1\.([0-9a-f-]{36})\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(value);
  if (m === null) return null;
  const given = Buffer.from(m[3]!, 'base64url');
  const want = mac(secret, `v1.${m[1]}.${m[2]}`);
  if (given.length !== MAC_BYTES || !timingSafeEqual(given, want)) return null;
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

/** `Set-Cookie` for an opt-in: HttpOnly, SameSite=Lax, Secure when the request came over HTTPS. */
export function optInCookie(value: string, maxAgeMs: number, secure: boolean): string {
  return `${COOKIE}=${value}; Path=/; Max-Age=${Math.floor(maxAgeMs / 1000)}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}

/** `Set-Cookie` that removes the opt-in. */
export function optOutCookie(secure: boolean): string {
  return `${COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
}
