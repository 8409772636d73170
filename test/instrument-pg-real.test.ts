import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import pg from 'pg';
import { instrumentPg, renderText, withProfile, type Profile } from '../src/index.js';
import { startPostgres, type PostgresServer } from './helpers/postgres.js';

let server: PostgresServer;
let pool: pg.Pool;

beforeAll(async () => {
  server = await startPostgres();
  pool = instrumentPg(new pg.Pool({ host: '127.0.0.1', port: server.port, user: 'postgres', database: 'postgres', max: 2 }));
  // An idle client told by the server that it is shutting down (teardown) is not a test failure.
  pool.on('error', () => {});
});

afterAll(async () => {
  await pool?.end();
  await server?.stop();
});

function sql(profile: Profile): { command: string; durationMs: number; error?: true; duplicate?: true; similar?: number }[] {
  return profile.toJSON().root.custom!.map(({ command, durationMs, error, duplicate, similar }) => ({ command, durationMs, error, duplicate, similar }));
}

describe('instrumentPg against a real PostgreSQL (Debian package) with pg 8', () => {
  test('Pool.query: promise, callback and error forms behave as without the wrapper, and are timed to the reply', async () => {
    const { profile } = await withProfile('job', async () => {
      const r = await pool.query<{ id: number }>('select $1::int as id', [42]);
      expect(r.rows).toEqual([{ id: 42 }]);
      const rows = await new Promise<unknown[]>((resolve, reject) =>
        pool.query('select pg_sleep(0.1)', (err, res) => (err ? reject(err) : resolve(res.rows))),
      );
      expect(rows).toHaveLength(1);
      await expect(pool.query('select * from no_such_table')).rejects.toMatchObject({ code: '42P01' });
    });
    const [first, sleep, failed] = sql(profile);
    expect(first!.command).toBe('select $1::int as id');
    expect(sleep!.command).toBe('select pg_sleep(?)');
    // Ends when the server answered (100 ms of sleep), not when query() returned.
    expect(sleep!.durationMs).toBeGreaterThanOrEqual(90);
    expect([failed!.command, failed!.error]).toEqual(['select * from no_such_table', true]);
    // The parameter is nowhere in the text. Times are real and may contain "42" themselves
    // (142.7ms, 00:42), so they are taken out before looking.
    const text = renderText(profile).split('\n').slice(1).join('\n').replace(/[\d.]+ms/g, 'Tms');
    expect(text).toContain('[sql] select $1::int as id = Tms');
    expect(text).not.toContain('42');
  });

  test('a query config with its own callback, used again: the app\'s object keeps its callback, each call is timed once', async () => {
    const seen: unknown[] = [];
    const cb = (err: Error | null, res: pg.QueryResult) => seen.push(err ?? res.rows[0]);
    const config = { text: 'select 7 as n', callback: cb } as unknown as pg.QueryConfig;
    const { profile } = await withProfile('job', async () => {
      // A Client calls `config.callback` (pg-pool's own `query` passes a callback of its own).
      const client = await pool.connect();
      try {
        for (let i = 0; i < 2; i++) {
          await new Promise<void>((resolve) => {
            client.query(config);
            const wait = () => (seen.length > i ? resolve() : setTimeout(wait, 5));
            wait();
          });
        }
      } finally {
        client.release();
      }
    });
    expect(seen).toEqual([{ n: 7 }, { n: 7 }]);
    expect((config as { callback?: unknown }).callback).toBe(cb);
    expect(sql(profile).map((c) => c.command)).toEqual(['select ? as n', 'select ? as n']);
    expect(sql(profile).every((c) => c.durationMs >= 0 && c.error === undefined)).toBe(true);
  });

  test('N+1 over $1 parameters: similar always, duplicate only when the values repeat', async () => {
    const { profile } = await withProfile('job', async () => {
      for (const id of [1, 2, 1]) await pool.query('select $1::int + 1 as next', [id]);
    });
    expect(sql(profile).map((c) => [c.duplicate, c.similar])).toEqual([
      [true, 1],
      [undefined, 1],
      [true, 1],
    ]);
  });

  test('a Client with a submittable (pg.Query): the same object comes back, its events still fire, and it is timed', async () => {
    const client = instrumentPg(new pg.Client({ host: '127.0.0.1', port: server.port, user: 'postgres', database: 'postgres' }));
    await client.connect();
    try {
      const { profile } = await withProfile('job', async () => {
        const q = new pg.Query('select generate_series(1, 3) as n');
        const rows: unknown[] = [];
        q.on('row', (row: unknown) => rows.push(row));
        const ended = new Promise((resolve) => q.once('end', resolve));
        expect(client.query(q)).toBe(q);
        await ended;
        expect(rows).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
      });
      expect(sql(profile).map((c) => [c.command, c.error])).toEqual([['select generate_series(?, ?) as n', undefined]]);
    } finally {
      await client.end();
    }
  });

  test('a transaction on a client from pool.connect(): begin, queries and commit are timed until release, and the pool lending that client to pool.query later times it once', async () => {
    const { profile } = await withProfile('job', async () => {
      const client = await pool.connect();
      try {
        await client.query('begin');
        await client.query('create temp table t (id int) on commit drop');
        await client.query('insert into t values ($1), ($2)', [1, 2]);
        const r = await client.query<{ n: string }>('select count(*) as n from t');
        expect(r.rows).toEqual([{ n: '2' }]);
        await client.query('commit');
      } finally {
        client.release();
      }
      // Both clients of the pool (max 2) have now been handed out once at most; these reuse them.
      await Promise.all([pool.query('select 1 as a'), pool.query('select 2 as b')]);
    });
    expect(sql(profile).map((c) => c.command)).toEqual([
      'begin',
      'create temp table t (id int) on commit drop',
      'insert into t values ($1), ($2)',
      'select count(*) as n from t',
      'commit',
      'select ? as a',
      'select ? as b',
    ]);
  });

  test('the callback form of pool.connect: queries timed until done(); a client checked out outside a profile is not', async () => {
    const { profile } = await withProfile('job', async () => {
      await new Promise<void>((resolve, reject) =>
        pool.connect((err, client, done) => {
          if (err || !client) return reject(err);
          client.query('select 42 as answer', (qerr) => {
            done();
            if (qerr) reject(qerr);
            else resolve();
          });
        }),
      );
      await pool.query('select 3 as c');
    });
    expect(sql(profile).map((c) => c.command)).toEqual(['select ? as answer', 'select ? as c']);
    const outside = await pool.connect();
    try {
      const { profile: p2 } = await withProfile('job', () => outside.query('select 4 as d'));
      expect(p2.toJSON().root.custom).toBeUndefined();
    } finally {
      outside.release();
    }
  });

  test('serialized fan-out: 3 queries on one Client inside Promise.all ran one at a time', async () => {
    const { profile } = await withProfile('job', async () => {
      // Checked out inside the profile: its queries are timed until release.
      const client = await pool.connect();
      try {
        await Promise.all([1, 2, 3].map((i) => client.query('select pg_sleep(0.03), $1::int as i', [i])));
      } finally {
        client.release();
      }
    });
    const root = profile.toJSON().root;
    // pg's Client sends the next query once the last one is answered.
    expect(root.concurrency).toBeLessThan(1.6);
    expect(root.serialized).toBe(true);
    // Named as in `similar`, which writes the group as its rows are written (issue 59 item 10).
    expect(root.fanOut).toEqual({ name: 'select pg_sleep(?), $1::int as i', count: 3, category: 'sql', similar: 1 });
    expect(profile.toJSON().similar![0]!.command).toBe(root.fanOut!.name);
    // The same three queries are the step's N+1: one mark says both.
    expect(renderText(profile).split('\n')[1]).toMatch(
      /^ job = [\d.]+ms \(N\+1: 3 × select pg_sleep\(\?\), \$1::int as i, one at a time\)$/,
    );
  });

  test('pool.query through a pool of 2: about 2 at once', async () => {
    // Both connections open before the profile, so none of the calls includes a connect.
    const a = await pool.connect();
    const b = await pool.connect();
    a.release();
    b.release();
    const five = () => Promise.all([1, 2, 3, 4, 5].map((i) => pool.query('select pg_sleep(0.05), $1::int as i', [i])));
    // Once unprofiled: the first pg_sleep on a fresh connection can be slow on a busy machine.
    await five();
    const { profile } = await withProfile('job', five);
    const root = profile.toJSON().root;
    // Each call's timing includes its wait for one of the two clients.
    expect(root.concurrency).toBeGreaterThanOrEqual(1.6);
    expect(root.concurrency).toBeLessThanOrEqual(2.4);
    expect(root.serialized).toBeUndefined();
  });
});
