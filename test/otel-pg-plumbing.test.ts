/**
 * OpenTelemetry's instrumentation-pg alone (its defaults: no `enhancedDatabaseReporting`, so a
 * span carries `$1`, never the value) on a real PostgreSQL, in an Express app: what a developer
 * sees of an N+1 (issue 59 items 5, 6, 7, 9). The spans' pool checkouts (`pg-pool.connect`, and
 * `pg.connect` for a new client) are plumbing: their own category, no Server-Timing metric, never
 * between the folded rows; the queries are similar, never duplicates (their values are unknown);
 * the loop's step names the N+1 in the comment, the JSON, the page and Server-Timing.
 *
 * Instrumentations patch modules as they are required: registered first, pg and Express after.
 */
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import type * as HttpModule from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { parse, type DefaultTreeAdapterMap } from 'parse5';
import type { Pool } from 'pg';
import { MiniprofSpanProcessor } from '../adapters/otel.js';
import { miniprof } from '../adapters/express.js';
import { step, type ProfileJSON } from '../src/index.js';
import type { PostgresServer } from './helpers/postgres.js';

const provider = new NodeTracerProvider({ spanProcessors: [new MiniprofSpanProcessor()] });
provider.register({ contextManager: new AsyncLocalStorageContextManager() });
registerInstrumentations({ tracerProvider: provider, instrumentations: [new PgInstrumentation()] });
const require = createRequire(import.meta.url);
const pg = require('pg') as typeof import('pg');
const express = require('express') as typeof import('express');

const QUERY = 'select title from posts where author_id = $1';
/** Twelve authors, each id three times: with its values known, 9 of the 12 would be duplicates. */
const AUTHORS = [1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4];

let postgres: PostgresServer;
let pool: Pool;
let server: HttpModule.Server;
let url = '';

beforeAll(async () => {
  // Imported here, not above: the helper loads pg, and a pg-pool loaded before the instrumentation
  // is registered is never patched (no `pg-pool.connect` spans, as an app that loads pg first).
  const { startPostgres } = await import('./helpers/postgres.js');
  postgres = await startPostgres();
  pool = new pg.Pool({ host: '127.0.0.1', port: postgres.port, user: 'postgres', database: 'postgres', max: 2 });
  pool.on('error', () => {});
  await pool.query('create table posts (author_id int, title text)');
  await pool.query("insert into posts select i % 4 + 1, 'post ' || i from generate_series(1, 20) i");
  const app = express();
  app.use(miniprof({ machine: 'web-1' }));
  app.get('/authors', async (_req, res) => {
    await step('load posts per author', async () => {
      for (const id of AUTHORS) await pool.query(QUERY, [id]);
    });
    res.type('html').send('<html><body>authors</body></html>');
  });
  await new Promise<void>((r) => (server = app.listen(0, '127.0.0.1', () => r())));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await pool?.end();
  await postgres?.stop();
  await provider.shutdown();
});

/** The profile's JSON from the results route, once it is saved (on close). */
async function stored(id: string, ext = '.json'): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const r = await fetch(`${url}/_miniprof/${id}${ext}`);
    if (r.status === 200) return r.text();
    await new Promise((res) => setTimeout(res, 20));
  }
  throw new Error('profile not saved');
}

type Node = DefaultTreeAdapterMap['childNode'] | DefaultTreeAdapterMap['document'];
function all(n: Node, keep: (n: DefaultTreeAdapterMap['element']) => boolean, out: DefaultTreeAdapterMap['element'][] = []): DefaultTreeAdapterMap['element'][] {
  if ('tagName' in n && keep(n)) out.push(n);
  if ('childNodes' in n) for (const c of n.childNodes) all(c as Node, keep, out);
  return out;
}
function text(n: Node): string {
  if (n.nodeName === '#text') return (n as DefaultTreeAdapterMap['textNode']).value;
  return 'childNodes' in n ? n.childNodes.map((c) => text(c as Node)).join('') : '';
}
const cls = (e: DefaultTreeAdapterMap['element']) => e.attrs.find((a) => a.name === 'class')?.value ?? '';

