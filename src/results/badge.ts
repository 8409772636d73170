import { createHash } from 'node:crypto';
import { BADGE_JS } from './badge-client.js';

/**
 * The badge script as served from `<basePath>/badge.js`. Its URL carries a hash of its text
 * (`?v=…`), so it can be cached for a year: a new version is a new URL. `private`: it is only
 * ever served to developers, and a shared cache must not hand it to anyone else.
 */
export const BADGE_VERSION = createHash('sha256').update(BADGE_JS).digest('base64url').slice(0, 12);

export const BADGE_PATH = '/badge.js';

export const BADGE_HEADERS = {
  'Content-Type': 'text/javascript; charset=utf-8',
  'Cache-Control': 'private, max-age=31536000, immutable',
  'X-Content-Type-Options': 'nosniff',
  // Only the app's own pages may load it (it is a developer's tool, never a cross-site resource).
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Content-Length': String(Buffer.byteLength(BADGE_JS)),
} as const;

export { BADGE_JS };
