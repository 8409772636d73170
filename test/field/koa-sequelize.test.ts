/**
 * The field: a small Koa 3 + Sequelize 6 (postgres) API written from the two libraries' docs,
 * against a throwaway PostgreSQL. miniprof is two lines: the middleware and
 * `instrument(sequelize)`. A developer's profile holds each model call's SQL under the step that
 * ran it, the N+1 named; everyone else gets exactly what the same app without miniprof sends.
 */
import { createServer, type Server } from 'node:http';
import Koa from 'koa';
import pg from 'pg';
import { DataTypes, Sequelize, type ModelStatic, type Model } from 'sequelize';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { miniprof } from '../../adapters/koa.js';
import { instrument, step } from '../../src/index.js';
import { startPostgres, type PostgresServer } from '../helpers/postgres.js';

let server: PostgresServer;
const apps: { server: Server; sequelize: Sequelize }[] = [];

function createApp(port: number, withMiniprof: boolean): { server: Server; sequelize: Sequelize } {
  const made = new Sequelize('postgres', 'postgres', '', { host: '127.0.0.1', port, dialect: 'postgres', logging: false, pool: { max: 2 } });
  const sequelize = withMiniprof ? instrument(made) : made;
  const Author: ModelStatic<Model> = sequelize.define('Author', { name: DataTypes.TEXT }, { tableName: 'authors', timestamps: false });
  const Book: ModelStatic<Model> = sequelize.define('Book', { title: DataTypes.TEXT, authorId: { type: DataTypes.INTEGER, field: 'author_id' } }, { tableName: 'books', timestamps: false });
  const app = new Koa();
  if (withMiniprof) app.use(miniprof({ isDeveloper: (ctx) => ctx.get('x-developer') === 'yes', badge: false, machine: 'field' }));
  app.use(async (ctx) => {
    if (ctx.path !== '/books') {
      ctx.status = 404;
      ctx.body = { error: 'not found' };
      return;
    }
    const books = await step('load books', () => Book.findAll({ order: [['id', 'ASC']] }));
    // The N+1 a lazy developer writes: one author lookup per book.
    const rows = await step('load authors', async () => {
      const out = [];
      for (const b of books) out.push({ title: b.get('title'), author: (await Author.findByPk(b.get('authorId') as number))?.get('name') });
      return out;
    });
    ctx.body = { books: rows };
  });
  const s = createServer(app.callback());
  return { server: s, sequelize };
}

const url = (s: Server, path: string): string => `http://127.0.0.1:${(s.address() as { port: number }).port}${path}`;

beforeAll(async () => {
  server = await startPostgres();
  const c = new pg.Client({ host: '127.0.0.1', port: server.port, user: 'postgres', database: 'postgres' });
  await c.connect();
  await c.query(`create table authors (id serial primary key, name text);
    create table books (id serial primary key, title text, author_id int);
    insert into authors (name) values ('Le Guin'), ('Pratchett');
    insert into books (title, author_id) values ('Earthsea', 1), ('Mort', 2), ('Lathe', 1);`);
  await c.end();
  for (const withMiniprof of [false, true]) {
    const app = createApp(server.port, withMiniprof);
    await new Promise<void>((r) => app.server.listen(0, '127.0.0.1', r));
    apps.push(app);
  }
}, 60_000);

afterAll(async () => {
  for (const a of apps) {
    await new Promise((r) => a.server.close(r));
    await a.sequelize.close();
  }
  await server?.stop();
});

const BOOKS = { books: [{ title: 'Earthsea', author: 'Le Guin' }, { title: 'Mort', author: 'Pratchett' }, { title: 'Lathe', author: 'Le Guin' }] };

test('a developer: each model call\'s SQL under its step, the author lookups named as one similar group (the N+1)', async () => {
  const res = await fetch(url(apps[1]!.server, '/books'), { headers: { 'x-developer': 'yes' } });
  expect(await res.json()).toEqual(BOOKS);
  const id = res.headers.get('x-miniprof-id');
  const profile = (await (await fetch(url(apps[1]!.server, `/_miniprof/${id}.json`), { headers: { 'x-developer': 'yes' } })).json()) as { root: { children: { name: string; custom?: { category: string; command: string; similar?: number }[] }[] }; similar: { count: number }[] };
  const tree = profile.root.children.map((t) => [t.name, (t.custom ?? []).map((c) => `[${c.category}] ${c.command}${c.similar !== undefined ? ' (similar)' : ''}`)]);
  expect(tree).toEqual([
    ['load books', ['[sql] SELECT "id", "title", "author_id" AS "authorId" FROM "books" AS "Book" ORDER BY "Book"."id" ASC;']],
    ['load authors', Array(3).fill('[sql] SELECT "id", "name" FROM "authors" AS "Author" WHERE "Author"."id" = ?; (similar)')],
  ]);
  expect(profile.similar).toHaveLength(1);
  expect(profile.similar[0].count).toBe(3);
});

test('everyone else: the same status, headers and bytes as the app without miniprof', async () => {
  for (const path of ['/books', '/nope']) {
    const [a, b] = await Promise.all([fetch(url(apps[0]!.server, path)), fetch(url(apps[1]!.server, path))]);
    const headers = (r: Response) => [...r.headers].filter(([k]) => k !== 'date');
    expect([b.status, headers(b), await b.text()]).toEqual([a.status, headers(a), await a.text()]);
  }
});
