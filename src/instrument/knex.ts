import type { SqlDialect } from '../core/types.js';
import { closeCall, openCall, type OpenCall } from './record.js';

/** The public face of a knex instance that is used: its query events and its client's config. */
export interface KnexLike {
  (...args: any[]): any;
  on(event: string, listener: (...args: any[]) => void): unknown;
  client: { config?: { client?: unknown }; dialect?: unknown };
}

/** What knex's `query`, `query-response` and `query-error` events carry. */
interface QueryEvent {
  __knexQueryUid?: string;
  sql?: unknown;
  bindings?: unknown;
}

const DONE = Symbol('miniprof.knex');

/** knex's `client` option (a name, or a Client class) and its dialect name, to a SqlDialect. */
export function knexDialect(knex: KnexLike): SqlDialect | undefined {
  const client = knex.client.config?.client;
  const name = String(typeof client === 'function' ? ((client as { prototype?: { dialect?: unknown } }).prototype?.dialect ?? knex.client.dialect) : (client ?? knex.client.dialect)).toLowerCase();
  if (name === 'pg' || name.startsWith('postgres') || name === 'pgnative' || name === 'cockroachdb' || name === 'redshift') return 'postgres';
  if (name.startsWith('mysql') || name === 'mariadb') return 'mysql';
  if (name.includes('sqlite')) return 'sqlite';
  if (name === 'mssql' || name === 'tedious') return 'mssql';
  return undefined;
}

/** Knex clients whose driver already publishes miniprof's diagnostics channels (mysql2 3.20+). */
export function knexUsesChannels(knex: KnexLike): boolean {
  return knex.client.config?.client === 'mysql2';
}

/**
 * Time every query of a knex instance through its public query events (`query`, then
 * `query-response` or `query-error`, matched by the query's `__knexQueryUid`). knex emits `query`
 * from the promise chain the app started with `await knex(...)`, so the call lands under the
 * step that awaited it, transactions included. The text is knex's, with its `?` placeholders;
 * the bindings become `CustomNode.values` (a digest, never the values).
 */
export function instrumentKnex<T extends KnexLike>(knex: T): T {
  const k = knex as T & { [DONE]?: true };
  if (k[DONE] === true) return knex;
  Object.defineProperty(k, DONE, { value: true });
  const dialect = knexDialect(knex);
  const open = new Map<string, OpenCall>();
  knex.on('query', (q: QueryEvent) => {
    if (typeof q?.__knexQueryUid !== 'string') return;
    const call = openCall('knex', 'sql', (e: QueryEvent) => String(e.sql ?? ''), q, undefined, dialect, (e) => e.bindings);
    if (call !== undefined) open.set(q.__knexQueryUid, call);
  });
  const settle = (failed: boolean) => (q: QueryEvent | undefined) => {
    const uid = q?.__knexQueryUid;
    if (typeof uid !== 'string') return;
    const call = open.get(uid);
    if (call === undefined) return;
    open.delete(uid);
    closeCall(call, failed);
  };
  const ok = settle(false);
  const failed = settle(true);
  knex.on('query-response', (_response: unknown, q: QueryEvent) => ok(q));
  knex.on('query-error', (_err: unknown, q: QueryEvent) => failed(q));
  return knex;
}
