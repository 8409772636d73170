import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Knex } from 'knex';
import { step, timing, withProfile, type TimingJSON } from '../src/index.js';
import { startPostgres, type PostgresServer } from './helpers/postgres.js';
import { knexOn } from './helpers/knex-pg.js';

/**
 * Issue 59 item 1: a query builder returned from `step()` (or `timing()`) is a lazy thenable: its
 * query starts when its `then` is called. miniprof calls it inside the step's context, so the
 * query is under the step, runs once, and its rejection is the app's to handle.
 */
let server: PostgresServer;
let db: Knex;
let ran: string[];

beforeAll(async () => {
  server = await startPostgres();
  db = knexOn(server.port);
  ran = [];
  db.on('query', (q: { sql: string }) => ran.push(q.sql));
  await db.schema.createTable('t59', (t) => {
    t.integer('id').primary();
    t.string('name');
  });
  await db('t59').insert([{ id: 1, name: 'one' }, { id: 2, name: 'two' }]);
}, 60_000);

afterAll(async () => {
  await db?.destroy();
  await server?.stop();
});

/**
 * Each step's name with the tables its custom timings read (how the command is masked is another
 * module's business), and its children the same way.
 */
function shape(t: TimingJSON): unknown {
  return { name: t.name, sql: (t.custom ?? []).map((c) => /from "(\w+)"/.exec(c.command)?.[1] ?? c.command), children: t.children.map(shape) };
}

describe('a knex query builder returned from step() runs inside the step (real PostgreSQL)', () => {
  test('step(name, () => builder): the query is under its step, and runs exactly once', async () => {
    ran.length = 0;
    const { result, profile } = await withProfile('job', async () => {
      return step('load one', () => db('t59').where({ id: 1 }).first('name'));
    });
    expect(result).toEqual({ name: 'one' });
    expect(ran).toEqual(['select "name" from "t59" where "id" = $1 limit $2']);
    expect(shape(profile.toJSON().root)).toEqual({
      name: 'job',
      sql: [],
      children: [{ name: 'load one', sql: ['t59'], children: [] }],
    });
  });

  test('eight builders under eight parallel steps: each query under its own step', async () => {
    const { profile } = await withProfile('job', async () =>
      Promise.all([1, 2, 1, 2, 1, 2, 1, 2].map((id, i) => step(`load ${i}`, () => db('t59').where({ id }).select('name')))),
    );
    const root = profile.toJSON().root;
    expect(root.custom).toBeUndefined();
    expect(root.children.map((c) => [c.name, c.custom?.length])).toEqual(Array.from({ length: 8 }, (_, i) => [`load ${i}`, 1]));
  });

  test('timing(category, command, () => builder) inside a step: the query is under that step too', async () => {
    const { profile } = await withProfile('job', async () => step('outer', () => timing('db', 'load two', () => db('t59').where({ id: 2 }).first())));
    const outer = profile.toJSON().root.children[0]!;
    expect(outer.custom!.map((c) => c.category)).toEqual(['db', 'sql']);
  });

  test('a rejected builder: the step is errored, the error is the very one knex rejected with, and runs once', async () => {
    ran.length = 0;
    let caught: unknown;
    const { profile } = await withProfile('job', async () => {
      try {
        await step('missing', () => db('no_such_table_59').select('*'));
      } catch (err) {
        caught = err;
      }
    });
    expect(caught).toMatchObject({ code: '42P01' });
    expect(ran).toEqual(['select * from "no_such_table_59"']);
    const missing = profile.toJSON().root.children[0]!;
    expect([missing.name, missing.error, missing.custom?.[0]?.error]).toEqual(['missing', true, true]);
  });

  test('a builder step nobody awaits: its rejection still reaches unhandledRejection', async () => {
    const seen: unknown[] = [];
    const onUnhandled = (reason: unknown) => seen.push(reason);
    // vitest's own listener would fail the run: it is set aside for this test.
    const others = process.listeners('unhandledRejection');
    process.removeAllListeners('unhandledRejection');
    process.on('unhandledRejection', onUnhandled);
    try {
      await withProfile('job', async () => {
        void step('forgotten', () => db('no_such_table_59').select('*'));
        await new Promise((r) => setTimeout(r, 200));
      });
      for (let i = 0; i < 50 && seen.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    } finally {
      process.off('unhandledRejection', onUnhandled);
      for (const l of others) process.on('unhandledRejection', l);
    }
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ code: '42P01' });
  });
});
