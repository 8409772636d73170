/**
 * Masking works on marks, one per UTF-16 unit of the command: each scanner (SQL per dialect,
 * URLs, Redis keys) raises the marks of what it finds, and {@link emit} writes the command from
 * them. A mark only ever rises, so scanners can be combined over one array and a character is
 * shown only if every scanner that looked at it kept it: that is how an unknown SQL dialect is
 * masked (each dialect's scanner in turn), and how URL masking is added on top.
 */

/** Shown as written. */
export const KEEP = 0;
/** Part of a value (a literal, a number, an id): each run becomes one `?`. */
export const VALUE = 1;
/** A comment: each run becomes one space (so `a/*x*\/b` stays two words). */
export const DROP = 2;
/** Left out with nothing in its place (a URL's `user:password@`). */
export const REMOVE = 3;

export const MASK = '?';

/** Raise the marks of `[from, to)` to `level` (never lower one). */
export function mark(marks: Uint8Array, from: number, to: number, level: number): void {
  for (let i = from; i < to; i++) if (marks[i]! < level) marks[i] = level;
}

const SPACE = /\s+/g;

/**
 * The text as its marks say, on one line: every run of whitespace (newlines included, inside
 * quoted names too) becomes one space, and the ends are trimmed.
 */
export function emit(text: string, marks: Uint8Array): string {
  let out = '';
  const n = text.length;
  let i = 0;
  while (i < n) {
    const level = marks[i]!;
    const from = i;
    while (i < n && marks[i] === level) i++;
    if (level === KEEP) out += text.slice(from, i);
    else if (level === VALUE) out += MASK;
    else if (level === DROP) out += ' ';
  }
  return out.replace(SPACE, ' ').trim();
}
