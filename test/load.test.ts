/**
 * Load on real sockets, per adapter: 1,000 developer requests, 100 in flight at a time over a
 * keep-alive agent, half of them POSTs with JSON bodies of random size, each with random awaits
 * and nested and parallel steps named after the request. Every request's tree must hold its own
 * steps and nothing else (as seen inside the handler, in its Server-Timing header, and in the
 * sealed profile afterwards), with zero errors of any kind. Bounded: a fixed count, a per-request
 * timeout, and it stops by itself.
 */
import http from 'node:http';
import { PassThrough } from 'node:stream';
import express from 'express';
import Fastify from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { miniprof as expressMiniprof } from '../adapters/express.js';
import { miniprof as fastifyMiniprof } from '../adapters/fastify.js';
import { openProfiles } from '../src/core/context.js';
import { currentProfile, memoryStore, step, type Profile, type TimingJSON } from '../src/index.js';
import { closeServers, serve, track, waitFor } from './helpers/http.js';
import { catchEscapes } from './helpers/escapes.js';

/**
 * How long a request may see no byte before it counts as hung. Generous: client and server share
 * one process, and on a loaded machine (two CPU hogs and other test runs on two cores) the first
 * wave of 100 requests on fresh sockets waited more than 10 s for its turn, which said nothing
 * about correctness. A hang still fails the test.
 */
const IDLE_MS = 60_000;

const REQUESTS = 1000;
const CONCURRENCY = 100;

/** A random await: a microtask, a turn of the loop, or a short timer. */
function jitter(): Promise<void> {
  const r = Math.random();
  if (r < 0.3) return Promise.resolve();
  if (r < 0.6) return new Promise((resolve) => setImmediate(resolve));
  return new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 3)));
}

async function work(id: string): Promise<void> {
  await step(`${id} parse`, jitter);
  await step(`${id} outer`, async () => {
    await jitter();
    await Promise.all(
      [0, 1, 2].map((i) =>
        step(`${id} p${i}`, async () => {
          await jitter();
          await step(`${id} p${i} leaf`, jitter);
        }),
      ),
    );
    step(`${id} sync`, () => {});
  });
}

interface Tree {
  name: string;
  children: Tree[];
}

function shape(t: TimingJSON): Tree {
  return { name: t.name, children: t.children.map(shape) };
}

/** Request `id`'s tree; on Fastify inside its route handler's own step (autoSteps). */
function expected(method: string, id: string, fastify: boolean): Tree {
  const leaf = (name: string, children: Tree[] = []): Tree => ({ name, children });
  const steps = [
    leaf(`${id} parse`),
    leaf(`${id} outer`, [
      ...[0, 1, 2].map((i) => leaf(`${id} p${i}`, [leaf(`${id} p${i} leaf`)])),
      leaf(`${id} sync`),
    ]),
  ];
  return leaf(`${method} /load`, fastify ? [leaf(`handler ${method} /load`, steps)] : steps);
}

interface Seen {
  profiles: Map<string, Profile>;
  /** Anything that went wrong on the server side: a missing profile, a body that is not its own. */
  problems: string[];
  reports: unknown[];
}

/** The handler: its own steps, then the tree it sees right before answering. */
async function handle(seen: Seen, id: string, method: string, body: unknown): Promise<{ id: string; tree: Tree | null }> {
  if (method === 'POST' && (body as { id?: unknown } | undefined)?.id !== id) seen.problems.push(`${id}: body of another request`);
  const profile = currentProfile();
  if (profile === undefined) {
    seen.problems.push(`${id}: no profile in the handler`);
    return { id, tree: null };
  }
  seen.profiles.set(id, profile);
  await work(id);
  return { id, tree: shape(profile.toJSON().root) };
}

type Make = (seen: Seen) => Promise<number>;

const options = (seen: Seen) => ({ isDeveloper: () => true, onInternalError: (err: unknown) => seen.reports.push(err) });

const ADAPTERS: Array<[string, Make]> = [
  [
    'express',
    async (seen) => {
      const app = express();
      app.use(expressMiniprof(options(seen)));
      app.use(express.json({ limit: '1mb' }));
      app.all('/load', async (req, res) => {
        res.json(await handle(seen, String(req.query.id), req.method, req.body));
      });
      return serve(app);
    },
  ],
  [
    'fastify',
    async (seen) => {
      const app = Fastify({ bodyLimit: 1 << 20 });
      await app.register(fastifyMiniprof, options(seen));
      app.route({
        method: ['GET', 'POST'],
        url: '/load',
        handler: async (req) => handle(seen, String((req.query as { id: string }).id), req.method, req.body),
      });
      await app.listen({ port: 0, host: '127.0.0.1' });
      track(app.server);
      return (app.server.address() as { port: number }).port;
    },
  ],
];

interface Result {
  status: number;
  serverTiming: string;
  body: string;
}

function request(agent: http.Agent, port: number, method: string, id: string, body?: string): Promise<Result> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = {};
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(body);
    }
    const req = http.request({ host: '127.0.0.1', port, method, path: `/load?id=${id}`, agent, headers, timeout: IDLE_MS }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.once('error', reject);
      res.once('end', () =>
        resolve({ status: res.statusCode!, serverTiming: String(res.headers['server-timing'] ?? ''), body: Buffer.concat(chunks).toString() }),
      );
    });
    req.once('timeout', () => req.destroy(new Error(`${method} ${id}: no answer after ${IDLE_MS / 1000} s`)));
    req.once('error', reject);
    req.end(body);
  });
}

const escaped = catchEscapes();

