/**
 * Turn whatever the app passed as a name into a bounded string. Never throws: a value whose
 * `toString` throws (or `Object.create(null)`) becomes a placeholder.
 */
export function toText(value: unknown, max: number): string {
  let s: string;
  if (typeof value === 'string') {
    s = value;
  } else {
    try {
      s = String(value);
    } catch {
      s = '[unprintable]';
    }
  }
  return s.length > max ? cut(s, max) : s;
}

/** Cut to at most `max` UTF-16 units without splitting a surrogate pair, marked with '...'. */
export function cut(s: string, max: number): string {
  let end = Math.max(0, max - 3);
  const c = s.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return s.slice(0, end) + '...';
}

/**
 * `s` made flat once, while it is young. A string built by concatenation is a tree of small
 * pieces; the comment's name parts (src/render/text.ts) are kept across requests and copied out
 * again and again, and each copy out of a tree walks it. Reading one character makes V8 flatten
 * it; the character code goes to a module variable so that the read is not dropped.
 */
export function flat(s: string): string {
  charSink ^= s.charCodeAt(0);
  return s;
}
let charSink = 0;
