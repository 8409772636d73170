// Jest's default configuration (no jest.config, no Babel setup of our own) and supertest, as the
// app's own suite would be written. The database is a throwaway PostgreSQL the runner started
// (DATABASE_URL).
const request = require('supertest');
const { createApp } = require('./app');

const { app, knex } = createApp(process.env.DATABASE_URL);

beforeAll(async () => {
  await knex.schema.createTable('users', (t) => {
    t.increments('id');
    t.string('username').notNullable();
    t.string('bio');
  });
  await knex.schema.createTable('articles', (t) => {
    t.increments('id');
    t.string('slug').notNullable();
    t.string('title').notNullable();
    t.integer('author_id').references('users.id');
  });
  await knex('users').insert([{ username: 'ada', bio: 'engines' }, { username: 'bob', bio: null }]);
  await knex('articles').insert([
    { slug: 'a', title: 'A', author_id: 1 },
    { slug: 'b', title: 'B', author_id: 2 },
    { slug: 'c', title: 'C', author_id: 1 },
  ]);
});

afterAll(() => knex.destroy());

const BODY = { articles: [{ slug: 'a', title: 'A', author: 'ada' }, { slug: 'b', title: 'B', author: 'bob' }, { slug: 'c', title: 'C', author: 'ada' }] };

test('a developer request is profiled: the queries sit under the steps that ran them, and the authors\' lookups are named as an N+1', async () => {
  const res = await request(app).get('/api/articles').set('x-developer', 'yes').expect(200);
  expect(res.body).toEqual(BODY);
  const id = res.headers['x-miniprof-id'];
  expect(id).toMatch(/^[0-9a-f-]{36}$/);
  expect(res.headers['server-timing']).toMatch(/^load_articles;dur=[\d.]+;desc="load articles[^"]*", load_authors;dur=/);
  const profile = (await request(app).get(`/_miniprof/${id}.json`).set('x-developer', 'yes').expect(200)).body;
  const [articles, authors] = profile.root.children;
  expect(articles.name).toBe('load articles');
  expect(articles.custom.map((c) => [c.category, c.command])).toEqual([['sql', 'select "articles".* from "articles" order by "id" asc']]);
  expect(authors.name).toBe('load authors');
  expect(authors.custom).toHaveLength(3);
  for (const c of authors.custom) expect([c.category, c.command]).toEqual(['sql', 'select distinct "users".* from "users" where "users"."id" = $1 limit $2']);
  // The three lookups of one shape are grouped as similar: the N+1, named.
  expect(authors.custom.every((c) => c.similar === authors.custom[0].similar && c.similar !== undefined)).toBe(true);
  expect(profile.similar.length).toBeGreaterThanOrEqual(1);
});

test('everyone else gets the app\'s own bytes and headers', async () => {
  const plain = await request(app).get('/api/articles').expect(200);
  expect(plain.text).toBe(JSON.stringify(BODY));
  expect(plain.headers['server-timing']).toBeUndefined();
  expect(plain.headers['x-miniprof-id']).toBeUndefined();
  const missing = await request(app).get('/api/profiles/nobody').expect(404);
  expect(missing.text).toBe('{"errors":{"body":["not found"]}}');
});
