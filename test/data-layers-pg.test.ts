/**
 * `instrument(target)` against a real PostgreSQL (Debian's, a throwaway copy): each data layer's
 * queries are timed from the object the app already has, under the step that ran them, with the
 * dialect set and the bound values as a digest (never the values). knex 3 (pg client), Sequelize 6,
 * Drizzle 0.45 (node-postgres), Kysely 0.29 (through the pg Pool it is given).
 */
import { PrismaPg } from '@prisma/adapter-pg';
import { drizzle } from 'drizzle-orm/node-postgres';
import { eq } from 'drizzle-orm';
import { integer, pgTable, text } from 'drizzle-orm/pg-core';
import knexFactory, { type Knex } from 'knex';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { DataTypes, Sequelize } from 'sequelize';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Profile } from '../src/core/profile.js';
import { F_ERROR, type CustomNode } from '../src/core/timing.js';
import { currentProfile, instrument, step, withProfile } from '../src/index.js';
import { startPostgres, type PostgresServer } from './helpers/postgres.js';

let server: PostgresServer;
const conn = (): { host: string; port: number; user: string; database: string } => ({ host: '127.0.0.1', port: server.port, user: 'postgres', database: 'postgres' });

beforeAll(async () => {
  server = await startPostgres();
  const setup = new pg.Client(conn());
  await setup.connect();
  await setup.query(`create table users (id int primary key, email text not null);
    create table posts (id int primary key, user_id int not null, title text not null);
    insert into users values (1, 'ada@example.com'), (2, 'bob@example.com');
    insert into posts values (1, 1, 'a'), (2, 1, 'b'), (3, 2, 'c');`);
  await setup.end();
});

afterAll(async () => {
  await server?.stop();
});

interface Row {
  step: string;
  command: string;
  dialect: string | undefined;
  values: boolean;
  error?: true;
}

/** withProfile, with the rows read just before the profile is sealed (the seal lets go of the nodes). */
async function profiled(fn: () => Promise<unknown>): Promise<{ profile: Profile; got: Row[] }> {
  let got: Row[] = [];
  const { profile } = await withProfile('job', async () => {
    await fn();
    got = rows(currentProfile() as Profile);
  });
  return { profile, got };
}

/**
 * Every custom timing with the step it sits under, its dialect and whether a values digest was
 * set: read from the profile's nodes (the JSON shows neither dialect nor values), in the order
 * the steps first recorded one.
 */
function rows(profile: Profile): Row[] {
  const out: Row[] = [];
  for (const [parent, list] of (profile as unknown as { customs: Map<{ name: string }, CustomNode[]> | null }).customs ?? []) {
    for (const c of list) out.push({ step: parent.name, command: c.command, dialect: c.dialect, values: c.values !== undefined, ...((c.flags & F_ERROR) !== 0 ? { error: true as const } : {}) });
  }
  return out;
}

