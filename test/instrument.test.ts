import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import dc from 'node:diagnostics_channel';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import mysql from 'mysql2';
import express from 'express';
import Fastify from 'fastify';
import { miniprof as expressMiniprof } from '../adapters/express.js';
import { miniprof as fastifyMiniprof } from '../adapters/fastify.js';
import { instrument, renderText, step, withProfile } from '../src/index.js';
import { deferred, fakeClock, fixed, type FakeClock } from './helpers/clock.js';
import { startMysqlServer } from './helpers/mysql-server.js';
import { freePort, startRedis, type RedisServer } from './helpers/redis-server.js';
import { customs } from './helpers/tree.js';

// Counts every command text built by an instrumentation: the proof that, outside a profile, the
// subscribers stop at the getStore() branch and build (allocate) nothing.
const built = vi.hoisted(() => ({ n: 0 }));
vi.mock('../src/names.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/core/names.js')>();
  return {
    ...real,
    toText: (v: unknown, max: number) => {
      built.n++;
      return real.toText(v, max);
    },
  };
});

let redis: RedisServer;
let web: Server;
let base: string;
/** Moved by the HTTP server before it answers, so durations are exact over real sockets. */
let clock: FakeClock;

beforeAll(async () => {
  instrument();
  redis = await startRedis();
  web = http.createServer((req, res) => {
    clock.t += 7;
    res.writeHead(req.url!.startsWith('/missing') ? 404 : 200, { 'content-type': 'text/plain' });
    res.end('ok');
  });
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await redis?.kill();
  await new Promise((r) => web?.close(r));
});

function httpGet(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      })
      .on('error', reject);
  });
}

