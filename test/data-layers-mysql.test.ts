/**
 * MySQL-family data layers against a real MariaDB (Debian's mariadb-server, a throwaway copy):
 * mysql2 publishes diagnostics channels (3.20+), so mysql2 itself, knex's `mysql2` client and
 * Sequelize's `mysql` dialect are timed with no call; `instrument(knex)` / `instrument(sequelize)`
 * accept them (and add nothing: one timing per query, never two).
 */
import knexFactory from 'knex';
import mysql from 'mysql2/promise';
import { DataTypes, Sequelize } from 'sequelize';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { instrument, step, withProfile } from '../src/index.js';
import type { Profile } from '../src/core/profile.js';
import { startMariadb, type MariadbServer } from './helpers/mariadb.js';

let server: MariadbServer;

beforeAll(async () => {
  server = await startMariadb();
  const c = await mysql.createConnection({ host: '127.0.0.1', port: server.port, user: 'root' });
  await c.query('create database app');
  await c.query('create table app.users (id int primary key, email varchar(100) not null)');
  await c.query("insert into app.users values (1, 'ada@example.com'), (2, 'bob@example.com')");
  await c.end();
  instrument();
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

/** Each step's custom timings, as `[category] command` (masked, as a developer reads them). */
function tree(profile: Profile): [string, string[]][] {
  return profile.toJSON().root.children.map((t) => [t.name, (t.custom ?? []).map((c) => `[${c.category}] ${c.command}${c.error ? ' (error)' : ''}`)]);
}

describe('MariaDB', () => {
  test('mysql2 (a pool): queries and a failure under their steps, with no call but instrument()', async () => {
    const pool = mysql.createPool({ host: '127.0.0.1', port: server.port, user: 'root', database: 'app', connectionLimit: 2 });
    expect(instrument(pool)).toBe(pool);
    try {
      const { profile } = await withProfile('job', async () => {
        await step('load user', () => pool.query('select email from users where id = 1'));
        await step('broken', () => pool.query('select * from nope').catch(() => null));
      });
      expect(tree(profile)).toEqual([
        ['load user', ['[sql] select email from users where id = ?']],
        ['broken', ['[sql] select * from nope (error)']],
      ]);
    } finally {
      await pool.end();
    }
  });

  test('knex (mysql2 client): instrument(knex) accepts it; each query timed once, under its step', async () => {
    const db = instrument(knexFactory({ client: 'mysql2', connection: { host: '127.0.0.1', port: server.port, user: 'root', database: 'app' }, pool: { min: 0, max: 2 } }));
    try {
      const { profile } = await withProfile('job', async () => {
        const u = await step('load user', async () => db('users').where({ id: 2 }).first());
        expect(u.email).toBe('bob@example.com');
        await step('count', async () => db('users').count('* as n'));
      });
      expect(tree(profile)).toEqual([
        // knex asks the server's version on its first connection: that query is real, and is the first step's.
        ['load user', ['[sql] select version() as version', '[sql] select * from `users` where `id` = ? limit ?']],
        ['count', ['[sql] select count(*) as `n` from `users`']],
      ]);
    } finally {
      await db.destroy();
    }
  });

  test('Sequelize (mysql dialect): instrument(sequelize) accepts it; each query timed once, under its step', async () => {
    const sequelize = instrument(new Sequelize('app', 'root', '', { host: '127.0.0.1', port: server.port, dialect: 'mysql', logging: false, pool: { max: 2 } }));
    const User = sequelize.define('User', { id: { type: DataTypes.INTEGER, primaryKey: true }, email: DataTypes.STRING }, { tableName: 'users', timestamps: false });
    try {
      const { profile } = await withProfile('job', async () => {
        await step('load users', () => User.findAll({ where: { id: [1, 2] } }));
      });
      const [[name, calls]] = tree(profile) as [[string, string[]]];
      expect(name).toBe('load users');
      // Sequelize sets each new connection's time zone and asks the version once: real queries, the first step's.
      expect(calls).toEqual(['[sql] SET time_zone = ?', '[sql] SELECT VERSION() as `version`', '[sql] SET time_zone = ?', '[sql] SELECT `id`, `email` FROM `users` AS `User` WHERE `User`.`id` IN (?, ?);']);
    } finally {
      await sequelize.close();
    }
  });
});
