import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { currentProfile, step, timing, withProfile, type ProfileJSON, type TimingJSON } from '../src/index.js';
import { als } from '../src/core/context.js';
import { resolveCore } from '../src/core/options.js';
import { Profile } from '../src/core/profile.js';
import type { TimingNode } from '../src/core/timing.js';
import { fakeClock, fixed } from './helpers/clock.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function withoutId(json: ProfileJSON): Omit<ProfileJSON, 'id'> {
  expect(json.id).toMatch(UUID);
  const { id: _id, ...rest } = json;
  return rest;
}

describe('toJSON: the v1 shape', () => {
  test('times are whole microseconds from the start; a step ends where its start plus duration say', async () => {
    const c = fakeClock(0);
    const { profile } = await withProfile(
      'job',
      () => {
        c.t = 1.2344; // 1234.4 µs: 1.234
        step('a', () => {
          c.t = 3.4566; // 3456.6 µs: 3.457
          step('b', () => 0);
        });
        c.t = 5.0004999;
      },
      fixed(c),
    );
    const a = profile.toJSON().root.children[0]!;
    // Durations are differences of rounded readings (2.223), not rounded differences (2.222):
    // a child never seems to outlast its parent by a rounding.
    expect(a).toMatchObject({ name: 'a', startMs: 1.234, durationMs: 2.223 });
    expect(a.children[0]).toMatchObject({ name: 'b', startMs: 3.457, durationMs: 0 });
    expect(profile.toJSON().durationMs).toBe(5);
  });

  test('a reading rounds to the whole microsecond as Math.round does, and is never -0', () => {
    // nowUs rounds with floor(x + 0.5) for speed: the two agree on every time below 2^52 µs but
    // within one ulp of a half, and floor gives +0 where Math.round gives -0 (just below t0).
    fc.assert(
      fc.property(fc.double({ min: -1e9, max: 1e9, noNaN: true }), fc.double({ min: -1e9, max: 1e9, noNaN: true }), (t0, t) => {
        let now = t0;
        const p = new Profile('x', resolveCore({ clock: () => now, machine: 'm' }));
        now = t;
        const us = p.nowUs();
        expect(Object.is(us, -0)).toBe(false);
        expect(us).toBe(Math.round((t - t0) * 1000) + 0);
      }),
    );
    let now = 0;
    const p = new Profile('x', resolveCore({ clock: () => now, machine: 'm' }));
    for (const [t, us] of [[0.00051, 1], [0.00049, 0], [-0.00049, 0], [-0.00051, -1], [1234.5678, 1234568]] as const) {
      now = t;
      expect(p.nowUs()).toBe(us);
    }
  });

  test('exact JSON for a known tree with an injected clock and now', async () => {
    const c = fakeClock(500);
    const err = new Error('x');
    const { profile } = await withProfile(
      'nightly import',
      async () => {
        c.t = 501.2;
        await step('load user', async () => {
          c.t = 501.3;
          await timing('sql', 'select * from users where id = ?', async () => {
            c.t = 504.4;
          });
          c.t = 504.6;
        });
        try {
          step('render', () => {
            step('header', () => {
              c.t = 505;
            });
            c.t = 510;
            throw err;
          });
        } catch {
          // expected
        }
        c.t = 876.9;
      },
      fixed(c),
    );
    expect(withoutId(profile.toJSON())).toEqual({
      v: 1,
      name: 'nightly import',
      machine: 'web-1',
      started: '2026-11-29T12:00:00.000Z',
      durationMs: 376.9,
      droppedSteps: 0,
      warnings: [],
      root: {
        name: 'nightly import',
        startMs: 0,
        durationMs: 376.9,
        children: [
          {
            name: 'load user',
            startMs: 1.2,
            durationMs: 3.4,
            children: [],
            custom: [{ category: 'sql', command: 'select * from users where id = ?', startMs: 1.3, durationMs: 3.1 }],
            // The timing's async fn moved the clock before its first await.
            syncMs: 3.2,
          },
          {
            name: 'render',
            startMs: 4.6,
            durationMs: 5.4,
            error: true,
            children: [{ name: 'header', startMs: 4.6, durationMs: 0.4, children: [] }],
          },
        ],
        // The time in no step: 376.9 less 3.4 and 5.4.
        selfMs: 368.1,
      },
      customSummary: [{ category: 'sql', count: 1, durationMs: 3.1, wallMs: 3.1, duplicate: 0, similar: 0 }],
      similar: [],
    });
    // Sealed: equal every time, but each caller gets a copy of its own, so changing one changes
    // neither the profile nor what the results store keeps (the same object as `data()`).
    const mine = profile.toJSON();
    expect(mine).not.toBe(profile.toJSON());
    mine.root.children.length = 0;
    mine.durationMs = 0;
    expect(profile.toJSON()).toEqual(profile.data());
    expect(profile.data().root.children).toHaveLength(2);
    expect(profile.data()).toBe(profile.data());
    expect(JSON.parse(JSON.stringify(profile))).toEqual(profile.toJSON());
    expect(profile.durationMs).toBe(376.9);
  });

  test('a leaf\'s children in toJSON() are the caller\'s own, open or sealed; miniprof\'s own JSON shares one frozen empty array', async () => {
    const leaves = (t: TimingJSON, out: TimingJSON[][] = []): TimingJSON[][] => {
      if (t.children.length === 0) out.push(t.children);
      for (const c of t.children) leaves(c, out);
      return out;
    };
    let open: ProfileJSON | undefined;
    const { profile } = await withProfile('job', async () => {
      step('a', () => 1);
      step('b', () => 1);
      open = currentProfile()!.toJSON();
    });
    const mine = leaves(open!.root);
    expect(mine).toHaveLength(2);
    // Each leaf's array is its own: a push lands in that one only, and nothing of the profile's.
    mine[0]!.push({ name: 'x', startMs: 0, durationMs: 0, children: [] });
    expect(mine[1]).toEqual([]);
    const sealed = (profile as unknown as { data(): ProfileJSON }).data();
    const shared = leaves(sealed.root);
    expect(shared).toHaveLength(2);
    expect(shared[0]).toBe(shared[1]);
    expect(Object.isFrozen(shared[0])).toBe(true);
    expect(shared[0]).toEqual([]);
    expect(sealed.warnings).toBe(shared[0]);
    expect(open!.warnings).not.toBe(profile.toJSON().warnings);
    const copy = leaves(profile.toJSON().root);
    expect(copy[0]).not.toBe(copy[1]);
    copy[0]!.push({ name: 'y', startMs: 0, durationMs: 0, children: [] });
    expect(leaves(profile.toJSON().root)).toEqual([[], []]);
  });

  test('the request field is a copy of what the adapter gave', () => {
    const c = fakeClock();
    const request = { method: 'GET', path: '/users/42' };
    const profile = new Profile('GET /users/42', resolveCore(fixed(c) as Record<string, unknown>), request);
    c.t = 2;
    const json = profile.seal();
    request.path = '/changed';
    expect(json.request).toEqual({ method: 'GET', path: '/users/42' });
    expect(Object.keys(json)).toEqual(['v', 'id', 'name', 'machine', 'started', 'durationMs', 'droppedSteps', 'warnings', 'request', 'root']);
    expect(json.durationMs).toBe(2);
  });

  test('durations and starts are rounded to microseconds', async () => {
    const c = fakeClock(1000);
    const { profile } = await withProfile(
      'job',
      () => {
        c.t = 1000.0012345;
        step('s', () => {
          // 1001.2358 - 1000.0012345 = 1.2345655 ms
        c.t = 1001.2358;
        });
        c.t = 1002.00000049;
      },
      fixed(c),
    );
    const json = profile.toJSON();
    expect(json.root.children[0]).toEqual({ name: 's', startMs: 0.001, durationMs: 1.235, children: [] });
    expect(json.durationMs).toBe(2);
  });

  test('while open, toJSON is a snapshot measured to now; steps running at seal are flagged unfinished', async () => {
    const c = fakeClock();
    let mid: ProfileJSON | undefined;
    const { profile } = await withProfile(
      'job',
      () => {
        c.t = 1;
        void step('never', () => new Promise(() => {}));
        const open = step('open-using');
        c.t = 2;
        void timing('sql', 'hangs', () => new Promise(() => {}));
        c.t = 3;
        mid = currentProfile()!.toJSON();
        expect(open.name).toBe('open-using');
        c.t = 10;
      },
      fixed(c),
    );
    expect(mid!.durationMs).toBe(3);
    expect(mid!.root.children.map((t) => [t.name, t.durationMs, t.unfinished])).toEqual([
      ['never', 2, true],
      ['open-using', 2, true],
    ]);
    const json = profile.toJSON();
    expect(json.durationMs).toBe(10);
    expect(json.root).toEqual({
      name: 'job',
      startMs: 0,
      durationMs: 10,
      children: [
        { name: 'never', startMs: 1, durationMs: 9, children: [], unfinished: true },
        {
          name: 'open-using',
          startMs: 1,
          durationMs: 9,
          children: [],
          unfinished: true,
          custom: [{ category: 'sql', command: 'hangs', startMs: 2, durationMs: 8, unfinished: true }],
        },
      ],
      // Both children were open at once: (9 + 9) / 10.
      parallelism: 1.8,
      // From 0 to 1, no step was running: their union is 1 to 10.
      selfMs: 1,
    });
  });

  test('a clock that goes backwards gives durations clamped at 0, never a throw', async () => {
    const c = fakeClock(100);
    const { profile } = await withProfile(
      'job',
      async () => {
        c.t = 90;
        step('back', () => {
          c.t = 50;
        });
        await timing('sql', 'q', async () => {
          c.t = 10;
        });
        const t = step('using');
        c.t = 5;
        t.stop();
        c.t = 0;
      },
      fixed(c),
    );
    const json = profile.toJSON();
    expect(json.durationMs).toBe(0);
    expect(json.root.durationMs).toBe(0);
    expect(json.root.children.map((t) => t.durationMs)).toEqual([0, 0]);
    expect(json.root.custom!.map((t) => t.durationMs)).toEqual([0]);
    for (const t of json.root.children) expect(Number.isFinite(t.startMs)).toBe(true);
  });

  test('C11: a bigint clock (process.hrtime.bigint) and a `now` that is no date never throw', async () => {
    let t = 10n;
    const { result, profile } = await withProfile(
      'job',
      async () => {
        t += 2_000n;
        await step('s', async () => {
          t += 3n;
        });
        return step('sync', () => 'ok');
      },
      { clock: () => t as unknown as number, now: () => Number.NaN, machine: 'm' },
    );
    expect(result).toBe('ok');
    const json = profile.toJSON();
    expect(json.root.children.map((c) => [c.name, c.startMs, c.durationMs])).toEqual([
      ['s', 2000, 3],
      ['sync', 2003, 0],
    ]);
    expect(Number.isNaN(Date.parse(json.started))).toBe(false);
    for (const bad of ['yesterday', [], {}, 1e20, -Infinity, 10n]) {
      const r = await withProfile('job', () => step('s', () => 1), { now: () => bad as unknown as number });
      expect(r.result).toBe(1);
      expect(r.profile.toJSON().started).toMatch(/^\d{4}-\d\d-\d\dT/);
    }
  });

  test('warnings are bounded: 20 kept, the rest counted in one last line', async () => {
    const { profile } = await withProfile('job', () => {
      for (let i = 0; i < 35; i++) {
        const a = step(`a${i}`);
        const b = step(`b${i}`);
        a.stop();
        b.stop();
      }
    });
    const w = profile.toJSON().warnings;
    expect(w).toHaveLength(21);
    expect(w[0]).toContain('"a0"');
    expect(w[19]).toContain('"a19"');
    expect(w[20]).toBe('15 more warnings');
  });
});

