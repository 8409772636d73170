import { currentScope } from '../core/context.js';
import { closeCall, openCall, type OpenCall } from './record.js';

/** The part of a `pg` Pool or Client that is wrapped. */
export interface PgQueryable {
  query: (...args: any[]) => any;
}

/** What an instrumented Pool hands out: a Client with the `release` the pool gave it. */
interface PooledClient extends PgQueryable {
  release?: (...args: unknown[]) => unknown;
  [HELD]?: boolean;
}

const WRAPPED = Symbol('miniprof.pg');
/**
 * On a client an instrumented pool handed out: true from `connect()` until `release()`. Its
 * queries are timed only then, because the pool also lends the same client to its own
 * `pool.query`, which is timed already (as one call, waiting for a client included).
 */
const HELD = Symbol('miniprof.pg.held');

/**
 * Set while an instrumented pool's own `query` runs: pg-pool's `query` calls `this.connect`
 * synchronously, and that checkout is its own, not the app's.
 */
let inPoolQuery = 0;

/** The query text alone: its `$1` values never join it (they become a digest, see valuesOf). */
function textOf(args: unknown[]): string {
  const first = args[0];
  if (typeof first === 'string') return first;
  if (first !== null && typeof first === 'object') {
    const { text } = first as { text?: unknown };
    if (typeof text === 'string') return text;
  }
  return '[query]';
}

/** The values sent apart from the text: `query(text, values)` or `query({ text, values })`. */
function valuesOf(args: unknown[]): unknown {
  const first = args[0];
  if (first !== null && typeof first === 'object') {
    const { values } = first as { values?: unknown };
    if (Array.isArray(values)) return values;
  }
  return args[1];
}

/**
 * Time every `query` of one `pg` Pool or Client as a custom timing in category `sql` (node-postgres
 * has no diagnostics channels yet: brianc/node-postgres#3650). Only that object's own methods are
 * replaced, once; outside a profile the wrapper is one `currentScope()` and a call through.
 *
 * For a Pool, the clients its `connect()` hands out inside a profile are timed too, from the
 * checkout to their `release()` (or the `done` a callback got): a transaction (`begin`, queries,
 * `commit`) shows up query by query. Each such client's own `query` and `release` are wrapped, as
 * the pool's are; a client the pool lends to its own `pool.query` is not timed a second time.
 *
 * Behaviour is unchanged in every calling form: a callback (last argument, or `config.callback`)
 * is called with the same arguments after the timing ends; a returned promise becomes a native
 * promise that settles the same way (an unhandled rejection stays visible); a submittable
 * (`pg-cursor`, `pg-query-stream`) is returned as is, and timed until the client tells it the
 * query is over (`handleReadyForQuery` or `handleError`).
 *
 * Wrap the pool *or* a client you make yourself, not a client the instrumented pool handed out,
 * or its queries are counted twice. Tested with pg 8.23 (pg-pool 3.14) against PostgreSQL 15.
 *
 * @example
 * import pg from 'pg';
 * import { instrumentPg } from 'miniprof';
 * const pool = instrumentPg(new pg.Pool());
 * const client = await pool.connect(); // its queries are timed until client.release()
 */
export function instrumentPg<T extends PgQueryable>(target: T): T {
  const t = target as T & { [WRAPPED]?: true; connect?: unknown };
  if (t[WRAPPED] === true) return target;
  // A Pool has the documented `idleCount`; a Client's `connect` opens its own connection instead.
  const pool = typeof t.connect === 'function' && 'idleCount' in t;
  wrapQuery(t, pool, false);
  if (pool) wrapConnect(t as unknown as { connect: (...a: unknown[]) => unknown });
  return target;
}

function wrapQuery(t: PgQueryable & { [WRAPPED]?: true }, pool: boolean, onlyHeld: boolean): void {
  const query = t.query;
  Object.defineProperty(t, WRAPPED, { value: true });
  t.query = function miniprofQuery(this: unknown, ...args: unknown[]) {
    const scope = currentScope();
    if (scope === undefined || scope.profile === null) return query.apply(this, args);
    if (onlyHeld && (t as PooledClient)[HELD] !== true) return query.apply(this, args);
    const call = openCall('pg', 'sql', textOf, args, undefined, 'postgres', valuesOf);
    if (!pool) return call === undefined ? query.apply(this, args) : timed(call, query, this, args);
    inPoolQuery++;
    try {
      return call === undefined ? query.apply(this, args) : timed(call, query, this, args);
    } finally {
      inPoolQuery--;
    }
  };
}

