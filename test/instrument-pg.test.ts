import { describe, expect, test } from 'vitest';
import type pg from 'pg';
import { instrumentPg, withProfile, type Profile } from '../src/index.js';
import { fakeClock, fixed, type FakeClock } from './helpers/clock.js';

/**
 * A stand-in for a `pg` Client with the same calling forms as pg 8 (no PostgreSQL server runs in
 * CI): `query(text | config, values?, callback?)`, a promise when there is no callback, and a
 * submittable (anything with `submit`) handed back as is and driven through
 * `handleReadyForQuery` / `handleError`, as pg's Client does. Each query moves the clock 4 ms.
 */
class FakeClient {
  calls: { self: unknown; args: unknown[] }[] = [];
  constructor(private readonly clock: FakeClock) {}

  query(...args: unknown[]): unknown {
    this.calls.push({ self: this, args });
    const first = args[0] as { text?: string; submit?: (c: unknown) => void; callback?: (...a: unknown[]) => void } | string;
    const text = typeof first === 'string' ? first : first.text ?? '';
    const fail = text.startsWith('fail');
    const result = { rows: [{ id: 1 }], command: 'SELECT' };
    const err = new Error('relation does not exist');
    if (typeof first === 'object' && typeof first.submit === 'function') {
      const s = first as unknown as { submit(c: unknown): void; handleReadyForQuery(): void; handleError(e: Error): void };
      s.submit(this);
      setImmediate(() => {
        this.clock.t += 4;
        if (fail) s.handleError(err);
        s.handleReadyForQuery();
      });
      return s;
    }
    const cb = typeof args[args.length - 1] === 'function' ? (args[args.length - 1] as (...a: unknown[]) => void) : typeof first === 'object' ? first.callback : undefined;
    if (cb !== undefined) {
      setImmediate(() => {
        this.clock.t += 4;
        if (fail) cb(err);
        else cb(null, result);
      });
      return undefined;
    }
    return new Promise((resolve, reject) =>
      setImmediate(() => {
        this.clock.t += 4;
        if (fail) reject(err);
        else resolve(result);
      }),
    );
  }
}

function sql(profile: Profile): [string, number, boolean][] {
  return profile.toJSON().root.custom!.map((c) => [c.command, c.durationMs, c.error === true]);
}

describe('instrumentPg: node-postgres has no channels, so one object is wrapped', () => {
  test('promise form: same value, same error object, timed to settlement, values masked', async () => {
    const c = fakeClock();
    const client = instrumentPg(new FakeClient(c));
    const { profile } = await withProfile(
      'job',
      async () => {
        expect(await client.query('select * from users where id = $1', [42])).toEqual({ rows: [{ id: 1 }], command: 'SELECT' });
        const err = await (client.query("fail where name = 'bob'") as Promise<unknown>).catch((e: unknown) => e);
        expect(err).toMatchObject({ message: 'relation does not exist' });
      },
      fixed(c),
    );
    expect(sql(profile)).toEqual([
      ['select * from users where id = $1', 4, false],
      ['fail where name = ?', 4, true],
    ]);
  });

  test('callback forms (last argument and config.callback): called once with the same arguments, after the timing ends', async () => {
    const c = fakeClock();
    const client = instrumentPg(new FakeClient(c));
    const seen: unknown[] = [];
    const { profile } = await withProfile(
      'job',
      () =>
        new Promise<void>((done) => {
          const r = client.query('select 1', [], (err: unknown, res: unknown) => {
            seen.push([err, res, c.t]);
            client.query({
              text: 'fail now',
              callback: (err2: unknown) => {
                seen.push([(err2 as Error).message, c.t]);
                done();
              },
            });
          });
          expect(r).toBeUndefined();
        }),
      fixed(c),
    );
    expect(seen).toEqual([
      [null, { rows: [{ id: 1 }], command: 'SELECT' }, 4],
      ['relation does not exist', 8],
    ]);
    expect(sql(profile)).toEqual([
      ['select ?', 4, false],
      ['fail now', 4, true],
    ]);
  });

  test('a submittable is handed back as is and timed until the client says the query is over', async () => {
    const c = fakeClock();
    const client = instrumentPg(new FakeClient(c));
    const ready: string[] = [];
    const make = (text: string) => ({
      text,
      submit() {},
      handleReadyForQuery() {
        ready.push(text);
      },
      handleError() {},
    });
    const { profile } = await withProfile(
      'job',
      async () => {
        const cursor = make('select * from big');
        expect(client.query(cursor)).toBe(cursor);
        const bad = make('fail cursor');
        client.query(bad);
        await new Promise((r) => setTimeout(r, 20));
      },
      fixed(c),
    );
    expect(ready).toEqual(['select * from big', 'fail cursor']);
    expect(sql(profile)).toEqual([
      ['select * from big', 4, false],
      ['fail cursor', 8, true],
    ]);
  });

  test('item 2: values sent apart from the text count for duplicates (a digest), and are never part of the command, even with redact: false', async () => {
    const run = async (redact: boolean) => {
      const c = fakeClock();
      const client = instrumentPg(new FakeClient(c));
      const { profile } = await withProfile(
        'job',
        async () => {
          for (const id of [7, 8, 7]) await client.query('select * from users where id = $1', [id]);
          await client.query({ text: 'select * from t where a = $1 and b = $2', values: ["it's \\' secret", null] });
        },
        fixed(c, { redact }),
      );
      return profile.toJSON();
    };
    const masked = await run(true);
    expect(masked.root.custom!.map((c) => [c.command, c.duplicate, c.similar])).toEqual([
      ['select * from users where id = $1', true, 1],
      ['select * from users where id = $1', undefined, 1],
      ['select * from users where id = $1', true, 1],
      ['select * from t where a = $1 and b = $2', undefined, undefined],
    ]);
    expect(JSON.stringify(masked)).not.toContain('secret');
    const shown = await run(false);
    expect(shown.root.custom!.map((c) => [c.command, c.duplicate])).toEqual([
      ['select * from users where id = $1', true],
      ['select * from users where id = $1', undefined],
      ['select * from users where id = $1', true],
      ['select * from t where a = $1 and b = $2', undefined],
    ]);
    expect(JSON.stringify(shown)).not.toContain('secret');
  });

  test('off path: outside a profile the original query gets the very same this, arguments and result', async () => {
    const c = fakeClock();
    const raw = new FakeClient(c);
    const client = instrumentPg(raw);
    const cb = () => {};
    const r = client.query('select 1', [1], cb);
    expect(r).toBeUndefined();
    expect(raw.calls[0]!.self).toBe(raw);
    expect(raw.calls[0]!.args[2]).toBe(cb);
    const p = client.query('select 2');
    expect(p).toBeInstanceOf(Promise);
    await p;
    expect(c.calls).toBe(0);
  });

  test('wrapping twice is a no-op, and the types fit a real pg Pool', () => {
    const c = fakeClock();
    const raw = new FakeClient(c);
    const once = instrumentPg(raw);
    const q = once.query;
    expect(instrumentPg(once).query).toBe(q);
    // Compile-time only: a pg.Pool is accepted and returned as a pg.Pool.
    const typed = (pool: pg.Pool): pg.Pool => instrumentPg(pool);
    expect(typeof typed).toBe('function');
  });
});
