import { describe, expect, test } from 'vitest';
import fc from 'fast-check';
import mysql from 'mysql2';
import pg from 'pg';
import { normalize, redact } from '../src/analysis/normalize.js';
import { withParams } from '../src/instrument/record.js';
import { renderHtmlComment, renderServerTiming, renderText, timing, withProfile } from '../src/index.js';
import { fakeClock, fixed } from './helpers/clock.js';

describe('redact: values masked, shape kept', () => {
  const cases: [string, string][] = [
    ["select * from users where name = 'bob' and id = 42", 'select * from users where name = ? and id = ?'],
    ["select 'it''s', 'a\\'b', \"Name\" from t1 limit 10", 'select ?, ?, ? from t1 limit ?'],
    // A4 (issue 51, F4): what the supported drivers send.
    ['select $$it\'s a secret$$, $body$ $$ nested $x$ $body$ from t', 'select ?, ? from t'],
    ['select $fn$ unterminated to the end', 'select ?'],
    ['select * from t where a = $1 and b = $2', 'select * from t where a = $1 and b = $2'],
    ['select * from users where name = "bob" and pw = "a\\"b"', 'select * from users where name = ? and pw = ?'],
    ['insert into "t" ("a", "b") values ("x", "y")', 'insert into "t" (?, ?) values (?, ?)'],
    ['select "t"."Name" as "n" from "public"."t" join "u" on "u"."id" = "t"."id"', 'select "t"."Name" as "n" from "public"."t" join "u" on "u"."id" = "t"."id"'],
    ['GET https://user:p@ss@api.example.com/v1', 'GET https://?@api.example.com/v1'],
    ['redis://:s3cr@t@127.0.0.1:6379/0', 'redis://?@127.0.0.1:6379/?'],
    ['select * from t where x = $1 and y = ?', 'select * from t where x = $1 and y = ?'],
    ['GET http://127.0.0.1:8080/users/42?token=abc&page=2', 'GET http://127.0.0.1:8080/users/??token=?&page=?'],
    ['GET https://user:pw@api.example.com/v1/items', 'GET https://?@api.example.com/v1/items'],
    ['GET /objects/550e8400-e29b-41d4-a716-446655440000', 'GET /objects/?'],
    ['GET /objects/5f3a9c2b1d4e6f7a8b9c0d1e', 'GET /objects/?'],
    ['GET user:42:profile', 'GET user:?:profile'],
    ['select 3.5e3, 0x1F, a.b5, t2', 'select ?, ?, a.b5, t2'],
    ["select * from t where s = 'cut off in the mid", 'select * from t where s = ?'],
  ];
  for (const [input, out] of cases) {
    test(JSON.stringify(input), () => {
      expect(redact(input)).toBe(out);
    });
  }
});

describe('normalize: the shape of similar commands', () => {
  test('IN lists of any length, multi-row VALUES and whitespace collapse', () => {
    expect(normalize('select * from t where id in (1, 2, 3)')).toBe('select * from t where id in (...)');
    expect(normalize('select * from t where id IN ( $1,$2 )')).toBe('select * from t where id IN (...)');
    expect(normalize("insert into t (a, b) values (1, 'x'), (2, 'y')")).toBe('insert into t (a, b) values (...)');
    expect(normalize('select  *\n from t where a = 1 ')).toBe('select * from t where a = ?');
  });
});

/** Names without digits, so no name can look like a number or an id. */
const ident = fc.stringMatching(/^[a-z_]{1,8}$/);
const value = fc.oneof(
  fc.integer({ min: -1e9, max: 1e9 }).map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true, min: 0, max: 1e6 }).map((d) => String(d)),
  fc.string({ maxLength: 12 }).map((s) => mysql.escape(s)),
  fc.string({ maxLength: 12 }).map((s) => pg.Client.prototype.escapeLiteral(s)),
  fc.array(fc.nat(), { minLength: 1, maxLength: 6 }).map((xs) => `(${xs.join(', ')})`),
);

/** A query shape: names, each followed by one literal slot. */
const shape = fc.array(ident, { minLength: 1, maxLength: 5 });

function fill(names: string[], values: string[]): string {
  return names.map((n, i) => (values[i]!.startsWith('(') ? `${n} in ${values[i]}` : `${n} = ${values[i]}`)).join(' and ');
}