describe('seal and retention', () => {
  test('seal is idempotent and freezes the JSON; later changes to the live profile object do not leak in', async () => {
    const c = fakeClock();
    const { profile } = await withProfile('job', () => step('s', () => (c.t = 3)), fixed(c));
    const json = profile.data();
    c.t = 99;
    expect(profile.seal()).toBe(json);
    expect(profile.seal()).toBe(json);
    expect(profile.toJSON().durationMs).toBe(3);
    expect(profile.sealed).toBe(true);
  });

  test('D4: after seal every live node is detached (profile, parent, children are null) and the custom timings are let go', async () => {
    const nodes: TimingNode[] = [];
    const { profile } = await withProfile('job', async () => {
      nodes.push(als.getStore()!);
      await step('a', async () => {
        nodes.push(als.getStore()!);
        timing('sql', 'q', () => 0);
        await step('b', async () => {
          nodes.push(als.getStore()!);
        });
        step('still-running', () => {
          nodes.push(als.getStore()!);
          return new Promise(() => {});
        });
      });
      {
        using _u = step('u');
        nodes.push(_u as TimingNode);
      }
    });
    expect(nodes.map((n) => n.name)).toEqual(['job', 'a', 'b', 'still-running', 'u']);
    for (const n of nodes) {
      expect(n.profile).toBeNull();
      expect(n.parent).toBeNull();
      expect(n.children).toBeNull();
      expect(n.link).toBeNull();
    }
    expect(profile.customs).toBeNull();
    // The JSON kept the custom timing too.
    expect(profile.toJSON().root.children[0]!.custom?.map((c) => c.command)).toEqual(['q']);
    // The JSON kept everything.
    expect(profile.toJSON().root.children.map((t) => t.name)).toEqual(['a', 'u']);
  });

  test('D4: detaching a very deep tree does not overflow the stack', async () => {
    const dive = (n: number): number => (n === 0 ? 0 : step('d', () => 1 + dive(n - 1)));
    const { profile } = await withProfile('job', () => dive(256), { maxDepth: 256 });
    expect(profile.sealed).toBe(true);
  });
});
