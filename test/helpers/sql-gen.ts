/**
 * Generators of SQL text per dialect for the masking properties (test/sql-mask.test.ts,
 * test/mask-real.test.ts): secrets in every kind of literal, comments full of stray quotes,
 * quoted names holding quotes and comment starters, numbers, placeholders.
 */
import fc from 'fast-check';
import mysql from 'mysql2';
import pg from 'pg';
import type { SqlDialect } from '../../src/core/types.js';

/** Characters that have broken SQL scanners: every quote, escape and comment starter. */
const TRICKY = ["'", '"', '`', '\\', '$', '-', '/', '*', '#', '[', ']', ';', '\n', ' ', 'a', 'Z', 'E', 'é'];
export const tricky = (maxLength: number) =>
  fc.oneof(fc.string({ maxLength }), fc.string({ unit: fc.constantFrom(...TRICKY), maxLength })).map((s) => s.replace(/\0/g, ''));

/** A secret: a marker at both ends that nothing else contains, anything in between. */
export const secret = tricky(12).map((s) => `ZQX${s}ZQX`);
/** A secret number: ten digits, never part of anything else the generators make. */
export const secretNumber = fc.integer({ min: 1_000_000_000, max: 1_999_999_999 });

/** Every `$` followed by a space: then nothing in it can close `$q$` or `$$` early. */
export const spaced = (s: string) => s.replace(/\$(?! )/g, '$ ');

/** Each dialect's string literals of a secret, as its drivers and people write them. */
export const LITERALS: Record<SqlDialect, ((s: string) => string)[]> = {
  postgres: [
    (s) => `'${s.replaceAll("'", "''")}'`, // standard_conforming_strings: a backslash is itself ('C:\')
    (s) => `E'${s.replace(/[\\']/g, '\\$&')}'`,
    (s) => `e'${s.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`,
    (s) => pg.Client.prototype.escapeLiteral(s),
    // A `$` followed by a space can never close `$q$` or `$$` early.
    (s) => `$q$${spaced(s)}$q$`,
    (s) => `$$${spaced(s)}$$`,
    (s) => `U&'${s.replaceAll("'", "''").replaceAll('\\', '\\\\')}'`,
  ],
  mysql: [
    (s) => mysql.escape(s),
    (s) => `"${s.replace(/[\\"]/g, '\\$&')}"`,
    (s) => `'${s.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`,
    (s) => `N'${s.replace(/[\\']/g, '\\$&')}'`,
    (s) => `_utf8mb4${mysql.escape(s)}`,
  ],
  mssql: [(s) => `'${s.replaceAll("'", "''")}'`, (s) => `N'${s.replaceAll("'", "''")}'`],
  sqlite: [(s) => `'${s.replaceAll("'", "''")}'`],
};

/** Numbers as each dialect writes them. */
export const NUMBERS: Record<SqlDialect, ((n: number) => string)[]> = {
  postgres: [(n) => `${n}`, (n) => `${n}.5`, (n) => `${n}e3`, (n) => `.${n}`],
  mysql: [(n) => `${n}`, (n) => `${n}.25`, (n) => `${n}E-2`],
  mssql: [(n) => `${n}`, (n) => `$${n}.50`, (n) => `${n}.0`],
  sqlite: [(n) => `${n}`, (n) => `${n}.5e+2`],
};

/** A name holding quotes and comment starters (no whitespace: output is one line), quoted. */
export const nameText = fc.string({ unit: fc.constantFrom("'", '"', '`', '\\', '$', '-', '/', '*', '#', '[', ']', 'a', 'b', 'é'), minLength: 1, maxLength: 8 });
export const QUOTED: Record<SqlDialect, ((w: string) => string)[]> = {
  postgres: [(w) => `"${w.replaceAll('"', '""')}"`],
  mysql: [(w) => `\`${w.replaceAll('`', '``')}\``],
  mssql: [(w) => `[${w.replaceAll(']', ']]')}]`, (w) => `"${w.replaceAll('"', '""')}"`],
  // A lone "…" may be a string in SQLite: a double-quoted name is kept where it is qualified.
  sqlite: [(w) => `"${w.replaceAll('"', '""')}".id`, (w) => `\`${w.replaceAll('`', '``')}\``, (w) => `[${w.replaceAll(']', '')}]`],
};

/** Comments full of stray quotes (and secrets): none may end early, so none holds its terminator. */
export function comments(d: SqlDialect): fc.Arbitrary<string> {
  const line = tricky(16).map((c) => c.replace(/[\r\n]/g, ''));
  const block = tricky(16).map((c) => c.replaceAll('*/', '').replaceAll('/*', '').replace(/\*$/, '').replace(/^\//, ''));
  const forms = [line.map((c) => `-- ${c}\n`), block.map((c) => `/* ${c} */`), secret.map((s) => `-- ${s.replace(/[\r\n]/g, '')}\n`)];
  if (d === 'mysql') forms.push(line.map((c) => `#${c}\n`));
  if (d === 'postgres' || d === 'mssql') forms.push(fc.tuple(block, block).map(([a, b]) => `/* ${a} /* ${b} */ ${a} */`));
  return fc.oneof(...forms);
}

export const PLACEHOLDERS: Record<SqlDialect, string[]> = { postgres: ['$1', '$12'], mysql: ['?', '@v'], mssql: ['@p1', '@name'], sqlite: ['?', '?3', ':name', '@x', '$v'] };
export const WORDS = ['select', 'from', 'where', 'and', 'or', 'as', 'users', 'email', 'id', '=', ',', '(', ')', '.', '<>', '||', '+'];

export type Token = { text: string; secret?: string; name?: string };

export function token(d: SqlDialect): fc.Arbitrary<Token> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.tuple(fc.constantFrom(...LITERALS[d]), secret).map(([lit, s]) => ({ text: lit(s), secret: s })) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...NUMBERS[d]), secretNumber).map(([num, n]) => ({ text: num(n), secret: String(n) })) },
    { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...QUOTED[d]), nameText).map(([q, w]) => ({ text: q(w), name: q(w) })) },
    { weight: 2, arbitrary: comments(d).map((text) => ({ text })) },
    { weight: 3, arbitrary: fc.constantFrom(...WORDS, ...PLACEHOLDERS[d]).map((text) => ({ text })) },
  );
}

/** A statement in dialect `d`: tokens with a space or a newline between them. */
export const statement = (d: SqlDialect) => fc.array(fc.tuple(token(d), fc.constantFrom(' ', '\n', '  ')), { minLength: 1, maxLength: 14 });
export const join = (ts: [Token, string][]) => ts.map(([t, sep]) => t.text + sep).join('');

