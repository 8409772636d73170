import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import pg from 'pg';
import { instrumentPg, step, withProfile, type TimingJSON } from '../src/index.js';
import { startPostgres, type PostgresServer } from './helpers/postgres.js';
import { startHogs } from './helpers/hogs.js';
import { work } from './helpers/cpu.js';
import { sleep } from './helpers/clock.js';
import { limiter } from './helpers/tree.js';

/**
 * Issue 59 item 4: the concurrency estimate and the blocking marks give the same verdict on a
 * quiet machine and beside two CPU-hog processes, in at least 9 runs of 10: five queries behind
 * a pool of 1 (serialized), of 2 (about 2 at once), of 5 (truly parallel), and 50 ms of work after
 * an await (that step blocking, about 50 ms; the step beside it, which only awaited, not).
 * Real PostgreSQL (`pg_sleep`), real pools; the hogs are started and stopped here.
 */
let server: PostgresServer;
const pools = new Map<number, pg.Pool>();

beforeAll(async () => {
  server = await startPostgres();
  for (const max of [1, 2, 5]) {
    const pool = instrumentPg(new pg.Pool({ host: '127.0.0.1', port: server.port, user: 'postgres', database: 'postgres', max }));
    pool.on('error', () => {});
    // Connections opened before the runs: a first connect is not what is measured.
    await Promise.all(Array.from({ length: max }, () => pool.query('select 1')));
    pools.set(max, pool);
  }
}, 60_000);

afterAll(async () => {
  for (const pool of pools.values()) await pool.end();
  await server?.stop();
});

type Verdict = string;

/** Five `load user` steps, each 40 ms of waiting, started together behind `slots`. */
async function fanOut(slots: number): Promise<Verdict> {
  const limit = limiter(slots);
  const { profile } = await withProfile('GET /users', () =>
    Promise.all(Array.from({ length: 5 }, () => step('load user', () => limit(() => sleep(40))))),
  );
  return verdict(profile.toJSON().root);
}

/** The same on real PostgreSQL: one `pg_sleep(0.04)` per step on a pool of `max`. */
async function fanOutPg(max: number): Promise<Verdict> {
  const pool = pools.get(max)!;
  const { profile } = await withProfile('GET /users', () =>
    Promise.all(Array.from({ length: 5 }, () => step('load user', () => pool.query('select pg_sleep(0.04)')))),
  );
  return verdict(profile.toJSON().root);
}

/**
 * What a developer reads from the mark: one at a time, about two at once, or most of five at
 * once (4.6 and 4.4 say the same thing; 2.9 would not).
 */
function verdict(root: TimingJSON): Verdict {
  const c = root.concurrency;
  if (root.serialized === true) return 'serialized';
  if (c === undefined) return 'no estimate';
  if (c >= 1.5 && c < 2.5) return 'about 2 at once';
  if (c >= 3.5) return '4 to 5 at once';
  return `${c} at once`;
}

/** 50 ms of work after an await in one step, between steps that only await. */
async function loop(): Promise<Verdict> {
  const { profile } = await withProfile('GET /report', async () => {
    await step('fetch', () => sleep(10));
    await step('crunch', async () => {
      await sleep(5);
      work(50);
    });
    await step('wait', () => sleep(30));
  });
  const json = profile.toJSON();
  const [fetch, crunch, wait] = json.root.children as [TimingJSON, TimingJSON, TimingJSON];
  const held = crunch.heldMs ?? 0;
  if (fetch.blocking === true || wait.blocking === true) return `false blocking (${fetch.heldMs} ${wait.heldMs})`;
  if (crunch.blocking !== true) return 'crunch not blocking';
  if (crunch.blockingAmbiguous === true) return 'ambiguous';
  return held >= 35 && held <= 70 ? 'crunch blocking, about 50 ms' : `crunch held ${held} ms`;
}

const CASES: [string, () => Promise<Verdict>, Verdict][] = [
  ['a pool of 1 (a queue)', () => fanOut(1), 'serialized'],
  ['a pool of 2', () => fanOut(2), 'about 2 at once'],
  ['5 truly parallel', () => fanOut(5), '4 to 5 at once'],
  ['a 50 ms loop after an await', loop, 'crunch blocking, about 50 ms'],
  ['PostgreSQL, a pool of 1', () => fanOutPg(1), 'serialized'],
  ['PostgreSQL, a pool of 5', () => fanOutPg(5), '4 to 5 at once'],
  // Not a pool of 2 on PostgreSQL: when the hogs starve PostgreSQL's own backends too, one query
  // of a pair can take twice as long as the other, and the ends alone cannot tell that from a
  // queue. It read "about 2" in 10, 10 and 9 runs of 10 beside two hogs, and in 8 and 7 of 10
  // with four hogs and other test runs on the same two cores (docs/attribution.md says so).
];

/** Each case 10 times; how often each verdict came out. */
async function tally(): Promise<Record<string, Record<Verdict, number>>> {
  const out: Record<string, Record<Verdict, number>> = {};
  for (const [name, run] of CASES) {
    const seen: Record<Verdict, number> = {};
    for (let i = 0; i < 10; i++) {
      const v = await run();
      seen[v] = (seen[v] ?? 0) + 1;
    }
    out[name] = seen;
  }
  return out;
}

function expectStable(seen: Record<string, Record<Verdict, number>>): void {
  for (const [name] of CASES) console.log(`${name}: ${JSON.stringify(seen[name])}`);
  for (const [name, , expected] of CASES) {
    // The whole tally in the message: what else came out, and how often.
    expect(seen[name]![expected] ?? 0, `${name}: ${JSON.stringify(seen[name])}`).toBeGreaterThanOrEqual(9);
  }
}

describe('the same verdicts on a quiet machine and a busy one (9 of 10 runs each)', () => {
  test('as the machine is', async () => {
    expectStable(await tally());
  }, 120_000);

  test('beside two CPU-hog processes', async () => {
    const hogs = await startHogs(2);
    try {
      expectStable(await tally());
    } finally {
      await hogs.stop();
    }
  }, 120_000);
});
