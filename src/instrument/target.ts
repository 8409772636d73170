import { codedError } from '../core/errors.js';
import { instrument as subscribe } from './channels.js';
import { instrumentKnex, knexUsesChannels, type KnexLike } from './knex.js';
import { instrumentMongo, type MongoClientLike } from './mongodb.js';
import { instrumentPg as wrapPg, type PgQueryable } from './pg.js';
import { instrumentSequelize, sequelizeUsesChannels, type SequelizeLike } from './sequelize.js';

/**
 * `instrument()`: subscribe to the diagnostics channels (fetch, http, ioredis, node-redis, mysql2,
 * mssql), once per process. `instrument(target)`: also time the queries of one data layer the app
 * already has, and return it (the same object, or for Prisma-like extensions the one to use):
 *
 * | given | timed through |
 * | --- | --- |
 * | a `pg` Pool or Client | its `query` (and a pooled client's, from `connect()` to `release()`) |
 * | a knex instance | its public `query` / `query-response` / `query-error` events |
 * | a Sequelize instance | its public `beforeQuery` / `afterQuery` hooks |
 * | a mongodb `MongoClient` (made with `monitorCommands: true`), a Mongoose connection | the driver's command monitoring events |
 * | a Drizzle database | the client it was given (`db.$client`): a pg Pool or Client |
 * | a TypeORM DataSource (postgres, after `initialize()`) | its driver's pg Pool (`dataSource.driver.master`) |
 * | a mysql2 pool or connection, an mssql pool, knex or Sequelize on mysql2, TypeORM or Drizzle on mysql2 | their diagnostics channels (nothing more to do) |
 *
 * Anything else is a coded TypeError (`MINIPROF_ERR_INVALID_ARGUMENT`) naming what was given and,
 * where there is one, the object to give instead: never a silent no-op.
 *
 * @example
 * const db = instrument(knex({ client: 'pg', connection }));
 */
export function instrument(): void;
export function instrument<T>(target: T): T;
export function instrument<T>(...args: [T?]): T | void {
  subscribe();
  if (args.length === 0) return;
  return instrumentTarget(args[0] as T);
}

/** `instrumentPg(x)`: `instrument(x)` for a pg Pool or Client (and any object with pg's `query`). */
export function instrumentPg<T extends PgQueryable>(target: T): T {
  const other = dataLayerOf(target);
  if (other !== null && other !== 'pg') throw unsupported(target, `that is ${other}: give it to instrument() instead`);
  if (target === null || typeof target !== 'object' || typeof (target as { query?: unknown }).query !== 'function') {
    throw unsupported(target, 'instrumentPg takes a pg Pool or Client (an object with a `query` method)');
  }
  return wrapPg(target);
}

type Kind = 'pg' | 'knex' | 'a knex connection pool' | 'Sequelize' | 'MongoClient' | 'Mongoose' | 'Drizzle' | 'TypeORM' | 'Kysely' | 'Prisma' | 'mysql2' | 'mssql';

const has = (o: object, ...names: string[]): boolean => names.every((n) => typeof (o as Record<string, unknown>)[n] === 'function');

/** Which data layer an object is, by the public members each one documents. */
function dataLayerOf(t: unknown): Kind | null {
  if (t === null || (typeof t !== 'object' && typeof t !== 'function')) return null;
  const o = t as Record<string, any>;
  if (typeof t === 'function' && has(o, 'on', 'raw', 'transaction') && o.client !== null && typeof o.client === 'object') return 'knex';
  if (has(o, 'acquire', 'numUsed')) return 'a knex connection pool';
  if (has(o, 'addHook', 'getDialect', 'define')) return 'Sequelize';
  if (has(o, '$extends', '$connect')) return 'Prisma';
  if (has(o, 'selectFrom', 'getExecutor')) return 'Kysely';
  if ('$client' in o && has(o, 'select')) return 'Drizzle';
  if (has(o, 'initialize', 'getRepository') && o.options !== null && typeof o.options === 'object') return 'TypeORM';
  if (has(o, 'db', 'startSession', 'on')) return 'MongoClient';
  if (has(o, 'getClient', 'model')) return 'Mongoose';
  if (o.connection !== null && typeof o.connection === 'object' && has(o.connection, 'getClient') && has(o, 'model')) return 'Mongoose';
  if (has(o, 'query', 'connect') && ('idleCount' in o || 'connectionParameters' in o)) return 'pg';
  if (has(o, 'query', 'execute') && (has(o, 'getConnection') || 'config' in o) && !has(o, 'request')) return 'mysql2';
  if (has(o, 'request', 'connect', 'close') && 'config' in o) return 'mssql';
  return null;
}

