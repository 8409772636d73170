/**
 * A store that times out is skipped for a while (src/results/timeout.ts `breaker`): the breaker's
 * states with a moved clock, then a real redis-server stopped (SIGSTOP: it hangs) and killed (the
 * connection is refused) under an opted-in developer's requests, and started again.
 */
import http from 'node:http';
import express from 'express';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { afterEach, describe, expect, test } from 'vitest';
import { miniprof as expressMiniprof } from '../adapters/express.js';
import { redisStore, type RedisClientLike } from '../src/index.js';
import { breaker, TimeoutError } from '../src/results/timeout.js';
import { report } from '../src/core/errors.js';
import { closeServers, raw, serve, waitFor, type RawResponse } from './helpers/http.js';
import { startRedis, type RedisServer } from './helpers/redis-server.js';

const never = () => new Promise<never>(() => {});

describe('breaker', () => {
  test('a timeout opens it: calls are skipped (quiet) until retryAfterMs, then one try; an answer closes it', async () => {
    let t = 0;
    const run = breaker(20, 1000, false, () => t);
    const reported: unknown[] = [];
    const onError = (e: unknown) => reported.push(e);
    const first = await run(never, 'store: GET').catch((e: unknown) => e);
    expect(first).toBeInstanceOf(TimeoutError);
    report(onError, first);
    expect(reported.map(String)).toEqual(['Error: store: GET took longer than 20 ms; the store is skipped for 1000 ms, then tried again (reported once until it answers)']);
    // Open: the call is never made, and its rejection is not reported again.
    let calls = 0;
    const counted = () => (calls++, Promise.resolve('v'));
    t = 999;
    const skipped = await run(counted, 'store: GET').catch((e: unknown) => e);
    report(onError, skipped);
    expect([calls, reported.length, String(skipped)]).toEqual([0, 1, 'Error: store: GET: skipped, the store failed (tried again 1000 ms after)']);
    // Due: one try; while it runs, the others are still skipped.
    t = 1000;
    let answer!: (v: string) => void;
    const trying = run(() => new Promise<string>((r) => (answer = r)), 'store: GET');
    const meanwhile = await run(counted, 'store: GET').catch((e: unknown) => e);
    expect([calls, String(meanwhile)]).toEqual([0, 'Error: store: GET: skipped, the store failed (tried again 1000 ms after)']);
    answer('back');
    expect(await trying).toBe('back');
    expect(await run(counted, 'store: GET')).toBe('v');
    expect(calls).toBe(1);
  });

  test('a try that times out again opens it again, quietly; an error answer closes it; the next outage is reported again', async () => {
    let t = 0;
    const run = breaker(10, 100, false, () => t);
    const reported: unknown[] = [];
    const onError = (e: unknown) => reported.push(e);
    report(onError, await run(never, 'x').catch((e: unknown) => e));
    t = 100;
    const again = await run(never, 'x').catch((e: unknown) => e);
    expect(again).toBeInstanceOf(TimeoutError);
    report(onError, again);
    expect(reported).toHaveLength(1);
    t = 150;
    report(onError, await run(() => 'unused', 'x').catch((e: unknown) => e));
    expect(reported).toHaveLength(1);
    // The store answers with an error: it is there, and the error is the caller's as usual.
    t = 200;
    const refused = await run(() => Promise.reject(new Error('WRONGTYPE')), 'x').catch((e: unknown) => e);
    report(onError, refused);
    expect(reported.map(String)).toEqual([expect.stringContaining('took longer than 10 ms'), 'Error: WRONGTYPE']);
    expect(await run(() => 'ok', 'x')).toBe('ok');
    report(onError, await run(never, 'x').catch((e: unknown) => e));
    expect(reported).toHaveLength(3);
  });
});

test('breaker with anyError: a failure trips it like a timeout, wrapped with its cause; without, an error is an answer', async () => {
  let t = 0;
  const run = breaker(1000, 100, true, () => t);
  const refused = new Error('connect ECONNREFUSED');
  const first = (await run(() => Promise.reject(refused), 'redis: GET').catch((e: unknown) => e)) as Error;
  expect([first.message, first.cause]).toEqual(['redis: GET failed: connect ECONNREFUSED; the store is skipped for 100 ms, then tried again (reported once until it answers)', refused]);
  let calls = 0;
  await expect(run(() => (calls++, 'v'), 'redis: GET')).rejects.toThrow('skipped');
  t = 100;
  const again = await run(() => Promise.reject(refused), 'redis: GET').catch((e: unknown) => e);
  const reported: unknown[] = [];
  report((e) => reported.push(e), again);
  expect([calls, reported]).toEqual([0, []]);
  t = 200;
  expect(await run(() => 'back', 'redis: GET')).toBe('back');
});

