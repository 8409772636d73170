/**
 * Issue 57 item 1: SQL masking is a tokenizer of each dialect. Generated statements put secrets in
 * every kind of literal the dialect has, in comments full of stray quotes, right after quoted
 * names holding quotes and comment starters, and as numbers; no secret may survive, in the
 * dialect or with none, and every quoted name survives as written in its dialect. A real
 * PostgreSQL is the oracle that the generated text means what the generator says.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import fc from 'fast-check';
import mysql from 'mysql2';
import pg from 'pg';
import { maskSql, redact } from '../src/analysis/normalize.js';
import type { SqlDialect } from '../src/core/types.js';
import { startPostgres, type PostgresServer } from './helpers/postgres.js';

/** Characters that have broken SQL scanners: every quote, escape and comment starter. */
const TRICKY = ["'", '"', '`', '\\', '$', '-', '/', '*', '#', '[', ']', ';', '\n', ' ', 'a', 'Z', 'E', 'é'];
const tricky = (maxLength: number) =>
  fc.oneof(fc.string({ maxLength }), fc.string({ unit: fc.constantFrom(...TRICKY), maxLength })).map((s) => s.replace(/\0/g, ''));

/** A secret: a marker at both ends that nothing else contains, anything in between. */
const secret = tricky(12).map((s) => `ZQX${s}ZQX`);
/** A secret number: ten digits, never part of anything else the generators make. */
const secretNumber = fc.integer({ min: 1_000_000_000, max: 1_999_999_999 });

/** Every `$` followed by a space: then nothing in it can close `$q$` or `$$` early. */
const spaced = (s: string) => s.replace(/\$(?! )/g, '$ ');

/** Each dialect's string literals of a secret, as its drivers and people write them. */
const LITERALS: Record<SqlDialect, ((s: string) => string)[]> = {
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
const NUMBERS: Record<SqlDialect, ((n: number) => string)[]> = {
  postgres: [(n) => `${n}`, (n) => `${n}.5`, (n) => `${n}e3`, (n) => `.${n}`],
  mysql: [(n) => `${n}`, (n) => `${n}.25`, (n) => `${n}E-2`],
  mssql: [(n) => `${n}`, (n) => `$${n}.50`, (n) => `${n}.0`],
  sqlite: [(n) => `${n}`, (n) => `${n}.5e+2`],
};

/** A name holding quotes and comment starters (no whitespace: output is one line), quoted. */
const nameText = fc.string({ unit: fc.constantFrom("'", '"', '`', '\\', '$', '-', '/', '*', '#', '[', ']', 'a', 'b', 'é'), minLength: 1, maxLength: 8 });
const QUOTED: Record<SqlDialect, ((w: string) => string)[]> = {
  postgres: [(w) => `"${w.replaceAll('"', '""')}"`],
  mysql: [(w) => `\`${w.replaceAll('`', '``')}\``],
  mssql: [(w) => `[${w.replaceAll(']', ']]')}]`, (w) => `"${w.replaceAll('"', '""')}"`],
  // A lone "…" may be a string in SQLite: a double-quoted name is kept where it is qualified.
  sqlite: [(w) => `"${w.replaceAll('"', '""')}".id`, (w) => `\`${w.replaceAll('`', '``')}\``, (w) => `[${w.replaceAll(']', '')}]`],
};

/** Comments full of stray quotes (and secrets): none may end early, so none holds its terminator. */
function comments(d: SqlDialect): fc.Arbitrary<string> {
  const line = tricky(16).map((c) => c.replace(/[\r\n]/g, ''));
  const block = tricky(16).map((c) => c.replaceAll('*/', '').replaceAll('/*', '').replace(/\*$/, '').replace(/^\//, ''));
  const forms = [line.map((c) => `-- ${c}\n`), block.map((c) => `/* ${c} */`), secret.map((s) => `-- ${s.replace(/[\r\n]/g, '')}\n`)];
  if (d === 'mysql') forms.push(line.map((c) => `#${c}\n`));
  if (d === 'postgres' || d === 'mssql') forms.push(fc.tuple(block, block).map(([a, b]) => `/* ${a} /* ${b} */ ${a} */`));
  return fc.oneof(...forms);
}

const PLACEHOLDERS: Record<SqlDialect, string[]> = { postgres: ['$1', '$12'], mysql: ['?', '@v'], mssql: ['@p1', '@name'], sqlite: ['?', '?3', ':name', '@x', '$v'] };
const WORDS = ['select', 'from', 'where', 'and', 'or', 'as', 'users', 'email', 'id', '=', ',', '(', ')', '.', '<>', '||', '+'];

type Token = { text: string; secret?: string; name?: string };

function token(d: SqlDialect): fc.Arbitrary<Token> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.tuple(fc.constantFrom(...LITERALS[d]), secret).map(([lit, s]) => ({ text: lit(s), secret: s })) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...NUMBERS[d]), secretNumber).map(([num, n]) => ({ text: num(n), secret: String(n) })) },
    { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...QUOTED[d]), nameText).map(([q, w]) => ({ text: q(w), name: q(w) })) },
    { weight: 2, arbitrary: comments(d).map((text) => ({ text })) },
    { weight: 3, arbitrary: fc.constantFrom(...WORDS, ...PLACEHOLDERS[d]).map((text) => ({ text })) },
  );
}

