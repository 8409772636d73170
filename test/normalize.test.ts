import { describe, expect, test } from 'vitest';
import fc from 'fast-check';
import mysql from 'mysql2';
import pg from 'pg';
import { normalize, redact } from '../src/analysis/normalize.js';
import type { SqlDialect } from '../src/core/types.js';
import { renderHtmlComment, renderServerTiming, renderText, timing, withProfile } from '../src/index.js';
import { fakeClock, fixed } from './helpers/clock.js';

type Case = [input: string, category: string | undefined, dialect: SqlDialect | undefined, out: string];

describe('redact: values masked, shape kept', () => {
  const cases: Case[] = [
    ["select * from users where name = 'bob' and id = 42", 'sql', undefined, 'select * from users where name = ? and id = ?'],
    ["select 'it''s', 'a\\'b', \"Name\" from t1 limit 10", 'sql', 'mysql', 'select ?, ?, ? from t1 limit ?'],
    // A4 (issue 51, F4): what the supported drivers send.
    ['select $$it\'s a secret$$, $body$ $$ nested $x$ $body$ from t', 'sql', 'postgres', 'select ?, ? from t'],
    ['select $fn$ unterminated to the end', 'sql', 'postgres', 'select ?'],
    ['select * from t where a = $1 and b = $2', 'sql', 'postgres', 'select * from t where a = $1 and b = $2'],
    ['select * from users where name = "bob" and pw = "a\\"b"', 'sql', 'mysql', 'select * from users where name = ? and pw = ?'],
    ['select * from users where name = "bob" and pw = "a\\"b"', 'sql', undefined, 'select * from users where name = ? and pw = ?'],
    // Quoted names are kept as written where the dialect says they are names (issue 57).
    ['insert into "t" ("a", "b") values (\'x\', \'y\')', 'sql', 'postgres', 'insert into "t" ("a", "b") values (?, ?)'],
    ['select "t"."Name" as "n" from "public"."t" join "u" on "u"."id" = "t"."id"', 'sql', 'postgres', 'select "t"."Name" as "n" from "public"."t" join "u" on "u"."id" = "t"."id"'],
    ['select `t`.`id` from `order` where `it``s` = 1', 'sql', 'mysql', 'select `t`.`id` from `order` where `it``s` = ?'],
    ["select [dbo].[t].[x]]y] from [t] where n = N'bob'", 'sql', 'mssql', 'select [dbo].[t].[x]]y] from [t] where n = ?'],
    ['select "t"."a", `b`, [c] from t where d = 1', 'sql', 'sqlite', 'select "t"."a", `b`, [c] from t where d = ?'],
    // SQLite reads a lone "…" it cannot resolve as a string: masked unless qualified.
    ['select * from t where name = "bob"', 'sql', 'sqlite', 'select * from t where name = ?'],
    // Unknown dialect: a double-quoted token may be MySQL's string, so it is masked.
    ['select "users"."id" from "users"', 'sql', undefined, 'select ?.? from ?'],
    ['select * from t where x = $1 and y = ?', 'sql', 'postgres', 'select * from t where x = $1 and y = ?'],
    // With no dialect `$1` is masked too: in SQL Server it is a money literal.
    ['select * from t where x = $1 and y = ?', 'sql', undefined, 'select * from t where x = ? and y = ?'],
    ['select 3.5e3, 0x1F, a.b5, t2, 1e-5', 'sql', 'postgres', 'select ?, ?, a.b5, t2, ?'],
    ["select * from t where s = 'cut off in the mid", 'sql', 'postgres', 'select * from t where s = ?'],
    ['select 1 /* cut off in the comment', 'sql', 'postgres', 'select ?'],
    // One line: comments dropped, whitespace runs one space.
    ['select a,\n  b\t from t -- the list\n where c = 1 /* x */ and d = 2', 'sql', 'postgres', 'select a, b from t where c = ? and d = ?'],
    // Redis, URLs and other categories.
    ['GET https://user:p@ss@api.example.com/v1', 'http', undefined, 'GET https://api.example.com/v1'],
    ['CONNECT redis://:s3cr@t@127.0.0.1:6379/0', 'redis', undefined, 'CONNECT redis://127.0.0.1:6379/?'],
    ['GET http://127.0.0.1:8080/users/42?token=abc&page=2', 'http', undefined, 'GET http://127.0.0.1:8080/users/??token=?&page=?'],
    ['GET https://user:pw@api.example.com/v1/items', 'http', undefined, 'GET https://api.example.com/v1/items'],
    ['GET /objects/550e8400-e29b-41d4-a716-446655440000', 'http', undefined, 'GET /objects/?'],
    ['GET /objects/5f3a9c2b1d4e6f7a8b9c0d1e', undefined, undefined, 'GET /objects/?'],
    ['GET user:42:profile', 'redis', undefined, 'GET user:?:profile'],
    ['GET user:42:profile', 'cache', undefined, 'GET user:?:profile'],
    ['fetch https://bob:hunter2@example.com/a?x=1 then 42', 'custom', undefined, 'fetch https://example.com/a?x=? then ?'],
    // An app's own http timing that is no URL: its words stay, its values go.
    ['call billing api for order 42', 'http', undefined, 'call billing api for order ?'],
    ['GET /users/42', 'http', undefined, 'GET /users/?'],
  ];
  for (const [input, category, dialect, out] of cases) {
    test(`${JSON.stringify(input)} (${category ?? 'no category'}, ${dialect ?? 'unknown dialect'})`, () => {
      expect(redact(input, category, dialect)).toBe(out);
    });
  }
});

