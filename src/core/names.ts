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
 * `s` made flat while it is young. Strings built by concatenation are cons strings, trees of
 * small objects: `isoTime`'s start time (the profile keeps it, the store keeps the profile) and the
 * comment's kept name parts (src/render/text.ts). Each copy out of a tree walks it, and the
 * scavenger copies it until it is promoted. Reading one character makes V8 flatten it once, here:
 * with the id, before src/id.ts made it flat, -14,800 instructions per Fastify developer request
 * (-19,800 on Node 24) and -5,400 to -9,000 per Express one, nearly all of it GC (bench/RESULTS.md
 * Run 18). The character code goes to a module variable so that the optimizing compiler cannot
 * drop the read.
 */
export function flat(s: string): string {
  charSink ^= s.charCodeAt(0);
  return s;
}
let charSink = 0;
