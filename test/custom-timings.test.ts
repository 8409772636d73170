import { describe, expect, test, vi } from 'vitest';
import { renderServerTiming, renderText, step, timing, withProfile, type ProfileJSON } from '../src/index.js';
import { deferred, fakeClock, fixed, sleep, type FakeClock } from './helpers/clock.js';

// Count calls into the normaliser, to prove the grouping runs at seal and not per timing().
const calls = vi.hoisted(() => ({ shape: 0, redact: 0 }));
vi.mock('../src/analysis/normalize.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/analysis/normalize.js')>();
  return {
    ...real,
    shapeOf: (s: string) => {
      calls.shape++;
      return real.shapeOf(s);
    },
    redact: (...args: Parameters<typeof real.redact>) => {
      calls.redact++;
      return real.redact(...args);
    },
  };
});

/** The N+1 page: one query for the posts, then one per author (two of them the same author). */
async function nPlusOne(c: FakeClock, extra = {}) {
  return withProfile(
    'GET /posts',
    async () => {
      await step('load posts', async () => {
        c.t = 1;
        await timing('sql', "select * from posts where status = 'published' limit 10", async () => {
          c.t = 3;
        });
        for (const [i, id] of [7, 8, 7].entries()) {
          await timing('sql', `select * from users where id = ${id}`, async () => {
            c.t = 4 + i * 2;
          });
          c.t = 5 + i * 2;
        }
      });
      await timing('http', 'GET http://127.0.0.1:9000/avatars?ids=7,8&key=s3cret', async () => {
        c.t = 12.5;
      });
      c.t = 13;
    },
    fixed(c, extra),
  );
}