function instrumentTarget<T>(target: T): T {
  const kind = dataLayerOf(target);
  const o = target as Record<string, any>;
  switch (kind) {
    case 'pg':
      return wrapPg(target as T & PgQueryable);
    case 'knex':
      return knexUsesChannels(target as unknown as KnexLike) ? target : (instrumentKnex(target as unknown as KnexLike) as T);
    case 'Sequelize':
      return sequelizeUsesChannels(target as unknown as SequelizeLike) ? target : (instrumentSequelize(target as unknown as SequelizeLike) as T);
    case 'MongoClient':
      instrumentMongo(target as unknown as MongoClientLike);
      return target;
    case 'Mongoose': {
      const connection = has(o, 'getClient') ? o : o.connection;
      instrumentMongo(connection.getClient() as MongoClientLike);
      return target;
    }
    case 'Drizzle': {
      const client = o.$client;
      const inner = dataLayerOf(client);
      if (inner === 'pg' || inner === 'mysql2') {
        instrumentTarget(client);
        return target;
      }
      throw unsupported(target, `a Drizzle database whose client (db.$client) is ${whatIs(client)}: miniprof times Drizzle on a pg Pool or Client, or on mysql2`);
    }
    case 'TypeORM': {
      const type = o.options.type;
      if (type === 'mysql' || type === 'mariadb') return target;
      if (type !== 'postgres') throw unsupported(target, `a TypeORM DataSource of type ${JSON.stringify(type)}: miniprof times TypeORM on postgres (its pg Pool) and mysql (mysql2's channels)`);
      if (o.isInitialized !== true) throw unsupported(target, 'a TypeORM DataSource not initialized yet: call instrument(dataSource) after `await dataSource.initialize()` (its pg Pool is made then)');
      wrapPg(o.driver.master as PgQueryable);
      return target;
    }
    case 'Kysely':
      throw unsupported(target, 'a Kysely instance: give instrument() the pg Pool you pass to `new PostgresDialect({ pool })` (Kysely on mysql2 is timed through its channels with no call)');
    case 'Prisma':
      throw unsupported(target, "a Prisma client: give instrument() the pg Pool you pass to Prisma's driver adapter (`new PrismaPg(instrument(new pg.Pool(...)))`), or use the OpenTelemetry route (docs/data-layers.md)");
    case 'a knex connection pool':
      throw unsupported(target, "knex's connection pool: give instrument() the knex instance itself (`instrument(knex)`)");
    case 'mysql2':
    case 'mssql':
      // Their own diagnostics channels time them, subscribed above.
      return target;
    default:
      throw unsupported(target, 'instrument() times a pg Pool or Client, knex, Sequelize, a MongoClient or Mongoose connection, Drizzle, a TypeORM DataSource, mysql2 and mssql (docs/data-layers.md)');
  }
}

/** `an object (Pool)`, `a function (knex)`: what was given, by its type and constructor's name. */
function whatIs(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v !== 'object' && typeof v !== 'function') return v === undefined ? 'undefined' : `${typeof v}`;
  const name = typeof v === 'function' ? (v as { name?: unknown }).name : (Object.getPrototypeOf(v) as { constructor?: { name?: unknown } } | null)?.constructor?.name;
  const article = typeof v === 'function' ? 'a function' : 'an object';
  return typeof name === 'string' && name !== '' && name !== 'Object' ? `${article} (${name})` : article;
}

function unsupported(target: unknown, why: string): Error {
  return codedError('MINIPROF_ERR_INVALID_ARGUMENT', `instrument(${whatIs(target)}) cannot time it: ${why}.`);
}
