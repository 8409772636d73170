/**
 * Escape user text (step names, commands, paths, the machine name) for the text tree and the
 * HTML comment. After escaping, text can neither forge a line of the tree nor end or open an
 * HTML comment, and the escapes are reversible (see `unescapeText` in the tests):
 *
 * - `\` becomes `\\`; newline, CR and tab become `\n`, `\r`, `\t`;
 * - other C0/C1 controls, DEL, U+2028/2029 and lone surrogates become `\u{hex}`;
 * - a `-` right after a `-` becomes `\u{2d}`, so no `--` ever appears: no `-->`, `--!>` or `<!--`
 *   (and no `--` at all, which XML comments forbid), whatever the input;
 * - with `ascii`, everything above U+007E becomes `\u{hex}` (for pages whose charset is not UTF-8).
 *
 * Ordinary names come back unchanged, so the fast path is a scan that finds nothing to do.
 */
export function escapeText(s: string, ascii: boolean): string {
  let i = 0;
  const n = s.length;
  for (; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x5c || c >= 0x7f || (c === 0x2d && i > 0 && s.charCodeAt(i - 1) === 0x2d)) {
      if (c < 0x7f || ascii || isSpecialNonAscii(s, i, c)) break;
      // A whole surrogate pair: step over its low half, which alone would look like a lone one.
      if (c >= 0xd800 && c <= 0xdbff) i++;
    }
  }
  if (i === n) return s;
  let out = s.slice(0, i);
  for (; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c < 0x7f) {
      if (c === 0x5c) out += '\\\\';
      else if (c === 0x2d && i > 0 && s.charCodeAt(i - 1) === 0x2d) out += '\\u{2d}';
      else out += s[i];
    } else if (c === 0x0a) out += '\\n';
    else if (c === 0x0d) out += '\\r';
    else if (c === 0x09) out += '\\t';
    else if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || c === 0x2028 || c === 0x2029) out += hex(c);
    else if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        out += ascii ? hex(((c - 0xd800) << 10) + (d - 0xdc00) + 0x10000) : s[i]! + s[i + 1]!;
        i++;
      } else out += hex(c);
    } else if (c >= 0xdc00 && c <= 0xdfff) out += hex(c);
    else out += ascii ? hex(c) : s[i];
  }
  return out;
}

function hex(cp: number): string {
  return '\\u{' + cp.toString(16) + '}';
}

/** Non-ASCII that needs escaping even when the page is UTF-8. */
function isSpecialNonAscii(s: string, i: number, c: number): boolean {
  if (c <= 0x9f || c === 0x2028 || c === 0x2029) return true;
  if (c >= 0xdc00 && c <= 0xdfff) return true;
  if (c >= 0xd800 && c <= 0xdbff) {
    const d = s.charCodeAt(i + 1);
    return !(d >= 0xdc00 && d <= 0xdfff);
  }
  return false;
}