/**
 * The review's broken cases (issue 57): each leaked with the single-pattern redactor before this
 * tokenizer (checked against that commit's src/analysis/normalize.ts), now masked in the dialect
 * and with no dialect at all.
 */
describe('issue 57: the cases that flipped the old scanner', () => {
  const cases: [string, string, SqlDialect][] = [
    ['an apostrophe in a line comment', "select * from users -- don't log\nwhere email = 'victim@example.com' and pw = 'hunter2'", 'postgres'],
    ['an apostrophe in a MySQL # comment', "select * from users # don't log\nwhere email = 'victim@example.com' and pw = 'hunter2'", 'mysql'],
    ['an apostrophe in a block comment', "select /* it's */ * from users where email = 'victim@example.com' and pw = 'hunter2'", 'postgres'],
    ['a backtick name with an apostrophe', "select `it's` from users where email = 'victim@example.com' and pw = 'hunter2'", 'mysql'],
    ['a bracketed name with an apostrophe', "select [it's] from users where email = 'victim@example.com' and pw = 'hunter2'", 'mssql'],
    ["PostgreSQL's 'C:\\' (a backslash is no escape)", "select 'C:\\' as dir, 'victim@example.com' as e, 'hunter2' as p", 'postgres'],
    ['a nested PostgreSQL comment holding a quote', "select /* a /* it's */ still comment ' */ 'victim@example.com', 'hunter2'", 'postgres'],
    ['a params comment the app wrote itself', "select * from t where a = $1 /* params: 'victim@example.com', 'hunter2' */", 'postgres'],
    ['MySQL --x is no comment', "select 1--1, 'victim@example.com'\n, 'hunter2'", 'mysql'],
  ];
  test.each(cases)('%s: no secret, in the dialect or with none', (_, sql, dialect) => {
    for (const d of [dialect, undefined]) {
      const out = redact(sql, 'sql', d);
      expect(out).not.toContain('victim');
      expect(out).not.toContain('hunter2');
      expect(out).not.toContain('\n');
    }
  });

  test('PostgreSQL names stay readable, and two different lookups are two shapes (not an N+1)', () => {
    const email = normalize('select "users"."id" from "users" where "email" = $1', 'sql', 'postgres');
    const username = normalize('select "users"."id" from "users" where "username" = $1', 'sql', 'postgres');
    expect(email).toBe('select "users"."id" from "users" where "email" = $1');
    expect(username).not.toBe(email);
  });
});

describe('normalize: the shape of similar commands', () => {
  test('IN lists of any length, multi-row VALUES and whitespace collapse', () => {
    expect(normalize('select * from t where id in (1, 2, 3)')).toBe('select * from t where id in (...)');
    expect(normalize('select * from t where id IN ( $1,$2 )', 'sql', 'postgres')).toBe('select * from t where id IN (...)');
    expect(normalize("insert into t (a, b) values (1, 'x'), (2, 'y')", 'sql', 'mysql')).toBe('insert into t (a, b) values (...)');
    expect(normalize('select  *\n from t where a = 1 ', 'sql')).toBe('select * from t where a = ?');
  });
});

/** Names without digits, so no name can look like a number or an id. */
const ident = fc.stringMatching(/^[a-z_]{1,8}$/);
/** Literals as each dialect's own client escapes them (mysql2 for MySQL, pg for PostgreSQL). */
const ESCAPE: Record<'mysql' | 'postgres', (s: string) => string> = {
  mysql: (s) => mysql.escape(s),
  postgres: (s) => pg.Client.prototype.escapeLiteral(s),
};
const valueIn = (d: 'mysql' | 'postgres') =>
  fc.oneof(
    fc.integer({ min: 0, max: 1e9 }).map(String),
    fc.double({ noNaN: true, noDefaultInfinity: true, min: 0, max: 1e6 }).map((x) => String(x)),
    fc.string({ maxLength: 12 }).map(ESCAPE[d]),
    fc.array(fc.nat(), { minLength: 1, maxLength: 6 }).map((xs) => `(${xs.join(', ')})`),
  );