describe('an N+1 over instrumentation-pg on real PostgreSQL', () => {
  test('pool checkouts are plumbing; the 12 queries are similar, not duplicates; the loop\'s step names the N+1 everywhere', async () => {
    const res = await fetch(`${url}/authors`);
    const body = await res.text();
    const id = res.headers.get('x-miniprof-id')!;
    const json = JSON.parse(await stored(id)) as ProfileJSON;
    const loop = json.root.children.find((c) => c.name === 'load posts per author')!;

    // 7: no step made of a connection span; checkouts are custom timings of their own category.
    expect(json.root.children.map((c) => c.name)).toEqual(['load posts per author']);
    expect(loop.children).toEqual([]);
    const custom = loop.custom!;
    const sql = custom.filter((c) => c.category === 'sql');
    const connect = custom.filter((c) => c.category === 'connect');
    expect(sql.map((c) => c.command)).toEqual(AUTHORS.map(() => QUERY));
    expect(connect.length).toBeGreaterThanOrEqual(12);
    expect(new Set(connect.map((c) => c.command))).toEqual(new Set(connect.length > 12 ? ['pg-pool.connect', 'pg.connect'] : ['pg-pool.connect']));
    expect(custom.length).toBe(sql.length + connect.length);
    for (const c of connect) expect([c.duplicate, c.similar, c.traced]).toEqual([undefined, undefined, true]);
    // 6: `$1` and no values: never a duplicate, however many times each id came back.
    for (const c of sql) expect([c.duplicate, c.similar]).toEqual([undefined, 1]);
    expect(json.similar).toEqual([{ id: 1, category: 'sql', command: QUERY, count: 12, durationMs: expect.any(Number) }]);
    expect(json.customSummary!.map((s) => [s.category, s.count, s.duplicate, s.similar])).toEqual([
      ['connect', connect.length, 0, 0],
      ['sql', 12, 0, 12],
    ].sort((a, b) => custom.findIndex((c) => c.category === a[0]) - custom.findIndex((c) => c.category === b[0])));
    // 5: the N+1 on the step that ran the loop, in the JSON and in the comment.
    expect(loop.nPlusOne).toEqual({ category: 'sql', command: QUERY, count: 12, similar: 1 });
    // (On a loaded machine the event-loop monitor may add a blocking mark before it: not ours.)
    expect(body).toMatch(/\n> load posts per author = \d+\.\dms (?:\([^()]*blocking[^()]*\) )?\(N\+1: 12 × select title from posts where author_id = \$1\)\n/);

    // 7 and 8: Server-Timing has the step (its N+1 in desc) and sql; no connect metric.
    const st = res.headers.get('server-timing')!;
    const metrics = st.split(', ').filter((m) => !m.startsWith('event-loop;'));
    expect(metrics.map((m) => m.split(';')[0])).toEqual(['load_posts_per_author', 'sql', 'miniprof-self', 'miniprof', 'total']);
    expect(metrics[0]).toMatch(/^load_posts_per_author;dur=\d+\.\d;desc="load posts per author (?:\([^()]*blocking[^()]*\) )?\(N\+1: 12 x sql\)"$/);
    expect(metrics[1]).toMatch(/^sql;dur=\d+\.\d;desc="sql \(12 x \d+\.\dms summed\)"$/);

    // 9: the page folds the 12 queries into one row, the checkouts between them inside the fold,
    // showing their count and their wall time (a sum only labelled as one).
    const page = parse(await stored(id, '')) as Node;
    const folds = all(page, (e) => e.tagName === 'tbody' && cls(e) === 'fold');
    expect(folds).toHaveLength(1);
    const head = all(folds[0]!, (e) => e.tagName === 'tr' && cls(e).startsWith('fold-head'))[0]!;
    const cells = all(head, (e) => e.tagName === 'td').map((td) => text(td));
    expect(cells[0]).toBe(`12 × sql ${QUERY}`);
    const wall = sql.length > 0 ? unionOf(sql.map((c) => [c.startMs, c.startMs + c.durationMs])) : 0;
    expect(cells[3]).toBe(`${wall.toFixed(1)} ms`);
    const members = all(folds[0]!, (e) => e.tagName === 'tr' && cls(e).includes('member'));
    expect(members).toHaveLength(custom.length - countOutside(custom));
    const stepRow = all(page, (e) => e.tagName === 'tr' && cls(e) === 'step').find((tr) => text(tr).startsWith('load posts per author'))!;
    expect(text(stepRow)).toContain('N+1 ×12');
  });
});

/** The union of intervals, as the page's wall time (microsecond JSON, shown to 0.1 ms). */
function unionOf(pairs: number[][]): number {
  pairs.sort((a, b) => a[0]! - b[0]!);
  let total = 0;
  let [from, to] = [pairs[0]![0]!, pairs[0]![1]!];
  for (const [s, e] of pairs.slice(1)) {
    if (s! > to) {
      total += to - from;
      [from, to] = [s!, e!];
    } else if (e! > to) to = e!;
  }
  return Math.round((total + to - from) * 10) / 10;
}

/**
 * Checkouts before the first query and after the last one stay outside the fold: a fold runs from
 * its first member to its last.
 */
function countOutside(custom: NonNullable<ProfileJSON['root']['custom']>): number {
  const sorted = [...custom].sort((a, b) => a.startMs - b.startMs);
  const first = sorted.findIndex((c) => c.category === 'sql');
  let last = -1;
  sorted.forEach((c, i) => {
    if (c.category === 'sql') last = i;
  });
  return first + (sorted.length - 1 - last);
}