/** The pool's `connect`: a client checked out inside a profile is timed until it is released. */
function wrapConnect(p: { connect: (...a: unknown[]) => unknown }): void {
  const connect = p.connect;
  p.connect = function miniprofConnect(this: unknown, ...args: unknown[]) {
    const scope = currentScope();
    if (inPoolQuery > 0 || scope === undefined || scope.profile === null) return connect.apply(this, args);
    const cb = args[0];
    if (typeof cb === 'function') {
      // The third argument is the release the pool made for this checkout: ours in its place.
      args[0] = function (this: unknown, err: unknown, client: unknown, done: unknown, ...rest: unknown[]) {
        const release = client !== null && typeof client === 'object' ? hold(client as PooledClient) : done;
        return (cb as (...a: unknown[]) => unknown).call(this, err, client, release, ...rest);
      };
      return connect.apply(this, args);
    }
    const r = connect.apply(this, args) as { then?: unknown } | undefined;
    if (r === null || typeof r !== 'object' || typeof r.then !== 'function') return r;
    return (r as Promise<unknown>).then((client) => {
      if (client !== null && typeof client === 'object') hold(client as PooledClient);
      return client;
    });
  };
}

/** Mark a checked-out client as the app's until its release; its `query` is wrapped once. */
function hold(client: PooledClient): PooledClient['release'] {
  if ((client as { [WRAPPED]?: true })[WRAPPED] !== true) wrapQuery(client, false, true);
  client[HELD] = true;
  const release = client.release;
  if (typeof release !== 'function') return release;
  // pg-pool sets a new `release` at every checkout, so this one lasts one checkout too.
  const mine = function (this: unknown, ...a: unknown[]): unknown {
    client[HELD] = false;
    return release.apply(this, a);
  };
  client.release = mine;
  return mine;
}

function timed(call: OpenCall, query: (...a: unknown[]) => unknown, self: unknown, args: unknown[]): unknown {
  const first = args[0] as { submit?: unknown; callback?: unknown } | null;
  if (first !== null && typeof first === 'object' && typeof first.submit === 'function') {
    watchSubmittable(call, first as Record<string, unknown>);
  } else {
    const last = args.length - 1;
    if (typeof args[last] === 'function') {
      const cb = args[last] as (...a: unknown[]) => unknown;
      args[last] = function (this: unknown, err: unknown, ...rest: unknown[]) {
        closeCall(call, err !== null && err !== undefined);
        return cb.call(this, err, ...rest);
      };
    } else if (first !== null && typeof first === 'object' && typeof first.callback === 'function') {
      const cb = first.callback as (...a: unknown[]) => unknown;
      // The app's config object is its own (it may send it again): pg is given one that reads
      // everything from it but the callback.
      const config = Object.create(first) as { callback?: unknown };
      config.callback = function (this: unknown, err: unknown, ...rest: unknown[]) {
        closeCall(call, err !== null && err !== undefined);
        return cb.call(this, err, ...rest);
      };
      args[0] = config;
    }
  }
  let r: unknown;
  try {
    r = query.apply(self, args);
  } catch (err) {
    closeCall(call, true);
    throw err;
  }
  if (r instanceof Promise) {
    return r.then(
      (v) => {
        closeCall(call, false);
        return v;
      },
      (err) => {
        closeCall(call, true);
        throw err;
      },
    );
  }
  return r;
}

/** The client calls these on the submittable when the query is over, successful or not. */
function watchSubmittable(call: OpenCall, s: Record<string, unknown>): void {
  for (const [method, failed] of [
    ['handleReadyForQuery', false],
    ['handleError', true],
  ] as const) {
    const orig = s[method];
    if (typeof orig !== 'function') continue;
    s[method] = function (this: unknown, ...a: unknown[]) {
      closeCall(call, failed);
      return (orig as (...x: unknown[]) => unknown).apply(this, a);
    };
  }
}
