/**
 * Escape text for an HTML text node or a double-quoted attribute value. U+0000 becomes U+FFFD: a
 * parser drops it from text but turns it into U+FFFD in an attribute, so a command and its title
 * would read differently.
 */
export function escapeHtml(s: string): string {
  let out = '';
  let last = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let rep: string;
    if (c === 0x26) rep = '&amp;';
    else if (c === 0x3c) rep = '&lt;';
    else if (c === 0x3e) rep = '&gt;';
    else if (c === 0x22) rep = '&quot;';
    else if (c === 0x27) rep = '&#39;';
    else if (c === 0) rep = '\ufffd';
    else continue;
    out += s.slice(last, i) + rep;
    last = i + 1;
  }
  return last === 0 ? s : out + s.slice(last);
}

/**
 * JSON for a `<script type="application/json">` block: `<`, `>`, `&` and U+2028/2029 written as
 * `\u` escapes, so no `</script`, `<!--` or `-->` can appear and `JSON.parse` gives the value back.
 */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

/** Milliseconds for people: one decimal under 10 s, whole seconds with one decimal above. */
export function msText(ms: number): string {
  if (!(ms > 0)) return '0.0 ms';
  if (ms < 10_000) return `${(Math.round(ms * 10) / 10).toFixed(1)} ms`;
  return `${(ms / 1000).toFixed(1)} s`;
}

/** An SVG number: at most 3 decimals, no exponent. */
export function num(n: number): string {
  if (!Number.isFinite(n)) return '0';
  return String(Math.round(n * 1000) / 1000);
}
