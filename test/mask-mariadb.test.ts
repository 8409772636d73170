/**
 * Issue 57 item 1 against a real MySQL-compatible server (Debian's mariadb-server): MariaDB is the
 * oracle that the generated MySQL text means what the generator says (each secret comes back as
 * its column, named by its backtick name, past comments full of stray quotes), and mysql2's
 * `query` (values formatted into the text) and `execute` (a real prepared statement, values
 * apart) keep no secret in the profile.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import fc from 'fast-check';
import mysql from 'mysql2';
import { maskSql } from '../src/analysis/normalize.js';
import { instrument, renderText, withProfile, type CustomTimingJSON } from '../src/index.js';
import { startMariadb, type MariadbServer } from './helpers/mariadb.js';
import { comments, LITERALS, nameText, QUOTED, secret } from './helpers/sql-gen.js';

let server: MariadbServer;
let conn: mysql.Connection;

beforeAll(async () => {
  instrument();
  server = await startMariadb();
  conn = mysql.createConnection({ host: '127.0.0.1', port: server.port, user: 'root', charset: 'utf8mb4' });
  await conn.promise().query('create database t');
  await conn.promise().query('use t');
  await conn.promise().query("create table users (id int primary key, email text, `it's` text)");
  await conn.promise().query("insert into users values (1, 'victim@example.com', 'hunter2')");
});

afterAll(async () => {
  conn?.destroy();
  await server?.stop();
});

describe('MariaDB reads the generated MySQL statements as the generator means them', () => {
  const item = fc.tuple(
    fc.tuple(fc.constantFrom(...LITERALS.mysql), secret).map(([lit, s]) => ({ text: lit(s), value: s })),
    // MariaDB keeps a column name of at most 64 characters; `é` is two bytes.
    nameText.filter((w) => Buffer.byteLength(w) <= 40),
    fc.option(comments('mysql'), { nil: undefined }),
  );

  test('property: each secret comes back as its column, named by its backtick name; the masked text holds no secret and every name', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(item, { minLength: 1, maxLength: 5 }), async (items) => {
        const sql = 'select ' + items.map(([lit, w, c]) => `${lit.text} as ${QUOTED.mysql[0]!(w)}${c === undefined ? '' : ` ${c}`}`).join(', ');
        const [rows, fields] = await conn.promise().query({ sql, rowsAsArray: true });
        expect((rows as unknown[][])[0]).toEqual(items.map(([lit]) => lit.value));
        expect(fields.map((f) => f.name)).toEqual(items.map(([, w]) => w));
        const out = maskSql(sql, 'mysql');
        expect(out).not.toContain('ZQX');
        for (const [, w] of items) expect(out).toContain(QUOTED.mysql[0]!(w));
        expect(maskSql(sql)).not.toContain('ZQX');
      }),
      { numRuns: 150, examples: [[[[{ text: "'C:\\\\'", value: 'C:\\' }, "it's", "-- don't\n"]]]] },
    );
  });
});

describe('mysql2 against MariaDB', () => {
  test('query and execute (a real prepared statement): backtick names with an apostrophe, # and -- comments, no secret kept', async () => {
    const { profile } = await withProfile('job', async () => {
      await conn.promise().query("select `it's` from users -- don't log\nwhere email = ? and `it's` = ? # it's", ['victim@example.com', 'hunter2']);
      const [rows] = await conn.promise().execute('select `users`.`id` from `users` where email = ?', ['victim@example.com']);
      expect(rows).toEqual([{ id: 1 }]);
      await conn.promise().execute('select `users`.`id` from `users` where email = ?', ['victim@example.com']);
    });
    const custom = profile.toJSON().root.custom! as CustomTimingJSON[];
    expect(custom.map((c) => [c.command, c.duplicate])).toEqual([
      ["select `it's` from users where email = ? and `it's` = ?", undefined],
      ['select `users`.`id` from `users` where email = ?', true],
      ['select `users`.`id` from `users` where email = ?', true],
    ]);
    const all = renderText(profile) + JSON.stringify(profile.toJSON());
    expect(all).not.toContain('victim');
    expect(all).not.toContain('hunter2');
  });
});
