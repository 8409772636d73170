import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createRequire } from 'node:module';
import type { Knex } from 'knex';
import { renderText, step, withProfile, type ProfileJSON } from '../src/index.js';
import { startPostgres, type PostgresServer } from './helpers/postgres.js';
import { knexOn } from './helpers/knex-pg.js';

/**
 * Issue 59 item 11: context loss is said, not hidden. Bookshelf runs on bluebird, whose promise
 * callbacks run from its own queue: without its async hooks the work of eight parallel fetches
 * lands under whichever step queued first. miniprof cannot fix that, but it can tell: the profile
 * carries a warning naming the remedy, and with the remedy applied the tree is right.
 */
const require = createRequire(import.meta.url);
let server: PostgresServer;
let db: Knex;

beforeAll(async () => {
  server = await startPostgres();
  db = knexOn(server.port);
  await db.schema.createTable('articles', (t) => {
    t.integer('id').primary();
    t.string('title');
  });
  await db('articles').insert(Array.from({ length: 8 }, (_, i) => ({ id: i + 1, title: `article ${i + 1}` })));
}, 60_000);

afterAll(async () => {
  await db?.destroy();
  await server?.stop();
});

/** Eight Bookshelf fetches, each under its own step: all at once, or one after another. */
async function eightFetches(parallel = true): Promise<ProfileJSON> {
  const bookshelf = require('bookshelf')(db);
  const Article = bookshelf.model('Article', { tableName: 'articles' });
  const fetch = (i: number) => step(`load article ${i + 1}`, () => Article.forge({ id: i + 1 }).fetch());
  const { result, profile } = await withProfile('GET /api/articles', async () => {
    if (parallel) return Promise.all(Array.from({ length: 8 }, (_, i) => fetch(i)));
    const out = [];
    for (let i = 0; i < 8; i++) out.push(await fetch(i));
    return out;
  });
  expect(result.map((a: { get(k: string): unknown }) => a.get('title'))).toEqual(Array.from({ length: 8 }, (_, i) => `article ${i + 1}`));
  return profile.toJSON();
}

/** Queries per step, in order. */
const perStep = (json: ProfileJSON): number[] => json.root.children.map((c) => c.custom?.length ?? 0);
const EACH_ONE = [1, 1, 1, 1, 1, 1, 1, 1];

describe('Bookshelf (bluebird) + knex on real PostgreSQL: 8 fetches under 8 steps', () => {
  test('bluebird without its async hooks: the tree is wrong, and the profile says so, naming the remedy', async () => {
    const json = await eightFetches();
    // What bluebird does to the tree (not miniprof's to mend): the queries are not one per step.
    expect(perStep(json)).not.toEqual(EACH_ONE);
    expect(json.warnings).toContain(
      'bluebird is loaded without its async hooks: work chained on its promises (Bookshelf, older Sequelize) may be shown under the wrong step. ' +
        'Call Promise.config({ asyncHooks: true }) on bluebird before serving requests.',
    );
    expect(renderText(json)).toContain('! bluebird is loaded without its async hooks');
  });

  test('with the hooks on, that warning goes; bluebird still starts a returned query builder outside the context, and that is said too', async () => {
    require('bluebird').config({ asyncHooks: true });
    // miniprof probes bluebird at most once a second: a request now meets a fresh probe.
    await new Promise((r) => setTimeout(r, 1100));
    await eightFetches();
    const json = await eightFetches();
    expect(json.warnings.filter((w) => w.startsWith('bluebird is loaded without'))).toEqual([]);
    // bluebird 3.7 calls the `then` of a thenable a callback returned after leaving the callback's
    // async scope: Bookshelf returns knex builders, so parallel fetches still share a step.
    expect(perStep(json)).not.toEqual(EACH_ONE);
    expect(json.warnings).toContain(
      'bluebird starts a thenable returned from a callback (a knex query builder, as Bookshelf returns) outside the async context: ' +
        'queries of Bookshelf calls made in parallel may be shown under the first of their steps. Await them one after another to see each under its own.',
    );
  });

  test('the remedy the warning names, one fetch after another: each query under its own step', async () => {
    const json = await eightFetches(false);
    expect(json.root.custom).toBeUndefined();
    expect(perStep(json)).toEqual(EACH_ONE);
  });
});
