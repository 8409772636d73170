// A small RealWorld-style API as its docs would have it written: Express 5 routes, knex 3 for the
// connection, Bookshelf 1 models with a relation, all CommonJS. miniprof is two lines: the
// middleware and `instrument(knex)`; the steps are the app's own.
const express = require('express');
const knexFactory = require('knex');
const bookshelfFactory = require('bookshelf');
const { instrument, step } = require('miniprof');
const { miniprof } = require('miniprof/express');

function createApp(connection) {
  const knex = instrument(knexFactory({ client: 'pg', connection, pool: { min: 0, max: 4 } }));
  const bookshelf = bookshelfFactory(knex);
  const User = bookshelf.model('User', { tableName: 'users' });
  const Article = bookshelf.model('Article', {
    tableName: 'articles',
    author() {
      return this.belongsTo('User', 'author_id');
    },
  });

  const app = express();
  // Developers are whoever sends the header (a real app would check a session); everyone else
  // gets the app's own bytes.
  app.use(miniprof({ isDeveloper: (req) => req.get('x-developer') === 'yes', machine: 'jest' }));
  app.get('/api/articles', async (req, res) => {
    const articles = await step('load articles', () => Article.query((qb) => qb.orderBy('id')).fetchAll());
    // One query per article for its author: the N+1 a profile should name.
    const authors = await step('load authors', async () => {
      const out = [];
      for (const a of articles.models) out.push(await a.related('author').fetch());
      return out;
    });
    res.json({ articles: articles.models.map((a, i) => ({ slug: a.get('slug'), title: a.get('title'), author: authors[i].get('username') })) });
  });
  app.get('/api/profiles/:username', async (req, res) => {
    const user = await step('load user', () => new User({ username: req.params.username }).fetch({ require: false }));
    if (!user) return res.status(404).json({ errors: { body: ['not found'] } });
    res.json({ profile: { username: user.get('username'), bio: user.get('bio') } });
  });
  return { app, knex };
}

module.exports = { createApp };
