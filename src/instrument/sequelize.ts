import { toText } from '../core/names.js';
import type { SqlDialect } from '../core/types.js';
import { closeCall, openCall, type OpenCall } from './record.js';

/** The public face of a Sequelize instance that is used: its hooks and its dialect name. */
export interface SequelizeLike {
  addHook(name: string, key: string, fn: (...args: any[]) => unknown): unknown;
  getDialect(): string;
}

const DONE = Symbol('miniprof.sequelize');

export function sequelizeDialect(name: string): SqlDialect | undefined {
  if (name === 'postgres') return 'postgres';
  if (name === 'mysql' || name === 'mariadb') return 'mysql';
  if (name === 'sqlite') return 'sqlite';
  if (name === 'mssql') return 'mssql';
  return undefined;
}

/** Sequelize's `mysql` dialect runs on mysql2, which publishes miniprof's channels (3.20+). */
export function sequelizeUsesChannels(s: SequelizeLike): boolean {
  return s.getDialect() === 'mysql';
}

/**
 * Time every query of a Sequelize instance with its public `beforeQuery` and `afterQuery` hooks
 * (Sequelize 6): both run in the promise chain of the model call the app awaited, once the
 * connection is acquired, so the call lands under the step that ran it. `afterQuery` runs in a
 * `finally` and is told nothing of a failure: a failed query is timed, not marked. The SQL is set
 * on the query object when it runs, so the command is filled in at the end. Sequelize inlines
 * values as escaped literals unless `bind` is used; masking reads them like any literal.
 */
export function instrumentSequelize<T extends SequelizeLike>(sequelize: T): T {
  const s = sequelize as T & { [DONE]?: true };
  if (s[DONE] === true) return sequelize;
  Object.defineProperty(s, DONE, { value: true });
  const dialect = sequelizeDialect(sequelize.getDialect());
  const open = new WeakMap<object, OpenCall>();
  sequelize.addHook('beforeQuery', 'miniprof', (_options: unknown, query: object) => {
    const call = openCall('sequelize', 'sql', () => '[query]', undefined, undefined, dialect);
    if (call !== undefined) open.set(query, call);
  });
  sequelize.addHook('afterQuery', 'miniprof', (_options: unknown, query: { sql?: unknown }) => {
    const call = open.get(query);
    if (call === undefined) return;
    open.delete(query);
    if (typeof query.sql === 'string' && !call.profile.sealed) call.node.command = toText(query.sql, call.profile.config.maxCommandLength);
    closeCall(call, false);
  });
  return sequelize;
}
