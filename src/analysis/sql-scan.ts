import type { SqlDialect } from '../core/types.js';
import { DROP, mark, VALUE } from './marks.js';

/**
 * A left-to-right scanner of one SQL dialect's tokens, enough to tell what a command keeps (names,
 * keywords, operators, placeholders such as `$1`, `?`, `:name`, `@p1`) from what it carries
 * (string literals, numbers) and what the server ignores (comments). It does not parse: it only
 * needs to know, at each character, whether a literal, a quoted name or a comment starts there,
 * and where that token ends, the way the dialect's own lexer does.
 *
 * Per dialect (as each server's documentation has it):
 * - postgres: `'…'` with `''` only (standard_conforming_strings, on since 9.1: `'C:\'` is a
 *   whole string); `E'…'` with backslash escapes; `$tag$…$tag$`; `"…"` names; `--` comments,
 *   and `/* *\/` comments that nest; `$1` parameters.
 * - mysql (and MariaDB): `'…'` and `"…"` are both strings, with `''`/`""` and backslash escapes;
 *   `` `…` `` names; `#` comments, `--` comments only when followed by a space or control
 *   character (`1--1` is one minus minus one), `/* *\/` that do not nest.
 * - mssql: `'…'` with `''`, no backslash escapes; `"…"` and `[…]` names (`]]` inside); `--`
 *   comments, `/* *\/` that nest; `$1.50` is a money literal.
 * - sqlite: `'…'` with `''`; `` `…` `` and `[…]` names; `"…"` is a name too, but SQLite reads
 *   one it cannot resolve as a string where a string may stand (unless built with SQLITE_DQS=0,
 *   as better-sqlite3 is), so it is kept only as part of a qualified name (`"t"."c"`, next to a
 *   dot, where no string can stand) and masked elsewhere; `--` and `/* *\/` (not nested).
 *
 * A string or a comment that never ends runs to the end of the text (a command cut at
 * `maxCommandLength` ends inside one), and so does a quoted name that never ends (masked: it is
 * not a name the server would take).
 */
interface Rules {
  /** `"…"` is a string literal, not a name. */
  dqString: boolean;
  /** Backslash escapes in every string (otherwise only in PostgreSQL's `E'…'`). */
  backslash: boolean;
  backticks: boolean;
  brackets: boolean;
  nested: boolean;
  /** `#` starts a comment; `--` only before a space or control character. */
  mysqlComments: boolean;
  /** `$tag$…$tag$` strings and `$1` parameters. */
  dollar: boolean;
  /** `$1.50`: a money literal. */
  money: boolean;
  /** `]]` inside `[…]` stands for `]` (SQL Server; SQLite's `[…]` has no escape). */
  bracketDoubled: boolean;
  /** `"…"` may be read as a string where it is not qualified (SQLite's double-quoted strings). */
  dqFallback: boolean;
}

const RULES: Record<SqlDialect, Rules> = {
  postgres: { dqString: false, backslash: false, backticks: false, brackets: false, nested: true, mysqlComments: false, dollar: true, money: false, bracketDoubled: false, dqFallback: false },
  mysql: { dqString: true, backslash: true, backticks: true, brackets: false, nested: false, mysqlComments: true, dollar: false, money: false, bracketDoubled: false, dqFallback: false },
  mssql: { dqString: false, backslash: false, backticks: false, brackets: true, nested: true, mysqlComments: false, dollar: false, money: true, bracketDoubled: true, dqFallback: false },
  sqlite: { dqString: false, backslash: false, backticks: true, brackets: true, nested: false, mysqlComments: false, dollar: false, money: false, bracketDoubled: false, dqFallback: true },
};

export const DIALECTS: readonly SqlDialect[] = ['postgres', 'mysql', 'mssql', 'sqlite'];

/**
 * Letters, digits, `_`, `$`, `@`, `#` (not in MySQL, where it starts a comment even right after a
 * name) and anything beyond ASCII: the characters of a bare word.
 */
