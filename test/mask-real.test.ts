/**
 * Issue 57 items 1–3 with the commands real clients build: pg against a real PostgreSQL, mysql2
 * over a real socket (mysql2's own server protocol: it formats `query` values into the text
 * client-side, and sends `execute` values apart), ioredis and node-redis against a real
 * redis-server, Node's http client and fetch against a real server. What the profile keeps: no
 * secret, the names and the key namespaces.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import fc from 'fast-check';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import mysql from 'mysql2';
import pg from 'pg';
import { maskSql } from '../src/analysis/normalize.js';
import { instrument, instrumentPg, renderHtmlComment, renderServerTiming, renderText, withProfile, type Profile } from '../src/index.js';
import { startMysqlServer } from './helpers/mysql-server.js';
import { startPostgres, type PostgresServer } from './helpers/postgres.js';
import { startRedis, type RedisServer } from './helpers/redis-server.js';
import { comments, LITERALS, nameText, QUOTED, secret, secretNumber, spaced } from './helpers/sql-gen.js';
import { customs } from './helpers/tree.js';

const VICTIM = 'victim@example.com';
const PASSWORD = 'hunter2';

let pgServer: PostgresServer;
let pool: pg.Pool;
let redis: RedisServer;
let web: Server;
let port: number;

beforeAll(async () => {
  instrument();
  [pgServer, redis] = await Promise.all([startPostgres(), startRedis()]);
  pool = instrumentPg(new pg.Pool({ host: '127.0.0.1', port: pgServer.port, user: 'postgres', database: 'postgres', max: 2 }));
  pool.on('error', () => {});
  await pool.query('create table users (id serial primary key, email text, username text, "it\'s" text)');
  await pool.query('insert into users (email, username) values ($1, $2)', [VICTIM, PASSWORD]);
  web = http.createServer((_req, res) => res.end('ok'));
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  port = (web.address() as AddressInfo).port;
});

afterAll(async () => {
  await pool?.end();
  await pgServer?.stop();
  await redis?.kill();
  await new Promise((r) => web?.close(r));
});

/** Every output a developer or the store sees. */
function everything(profile: Profile): string {
  return [renderText(profile), renderHtmlComment(profile), renderServerTiming(profile), JSON.stringify(profile.toJSON())].join('\n');
}

describe('pg against a real PostgreSQL', () => {
  test('comments with apostrophes, quoted names, C:\\ and parameters: no secret, names as written, two lookups two shapes', async () => {
    const { profile } = await withProfile('job', async () => {
      await pool.query(`select "users"."id" from "users" -- don't log\nwhere "email" = '${VICTIM}' and 'C:\\' <> '${PASSWORD}'`);
      await pool.query('select "users"."id", "it\'s" from "users" where "email" = $1', [VICTIM]);
      await pool.query('select "users"."id", "it\'s" from "users" where "username" = $1', [PASSWORD]);
      await pool.query('select "users"."id", "it\'s" from "users" where "username" = $1', [PASSWORD]);
      await pool.query({ text: "select $1::text /* params: it's */, $tag$ a ' b $tag$ as x", values: [PASSWORD] });
    });
    expect(customs(profile).map((c) => [c.command, c.duplicate, c.similar])).toEqual([
      ['select "users"."id" from "users" where "email" = ? and ? <> ?', undefined, undefined],
      ['select "users"."id", "it\'s" from "users" where "email" = $1', undefined, undefined],
      ['select "users"."id", "it\'s" from "users" where "username" = $1', true, 1],
      ['select "users"."id", "it\'s" from "users" where "username" = $1', true, 1],
      // The comment is dropped (a space in its place).
      ['select $1::text , ? as x', undefined, undefined],
    ]);
    const all = everything(profile);
    expect(all).not.toContain('victim');
    expect(all).not.toContain(PASSWORD);
  });
});