describe('HTTP: fetch (undici) and the http client, against a real server', () => {
  test('fetch: one custom timing per call, on the current step, to the response headers; query values masked', async () => {
    clock = fakeClock();
    const { profile } = await withProfile(
      'job',
      async () => {
        await step('load avatar', async () => {
          const res = await fetch(`${base}/users/42/avatar?size=64&token=s3cret`);
          await res.text();
        });
        const res = await fetch(`${base}/missing`, { method: 'POST', body: 'x' });
        await res.text();
      },
      fixed(clock),
    );
    expect(renderText(profile)).toBe(
      [
        'web-1 at 2026-11-29T12:00:00.000Z',
        // The POST ran in no step (it is listed under the root, where it ran).
        ' job = 14.0ms (7.0ms in no step)',
        `> [http] POST ${base}/missing = 7.0ms`,
        '> load avatar = 7.0ms',
        `>> [http] GET ${base}/users/?/avatar?size=?&token=? = 7.0ms`,
        '[http] 2 x 14.0ms summed, 14.0ms wall',
        '',
      ].join('\n'),
    );
  });

  test('node:http client: the same shape, and a failed connection is an error', async () => {
    clock = fakeClock();
    const closed = `http://127.0.0.1:${await freePort()}`;
    const { profile } = await withProfile(
      'job',
      async () => {
        expect(await httpGet(`${base}/a?b=c`)).toBe(200);
        // As through a forward proxy: the request target is an absolute URL.
        await new Promise<void>((resolve, reject) =>
          http
            .get({ host: '127.0.0.1', port: new URL(base).port, path: 'http://example.test/p?q=1' }, (res) => res.resume().on('end', resolve))
            .on('error', reject),
        );
        // The app's own error handling sees exactly what it would without miniprof.
        await expect(httpGet(`${closed}/x`)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
        await expect(fetch(`${closed}/y`)).rejects.toThrow(TypeError);
      },
      fixed(clock),
    );
    expect(customs(profile).map(({ category, command, durationMs, error }) => ({ category, command, durationMs, error }))).toEqual([
      { category: 'http', command: `GET ${base}/a?b=?`, durationMs: 7, error: undefined },
      { category: 'http', command: 'GET http://example.test/p?q=?', durationMs: 7, error: undefined },
      { category: 'http', command: `GET ${closed}/x`, durationMs: 0, error: true },
      { category: 'http', command: `GET ${closed}/y`, durationMs: 0, error: true },
    ]);
  });
});

describe('Redis: ioredis and node-redis against a real redis-server', () => {
  test('ioredis: command name and key, on the current step; a failed command is an error', async () => {
    const client = new Redis({ host: '127.0.0.1', port: redis.port, lazyConnect: true });
    await client.connect();
    try {
      const { profile } = await withProfile(
        'job',
        async () => {
          await step('cache', async () => {
            await client.set('session:abc', 'secret-value');
            expect(await client.get('session:abc')).toBe('secret-value');
          });
          await expect(client.incr('session:abc')).rejects.toThrow();
        },
        fixed(fakeClock()),
      );
      const text = renderText(profile);
      expect(text).toContain('> cache = 0.0ms\n>> [redis] SET session:abc = 0.0ms\n>> [redis] GET session:abc = 0.0ms\n');
      expect(text).toContain('> [redis] INCR session:abc = 0.0ms (error)\n');
      expect(text).not.toContain('secret-value');
    } finally {
      client.disconnect();
    }
  });

  test('node-redis: command name and key; the timing ends when the reply arrives, not when the call returns', async () => {
    const client = createClient({ url: redis.url });
    await client.connect();
    try {
      const { profile } = await withProfile('job', async () => {
        await client.set('page:home', 'x');
        // Blocks on the server for 100 ms (no list there), then answers null.
        expect(await client.blPop('queue:none', 0.1)).toBeNull();
      });
      const [set, blpop] = customs(profile);
      expect([set!.category, set!.command, blpop!.category, blpop!.command]).toEqual(['redis', 'SET page:home', 'redis', 'BLPOP queue:none']);
      expect(blpop!.durationMs).toBeGreaterThanOrEqual(90);
    } finally {
      await client.quit();
    }
  });

  test('pipelines and MULTI: ioredis times each command, node-redis a MULTI as one call', async () => {
    const io = new Redis({ host: '127.0.0.1', port: redis.port, lazyConnect: true });
    await io.connect();
    const nr = createClient({ url: redis.url });
    await nr.connect();
    try {
      const { profile } = await withProfile('job', async () => {
        await io.pipeline().get('p:a').get('p:b').exec();
        await io.multi().get('m:a').exec();
        await nr.multi().get('n:a').get('n:b').exec();
        await Promise.all([nr.get('x:a'), nr.get('x:b')]);
      });
      expect(customs(profile).map((c) => c.command)).toEqual([
        'GET p:a',
        'GET p:b',
        'MULTI',
        'GET m:a',
        'EXEC',
        'MULTI (2 commands)',
        'GET x:a',
        'GET x:b',
      ]);
    } finally {
      io.disconnect();
      await nr.quit();
    }
  });

  test('ioredis: the timing ends at the reply too (asyncEnd, not end)', async () => {
    const client = new Redis({ host: '127.0.0.1', port: redis.port, lazyConnect: true });
    // Connected first: ioredis traces a command when it is written, and one queued while
    // offline is written later from the connection's own context (documented as a caveat).
    await client.connect();
    try {
      const { profile } = await withProfile('job', () => client.blpop('queue:none', 0.1));
      expect(customs(profile).map((c) => c.command)).toEqual(['BLPOP queue:none']);
      expect(customs(profile)[0]!.durationMs).toBeGreaterThanOrEqual(90);
    } finally {
      client.disconnect();
    }
  });

  test('two interleaved requests on one connection each get only their own commands', async () => {
    const client = new Redis({ host: '127.0.0.1', port: redis.port });
    try {
      const go = deferred();
      const a = withProfile('a', async () => {
        await go.promise;
        await Promise.all([client.get('key:a1'), client.get('key:a2')]);
      });
      const b = withProfile('b', async () => {
        await go.promise;
        await client.get('key:b1');
      });
      // Outside both profiles: recorded nowhere.
      const before = built.n;
      await client.get('key:outside');
      expect(built.n).toBe(before);
      go.resolve();
      const [pa, pb] = await Promise.all([a, b]);
      expect(customs(pa.profile).map((c) => c.command)).toEqual(['GET key:a1', 'GET key:a2']);
      expect(customs(pb.profile).map((c) => c.command)).toEqual(['GET key:b1']);
    } finally {
      client.disconnect();
    }
  });
});

describe('mysql2 tracing channels, against mysql2’s own server protocol over a real socket', () => {
  test('query in callback and promise form: category sql, values masked, errors flagged', async () => {
    const server = await startMysqlServer((conn, sql) => {
      clock.t += 3;
      if (sql.startsWith('fail')) conn.writeError({ code: 1064, message: 'syntax' });
      else conn.writeOk();
    });
    const conn = mysql.createConnection({ host: '127.0.0.1', port: server.port, user: 'u' });
    try {
      clock = fakeClock();
      const { profile } = await withProfile(
        'job',
        async () => {
          await new Promise<void>((resolve, reject) =>
            conn.query('select * from users where email = ?', ['bob@example.com'], (err) => (err ? reject(err) : resolve())),
          );
          await conn.promise().query('update users set seen = 1 where id = 42');
          await expect(conn.promise().query('fail here')).rejects.toMatchObject({ message: 'syntax' });
          // This server answers no prepared statements: a real execute round trip that fails.
          await expect(conn.promise().execute('select * from users where id = ?', [42])).rejects.toThrow('prepared');
        },
        fixed(clock),
      );
      expect(customs(profile).map(({ category, command, durationMs, error }) => ({ category, command, durationMs, error }))).toEqual([
        { category: 'sql', command: 'select * from users where email = ?', durationMs: 3, error: undefined },
        { category: 'sql', command: 'update users set seen = ? where id = ?', durationMs: 3, error: undefined },
        { category: 'sql', command: 'fail here', durationMs: 3, error: true },
        { category: 'sql', command: 'select * from users where id = ?', durationMs: 0, error: true },
      ]);
      expect(JSON.stringify(profile.toJSON())).not.toContain('bob@example.com');
    } finally {
      conn.destroy();
      await server.close();
    }
  });
});

describe('faults', () => {
  test('C11: a subscriber fault (a query whose text cannot be printed, a clock that throws) reaches onInternalError, never the app', async () => {
    const faults: unknown[] = [];
    const hostile = {
      toString() {
        throw new Error('no text');
      },
    };
    let ticks = 0;
    const { result, profile } = await withProfile(
      'job',
      async () => {
        const ch = dc.tracingChannel('mysql2:query');
        const a = await ch.tracePromise(async () => 'rows', { query: hostile } as never);
        // The command is read, then the clock fails: the call still goes through.
        const b = await ch.tracePromise(async () => 'more', { query: 'select 1' } as never);
        return [a, b];
      },
      {
        onInternalError: (e) => faults.push(e),
        clock: () => {
          if (++ticks === 2) throw new Error('clock down');
          return 0;
        },
      },
    );
    expect(result).toEqual(['rows', 'more']);
    expect(faults.length).toBeGreaterThanOrEqual(1);
    expect(String(faults[0])).toContain('no text');
    expect(customs(profile).map((c) => c.command)).toEqual(['select ?']);
  });
});

describe('off path: no profile, no work', () => {
  test('calls outside any profile build nothing, and a profile open elsewhere does not see them', async () => {
    const client = new Redis({ host: '127.0.0.1', port: redis.port });
    const elsewhere = deferred();
    const other = withProfile('elsewhere', () => elsewhere.promise);
    try {
      const before = built.n;
      for (let i = 0; i < 10; i++) {
        await client.get('off:path');
        await (await fetch(`${base}/off`)).text();
        await httpGet(`${base}/off`);
      }
      expect(built.n).toBe(before);
    } finally {
      elsewhere.resolve();
      client.disconnect();
    }
    const { profile } = await other;
    expect(customs(profile)).toEqual([]);
  });

  test('instrument() is idempotent: one subscription, one timing per call', async () => {
    instrument();
    instrument();
    clock = fakeClock();
    const { profile } = await withProfile('job', () => fetch(`${base}/once`).then((r) => r.text()), fixed(clock));
    expect(customs(profile)).toHaveLength(1);
  });

  test('instrument: false is accepted, and a bad value is a coded error', async () => {
    await expect(withProfile('job', () => 0, { instrument: false })).resolves.toMatchObject({ result: 0 });
    await expect(withProfile('job', () => 0, { instrument: 1 as never })).rejects.toMatchObject({ code: 'MINIPROF_ERR_INVALID_OPTION' });
  });
});

describe('through the adapters: the outgoing calls of a developer request show in its outputs', () => {
  async function page(fetchPath: string, client: Redis): Promise<string> {
    const res = await fetch(`${base}${fetchPath}`);
    await res.text();
    await client.get('user:abc');
    return '<html><body>hi</body></html>';
  }

  /** On Fastify the calls are in the route handler's own step (autoSteps). */
  function expected(fastify = false): { comment: string; serverTiming: string } {
    const calls = [`> [http] GET ${base}/users/??token=? = 7.0ms`, '> [redis] GET user:abc = 0.0ms'];
    return {
      comment: [
        '<!--',
        'web-1 at 2026-11-29T12:00:00.000Z',
        'Path: GET /page',
        ...(fastify ? [' GET /page = 7.0ms', '> handler GET /page = 7.0ms', ...calls.map((c) => `>${c}`)] : [' GET /page = 7.0ms', ...calls]),
        '[http] 1 x 7.0ms summed, 7.0ms wall',
        '[redis] 1 x 0.0ms summed, 0.0ms wall',
        '-->',
      ].join('\n'),
      serverTiming: 'http;dur=7.0;desc="http (1 x 7.0ms summed)", redis;dur=0.0;desc="redis (1 x 0.0ms summed)", total;dur=7.0',
    };
  }

  test('Express: HTML comment and Server-Timing', async () => {
    const client = new Redis({ host: '127.0.0.1', port: redis.port, lazyConnect: true });
    await client.connect();
    clock = fakeClock();
    const app = express();
    app.use(expressMiniprof({ isDeveloper: () => true, badge: false, ...fixed(clock) }));
    app.get('/page', (_req, res, next) => {
      page('/users/42?token=s3cret', client).then((html) => res.type('html').send(html), next);
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/page`);
      const body = await res.text();
      expect(body).toBe(`<html><body>hi${expected().comment}</body></html>`);
      expect(res.headers.get('server-timing')).toBe(expected().serverTiming);
    } finally {
      client.disconnect();
      await new Promise((r) => server.close(r));
    }
  });

  test('Fastify: HTML comment and Server-Timing', async () => {
    const client = new Redis({ host: '127.0.0.1', port: redis.port, lazyConnect: true });
    await client.connect();
    clock = fakeClock();
    const app = Fastify();
    await app.register(fastifyMiniprof, { isDeveloper: () => true, badge: false, ...fixed(clock) });
    app.get('/page', async (_req, reply) => reply.type('text/html').send(await page('/users/42?token=s3cret', client)));
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const res = await fetch(`${url}/page`);
      expect(await res.text()).toBe(`<html><body>hi${expected(true).comment}</body></html>`);
      expect(res.headers.get('server-timing')).toBe(expected(true).serverTiming);
    } finally {
      client.disconnect();
      await app.close();
    }
  });
});