/** A statement in dialect `d`: tokens with a space or a newline between them. */
const statement = (d: SqlDialect) => fc.array(fc.tuple(token(d), fc.constantFrom(' ', '\n', '  ')), { minLength: 1, maxLength: 14 });
const join = (ts: [Token, string][]) => ts.map(([t, sep]) => t.text + sep).join('');

const DIALECTS: SqlDialect[] = ['postgres', 'mysql', 'mssql', 'sqlite'];

describe.each(DIALECTS)('%s', (d) => {
  test(`property: no secret survives, in ${d} or with no dialect; every quoted name is kept as written in ${d}; one line`, () => {
    fc.assert(
      fc.property(statement(d), (ts) => {
        const text = join(ts);
        const known = maskSql(text, d);
        const unknown = redact(text, 'sql');
        for (const out of [known, unknown]) {
          expect(out).not.toContain('ZQX');
          expect(out).not.toMatch(/\d{10}/);
          expect(out).not.toContain('\n');
        }
        for (const [t] of ts) if (t.name !== undefined) expect(known).toContain(t.name);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('a real PostgreSQL reads the generated statements as the generator means them', () => {
  let server: PostgresServer;
  let client: pg.Client;
  beforeAll(async () => {
    server = await startPostgres();
    client = new pg.Client({ host: '127.0.0.1', port: server.port, user: 'postgres', database: 'postgres' });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await server?.stop();
  });

  /** `select <literal> as <name>, …` with comments between the items. */
  const item = fc.tuple(
    fc.oneof(
      // Each `$` already followed by a space, so the secret is the same in every literal form.
      fc.tuple(fc.constantFrom(...LITERALS.postgres), secret).map(([lit, s]) => ({ text: lit(spaced(s)), value: spaced(s) as string | number })),
      secretNumber.map((n) => ({ text: String(n), value: n as string | number })),
    ),
    nameText.filter((w) => Buffer.byteLength(w) <= 40),
    fc.option(comments('postgres'), { nil: undefined }),
  );

  test('property: the server returns each secret as its column, named by its quoted name; the masked text holds no secret and every name', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(item, { minLength: 1, maxLength: 5 }), async (items) => {
        const text = 'select ' + items.map(([lit, w, c]) => `${lit.text} as ${QUOTED.postgres[0]!(w)}${c === undefined ? '' : ` ${c}`}`).join(', ');
        const r = await client.query({ text, rowMode: 'array' });
        expect(r.rows[0]).toEqual(items.map(([lit]) => lit.value));
        expect(r.fields.map((f) => f.name)).toEqual(items.map(([, w]) => w));
        const out = maskSql(text, 'postgres');
        expect(out).not.toContain('ZQX');
        expect(out).not.toMatch(/\d{10}/);
        for (const [, w] of items) expect(out).toContain(QUOTED.postgres[0]!(w));
      }),
      { numRuns: 150, examples: [[[[{ text: "'C:\\'", value: 'C:\\' }, "it's", "-- don't\n"]]]] },
    );
  });
});
