/**
 * What miniprof points out, exactly, with an injected clock (issue 59 items 2, 5, 6, 8, 9, 10):
 * one verdict on concurrency per step in every output, the N+1 named on the step that ran the
 * loop, duplicates only where the values are known, Server-Timing naming each step once, folded
 * rows as wall time and count, and summaries that write commands as the rows do.
 */
import { describe, expect, test } from 'vitest';
import { renderServerTiming, renderText, step, timing, withProfile, type ProfileJSON } from '../src/index.js';
import { analyseCustom } from '../src/analysis/custom.js';
import type { CustomNode } from '../src/core/timing.js';
import { closeCall, openCall } from '../src/instrument/record.js';
import { renderProfilePage } from '../src/results/pages.js';
import { folds, marksOf, rows } from '../src/results/timeline.js';
import { deferred, fakeClock, fixed, sleep, type FakeClock } from './helpers/clock.js';

/** `n` children of `name` started together, ending at `ends` (ms on the clock), in that order. */
async function together(c: FakeClock, ends: number[], name: string): Promise<void> {
  const gates = ends.map(() => deferred());
  const all = Promise.all(gates.map((g) => step(name, () => g.promise)));
  for (const [e, i] of ends.map((e, i) => [e, i] as const).sort((a, b) => a[0] - b[0])) {
    c.t = e;
    gates[i]!.resolve();
    await sleep(0);
  }
  await all;
}

const line = (p: { toJSON(): ProfileJSON }, name: string) => renderText(p.toJSON()).split('\n').find((l) => l.includes(` ${name} = `));

describe('2: one verdict on concurrency per step', () => {
  test('five stats served one at a time: "serialized", never beside "parallel", in the text, JSON, Server-Timing and page', async () => {
    const c = fakeClock();
    const { profile } = await withProfile('GET /dashboard', () => step('stats', () => together(c, [12, 24, 36, 48, 60], 'load stat')), fixed(c));
    const stats = profile.toJSON().root.children[0]!;
    // Summed over wall time that was 3.0 ("parallel x3.0"); the fan-out says what ran at once.
    expect([stats.parallelism, stats.concurrency, stats.serialized]).toEqual([undefined, 1, true]);
    expect(line(profile, 'stats')).toBe('> stats = 60.0ms (serialized: 5 × load stat ran one at a time)');
    expect(renderServerTiming(profile)).toBe('stats;dur=60.0;desc="stats (serialized: 5 x load stat ran one at a time)", total;dur=60.0');
    expect(marksOf(rows(profile.toJSON())[1]!).map((m) => m.text)).toEqual(['serialized ×5']);
  });

  test('ten toJSON calls that ran 10 at once: their verdict, not "parallel x…" beside it; Server-Timing one metric, count and verdict in desc', async () => {
    const c = fakeClock();
    const { profile } = await withProfile('GET /api/articles', () => together(c, Array(10).fill(8), 'article toJSON'), fixed(c));
    expect(renderText(profile).split('\n')[1]).toBe(' GET /api/articles = 8.0ms (10 × article toJSON: 10.0 at once)');
    expect(profile.toJSON().root.parallelism).toBeUndefined();
    expect(renderServerTiming(profile)).toBe('article_toJSON;dur=8.0;desc="10 x article toJSON (10.0 at once)", total;dur=8.0');
  });

  test('"parallel" only where the summed time of overlapping children is over the step\'s: x1.1 from 1.05 on', async () => {
    const c = fakeClock();
    const run = (a: number, b: number, total: number) =>
      withProfile(
        'job',
        async () => {
          const ga = deferred();
          const gb = deferred();
          const all = Promise.all([step('a', () => ga.promise), step('b', () => gb.promise)]);
          c.t += a;
          ga.resolve();
          await sleep(0);
          c.t += b - a;
          gb.resolve();
          await all;
          c.t += total - b;
        },
        fixed(c),
      );
    // 10 + 20 over 20: x1.5. 2 + 4 over 40 overlapped too, but x0.15 says nothing: left out.
    expect(renderText((await run(10, 20, 20)).profile).split('\n')[1]).toBe(' job = 20.0ms (parallel x1.5)');
    expect(renderText((await run(2, 4, 40)).profile).split('\n')[1]).toBe(' job = 40.0ms (36.0ms in no step)');
  });
});