const dialect = fc.constantFrom('mysql' as const, 'postgres' as const);

/** A query shape: names, each followed by one literal slot. */
const shape = fc.array(ident, { minLength: 1, maxLength: 5 });

function fill(names: string[], values: string[]): string {
  return names.map((n, i) => (values[i]!.startsWith('(') ? `${n} in ${values[i]}` : `${n} = ${values[i]}`)).join(' and ');
}

describe('properties', () => {
  test('the same query with different literals is always similar', () => {
    fc.assert(
      fc.property(
        fc.tuple(dialect, shape).chain(([d, names]) =>
          fc.tuple(
            fc.constant(d),
            fc.constant(names),
            fc.array(valueIn(d), { minLength: names.length, maxLength: names.length }),
            fc.array(valueIn(d), { minLength: names.length, maxLength: names.length }),
          ),
        ),
        ([d, names, a, b]) => {
          // Lists and scalars are different shapes; keep each slot's kind.
          const b2 = b.map((v, i) => (a[i]!.startsWith('(') === v.startsWith('(') ? v : a[i]!));
          expect(normalize(`select * from t where ${fill(names, a)}`, 'sql', d)).toBe(normalize(`select * from t where ${fill(names, b2)}`, 'sql', d));
        },
      ),
      { numRuns: 1000 },
    );
  });

  test('different queries are never similar', () => {
    fc.assert(
      fc.property(
        dialect.chain((d) => fc.tuple(fc.constant(d), shape, shape, fc.array(valueIn(d), { minLength: 5, maxLength: 5 }))),
        ([d, x, y, values]) => {
          fc.pre(x.join(',') !== y.join(','));
          const vx = values.slice(0, x.length).map((v) => (v.startsWith('(') ? '1' : v));
          const vy = values.slice(0, y.length).map((v) => (v.startsWith('(') ? '1' : v));
          expect(normalize(`select * from t where ${fill(x, vx)}`, 'sql', d)).not.toBe(normalize(`select * from t where ${fill(y, vy)}`, 'sql', d));
        },
      ),
      { numRuns: 1000 },
    );
  });

  /** Secrets carry a marker at both ends, which nothing else in the outputs contains. */
  const secret = fc.string({ maxLength: 16 }).map((s) => `ZQX${s}ZQX`);

  type Call = [category: string, command: string, dialect?: SqlDialect, values?: unknown[]];

  async function outputs(commands: Call[], redactOption?: boolean): Promise<string[]> {
    const { profile } = await withProfile(
      'job',
      () => {
        for (const [category, command, dialect, values] of commands) timing(category, command, () => 0, { dialect, values });
      },
      fixed(fakeClock(), redactOption === undefined ? {} : { redact: redactOption }),
    );
    return [
      renderText(profile),
      renderText(profile, { ascii: true }),
      renderHtmlComment(profile),
      renderServerTiming(profile),
      JSON.stringify(profile.toJSON()),
    ];
  }

  /** What can stand in a URL's authority unencoded, `@` and `:` included. */
  const url = (s: string) => s.replace(/[^A-Za-z0-9@:!$&'()*+,;=._~-]/g, '@');

  function commandsWith(s: string, n: number): Call[] {
    return [
      ['sql', `select * from users where name = ${mysql.escape(s)} and id = ${n}`],
      ['sql', `select * from users where name = ${mysql.escape(s)} and id = ${n}`, 'mysql'],
      ['sql', `select * from users where name = ${pg.Client.prototype.escapeLiteral(s)}`],
      ['sql', `select * from users where name = ${pg.Client.prototype.escapeLiteral(s)}`, 'postgres'],
      ['sql', `select * from t where id in (${n}, ${n + 1})`],
      ['http', `GET http://127.0.0.1:8080/search?q=${encodeURIComponent(s)}&id=${n}`],
      // F4: PostgreSQL dollar quotes, MySQL double-quoted strings, a raw `@` in a URL password.
      // A dollar-quoted string ends at the first `$$` (`$tag$`) in it, in PostgreSQL as in the
      // redactor: each `$` of the secret is followed by a space so that none can occur.
      ['sql', `select $$${s.replaceAll('$', '$ ')}$$ as a`],
      ['sql', `select $tag$${s.replaceAll('$', '$ ')}$tag$ as a`, 'postgres'],
      ['sql', `select * from users where name = "${s.replace(/[\\"]/g, '\\$&')}" and id = ${n}`],
      ['sql', `insert into t (a) values ("${s.replace(/[\\"]/g, '\\$&')}")`, 'mysql'],
      ['http', `GET https://admin:${url(s)}@db.example.com/x`],
      ['redis', `CONNECT redis://:${url(s)}@127.0.0.1:6379/0`],
      ['redis', `GET session:${n}`],
      // Values sent apart from the text: only a digest is kept (issue 57 item 2).
      ['sql', 'select * from t where a = $1 and b = $2', 'postgres', [s, n, { s }, [s]]],
    ];
  }

  test('A5, F4: redaction: no masked value ever appears in any output (text, comment, header, JSON)', async () => {
    await fc.assert(
      fc.asyncProperty(secret, fc.integer({ min: 1_000_000_000, max: 2_000_000_000 }), async (s, n) => {
        for (const out of await outputs(commandsWith(s, n))) {
          expect(out).not.toContain('ZQX');
          expect(out).not.toContain(String(n));
          expect(out).not.toContain(String(n + 1));
        }
      }),
      { numRuns: 300, examples: [['ZQX$$$ZQX', 1_000_000_000], ['ZQX$tag$tag$ZQX', 1_000_000_000]] },
    );
  });

  test('with redact: false the literals are shown (so the property above can fail), never in Server-Timing; values sent apart never', async () => {
    const outs = await outputs(commandsWith('ZQXsecretZQX', 1234567890), false);
    expect(outs[0]).toContain("'ZQXsecretZQX'");
    expect(outs[0]).toContain('1234567890');
    expect(outs[0]).toContain('select * from t where a = $1 and b = $2 = ');
    expect(outs[3]).not.toContain('ZQX');
    expect(outs[3]).not.toContain('1234567890');
  });
});

describe('redact and normalize stay linear on hostile text', () => {
  // No timing assertion: each input is 400,000 characters, on which the quadratic patterns this
  // guards against took minutes (0.8 s at 50,000), far past the test timeout; linear takes ms.
  const units = [
    ['unterminated double quotes with escapes', '"\\'],
    ['single quotes with escapes ending in a lone backslash', "'\\"],
    ['dotted words (a scheme could start at every letter)', 'a.'],
    ['hyphenated words', 'a-'],
    ['dollar quotes that never close (F4)', '$a$'],
    ['authorities full of @ (F4)', 'a://x@@:'],
    ['double-quoted strings after FROM (F4)', 'from "x"'],
    ['nested comments that never close', '/*/*'],
    ['brackets and backticks that never close', '[`'],
    ['line comments', '--\n'],
    ['URL paths and queries', 'http://h/a;b=c?d=e&'],
    ['Redis-like keys', 'a:b/c{d}|'],
  ];
  for (const category of ['sql', 'redis', 'http', 'other']) {
    test.each(units)(`%s (${category})`, (_, unit) => {
      const text = unit.repeat(Math.ceil(400_000 / unit.length));
      const shape = normalize(text, category);
      expect(typeof shape).toBe('string');
      expect(redact(text, category).length).toBeLessThanOrEqual(text.length);
    });
  }
});

describe("timing's fourth argument: the dialect and the values of an app's own SQL", () => {
  test('dialect keeps its quoted names; values are a digest: the same values are a duplicate, never shown; a wrong dialect is reported and masked the most', async () => {
    const reports: unknown[] = [];
    const q = 'select "users"."id" from "users" where "email" = $1';
    const { profile } = await withProfile(
      'job',
      () => {
        for (const email of ['a@example.com', 'b@example.com', 'a@example.com']) timing('sql', q, () => 0, { dialect: 'postgres', values: [email] });
        timing('sql', q, () => 0, { dialect: 'oracle' as SqlDialect });
        timing('sql', `${q} limit 1`, () => 0, { dialect: 'postgres', values: 'a@example.com' as unknown as unknown[] });
      },
      fixed(fakeClock(), { onInternalError: (e) => reports.push(e) }),
    );
    const json = profile.toJSON();
    expect(json.root.custom!.map((c) => [c.command, c.duplicate])).toEqual([
      [q, true],
      [q, undefined],
      [q, true],
      ['select ?.? from ? where ? = ?', undefined],
      [`${q} limit ?`, undefined],
    ]);
    expect(JSON.stringify(json)).not.toContain('example.com');
    expect(reports).toMatchObject([
      { code: 'MINIPROF_ERR_INVALID_ARGUMENT', message: expect.stringContaining('"oracle"') },
      { code: 'MINIPROF_ERR_INVALID_ARGUMENT', message: expect.stringContaining('values must be an array') },
    ]);
  });
});
