/**
 * The HTML tokenizer's states that scan.ts follows, as functions from an offset to the offset where
 * the state ends (https://html.spec.whatwg.org/multipage/parsing.html#tokenization): tags with
 * their attributes, comments, RCDATA/RAWTEXT, and script data with its escaped states. Each
 * returns -1 when the page ends first (the state at the end is not the data state).
 */

export const BANG = 33, SLASH = 47, GT = 62, QMARK = 63;
const DQ = 34, SQ = 39, DASH = 45, EQ = 61, LT = 60;

function isWs(c: number): boolean {
  // CR is a line feed once the input stream is preprocessed.
  return c === 32 || c === 10 || c === 9 || c === 12 || c === 13;
}

export function isAlpha(c: number): boolean {
  const l = c | 32;
  return l >= 97 && l <= 122;
}

/** The offset after `token`'s first occurrence from `from`, or -1. */
export function after(s: string, token: string, from: number): number {
  const at = s.indexOf(token, from);
  return at === -1 ? -1 : at + token.length;
}

/**
 * A comment starting at `lt` (`<!--`) ends at the first `-->` (even `<!-->`, `<!--->`) or `--!>`.
 * One search for `--`, each found once: a second search for `--!>` alone would read to the end of
 * the page at every comment that has none.
 */
export function commentEnd(s: string, lt: number): number {
  for (let i = lt + 2; ;) {
    const at = s.indexOf('--', i);
    if (at === -1) return -1;
    const c = s.charCodeAt(at + 2);
    if (c === GT) return at + 3;
    if (c === BANG && at >= lt + 4 && s.charCodeAt(at + 3) === GT) return at + 4;
    i = at + 1;
  }
}

export function nameEnd(s: string, i: number): number {
  const n = s.length;
  for (; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c === GT || c === SLASH || isWs(c)) return i;
  }
  return n;
}

/** ASCII-lowercased tag name (the tokenizer lowercases A–Z only). */
export function lower(s: string, a: number, b: number): string {
  const t = s.slice(a, b);
  for (let i = a; i < b; i++) {
    const c = s.charCodeAt(i);
    if (c >= 65 && c <= 90) return t.replace(/[A-Z]+/g, (u) => u.toLowerCase());
  }
  return t;
}

/** Set by tagEnd: the tag ended in `/>` as the tokenizer reads it (not a `/` inside a value). */
export let selfClosing = false;

/**
 * From just after a tag's name: its attributes, quoted values included, to the offset after its
 * `>`, or -1 when the page ends first. Follows the tokenizer's attribute states.
 */
export function tagEnd(s: string, i: number): number {
  const n = s.length;
  selfClosing = false;
  for (;;) {
    while (i < n && isWs(s.charCodeAt(i))) i++;
    if (i >= n) return -1;
    let c = s.charCodeAt(i);
    if (c === GT) return i + 1;
    if (c === SLASH) {
      if (++i >= n) return -1;
      if (s.charCodeAt(i) === GT) { selfClosing = true; return i + 1; }
      continue;
    }
    // An attribute's name (its first character may be `=`).
    for (i++; i < n; i++) {
      c = s.charCodeAt(i);
      if (c === GT || c === SLASH || c === EQ || isWs(c)) break;
    }
    while (i < n && isWs(s.charCodeAt(i))) i++;
    if (i >= n) return -1;
    if (s.charCodeAt(i) !== EQ) continue;
    for (i++; i < n && isWs(s.charCodeAt(i)); i++);
    if (i >= n) return -1;
    c = s.charCodeAt(i);
    if (c === DQ || c === SQ) {
      const q = s.indexOf(c === DQ ? '"' : "'", i + 1);
      if (q === -1) return -1;
      i = q + 1;
      continue;
    }
    // Unquoted: to whitespace or `>` (a `/` is part of the value).
    for (; i < n; i++) {
      c = s.charCodeAt(i);
      if (c === GT) return i + 1;
      if (isWs(c)) break;
    }
    if (i >= n) return -1;
  }
}

/** `</name` (any case) at `i`, followed by whitespace, `/` or `>`: an appropriate end tag. */
function endTagAt(s: string, i: number, name: string): boolean {
  for (let k = 0; k < name.length; k++) if ((s.charCodeAt(i + k) | 32) !== name.charCodeAt(k)) return false;
  const c = s.charCodeAt(i + name.length);
  return c === GT || c === SLASH || isWs(c);
}

/** RCDATA or RAWTEXT from `i`: the offset after its end tag `</name …>`, or -1. */
export function rawEnd(s: string, i: number, name: string): number {
  for (;;) {
    const at = s.indexOf('</', i);
    if (at === -1) return -1;
    if (endTagAt(s, at + 2, name)) return tagEnd(s, at + 2 + name.length);
    i = at + 2;
  }
}

const enum S { Data, Escaped, EscapedDash, EscapedDashDash, Double, DoubleDash, DoubleDashDash }

/**
 * Script data from `i`, with its escaped (`<!--`) and double-escaped (`<!--<script>`) states, in
 * which a `</script>` does not end the script: the offset after its end tag, or -1.
 */
export function scriptEnd(s: string, i: number): number {
  const n = s.length;
  let state = S.Data;
  while (i < n) {
    if (state === S.Data) {
      const at = s.indexOf('<', i);
      if (at === -1) return -1;
      i = at + 1;
      const c = s.charCodeAt(i);
      if (c === SLASH && endTagAt(s, i + 1, 'script')) return tagEnd(s, i + 7);
      if (c === BANG && s.charCodeAt(i + 1) === DASH && s.charCodeAt(i + 2) === DASH) {
        i += 3;
        state = S.EscapedDashDash;
      }
      continue;
    }
    const c = s.charCodeAt(i);
    if (c === LT) {
      i++;
      const d = s.charCodeAt(i);
      if (state <= S.EscapedDashDash) {
        if (d === SLASH && endTagAt(s, i + 1, 'script')) return tagEnd(s, i + 7);
        state = S.Escaped;
        if (isAlpha(d) && endTagAt(s, i, 'script')) { state = S.Double; i += 7; }
      } else {
        state = S.Double;
        if (d === SLASH && endTagAt(s, i + 1, 'script')) { state = S.Escaped; i += 8; }
      }
      continue;
    }
    i++;
    const escaped: boolean = state <= S.EscapedDashDash;
    if (c === DASH) state = state === S.Escaped ? S.EscapedDash : state === S.Double ? S.DoubleDash : escaped ? S.EscapedDashDash : S.DoubleDashDash;
    else if (c === GT && (state === S.EscapedDashDash || state === S.DoubleDashDash)) state = S.Data;
    else state = escaped ? S.Escaped : S.Double;
  }
  return -1;
}