describe('5: N+1 named on the step that ran the loop', () => {
  test('a loop of queries inside one step, and a loop of steps of one query each: the loop\'s step carries it', async () => {
    const c = fakeClock();
    const q = (id: number) => timing('sql', `select * from posts where author_id = ${id}`, async () => void (c.t += 0.5));
    const { profile } = await withProfile(
      'GET /authors',
      async () => {
        await step('load posts per author', async () => {
          for (const id of [1, 2, 3, 4]) await q(id);
        });
        await step('load comments', async () => {
          for (const id of [1, 2, 3]) await step('comments of', () => timing('sql', `select * from comments where post_id = ${id}`, async () => void (c.t += 1)));
        });
      },
      fixed(c),
    );
    const json = profile.toJSON();
    expect(json.root.children.map((t) => [t.name, t.nPlusOne])).toEqual([
      ['load posts per author', { category: 'sql', command: 'select * from posts where author_id = ?', count: 4, similar: 1 }],
      ['load comments', { category: 'sql', command: 'select * from comments where post_id = ?', count: 3, similar: 2 }],
    ]);
    expect(json.root.children[1]!.children.map((t) => t.nPlusOne)).toEqual([undefined, undefined, undefined]);
    expect(renderText(profile).split('\n').filter((l) => l.startsWith('> '))).toEqual([
      '> load posts per author = 2.0ms (N+1: 4 × select * from posts where author_id = ?)',
      '> load comments = 3.0ms (N+1: 3 × select * from comments where post_id = ?)',
    ]);
    // The page marks the step; two similar queries are similar, not yet an N+1.
    expect(marksOf(rows(json)[1]!).map((m) => m.text)).toEqual(['N+1 ×4']);
    const two = await withProfile('job', () => step('two', async () => { await q(1); await q(2); }), fixed(c));
    expect(two.profile.toJSON().root.children[0]!.nPlusOne).toBeUndefined();
  });

  test('a long command is shortened in the mark, whole in its rows', async () => {
    const c = fakeClock();
    const cols = Array.from({ length: 12 }, (_, i) => `column_${i}`).join(', ');
    const { profile } = await withProfile('job', () => step('loop', async () => {
      for (const id of [1, 2, 3]) await timing('sql', `select ${cols} from posts where author_id = ${id}`, async () => void (c.t += 1));
    }), fixed(c));
    const text = renderText(profile).split('\n');
    // Its first word, then as many of its last words as fit in 60 characters.
    expect(text[2]).toBe('> loop = 3.0ms (N+1: 3 × select … column_11 from posts where author_id = ?)');
    expect(text[3]).toBe(`>> [sql] select ${cols} from posts where author_id = ? = 1.0ms (similar #1)`);
  });
});

