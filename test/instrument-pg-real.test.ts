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
    expect(first!.command).toBe('select $1::int as id /* params: ? */');
    expect(sleep!.command).toBe('select pg_sleep(?)');
    // Ends when the server answered (100 ms of sleep), not when query() returned.
    expect(sleep!.durationMs).toBeGreaterThanOrEqual(90);
    expect([failed!.command, failed!.error]).toEqual(['select * from no_such_table', true]);
    // The parameter is nowhere in the text. Times are real and may contain "42" themselves
    // (142.7ms, 00:42), so they are taken out before looking.
    const text = renderText(profile).split('\n').slice(1).join('\n').replace(/[\d.]+ms/g, 'Tms');
    expect(text).toContain('[sql] select $1::int as id /* params: ? */ = Tms');
    expect(text).not.toContain('42');
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
});