afterEach(async () => {
  await closeServers();
});

describe.each(ADAPTERS)('%s', (name, make) => {
  test(`D5, D2: ${REQUESTS} developer requests at concurrency ${CONCURRENCY}, half POSTs with bodies: every tree holds only its own steps, zero errors`, { timeout: 300_000 }, async () => {
    const seen: Seen = { profiles: new Map(), problems: [], reports: [] };
    const port = await make(seen);
    const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const failures: string[] = [];
    let next = 0;
    async function worker(): Promise<void> {
      while (next < REQUESTS) {
        const n = next++;
        const id = `r${n}`;
        const method = n % 2 === 0 ? 'POST' : 'GET';
        const body = method === 'POST' ? JSON.stringify({ id, pad: 'x'.repeat(Math.floor(Math.random() * 8000)) }) : undefined;
        try {
          const r = await request(agent, port, method, id, body);
          if (r.status !== 200) {
            failures.push(`${id}: status ${r.status} ${r.body.slice(0, 200)}`);
            continue;
          }
          const got = JSON.parse(r.body) as { id: string; tree: Tree | null };
          if (got.id !== id) failures.push(`${id}: answered as ${got.id}`);
          else if (JSON.stringify(got.tree) !== JSON.stringify(expected(method, id, name === 'fastify'))) {
            failures.push(`${id}: handler saw ${JSON.stringify(got.tree)}`);
          }
          // Every metric but the id (the badge's, on by default) and total is a top-level step of
          // this request (`event-loop`, when the busy loop stalled, and `miniprof-self`, when
          // miniprof's own time is worth a metric, are miniprof's and name no request).
          const metrics = r.serverTiming
            .split(', ')
            .map((m) => m.split(';')[0])
            .filter((m) => m !== 'event-loop' && m !== 'miniprof-self');
          const expectedMetrics = [`${id}_parse`, `${id}_outer`, 'miniprof', 'total'];
          if (JSON.stringify(metrics) !== JSON.stringify(expectedMetrics)) failures.push(`${id}: Server-Timing ${r.serverTiming}`);
        } catch (err) {
          failures.push(`${id}: ${String(err)}`);
        }
      }
    }
    try {
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    } finally {
      agent.destroy();
    }
    expect(failures.slice(0, 10)).toEqual([]);
    expect(seen.problems.slice(0, 10)).toEqual([]);
    expect(seen.profiles.size).toBe(REQUESTS);
    // Sealed on close, each with exactly its own tree.
    await waitFor(() => openProfiles() === 0, 10_000, 'every profile sealed');
    const wrong: string[] = [];
    for (const [id, profile] of seen.profiles) {
      const method = Number(id.slice(1)) % 2 === 0 ? 'POST' : 'GET';
      if (!profile.sealed) wrong.push(`${id}: not sealed`);
      else if (JSON.stringify(shape(profile.toJSON().root)) !== JSON.stringify(expected(method, id, name === 'fastify'))) {
        wrong.push(`${id}: sealed tree ${JSON.stringify(shape(profile.toJSON().root))}`);
      }
    }
    expect(wrong.slice(0, 10)).toEqual([]);
    expect(seen.reports).toEqual([]);
    expect(escaped).toEqual([]);
  });
});

/** A stream of server-sent events that never ends by itself; each event is written in a step. */
type MakeSse = (options: object) => Promise<number>;

const SSE: Array<[string, MakeSse]> = [
  [
    'express',
    async (options) => {
      const app = express();
      app.use(expressMiniprof(options));
      app.get('/events', (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        res.write('data: 0\n\n');
        const timer = setInterval(() => step('event', () => res.write('data: x\n\n')), 10);
        res.once('close', () => clearInterval(timer));
      });
      return serve(app);
    },
  ],
  [
    'fastify',
    async (options) => {
      const app = Fastify();
      await app.register(fastifyMiniprof, options);
      app.get('/events', (req, reply) => {
        const stream = new PassThrough();
        stream.write('data: 0\n\n');
        const timer = setInterval(() => step('event', () => stream.write('data: x\n\n')), 10);
        req.raw.once('close', () => {
          clearInterval(timer);
          stream.end();
        });
        return reply.type('text/event-stream').header('cache-control', 'no-cache').send(stream);
      });
      await app.listen({ port: 0, host: '127.0.0.1' });
      track(app.server);
      return (app.server.address() as { port: number }).port;
    },
  ],
];

/** Open an event stream, read its first event, then hang up. */
function openAndAbort(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
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
}

describe.each(SSE)('%s', (_name, make) => {
  test('E3, C8: 1,000 event streams opened and aborted by the client: every profile sealed, the store stays within its cap', { timeout: 300_000 }, async () => {
    const store = memoryStore({ maxCount: 50 });
    const reports: unknown[] = [];
    const port = await make({ isDeveloper: () => true, onInternalError: (e: unknown) => reports.push(e), results: { store } });
    const firsts: string[] = [];
    let next = 0;
    const worker = async () => {
      while (next < 1000) {
        next++;
        firsts.push(await openAndAbort(port));
      }
    };
    await Promise.all(Array.from({ length: 100 }, worker));
    expect(firsts.length).toBe(1000);
    expect(firsts.every((f) => f.startsWith('data: 0\n\n'))).toBe(true);
    await waitFor(() => openProfiles() === 0, 10_000, 'every stream\'s profile sealed');
    await waitFor(() => store.stats().count === 50, 5000, 'store filled to its cap');
    expect(store.stats().count).toBe(50);
    expect(reports).toEqual([]);
    expect(escaped).toEqual([]);
  });
});