describe('6: a duplicate is the same command with the same known values', () => {
  const sql = (command: string, startMs = 0) => ({ category: 'sql', command, startMs, durationMs: 1 });
  const flags = (json: ProfileJSON['root']) => (json.custom ?? []).map((c) => `${c.duplicate ? 'D' : '-'}${c.similar ?? '-'}`).join(' ');

  test('placeholders without a values digest are never duplicates; with one, equal digests are; literal values compare as text', () => {
    const root = { name: 'r', startMs: 0, durationMs: 10, children: [], custom: [sql('select $1::int'), sql('select $1::int'), sql('select * from t where a = ?'), sql('select * from t where a = ?'), sql('select 7'), sql('select 7'), sql('GET http://h/x?a=1'), sql('GET http://h/x?a=1')] };
    analyseCustom(root, true, 2000, new Map());
    expect(flags(root)).toBe('-1 -1 -2 -2 D3 D3 D4 D4');
    const digests = [sql('select $1::int'), sql('select $1::int'), sql('select $1::int'), sql('select :id'), sql('select :id')];
    // Only the nodes' values digests matter here (CustomNode.values).
    const node = (values: string) => ({ values }) as CustomNode;
    const nodes = new Map([[digests[0]!, node('x')], [digests[1]!, node('y')], [digests[2]!, node('x')]]);
    const withValues = { name: 'r', startMs: 0, durationMs: 10, children: [], custom: digests };
    analyseCustom(withValues, true, 2000, nodes);
    expect(flags(withValues)).toBe('D1 -1 D1 -2 -2');
    // `::int` is a cast, not a named parameter: values known (none) and equal.
    const cast = { name: 'r', startMs: 0, durationMs: 10, children: [], custom: [sql('select 1::int'), sql('select 1::int')] };
    analyseCustom(cast, true, 2000, new Map());
    expect(flags(cast)).toBe('D1 D1');
  });

  test('a values digest set by an instrumentation reaches the seal (CustomNode.values), never the JSON', async () => {
    const c = fakeClock();
    const { profile } = await withProfile('job', async () => {
      for (const v of ['a', 'b', 'a']) {
        const call = openCall('pg', 'sql', () => 'select * from users where id = $1', undefined);
        call!.node.values = v;
        c.t += 1;
        closeCall(call, false);
      }
    }, fixed(c));
    const json = profile.toJSON();
    expect(flags(json.root)).toBe('D1 -1 D1');
    expect(JSON.stringify(json)).not.toContain('"values"');
  });

  test('plumbing (a pool checkout) is neither a duplicate nor similar, and has no Server-Timing metric', async () => {
    const c = fakeClock();
    const { profile } = await withProfile('job', async () => {
      for (const id of [1, 2, 1]) {
        await timing('connect', 'pg-pool.connect', async () => void (c.t += 0.5));
        await timing('sql', `select * from users where id = ${id}`, async () => void (c.t += 1));
      }
    }, fixed(c));
    const json = profile.toJSON();
    expect(flags(json.root)).toBe('-- D1 -- -1 -- D1');
    expect(renderServerTiming(profile)).toBe('sql;dur=3.0;desc="sql (3 x 3.0ms summed) 2 duplicate", total;dur=4.5');
    // The page folds the three queries across the checkouts between them.
    const list = rows(json);
    expect(folds(list)).toEqual([{ start: 2, end: 7, heads: [2, 4, 6] }]);
  });
});

describe('8: Server-Timing names each step once', () => {
  test('20 article toJSON steps one after another: one metric, their wall time, the count in desc', async () => {
    const c = fakeClock();
    const { profile } = await withProfile('GET /api/articles', async () => {
      step('load', () => void (c.t += 3));
      for (let i = 0; i < 20; i++) step('article toJSON', () => void (c.t += 0.5));
      step('load', () => void (c.t += 1));
    }, fixed(c));
    expect(renderServerTiming(profile)).toBe('load;dur=4.0;desc="2 x load", article_toJSON;dur=10.0;desc="20 x article toJSON", total;dur=14.0');
  });
});

describe('9: folded rows show wall time and count; a sum only labelled as one', () => {
  test('five parallel load stat of 36 ms under a 61 ms parent: 36.0 ms, "180.0 ms summed" beside it', async () => {
    const c = fakeClock();
    const { profile } = await withProfile('GET /dashboard', () => step('stats', async () => {
      c.t = 1;
      await together(c, [37, 37, 37, 37, 37], 'load stat');
      c.t = 61;
    }), fixed(c));
    const html = renderProfilePage(profile.toJSON(), '/_miniprof', profile.id);
    const head = /<tr class="fold-head step">.*?<\/tr>/.exec(html)![0];
    expect(head).toContain('<span class="count">5 ×</span> load stat');
    expect(head).toContain('<td class="num"></td><td class="num">36.0 ms</td>');
    expect(head).toContain('<span class="range">36.0 ms each</span><span class="range" title="their durations added up">180.0 ms summed</span>');
  });
});

describe('10: summaries write commands as the rows do', () => {
  test('pg_sleep(?) in the rows, the similar summary, the N+1 mark and the page\'s fold', async () => {
    const c = fakeClock();
    const { profile } = await withProfile('job', () => step('sleepy', async () => {
      for (const s of ['0.01', '0.02', '0.03']) await timing('sql', `select pg_sleep(${s})`, async () => void (c.t += 10));
    }), fixed(c));
    const text = renderText(profile);
    expect(text).toContain('>> [sql] select pg_sleep(?) = 10.0ms (similar #1)\n');
    expect(text).toContain('#1 [sql] 3 x 30.0ms similar: select pg_sleep(?)\n');
    expect(text).toContain('> sleepy = 30.0ms (N+1: 3 × select pg_sleep(?))\n');
    expect(renderProfilePage(profile.toJSON(), '/_miniprof', profile.id)).toContain('<code class="shape" title="select pg_sleep(?)">select pg_sleep(?)</code>');
  });
});