describe('duplicates and similar commands', () => {
  test('exact JSON: duplicates flagged, similar grouped, per-category summary, commands redacted', async () => {
    const { profile } = await nPlusOne(fakeClock());
    const json = profile.toJSON();
    const load = json.root.children[0]!;
    expect(load.custom).toEqual([
      { category: 'sql', command: 'select * from posts where status = ? limit ?', startMs: 1, durationMs: 2 },
      { category: 'sql', command: 'select * from users where id = ?', startMs: 3, durationMs: 1, duplicate: true, similar: 1 },
      { category: 'sql', command: 'select * from users where id = ?', startMs: 5, durationMs: 1, similar: 1 },
      { category: 'sql', command: 'select * from users where id = ?', startMs: 7, durationMs: 1, duplicate: true, similar: 1 },
    ]);
    expect(json.root.custom).toEqual([
      { category: 'http', command: 'GET http://127.0.0.1:9000/avatars?ids=?&key=?', startMs: 9, durationMs: 3.5 },
    ]);
    expect(json.customSummary).toEqual([
      { category: 'http', count: 1, durationMs: 3.5, wallMs: 3.5, duplicate: 0, similar: 0 },
      { category: 'sql', count: 4, durationMs: 5, wallMs: 5, duplicate: 2, similar: 3 },
    ]);
    expect(json.similar).toEqual([{ id: 1, category: 'sql', command: 'select * from users where id = ?', count: 3, durationMs: 3 }]);
  });

  test('text: each custom timing on its step, then a summary line per category and per similar group', async () => {
    const { profile } = await nPlusOne(fakeClock());
    expect(renderText(profile)).toBe(
      [
        'web-1 at 2026-11-29T12:00:00.000Z',
        // The http call (3.5ms) and 0.5ms more ran in no step.
        ' GET /posts = 13.0ms (4.0ms in no step)',
        '> [http] GET http://127.0.0.1:9000/avatars?ids=?&key=? = 3.5ms',
        // The step that ran the loop names its N+1 (issue 59 item 5).
        '> load posts = 9.0ms (N+1: 3 × select * from users where id = ?)',
        '>> [sql] select * from posts where status = ? limit ? = 2.0ms',
        '>> [sql] select * from users where id = ? = 1.0ms (duplicate) (similar #1)',
        '>> [sql] select * from users where id = ? = 1.0ms (similar #1)',
        '>> [sql] select * from users where id = ? = 1.0ms (duplicate) (similar #1)',
        '[http] 1 x 3.5ms summed, 3.5ms wall',
        '[sql] 4 x 5.0ms summed, 5.0ms wall, 3 similar, 2 duplicate',
        '#1 [sql] 3 x 3.0ms similar: select * from users where id = ?',
        '',
      ].join('\n'),
    );
  });

  test('Server-Timing: one metric per category, with the count and never a command', async () => {
    const { profile } = await nPlusOne(fakeClock(), { redact: false });
    expect(renderServerTiming(profile)).toBe(
      'load_posts;dur=9.0;desc="load posts (N+1: 3 x sql)", http;dur=3.5;desc="http (1 x 3.5ms summed)", sql;dur=5.0;desc="sql (4 x 5.0ms summed) 2 duplicate", total;dur=13.0',
    );
  });

  test('wall time against summed time: parallel calls are counted once in dur, each in the summed time', async () => {
    const c = fakeClock();
    const { profile } = await withProfile(
      'GET /feed',
      async () => {
        // Four fetches of 40, 50, 60 and 70 ms started together, then one more later.
        const gates = [40, 50, 60, 70].map((d) => ({ d, g: deferred() }));
        const all = Promise.all(gates.map(({ d, g }) => timing('http', `GET http://api/${d}`, () => g.promise)));
        for (const { d, g } of gates) {
          c.t = d;
          g.resolve();
          await sleep(0);
        }
        await all;
        await timing('http', 'GET http://api/last', async () => {
          c.t = 90;
        });
        c.t = 100;
      },
      fixed(c),
    );
    const json = profile.toJSON();
    expect(json.customSummary).toEqual([{ category: 'http', count: 5, durationMs: 240, wallMs: 90, duplicate: 0, similar: 4 }]);
    expect(renderServerTiming(profile)).toBe('http;dur=90.0;desc="http (5 x 240.0ms summed)", total;dur=100.0');
    expect(renderText(profile)).toContain('\n[http] 5 x 240.0ms summed, 90.0ms wall, 4 similar\n');
    // JSON stored by an earlier version has no wallMs: the renderers work it out from the tree.
    for (const s of json.customSummary!) delete (s as { wallMs?: number }).wallMs;
    expect(renderServerTiming(json)).toBe('http;dur=90.0;desc="http (5 x 240.0ms summed)", total;dur=100.0');
    expect(renderText(json)).toContain('\n[http] 5 x 240.0ms summed, 90.0ms wall, 4 similar\n');
  });

  test('redact: false shows commands as given; duplicates then depend on the values', async () => {
    const { profile } = await nPlusOne(fakeClock(), { redact: false });
    const json: ProfileJSON = profile.toJSON();
    expect(json.root.children[0]!.custom!.map((c) => c.command)).toEqual([
      "select * from posts where status = 'published' limit 10",
      'select * from users where id = 7',
      'select * from users where id = 8',
      'select * from users where id = 7',
    ]);
    expect(json.root.custom![0]!.command).toBe('GET http://127.0.0.1:9000/avatars?ids=7,8&key=s3cret');
    // The group's shape is always masked: it is what the members share, not any one of them.
    expect(json.similar![0]!.command).toBe('select * from users where id = ?');
  });

  test('the same command in another category is neither a duplicate nor similar', async () => {
    const { profile } = await withProfile('job', () => {
      timing('sql', 'GET k', () => 0);
      timing('redis', 'GET k', () => 0);
    });
    const json = profile.toJSON();
    expect(json.root.custom!.map((c) => [c.duplicate, c.similar])).toEqual([
      [undefined, undefined],
      [undefined, undefined],
    ]);
    expect(json.similar).toEqual([]);
  });

  test('a profile without custom timings has no summary fields (the v1 JSON is unchanged)', async () => {
    const { profile } = await withProfile('job', () => step('s', () => 0));
    expect(Object.keys(profile.toJSON())).not.toContain('customSummary');
    expect(Object.keys(profile.toJSON())).not.toContain('similar');
  });

  test('the grouping runs once, at seal: timing() itself never normalises', async () => {
    calls.shape = 0;
    calls.redact = 0;
    let during = -1;
    const { profile } = await withProfile('job', () => {
      for (let i = 0; i < 500; i++) timing('sql', `select * from t where id = ${i % 5}`, () => 0);
      during = calls.shape + calls.redact;
    });
    expect(during).toBe(0);
    // Once per distinct command: one redaction serves both the output and the shape.
    expect(calls.redact).toBe(5);
    expect(calls.shape).toBe(5);
    profile.toJSON();
    renderText(profile);
    expect(calls.redact).toBe(5);
  });
});

describe('off path and options', () => {
  test('outside a profile timing() is fn(): same value, same error, no clock read', async () => {
    const c = fakeClock();
    const err = new Error('x');
    expect(timing('sql', 'select 1', () => 42)).toBe(42);
    const p = Promise.resolve(1);
    expect(timing('sql', 'select 1', () => p)).toBe(p);
    expect(() =>
      timing('sql', 'select 1', () => {
        throw err;
      }),
    ).toThrow(err);
    expect(c.calls).toBe(0);
  });

  test('redact and blockingMs are validated at setup with a coded error', async () => {
    await expect(withProfile('job', () => 0, { redact: 'no' as never })).rejects.toMatchObject({
      code: 'MINIPROF_ERR_INVALID_OPTION',
      message: expect.stringContaining('redact'),
    });
    await expect(withProfile('job', () => 0, { blockingMs: -1 })).rejects.toMatchObject({
      code: 'MINIPROF_ERR_INVALID_OPTION',
      message: expect.stringContaining('blockingMs'),
    });
  });
});
