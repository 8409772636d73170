import { currentScope } from '../core/context.js';
import { closeCall, openCall, withParams, type OpenCall } from './record.js';

/** The part of a `pg` Pool or Client that is wrapped. */
export interface PgQueryable {
  query: (...args: any[]) => any;
}

const WRAPPED = Symbol('miniprof.pg');

/** The query text, with its `$1` values appended as literals (see withParams). */
function textOf(args: unknown[]): string {
  const first = args[0];
  if (typeof first === 'string') return withParams(first, args[1]);
  if (first !== null && typeof first === 'object') {
    const { text, values } = first as { text?: unknown; values?: unknown };
    if (typeof text === 'string') return withParams(text, Array.isArray(values) ? values : args[1]);
  }
  return '[query]';
}

/**
 * Time every `query` of one `pg` Pool or Client as a custom timing in category `sql` (node-postgres
 * has no diagnostics channels yet: brianc/node-postgres#3650). Only that object's own `query` is
 * replaced, once; outside a profile the wrapper is one `currentScope()` and a call through.
 *
 * Behaviour is unchanged in every calling form: a callback (last argument, or `config.callback`)
 * is called with the same arguments after the timing ends; a returned promise becomes a native
 * promise that settles the same way (an unhandled rejection stays visible); a submittable
 * (`pg-cursor`, `pg-query-stream`) is returned as is, and timed until the client tells it the
 * query is over (`handleReadyForQuery` or `handleError`).
 *
 * Wrap the pool *or* the clients it hands out, not both, or a query is counted twice. Tested
 * with pg 8.23 against PostgreSQL 15.
 *
 * @example
 * import pg from 'pg';
 * import { instrumentPg } from 'miniprof';
 * const pool = instrumentPg(new pg.Pool());
 */
export function instrumentPg<T extends PgQueryable>(target: T): T {
  const t = target as T & { [WRAPPED]?: true };
  if (t[WRAPPED] === true) return target;
  const query = target.query;
  Object.defineProperty(t, WRAPPED, { value: true });
  t.query = function miniprofQuery(this: unknown, ...args: unknown[]) {
    const scope = currentScope();
    if (scope === undefined || scope.profile === null) return query.apply(this, args);
    const call = openCall('pg', 'sql', textOf, args);
    if (call === undefined) return query.apply(this, args);
    return timed(call, query, this, args);
  };
  return target;
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
      first.callback = function (this: unknown, err: unknown, ...rest: unknown[]) {
        closeCall(call, err !== null && err !== undefined);
        return cb.call(this, err, ...rest);
      };
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
