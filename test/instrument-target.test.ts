/**
 * `instrument(target)` at setup: what it cannot time is a coded TypeError naming what was given
 * (issue 60: `instrumentPg(knex.client.pool)` and `instrumentPg(knex)` were accepted silently).
 * Also what needs no server: mssql's channels against a port where nothing listens (the driver's
 * real call, failing), and MongoDB command monitoring's text (no MongoDB server on Debian: the
 * driver's event shapes are emitted by the test on a real MongoClient, which the row in
 * docs/data-layers.md says).
 */
import fc from 'fast-check';
import knexFactory from 'knex';
import { MongoClient } from 'mongodb';
import sql from 'mssql';
import { describe, expect, test } from 'vitest';
import { currentProfile, instrument, instrumentPg, step, withProfile } from '../src/index.js';
import { mongoCommand, shape } from '../src/instrument/mongodb.js';
import { freePort } from './helpers/services.js';

const coded = (message: string) => expect.objectContaining({ name: 'TypeError', code: 'MINIPROF_ERR_INVALID_ARGUMENT', message: `miniprof: ${message}` });

describe('instrument(target): a TypeError for what it cannot time', () => {
  const knex = knexFactory({ client: 'pg', connection: { host: '127.0.0.1', port: 1 } });

  test("knex's connection pool, to instrument or instrumentPg, names knex instead", () => {
    const why = "knex's connection pool: give instrument() the knex instance itself (`instrument(knex)`).";
    expect(() => instrument(knex.client.pool)).toThrow(coded(`instrument(an object (KnexPool)) cannot time it: ${why}`));
    expect(() => instrumentPg(knex.client.pool as never)).toThrow(coded(`instrument(an object (KnexPool)) cannot time it: that is a knex connection pool: give it to instrument() instead.`));
  });

  test('a knex instance given to instrumentPg says to use instrument(); instrument(knex) returns the same instance', () => {
    expect(() => instrumentPg(knex as never)).toThrow(coded('instrument(a function (knex)) cannot time it: that is knex: give it to instrument() instead.'));
    expect(instrument(knex)).toBe(knex);
  });

  test('anything else: named by its type and constructor', () => {
    class Repository {}
    const list = 'instrument() times a pg Pool or Client, knex, Sequelize, a MongoClient or Mongoose connection, Drizzle, a TypeORM DataSource, mysql2 and mssql (docs/data-layers.md).';
    expect(() => instrument({})).toThrow(coded(`instrument(an object) cannot time it: ${list}`));
    expect(() => instrument(new Repository())).toThrow(coded(`instrument(an object (Repository)) cannot time it: ${list}`));
    expect(() => instrument(42)).toThrow(coded(`instrument(number) cannot time it: ${list}`));
    expect(() => instrument(undefined)).toThrow(coded(`instrument(undefined) cannot time it: ${list}`));
    expect(() => instrumentPg({} as never)).toThrow(coded('instrument(an object) cannot time it: instrumentPg takes a pg Pool or Client (an object with a `query` method).'));
  });

  test('a MongoClient made without monitorCommands: the driver would report nothing, so a TypeError says how to make it', async () => {
    const client = new MongoClient('mongodb://127.0.0.1:1');
    expect(() => instrument(client)).toThrow(expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_ARGUMENT', message: expect.stringContaining('made without `monitorCommands: true`') }));
    await client.close();
  });

  test('instrument() with no argument still subscribes the channels and returns nothing', () => {
    expect(instrument()).toBeUndefined();
  });
});

describe('mssql: its diagnostics channels, timed with no call', () => {
  test('a query to a server that is not there: the real driver call, timed under its step and marked failed, dialect mssql', async () => {
    instrument();
    const port = await freePort();
    const pool = new sql.ConnectionPool({ server: '127.0.0.1', port, user: 'sa', password: 'x', options: { trustServerCertificate: true }, connectionTimeout: 2000 });
    pool.on('error', () => {});
    let dialect: unknown;
    const { profile } = await withProfile('job', async () => {
      await step('report', async () => {
        await expect(pool.request().query('select name from users where id = 42')).rejects.toThrow();
      });
      // The node itself (the JSON does not show the dialect), read before the seal lets go of it.
      const customs = (currentProfile() as unknown as { customs: Map<unknown, { dialect: unknown }[]> }).customs;
      dialect = [...customs.values()][0]![0]!.dialect;
    });
    const [report] = profile.toJSON().root.children;
    expect(report!.custom!.map((c) => [c.category, c.command, c.error])).toEqual([['sql', 'select name from users where id = ?', true]]);
    expect(dialect).toBe('mssql');
    await pool.close().catch(() => {});
  });

  test('a stored procedure\'s parameters are not in its text (EXEC name): two calls are never called duplicates', async () => {
    instrument();
    const pool = new sql.ConnectionPool({ server: '127.0.0.1', port: await freePort(), user: 'sa', password: 'x', options: { trustServerCertificate: true }, connectionTimeout: 2000 });
    pool.on('error', () => {});
    const { profile } = await withProfile('job', async () => {
      await step('report', async () => {
        for (const id of [1, 2]) await expect(pool.request().input('id', sql.Int, id).execute('get_user')).rejects.toThrow();
      });
    });
    const [report] = profile.toJSON().root.children;
    expect(report!.custom!.map((c) => [c.command, c.duplicate ?? false])).toEqual([['EXEC get_user', false], ['EXEC get_user', false]]);
    await pool.close().catch(() => {});
  });
});

describe('MongoDB command monitoring (no MongoDB server here: the driver\'s event shapes)', () => {
  test('find, update, insert, aggregate: every value masked, names and operators kept', () => {
    const ev = (commandName: string, command: Record<string, unknown>) => ({ requestId: 1, commandName, command });
    expect(mongoCommand(ev('find', { find: 'users', filter: { email: 'ada@example.com', age: { $gt: 30 } } }))).toBe('find users {email:?,age:{$gt:?}}');
    expect(mongoCommand(ev('update', { update: 'users', updates: [{ q: { _id: 7 }, u: { $set: { secret: 'x' } } }] }))).toBe('update users [{q:{_id:?}}]');
    expect(mongoCommand(ev('insert', { insert: 'users', documents: [{ a: 1 }, { a: 2 }] }))).toBe('insert users');
    expect(mongoCommand(ev('aggregate', { aggregate: 'posts', pipeline: [{ $match: { author: 'ada' } }, { $limit: 5 }] }))).toBe('aggregate posts [{$match:{author:?}},{$limit:?}]');
    expect(mongoCommand(ev('ping', { ping: 1 }))).toBe('ping');
  });

  test('property: no string or number value of a filter reaches the command text', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom('a', 'b', 'email', '$in'), fc.oneof(fc.string({ minLength: 3 }).map((s) => `V${s}`), fc.integer({ min: 1000 }))), (filter) => {
        const text = mongoCommand({ requestId: 1, commandName: 'find', command: { find: 'c', filter } });
        // Every string value starts with V (no key or name has one) and every number has 4+ digits.
        expect(text).not.toMatch(/V|\d{4}/);
        expect(shape(filter, 0)).toBe(`{${Object.keys(filter).map((k) => `${k}:?`).join(',')}}`);
      }),
    );
  });

  test('a MongoClient with monitorCommands: a command is timed under the step that started it, a failure marked', async () => {
    const client = new MongoClient('mongodb://127.0.0.1:1', { monitorCommands: true });
    expect(instrument(client)).toBe(client);
    const { profile } = await withProfile('job', async () => {
      await step('load user', async () => {
        client.emit('commandStarted', { requestId: 1, commandName: 'find', command: { find: 'users', filter: { email: 'ada@example.com' } } } as never);
        await new Promise((r) => setTimeout(r, 5));
        client.emit('commandSucceeded', { requestId: 1 } as never);
      });
      await step('save', async () => {
        client.emit('commandStarted', { requestId: 2, commandName: 'insert', command: { insert: 'users', documents: [{}] } } as never);
        client.emit('commandFailed', { requestId: 2 } as never);
      });
    });
    expect(profile.toJSON().root.children.map((t) => [t.name, t.custom!.map((c) => [c.category, c.command, c.error])])).toEqual([
      ['load user', [['mongodb', 'find users {email:?}', undefined]]],
      ['save', [['mongodb', 'insert users', true]]],
    ]);
    await client.close();
  });

  test('duplicate means the same values: two finds of one shape with other values are similar, the same find twice is a duplicate (the driver\'s per-call lsid and $clusterTime aside)', async () => {
    const client = new MongoClient('mongodb://127.0.0.1:1', { monitorCommands: true });
    instrument(client);
    let id = 10;
    const find = (email: string) => {
      const requestId = id++;
      client.emit('commandStarted', { requestId, commandName: 'find', command: { find: 'users', filter: { email }, lsid: { id: requestId }, $clusterTime: { t: requestId }, $db: 'app' } } as never);
      client.emit('commandSucceeded', { requestId } as never);
    };
    const { profile } = await withProfile('job', () => step('load', () => ['a@x', 'b@x', 'a@x'].forEach(find)));
    const [load] = profile.toJSON().root.children;
    expect(load!.custom!.map((c) => [c.command, c.duplicate ?? false, c.similar])).toEqual([
      ['find users {email:?}', true, 1],
      ['find users {email:?}', false, 1],
      ['find users {email:?}', true, 1],
    ]);
    await client.close();
  });
});