describe('instrument(target) against PostgreSQL', () => {
  test('knex (pg client): each query under the step that awaited it, a transaction query by query, a failure marked; dialect postgres, bindings as a digest', async () => {
    const db: Knex = instrument(knexFactory({ client: 'pg', connection: conn(), pool: { min: 0, max: 2 } }));
    try {
      const { profile, got } = await profiled(async () => {
        // A knex builder is a thenable: `async` makes the step's promise run it inside the step.
        const user = await step('load user', async () => db('users').where({ id: 1 }).first());
        expect(user.email).toBe('ada@example.com');
        await step('load posts', async () => {
          const posts = await db('posts').where('user_id', user.id).orderBy('id');
          expect(posts).toHaveLength(2);
        });
        await step('save', () => db.transaction(async (trx) => {
          await trx('posts').where({ id: 3 }).update({ title: 'Secret Title' });
        }));
        await step('broken', async () => db('no_such_table').select('*').catch(() => 'failed'));
      });
      expect(got.map(({ step, command }) => [step, command])).toEqual([
        ['load user', 'select * from "users" where "id" = $1 limit $2'],
        ['load posts', 'select * from "posts" where "user_id" = $1 order by "id" asc'],
        // knex reports no response for its own BEGIN and COMMIT: those are not timed.
        ['save', 'update "posts" set "title" = $1 where "id" = $2'],
        ['broken', 'select * from "no_such_table"'],
      ]);
      expect(got.every((r) => r.dialect === 'postgres')).toBe(true);
      expect(got.map((r) => r.values)).toEqual([true, true, true, false]);
      expect(got.at(-1)!.error).toBe(true);
      // The values themselves are nowhere in the profile.
      expect(JSON.stringify(profile.toJSON())).not.toContain('Secret');
    } finally {
      await db.destroy();
    }
  });

  test('knex outside a profile: nothing recorded, queries unchanged', async () => {
    const db = instrument(knexFactory({ client: 'pg', connection: conn(), pool: { min: 0, max: 1 } }));
    try {
      expect(await db('users').count('* as n').first()).toEqual({ n: '2' });
    } finally {
      await db.destroy();
    }
  });

  test('Sequelize (postgres): model calls under their steps, an N+1 named, dialect postgres', async () => {
    const sequelize = instrument(new Sequelize('postgres', 'postgres', '', { host: '127.0.0.1', port: server.port, dialect: 'postgres', logging: false, pool: { max: 2 } }));
    const User = sequelize.define('User', { id: { type: DataTypes.INTEGER, primaryKey: true }, email: DataTypes.TEXT }, { tableName: 'users', timestamps: false });
    const Post = sequelize.define('Post', { id: { type: DataTypes.INTEGER, primaryKey: true }, user_id: DataTypes.INTEGER, title: DataTypes.TEXT }, { tableName: 'posts', timestamps: false });
    try {
      const { profile, got } = await profiled(async () => {
        const posts = await step('load posts', () => Post.findAll({ order: [['id', 'ASC']] }));
        await step('load authors', async () => {
          for (const p of posts) await User.findByPk(p.get('user_id') as number);
        });
      });
      expect(got.map(({ step, command }) => [step, command.replace(/\d+/g, 'N')])).toEqual([
        ['load posts', 'SELECT "id", "user_id", "title" FROM "posts" AS "Post" ORDER BY "Post"."id" ASC;'],
        ...Array(3).fill(['load authors', 'SELECT "id", "email" FROM "users" AS "User" WHERE "User"."id" = N;']),
      ]);
      expect(got.every((r) => r.dialect === 'postgres')).toBe(true);
      // Three lookups of the same shape: the N+1 pattern is grouped as similar.
      const authors = profile.toJSON().root.children[1]!.custom!;
      expect(authors.every((c) => c.similar !== undefined)).toBe(true);
    } finally {
      await sequelize.close();
    }
  });

  test('Drizzle (node-postgres Pool): instrument(db) times the Pool it was given (db.$client)', async () => {
    const pool = new pg.Pool({ ...conn(), max: 2 });
    pool.on('error', () => {});
    const users = pgTable('users', { id: integer('id').primaryKey(), email: text('email').notNull() });
    const db = instrument(drizzle({ client: pool }));
    try {
      const { profile, got } = await profiled(async () => {
        const r = await step('load user', async () => db.select().from(users).where(eq(users.id, 2)));
        expect(r).toEqual([{ id: 2, email: 'bob@example.com' }]);
      });
      expect(got.map(({ step, command }) => [step, command.replace(/ \/\* params: .*\*\//, '')])).toEqual([['load user', 'select "id", "email" from "users" where "users"."id" = $1']]);
      expect(JSON.stringify(profile.toJSON())).not.toContain('bob@');
    } finally {
      await pool.end();
    }
  });

  test('Kysely: instrument(kysely) is a TypeError that says to give the pg Pool; given the Pool, its queries are timed', async () => {
    const pool = new pg.Pool({ ...conn(), max: 2 });
    pool.on('error', () => {});
    interface DB {
      users: { id: number; email: string };
    }
    const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool: instrument(pool) }) });
    try {
      expect(() => instrument(db)).toThrow(expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_ARGUMENT', message: expect.stringContaining('instrument(an object (Kysely)) cannot time it: a Kysely instance: give instrument() the pg Pool') }));
      const { profile, got } = await profiled(async () => {
        await step('load user', () => db.selectFrom('users').selectAll().where('id', '=', 1).execute());
      });
      expect(got.map(({ step, command }) => [step, command.replace(/ \/\* params: .*\*\//, '')])).toEqual([['load user', 'select * from "users" where "id" = $1']]);
    } finally {
      await db.destroy();
    }
  });

  test("Prisma's pg driver adapter (@prisma/adapter-pg 7) given an instrumented Pool: its queries under the step (the adapter alone: prisma generate cannot run here)", async () => {
    const pool = instrument(new pg.Pool({ ...conn(), max: 2 }));
    pool.on('error', () => {});
    const adapter = await new PrismaPg(pool).connect();
    try {
      const { got } = await profiled(async () => {
        const r = await step('load user', () => adapter.queryRaw({ sql: 'select email from users where id = $1', args: [1], argTypes: [{ scalarType: 'int', arity: 'scalar' }] } as never));
        expect(r.rows).toEqual([['ada@example.com']]);
      });
      expect(got.map(({ step, command }) => [step, command.replace(/ \/\* params: .*\*\//, '')])).toEqual([['load user', 'select email from users where id = $1']]);
    } finally {
      await adapter.dispose();
      await pool.end();
    }
  });
});
