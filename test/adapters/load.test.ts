/**
 * Load on real sockets against every adapter (test/adapters/apps.ts), as test/load.test.ts does
 * for Express and Fastify with their body parsers: 1,000 developer GETs, 100 in flight at a time
 * over a keep-alive agent, each with random awaits and nested and parallel steps named after the
 * request; every tree holds its own steps and nothing else, zero errors. Then 1,000 event streams
 * opened and aborted by the client: every profile sealed, the store within its cap. Bounded: fixed
 * counts and per-request timeouts.
 */
import http from 'node:http';
import { afterEach, describe, expect, test } from 'vitest';
import { openProfiles } from '../../src/core/context.js';
import { currentProfile, memoryStore, step, type Profile, type TimingJSON } from '../../src/index.js';
import { catchEscapes } from '../helpers/escapes.js';
import { closeServers, serve, waitFor } from '../helpers/http.js';
import { ADAPTERS, type Routes } from './apps.js';

/**
 * How long a request may see no byte before it counts as hung. Generous: client and server share
 * one process, and on a loaded machine (two CPU hogs and other test runs on two cores) the first
 * wave of 100 requests on fresh sockets waited more than 10 s for its turn, which said nothing
 * about correctness. A hang still fails the test.
 */
const IDLE_MS = 60_000;

const REQUESTS = 1000;
const CONCURRENCY = 100;

function jitter(): Promise<void> {
  const r = Math.random();
  if (r < 0.3) return Promise.resolve();
  if (r < 0.6) return new Promise((resolve) => setImmediate(resolve));
  return new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 3)));
}

type Tree = { [name: string]: Tree[] };
const shape = (t: TimingJSON): Tree => ({ [t.name]: t.children.map(shape) });
/** The tree of request `id`; on Fastify inside its route handler's own step (autoSteps). */
const expected = (id: string, fastify: boolean): Tree => {
  const steps = [{ [`${id} parse`]: [] }, { [`${id} outer`]: [...[0, 1, 2].map((i) => ({ [`${id} p${i}`]: [{ [`${id} p${i} leaf`]: [] }] })), { [`${id} sync`]: [] }] }];
  return { 'GET /load': fastify ? [{ 'handler GET /load': steps }] : steps };
};

function get(agent: http.Agent | false, port: number, path: string): Promise<{ status: number; serverTiming: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent, timeout: IDLE_MS }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.once('error', reject);
      res.once('end', () => resolve({ status: res.statusCode!, serverTiming: String(res.headers['server-timing'] ?? ''), body: Buffer.concat(chunks).toString() }));
    });
    req.once('timeout', () => req.destroy(new Error(`${path}: no answer after ${IDLE_MS / 1000} s`)));
    req.once('error', reject);
  });
}

const escaped = catchEscapes();
afterEach(() => closeServers());

describe.each(ADAPTERS)('$name', (a) => {
  test(`D5: ${REQUESTS} developer requests at concurrency ${CONCURRENCY} over keep-alive: every tree holds only its own steps, zero errors`, { timeout: 300_000 }, async () => {
    const profiles = new Map<string, Profile>();
    const problems: string[] = [];
    const reports: unknown[] = [];
    const routes: Routes = {
      '/load': async (req) => {
        const id = new URL(req.url, 'http://x').searchParams.get('id')!;
        const p = currentProfile();
        if (p === undefined) problems.push(`${id}: no profile`);
        else profiles.set(id, p);
        await step(`${id} parse`, jitter);
        await step(`${id} outer`, async () => {
          await jitter();
          await Promise.all([0, 1, 2].map((i) => step(`${id} p${i}`, async () => {
            await jitter();
            await step(`${id} p${i} leaf`, jitter);
          })));
          step(`${id} sync`, () => {});
        });
        return { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id, tree: p === undefined ? null : shape(p.toJSON().root) }) };
      },
    };
    const port = await serve(await a.listener({ isDeveloper: () => true, onInternalError: (e: unknown) => reports.push(e) }, routes));
    const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const failures: string[] = [];
    let next = 0;
    const worker = async () => {
      while (next < REQUESTS) {
        const id = `r${next++}`;
        try {
          const r = await get(agent, port, `/load?id=${id}`);
          const got = JSON.parse(r.body) as { id: string; tree: Tree };
          if (r.status !== 200 || got.id !== id) failures.push(`${id}: ${r.status} ${r.body.slice(0, 100)}`);
          else if (JSON.stringify(got.tree) !== JSON.stringify(expected(id, a.name === 'fastify'))) failures.push(`${id}: handler saw ${JSON.stringify(got.tree)}`);
          const metrics = r.serverTiming.split(', ').map((m) => m.split(';')[0]).filter((m) => m !== 'event-loop' && m !== 'miniprof-self');
          if (metrics.join() !== `${id}_parse,${id}_outer,total`) failures.push(`${id}: Server-Timing ${r.serverTiming}`);
        } catch (err) {
          failures.push(`${id}: ${String(err)}`);
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    } finally {
      agent.destroy();
    }
    expect(failures.slice(0, 10)).toEqual([]);
    expect(problems.slice(0, 10)).toEqual([]);
    expect(profiles.size).toBe(REQUESTS);
    await waitFor(() => openProfiles() === 0, 10_000, 'every profile sealed');
    const wrong = [...profiles].filter(([id, p]) => !p.sealed || JSON.stringify(shape(p.toJSON().root)) !== JSON.stringify(expected(id, a.name === 'fastify')));
    expect(wrong.map(([id]) => id).slice(0, 10)).toEqual([]);
    expect(reports).toEqual([]);
    expect(escaped).toEqual([]);
  });

  test('E3, C8: 1,000 event streams opened and aborted by the client: every profile sealed, the store stays within its cap', { timeout: 300_000 }, async () => {
    const store = memoryStore({ maxCount: 50 });
    const reports: unknown[] = [];
    const routes: Routes = {
      '/events': async () => ({ headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }, chunks: Array.from({ length: 100 }, (_, i) => `data: ${i}\n\n`), everyMs: 10, endless: true, onChunk: () => step('event', () => {}) }),
    };
    const port = await serve(await a.listener({ isDeveloper: () => true, onInternalError: (e: unknown) => reports.push(e), results: { store } }, routes));
    const firsts: string[] = [];
    const open = () =>
      new Promise<string>((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port, path: '/events', agent: false, timeout: IDLE_MS }, (res) => {
          res.once('data', (chunk: Buffer) => {
            req.destroy();
            resolve(chunk.toString());
          });
        });
        req.once('timeout', () => req.destroy(new Error(`no event after ${IDLE_MS / 1000} s`)));
        req.once('error', (err) => {
          if ((err as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(err);
        });
      });
    let next = 0;
    await Promise.all(Array.from({ length: 100 }, async () => {
      while (next < 1000) {
        next++;
        firsts.push(await open());
      }
    }));
    expect(firsts.length).toBe(1000);
    expect(firsts.filter((f) => !f.startsWith('data: 0\n\n'))).toEqual([]);
    await waitFor(() => openProfiles() === 0, 10_000, "every stream's profile sealed");
    await waitFor(() => store.stats().count === 50, 5000, 'store filled to its cap');
    expect(reports).toEqual([]);
    expect(escaped).toEqual([]);
  });
});