describe('mysql2 over a real socket', () => {
  test("query (values formatted into the text) and execute (values apart): backticks with an apostrophe, -- and # comments", async () => {
    const server = await startMysqlServer((conn) => conn.writeOk());
    const conn = mysql.createConnection({ host: '127.0.0.1', port: server.port, user: 'u' });
    try {
      const { profile } = await withProfile('job', async () => {
        await conn.promise().query(`select \`it's\` from users -- don't log\nwhere email = ? and pw = ? # it's`, [VICTIM, PASSWORD]);
        await conn.promise().query('select `users`.`id` from `users` where name = "a\\"b" or pw = ?', [PASSWORD]);
        // This server answers no prepared statements: a real execute round trip that fails.
        await conn.promise().execute('select `id` from `users` where email = ?', [VICTIM]).catch(() => undefined);
      });
      expect(customs(profile).map((c) => c.command)).toEqual([
        "select `it's` from users where email = ? and pw = ?",
        'select `users`.`id` from `users` where name = ? or pw = ?',
        'select `id` from `users` where email = ?',
      ]);
      const all = everything(profile);
      expect(all).not.toContain('victim');
      expect(all).not.toContain(PASSWORD);
    } finally {
      conn.destroy();
      await server.close();
    }
  });
});

describe('Redis against a real redis-server', () => {
  test('ioredis and node-redis: GET apikey:?, SET session:?, AUTH ?; namespaces kept', async () => {
    const io = new Redis({ host: '127.0.0.1', port: redis.port, lazyConnect: true });
    await io.connect();
    const nr = createClient({ url: redis.url });
    await nr.connect();
    const KEY = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc';
    const SID = 's%3Aj1F2xQ.abcDEF9';
    try {
      const { profile } = await withProfile('job', async () => {
        await io.get(`apikey:${KEY}`);
        await io.set(`session:sid=${SID}`, PASSWORD);
        await io.call('AUTH', PASSWORD).catch(() => undefined);
        await io.hmget('user:42:profile', 'name');
        await nr.get(`apikey:${KEY}`);
        await nr.set(`session:sid=${SID}`, PASSWORD);
        await nr.sendCommand(['AUTH', PASSWORD]).catch(() => undefined);
        await nr.get('cache:v2:users:550e8400-e29b-41d4-a716-446655440000');
      });
      expect(customs(profile).map((c) => c.command)).toEqual([
        'GET apikey:?',
        'SET session:?',
        'AUTH ?',
        'HMGET user:?:profile',
        'GET apikey:?',
        'SET session:?',
        'AUTH ?',
        'GET cache:v2:users:?',
      ]);
      const all = everything(profile);
      for (const secret of [KEY, 'j1F2xQ', PASSWORD, '550e8400']) expect(all).not.toContain(secret);
    } finally {
      io.disconnect();
      await nr.quit();
    }
  });
});

describe('outgoing HTTP against a real server', () => {
  test('fetch and the http client: Slack-like webhook path, query values, matrix parameters and a proxy-form URL with userinfo', async () => {
    const hook = '/services/T0A1B2C3D/B0A1B2C3D/a1B2c3D4e5F6g7H8i9J0k1L2';
    const { profile } = await withProfile('job', async () => {
      await (await fetch(`http://127.0.0.1:${port}${hook}?token=${PASSWORD}`)).text();
      await new Promise<void>((resolve, reject) => {
        // A request through a forward proxy carries the absolute URL as its path, userinfo and all.
        http
          .get({ host: '127.0.0.1', port, path: `http://alice:${PASSWORD}@127.0.0.1:${port}/app;jsessionid=1A2B3C4D5E6F/x` }, (res) => res.resume().on('end', resolve))
          .on('error', reject);
      });
    });
    expect(customs(profile).map((c) => c.command)).toEqual([
      `GET http://127.0.0.1:${port}/services/?/?/??token=?`,
      `GET http://127.0.0.1:${port}/app;jsessionid=?/x`,
    ]);
    const all = everything(profile);
    for (const secret of ['T0A1B2C3D', 'a1B2c3D4', PASSWORD, 'alice', '1A2B3C4D5E6F']) expect(all).not.toContain(secret);
  });
});

describe('issue 57 item 1: a real PostgreSQL reads the generated statements as the generator means them', () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = new pg.Client({ host: '127.0.0.1', port: pgServer.port, user: 'postgres', database: 'postgres' });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
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