test('setup: retryAfterMs that is not a whole number from 1 ms to an hour is a coded TypeError naming it', () => {
  const client = { sendCommand: async () => null };
  for (const bad of [0, 1.5, '10s', 3_600_001]) {
    expect(() => redisStore(client, { retryAfterMs: bad as never })).toThrow(expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_OPTION', message: expect.stringContaining('"retryAfterMs"') }));
  }
  expect(() => redisStore(client, { retryAfterMs: 1 })).not.toThrow();
});

describe('C11: Redis stopped, killed and started again under an opted-in developer', () => {
  let own: RedisServer | null = null;
  const clients: Array<{ destroy(): void }> = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) c.destroy();
    await closeServers();
    await own?.kill();
    own = null;
  });

  const SECRET = 'a test secret that is long enough: 0123456789';
  const TIMEOUT_MS = 3000;
  const RETRY_AFTER_MS = 1500;

  /** A connected client of either kind, as one function that sends a command, and whether it is connected. */
  async function connect(kind: 'node-redis' | 'ioredis', url: string): Promise<{ send(args: string[]): Promise<unknown>; ready(): boolean }> {
    if (kind === 'node-redis') {
      const c = createClient({ url, socket: { reconnectStrategy: 50 } });
      c.on('error', () => {});
      await c.connect();
      clients.push(c);
      return { send: (args) => c.sendCommand(args), ready: () => c.isReady };
    }
    const c = new Redis(url, { lazyConnect: true, retryStrategy: () => 50 });
    c.on('error', () => {});
    await c.connect();
    clients.push({ destroy: () => c.disconnect() });
    return { send: (args) => c.call(args[0]!, ...args.slice(1)), ready: () => c.status === 'ready' };
  }

  test.each(['node-redis', 'ioredis'] as const)('%s: one request waits for the outage (timeoutMs, or the client giving up) and it is reported once; the rest are answered without asking Redis; it recovers after', async (kind) => {
    own = await startRedis();
    const client = await connect(kind, own.url);
    // Counts the commands that reach the client (a skipped one never does), and those unanswered.
    let commands = 0;
    let pending = 0;
    const counted = {
      sendCommand(args: string[]) {
        commands++;
        pending++;
        const p = client.send(args);
        void p.finally(() => pending--).catch(() => {});
        return p;
      },
    } as RedisClientLike;
    const faults: unknown[] = [];
    const app = express();
    app.use(expressMiniprof({
      isDeveloper: (req: http.IncomingMessage) => req.headers['x-dev'] === '1',
      secret: SECRET,
      results: { store: redisStore(counted, { timeoutMs: TIMEOUT_MS, retryAfterMs: RETRY_AFTER_MS }) },
      onInternalError: (e) => faults.push(e),
    }));
    app.get('/page', (_req, res) => void res.type('html').send('<html><body>hi</body></html>'));
    const port = await serve(app as unknown as http.RequestListener);

    const optIn = async () => {
      const r = await raw(port, { method: 'POST', path: '/_miniprof/opt-in', headers: { Origin: `http://127.0.0.1:${port}`, 'x-dev': '1' }, body: '' });
      const c = r.headers['set-cookie']?.[0];
      expect(c, 'a Set-Cookie').toBeDefined();
      return c!.slice(0, c!.indexOf(';'));
    };
    /** A request with the cookie alone, timed. */
    const visit = async (cookie: string): Promise<{ r: RawResponse; ms: number }> => {
      const t0 = performance.now();
      const r = await raw(port, { path: '/page', headers: { cookie } }, 2 * TIMEOUT_MS + 5000);
      expect(r.status).toBe(200);
      return { r, ms: performance.now() - t0 };
    };
    const profiled = (v: { r: RawResponse }) => v.r.headers['x-miniprof-id'] !== undefined;

    let cookie = await optIn();
    expect(profiled(await visit(cookie))).toBe(true);

    // SIGSTOP: connected, never answering. The first request waits for the timeout, then goes on
    // as the app's (not a developer's: the opt-in cannot be checked); the next ones do not wait.
    for (const [outage, stop] of [
      ['stopped', () => own!.proc.kill('SIGSTOP')],
      ['killed', () => own!.kill()],
    ] as const) {
      // The last profile's save answered: a command cut off by the kill would be a fault of its own.
      await waitFor(() => pending === 0, 5000, 'every command answered');
      expect(faults).toHaveLength(outage === 'stopped' ? 0 : 1);
      await stop();
      const first = await visit(cookie);
      expect(profiled(first), outage).toBe(false);
      // A hang lasts until the timeout; a refusal until the client gives up (ioredis retries first).
      if (outage === 'stopped') expect(first.ms, outage).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
      await waitFor(() => faults.length === (outage === 'stopped' ? 1 : 2), 5000, 'the timeout reported');
      expect(String(faults[faults.length - 1])).toMatch(/EXISTS (?:took longer than 3000 ms|failed: .+); the store is skipped for 1500 ms/);
      const before = commands;
      for (let i = 0; i < 5; i++) {
        const v = await visit(cookie);
        expect(profiled(v), outage).toBe(false);
        // Not a timed test of speed: a request that asked Redis would have waited TIMEOUT_MS.
        expect(v.ms, outage).toBeLessThan(TIMEOUT_MS - 500);
      }
      expect(commands - before, `${outage}: no command reached Redis while skipped`).toBe(0);
      // Back: continued, or started again on the same port (empty: the opt-in is minted again).
      if (outage === 'stopped') own!.proc.kill('SIGCONT');
      else {
        own = await startRedis(own!.port);
        await waitFor(() => client.ready(), 5000, 'the client reconnected');
      }
      await new Promise((r) => setTimeout(r, RETRY_AFTER_MS + 50));
      if (outage === 'killed') cookie = await optIn();
      const back = await visit(cookie);
      expect(profiled(back), `${outage}: an opted-in developer again`).toBe(true);
      expect(commands - before).toBeGreaterThan(0);
    }
    // One report per outage, none per skipped request.
    expect(faults).toHaveLength(2);
  }, 60_000);
});
