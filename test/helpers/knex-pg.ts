import knexFactory, { type Knex } from 'knex';
import { instrumentPg } from '../../src/index.js';

/**
 * A knex instance on the throwaway PostgreSQL at `port`, every connection it makes instrumented
 * with miniprof's `instrumentPg` through knex's public `pool.afterCreate` hook: what an app does
 * today to see knex's queries in its profiles.
 */
export function knexOn(port: number, max = 8): Knex {
  return knexFactory({
    client: 'pg',
    connection: { host: '127.0.0.1', port, user: 'postgres', database: 'postgres' },
    pool: {
      min: 0,
      max,
      afterCreate(conn: { query: (...args: unknown[]) => unknown }, done: (err: Error | null, conn: unknown) => void) {
        instrumentPg(conn);
        done(null, conn);
      },
    },
  });
}
