import { describe, expect, test } from 'vitest';
import fc from 'fast-check';
import { instrumentPg, renderHtmlComment, renderServerTiming, timing, withProfile, type CustomTimingJSON, type ProfileJSON } from '../src/index.js';
import { fakeClock, fixed, type FakeClock } from './helpers/clock.js';

/** A pg-like client: every query takes 1 ms of the injected clock (the wrapper is what is under test). */
function fakePg(c: FakeClock) {
  return instrumentPg({
    query: async (..._args: unknown[]) => {
      c.t += 1;
      return { rows: [] };
    },
  });
}

type Value = number | string | null;
interface Call {
  category: 'sql' | 'redis';
  command: string;
  values: Value[];
}

const call: fc.Arbitrary<Call> = fc.record({
  category: fc.constantFrom('sql' as const, 'redis' as const),
  // Values in the text, values apart from it ($1), and none.
  command: fc.constantFrom('select * from t where id = $1', 'select * from t where id = 1', 'select * from t where id = 2', 'GET k', 'GET "k"'),
  values: fc.array(fc.oneof(fc.integer({ min: 0, max: 2 }), fc.constantFrom('1', 'a', "o'k"), fc.constant(null)), { maxLength: 2 }),
});

/** What the JSON's `duplicate` must mean: another call with the same category, command and values. */
function same(a: Call, b: Call): boolean {
  // A `$1` whose values were not sent apart (none given to pg; `timing()` has only its text): its
  // values are unknown, so it is never a duplicate (issue 59 item 6).
  if (a.command.includes('$1') && (a.category === 'redis' || a.values.length === 0)) return false;
  const values = (c: Call) => JSON.stringify(c.values.map((v) => [typeof v, v]));
  return a.category === b.category && a.command === b.command && values(a) === values(b);
}

async function profileOf(calls: Call[]): Promise<ProfileJSON> {
  const c = fakeClock();
  const pg = fakePg(c);
  const { profile } = await withProfile(
    'job',
    async () => {
      for (const k of calls) {
        c.t += 1;
        // pg sends values apart from the text; other clients (and `timing`) have only the text.
        if (k.category === 'sql') await pg.query(k.command, k.values);
        else await timing(k.category, k.values.length === 0 ? k.command : `${k.command} ${k.values.map((v) => JSON.stringify(v)).join(' ')}`, async () => void (c.t += 1));
      }
    },
    fixed(c),
  );
  return profile.toJSON();
}

describe('one meaning of duplicate: same category, same command and the same values', () => {
  test('property: the JSON flags a custom timing duplicate exactly when another has the same category, command and values', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(call, { maxLength: 8 }), async (calls) => {
        const json = await profileOf(calls);
        const got = (json.root.custom ?? []).map((c) => c.duplicate === true);
        const want = calls.map((a, i) => calls.some((b, j) => j !== i && same(a, b)));
        expect(got).toEqual(want);
      }),
      { numRuns: 300 },
    );
  });

  test('property: the comment, the Server-Timing header and the JSON count the same duplicates per category', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(call, { maxLength: 8 }), async (calls) => {
        const json = await profileOf(calls);
        const custom: CustomTimingJSON[] = json.root.custom ?? [];
        const comment = renderHtmlComment(json);
        const header = renderServerTiming(json);
        for (const category of ['sql', 'redis']) {
          const flagged = custom.filter((c) => c.category === category && c.duplicate === true).length;
          const count = custom.filter((c) => c.category === category).length;
          // The comment: one `(duplicate)` per flagged line, and the category's summary line.
          const lines = comment.split('\n').filter((l) => l.startsWith(`> [${category}] `));
          expect(lines.filter((l) => l.includes(' (duplicate)')).length).toBe(flagged);
          const summary = comment.split('\n').find((l) => l.startsWith(`[${category}] `));
          const summaryCount = summary === undefined ? 0 : Number(/, (\d+) duplicate$/.exec(summary)?.[1] ?? 0);
          expect(summaryCount).toBe(flagged);
          // The header: the category's desc says the same number (none when there are none).
          const desc = new RegExp(`(?:^|, )${category};dur=[\\d.]+;desc="${category} \\((\\d+) x [\\d.]+ms summed\\)(?: (\\d+) duplicate)?"`).exec(header);
          if (count === 0) expect(desc).toBeNull();
          else expect([Number(desc![1]), Number(desc![2] ?? 0)]).toEqual([count, flagged]);
          expect(json.customSummary?.find((s) => s.category === category)?.duplicate ?? 0).toBe(flagged);
        }
      }),
      { numRuns: 300 },
    );
  });

  test('the N+1 over $1 values: similar, and duplicate only where the values repeat', async () => {
    const json = await profileOf([1, 2, 1, 3].map((id) => ({ category: 'sql', command: 'select * from users where id = $1', values: [id] })));
    expect(json.root.custom!.map((c) => [c.duplicate, c.similar])).toEqual([
      [true, 1],
      [undefined, 1],
      [true, 1],
      [undefined, 1],
    ]);
    expect(renderServerTiming(json)).toBe('sql;dur=4.0;desc="sql (4 x 4.0ms summed) 2 duplicate", total;dur=8.0');
  });

  test('a command cut at maxCommandLength is never a duplicate (its values past the cut are unknown), but stays similar', async () => {
    const c = fakeClock();
    const pg = fakePg(c);
    const { profile } = await withProfile(
      'job',
      async () => {
        // Both cut before their values: the same text, different calls.
        for (const id of [1, 2]) await pg.query(`select * from a_table_with_a_long_name where id = $1`, [id]);
      },
      fixed(c, { maxCommandLength: 40 }),
    );
    const custom = profile.toJSON().root.custom!;
    expect(custom.map((x) => [x.command, x.duplicate, x.similar])).toEqual([
      ['select * from a_table_with_a_long_nam...', undefined, 1],
      ['select * from a_table_with_a_long_nam...', undefined, 1],
    ]);
  });
});
