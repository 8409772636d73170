/**
 * The field: a small Fastify 5 + Drizzle ORM (node-postgres) API written from the two libraries'
 * docs, against a throwaway PostgreSQL. miniprof is two lines: the plugin and `instrument(db)`.
 * A developer's profile holds the queries under the steps that ran them, the N+1 named; everyone
 * else gets exactly what the same app without miniprof sends.
 */
import { asc, eq } from 'drizzle-orm';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import { integer, pgTable, serial, text } from 'drizzle-orm/pg-core';
import Fastify, { type FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { miniprof } from '../../adapters/fastify.js';
import { instrument, step } from '../../src/index.js';
import { startPostgres, type PostgresServer } from '../helpers/postgres.js';

const users = pgTable('users', { id: serial('id').primaryKey(), name: text('name').notNull() });
const posts = pgTable('posts', { id: serial('id').primaryKey(), authorId: integer('author_id').notNull(), title: text('title').notNull() });
const comments = pgTable('comments', { id: serial('id').primaryKey(), postId: integer('post_id').notNull(), body: text('body').notNull() });

let server: PostgresServer;
let pool: pg.Pool;
let plain: FastifyInstance;
let profiled: FastifyInstance;

/** The app, as its docs would have it; `withMiniprof` adds the two lines. */
async function createApp(withMiniprof: boolean): Promise<FastifyInstance> {
  const app = Fastify();
  const db: NodePgDatabase = withMiniprof ? instrument(drizzle({ client: pool })) : drizzle({ client: pool });
  if (withMiniprof) await app.register(miniprof, { isDeveloper: (req) => req.headers['x-developer'] === 'yes', badge: false, machine: 'field' });
  app.get<{ Params: { id: string } }>('/users/:id/feed', async (req, reply) => {
    const id = Number(req.params.id);
    const [user] = await step('load user', async () => db.select().from(users).where(eq(users.id, id)));
    if (user === undefined) return reply.code(404).send({ error: 'no such user' });
    const list = await step('load posts', async () => db.select().from(posts).where(eq(posts.authorId, id)).orderBy(asc(posts.id)));
    // The N+1: one query per post.
    const withComments = await step('load comments', async () => {
      const out = [];
      for (const p of list) out.push({ ...p, comments: await db.select({ body: comments.body }).from(comments).where(eq(comments.postId, p.id)) });
      return out;
    });
    return { user: user.name, posts: withComments.map((p) => ({ title: p.title, comments: p.comments.map((c) => c.body) })) };
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app;
}

const url = (app: FastifyInstance, path: string): string => `http://127.0.0.1:${(app.server.address() as { port: number }).port}${path}`;

beforeAll(async () => {
  server = await startPostgres();
  pool = new pg.Pool({ host: '127.0.0.1', port: server.port, user: 'postgres', database: 'postgres', max: 4 });
  pool.on('error', () => {});
  await pool.query(`create table users (id serial primary key, name text not null);
    create table posts (id serial primary key, author_id int not null, title text not null);
    create table comments (id serial primary key, post_id int not null, body text not null);
    insert into users (name) values ('ada');
    insert into posts (author_id, title) values (1, 'one'), (1, 'two'), (1, 'three');
    insert into comments (post_id, body) values (1, 'nice'), (3, 'meh');`);
  [plain, profiled] = await Promise.all([createApp(false), createApp(true)]);
}, 60_000);

afterAll(async () => {
  await plain?.close();
  await profiled?.close();
  await pool?.end();
  await server?.stop();
});

const FEED = { user: 'ada', posts: [{ title: 'one', comments: ['nice'] }, { title: 'two', comments: [] }, { title: 'three', comments: ['meh'] }] };

test('a developer: each query under its step, the comments\' lookups named as one similar group (the N+1)', async () => {
  const res = await fetch(url(profiled, '/users/1/feed'), { headers: { 'x-developer': 'yes' } });
  expect(await res.json()).toEqual(FEED);
  const id = res.headers.get('x-miniprof-id');
  type Step = { name: string; children: Step[]; custom?: { category: string; command: string; similar?: number }[]; nPlusOne?: { count: number } };
  const profile = (await (await fetch(url(profiled, `/_miniprof/${id}.json`), { headers: { 'x-developer': 'yes' } })).json()) as { root: Step; similar: { count: number }[] };
  // Fastify's route handler is a step by itself (autoSteps); the app's steps are inside it.
  const [handler] = profile.root.children;
  expect(profile.root.children.map((t) => t.name)).toEqual(['handler GET /users/:id/feed']);
  const tree = handler!.children.map((t) => [t.name, (t.custom ?? []).map((c) => `[${c.category}] ${c.command}${c.similar !== undefined ? ' (similar)' : ''}`)]);
  expect(handler!.children.find((t) => t.name === 'load comments')!.nPlusOne?.count).toBe(3);
  expect(tree).toEqual([
    ['load user', ['[sql] select "id", "name" from "users" where "users"."id" = $1']],
    ['load posts', ['[sql] select "id", "author_id", "title" from "posts" where "posts"."author_id" = $1 order by "posts"."id" asc']],
    ['load comments', Array(3).fill('[sql] select "body" from "comments" where "comments"."post_id" = $1 (similar)')],
  ]);
  expect(profile.similar).toHaveLength(1);
  expect(profile.similar[0].count).toBe(3);
});

test('everyone else: the same status, headers and bytes as the app without miniprof', async () => {
  for (const path of ['/users/1/feed', '/users/9/feed']) {
    const [a, b] = await Promise.all([fetch(url(plain, path)), fetch(url(profiled, path))]);
    const headers = (r: Response) => [...r.headers].filter(([k]) => k !== 'date');
    expect([b.status, headers(b), await b.text()]).toEqual([a.status, headers(a), await a.text()]);
  }
});
