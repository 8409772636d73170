/**
 * Whether a piece of a Redis key, of a URL path or of a bare word looks like a value (an id, a
 * token, a hash, an encoded value) rather than a name. Names are words, with at most a short
 * version number (`users`, `session`, `v2`, `oauth2`, `user_profile`); everything else is taken
 * for a value, erring on the side of masking:
 * - any character but letters, digits, `_` and `-` (`=`, `%`, `+`, `/`, `@`, `:`…; `.` too
 *   unless `dots`, where each dot-separated part is judged: `index.html` stays);
 * - a part (between `_` and `-`) with digits in it, unless it is letters then one or two digits
 *   and short (`v2`, `utf8`), so numbers, hex, UUIDs and mixed tokens (`sk_live_4eC39Hq…`);
 * - a part of 20 letters or more (a random token without digits).
 */
export function valueLike(s: string, dots = false): boolean {
  if (dots && s.includes('.')) return s.split('.').some((p) => valueLike(p));
  if (!WORDISH.test(s)) return true;
  for (const part of s.split(/[-_]/)) {
    if (part.length >= 20) return true;
    if (DIGIT.test(part) && !VERSIONED.test(part)) return true;
  }
  return false;
}

const WORDISH = /^[A-Za-z0-9_-]*$/;
const DIGIT = /[0-9]/;
const VERSIONED = /^[A-Za-z]{1,10}[0-9]{1,2}$/;