function wordChar(c: number, hash: boolean): boolean {
  return (
    (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c === 0x5f || c === 0x24 || c === 0x40 || (c === 0x23 && hash) || c >= 0x80
  );
}

function digit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/** Letters, `_` and beyond ASCII: what a dollar-quote tag starts with. */
function tagStart(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x5f || c >= 0x80;
}

/**
 * Mark, in `marks`, the characters of `text` that are values (VALUE) or comments (DROP) in
 * `dialect`; the rest are left as they are. Marks only ever rise (see marks.ts), so running
 * several dialects over one array keeps a character only if every one of them keeps it.
 */
export function scanSql(text: string, dialect: SqlDialect, marks: Uint8Array): void {
  const r = RULES[dialect];
  const hash = !r.mysqlComments;
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    const next = i + 1 < n ? text.charCodeAt(i + 1) : -1;
    let end: number;
    if (c === 0x27 /* ' */) {
      end = quoted(text, i + 1, 0x27, r.backslash, true);
      mark(marks, i, end, VALUE);
    } else if (c === 0x22 /* " */) {
      end = quoted(text, i + 1, 0x22, r.dqString && r.backslash, true);
      const qualified = text.charCodeAt(i - 1) === 0x2e || text.charCodeAt(end) === 0x2e;
      if (r.dqString || unclosed || (r.dqFallback && !qualified)) mark(marks, i, end, VALUE);
    } else if (c === 0x60 /* ` */ && r.backticks) {
      end = quoted(text, i + 1, 0x60, false, true);
      if (unclosed) mark(marks, i, end, VALUE);
    } else if (c === 0x5b /* [ */ && r.brackets) {
      end = quoted(text, i + 1, 0x5d, false, r.bracketDoubled);
      if (unclosed) mark(marks, i, end, VALUE);
    } else if ((c === 0x2d && next === 0x2d && (!r.mysqlComments || i + 2 >= n || text.charCodeAt(i + 2) <= 0x20)) || (c === 0x23 && r.mysqlComments)) {
      end = lineEnd(text, i);
      mark(marks, i, end, DROP);
    } else if (c === 0x2f && next === 0x2a /* / * */) {
      end = blockEnd(text, i + 2, r.nested);
      mark(marks, i, end, DROP);
    } else if (digit(c) || (c === 0x2e && digit(next))) {
      end = numberEnd(text, i, hash);
      mark(marks, i, end, VALUE);
    } else if (c === 0x24 /* $ */ && r.dollar && !digit(next)) {
      end = dollarQuote(text, i);
      if (end > i + 1) mark(marks, i, end, VALUE);
    } else if (c === 0x24 && r.money && (digit(next) || next === 0x2e)) {
      end = numberEnd(text, i + 1, hash);
      mark(marks, i, end, VALUE);
    } else if (wordChar(c, hash)) {
      end = i + 1;
      while (end < n && wordChar(text.charCodeAt(end), hash)) end++;
      // `E'…'` (PostgreSQL's escape string), `N'…'`, `X'…'`, `B'…'`: the prefix is part of it.
      if (end === i + 1 && end < n && text.charCodeAt(end) === 0x27 && PREFIXES.includes(text[i]!)) {
        const escapes = r.backslash || (dialect === 'postgres' && (c === 0x45 || c === 0x65));
        end = quoted(text, end + 1, 0x27, escapes, true);
        mark(marks, i, end, VALUE);
      }
    } else {
      end = i + 1;
    }
    i = end;
  }
}

const PREFIXES = 'EeNnXxBb';

/** Set by {@link quoted}: the token it just read never closed. */
let unclosed = false;

/**
 * The end (one past the closing quote) of a token opened by a quote just before `from`: with
 * `doubled`, the quote twice stands for itself; with `backslash`, a backslash takes the next
 * character in. One that never closes ends with the text (and sets `unclosed`).
 */
function quoted(text: string, from: number, q: number, backslash: boolean, doubled: boolean): number {
  const n = text.length;
  let i = from;
  unclosed = false;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (backslash && c === 0x5c) i += 2;
    else if (c === q) {
      if (doubled && i + 1 < n && text.charCodeAt(i + 1) === q) i += 2;
      else return i + 1;
    } else i++;
  }
  unclosed = true;
  return n;
}

function lineEnd(text: string, from: number): number {
  const n = text.length;
  let i = from;
  while (i < n && text[i] !== '\n' && text[i] !== '\r') i++;
  return i;
}

/** After `/*`: one past the `*\/` that closes it (counting nested ones where they nest), or the end. */
function blockEnd(text: string, from: number, nested: boolean): number {
  const n = text.length;
  let depth = 1;
  let i = from;
  while (i < n) {
    const c = text.charCodeAt(i);
    const next = i + 1 < n ? text.charCodeAt(i + 1) : -1;
    if (c === 0x2a && next === 0x2f) {
      i += 2;
      if (--depth === 0) return i;
    } else if (nested && c === 0x2f && next === 0x2a) {
      i += 2;
      depth++;
    } else i++;
  }
  return n;
}

/** A number with whatever sticks to it (`0x1f`, `1e-5`, `1_000`, `3.5`): all of it is the value. */
function numberEnd(text: string, from: number, hash: boolean): number {
  const n = text.length;
  let i = from;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (wordChar(c, hash) || c === 0x2e) i++;
    else if ((c === 0x2b || c === 0x2d) && (text[i - 1] === 'e' || text[i - 1] === 'E') && i + 1 < n && digit(text.charCodeAt(i + 1))) i++;
    else break;
  }
  return i;
}

/**
 * At a `$` that starts a token: one past a `$tag$…$tag$` string (or the end of the text if it
 * never closes), or `at + 1` when this `$` opens none.
 */
function dollarQuote(text: string, at: number): number {
  let i = at + 1;
  if (i < text.length && tagStart(text.charCodeAt(i))) {
    i++;
    while (i < text.length && (tagStart(text.charCodeAt(i)) || digit(text.charCodeAt(i)))) i++;
  }
  if (text[i] !== '$') return at + 1;
  const tag = text.slice(at, i + 1);
  const close = text.indexOf(tag, i + 1);
  return close === -1 ? text.length : close + tag.length;
}
