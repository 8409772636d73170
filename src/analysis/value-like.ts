/**
 * Whether a piece of a Redis key, of a URL path or of a bare word looks like a value (an id, a
 * token, a hash, an encoded value) rather than a name. Names are words, with at most a short
 * version number (`users`, `session`, `v2`, `oauth2`, `user_profile`, `getUserProfile`);
 * everything else is taken for a value, erring on the side of masking:
 * - any character but letters, digits, `_` and `-` (`=`, `%`, `+`, `/`, `@`, `:`…; `.` too
 *   unless `dots`, where each dot-separated part is judged: `index.html` stays);
 * - 12 characters or more with a digit among them (long mixed letters and digits, long numbers);
 * - a part (between `_` and `-`) with digits in it, unless it is letters then one or two digits
 *   (`v2`, `utf8`, `oauth2`) and not six or more hex digits (`deadbee7`): numbers, hex, UUIDs and
 *   mixed tokens (`sk_live_4eC39Hq…`);
 * - a part of 20 letters or more, or of 12 or more in mixed case that is not camelCase (a random
 *   token without digits).
 *
 * Not told apart from a name: a short word that is a secret (`hunter`), which is why values and
 * passwords are masked by where they stand (Redis arguments, URL userinfo and query values).
 */
export function valueLike(s: string, dots = false): boolean {
  if (dots && s.includes('.')) return s.split('.').some((p) => valueLike(p));
  if (!WORDISH.test(s)) return true;
  if (s.length >= 12 && DIGIT.test(s)) return true;
  for (const part of s.split(/[-_]/)) {
    if (part.length >= 20) return true;
    if (DIGIT.test(part) && (!VERSIONED.test(part) || (part.length >= 6 && HEX.test(part)))) return true;
    if (part.length >= 12 && LOWER.test(part) && UPPER.test(part) && !CAMEL.test(part)) return true;
  }
  return false;
}

const WORDISH = /^[A-Za-z0-9_-]*$/;
const DIGIT = /[0-9]/;
const LOWER = /[a-z]/;
const UPPER = /[A-Z]/;
const VERSIONED = /^[A-Za-z]{1,10}[0-9]{1,2}$/;
const HEX = /^[0-9A-Fa-f]+$/;
const CAMEL = /^[A-Za-z][a-z]*(?:[A-Z][a-z]+)*$/;