describe('properties', () => {
  test('the same query with different literals is always similar', () => {
    fc.assert(
      fc.property(
        shape.chain((names) =>
          fc.tuple(
            fc.constant(names),
            fc.array(value, { minLength: names.length, maxLength: names.length }),
            fc.array(value, { minLength: names.length, maxLength: names.length }),
          ),
        ),
        ([names, a, b]) => {
          // Lists and scalars are different shapes; keep each slot's kind.
          const b2 = b.map((v, i) => (a[i]!.startsWith('(') === v.startsWith('(') ? v : a[i]!));
          expect(normalize(`select * from t where ${fill(names, a)}`)).toBe(normalize(`select * from t where ${fill(names, b2)}`));
        },
      ),
      { numRuns: 1000 },
    );
  });

  test('different queries are never similar', () => {
    fc.assert(
      fc.property(shape, shape, fc.array(value, { minLength: 5, maxLength: 5 }), (x, y, values) => {
        fc.pre(x.join(',') !== y.join(','));
        const vx = values.slice(0, x.length).map((v) => (v.startsWith('(') ? '1' : v));
        const vy = values.slice(0, y.length).map((v) => (v.startsWith('(') ? '1' : v));
        expect(normalize(`select * from t where ${fill(x, vx)}`)).not.toBe(normalize(`select * from t where ${fill(y, vy)}`));
      }),
      { numRuns: 1000 },
    );
  });

  /** Secrets carry a marker at both ends, which nothing else in the outputs contains. */
  const secret = fc.string({ maxLength: 16 }).map((s) => `ZQX${s}ZQX`);

  async function outputs(commands: [string, string][], redactOption?: boolean): Promise<string[]> {
    const { profile } = await withProfile(
      'job',
      () => {
        for (const [category, command] of commands) timing(category, command, () => 0);
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

  function commandsWith(s: string, n: number): [string, string][] {
    return [
      ['sql', `select * from users where name = ${mysql.escape(s)} and id = ${n}`],
      ['sql', `select * from users where name = ${pg.Client.prototype.escapeLiteral(s)}`],
      ['sql', `select * from t where id in (${n}, ${n + 1})`],
      ['http', `GET http://127.0.0.1:8080/search?q=${encodeURIComponent(s)}&id=${n}`],
      // F4: PostgreSQL dollar quotes, MySQL double-quoted strings, a raw `@` in a URL password.
      // A dollar-quoted string ends at the first `$$` (`$tag$`) in it, in PostgreSQL as in the
      // redactor: each `$` of the secret is followed by a space so that none can occur.
      ['sql', `select $$${s.replaceAll('$', '$ ')}$$ as a`],
      ['sql', `select $tag$${s.replaceAll('$', '$ ')}$tag$ as a`],
      ['sql', `select * from users where name = "${s.replace(/[\\"]/g, '\\$&')}" and id = ${n}`],
      ['sql', `insert into t (a) values ("${s.replace(/[\\"]/g, '\\$&')}")`],
      ['http', `GET https://admin:${url(s)}@db.example.com/x`],
      ['redis', `CONNECT redis://:${url(s)}@127.0.0.1:6379/0`],
      ['redis', `GET session:${n}`],
      // Values sent apart from the text (pg, mysql2 execute), as the instrumentations append them.
      ['sql', withParams('select * from t where a = $1 and b = $2', [s, n, { s }, [s]])],
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

  test('with redact: false the values are shown (so the property above can fail), never in Server-Timing', async () => {
    const outs = await outputs(commandsWith('ZQXsecretZQX', 1234567890), false);
    expect(outs[0]).toContain("'ZQXsecretZQX'");
    expect(outs[0]).toContain('1234567890');
    expect(outs[3]).not.toContain('ZQX');
    expect(outs[3]).not.toContain('1234567890');
  });
});

describe('redact and normalize stay linear on hostile text', () => {
  // No timing assertion: each input is 400,000 characters, on which the quadratic patterns this
  // guards against took minutes (0.8 s at 50,000), far past the test timeout; linear takes ms.
  test.each([
    ['unterminated double quotes with escapes', '"\\'],
    ['single quotes with escapes ending in a lone backslash', "'\\"],
    ['dotted words (a scheme could start at every letter)', 'a.'],
    ['hyphenated words', 'a-'],
    ['dollar quotes that never close (F4)', '$a$'],
    ['authorities full of @ (F4)', 'a://x@@:'],
    ['double-quoted strings after FROM (F4)', 'from "x"'],
  ])('%s', (_, unit) => {
    const text = unit.repeat(200_000);
    const shape = normalize(text);
    expect(typeof shape).toBe('string');
    expect(redact(text).length).toBeLessThanOrEqual(text.length);
  });
});
