import { describe, expect, test } from 'vitest';
import { step, timing, type ProfileJSON } from '../src/index.js';
import { closeProfile, runInProfile } from '../src/core/context.js';
import { resolveCore } from '../src/core/options.js';
import { Profile } from '../src/core/profile.js';
import { fakeClock, fixed } from './helpers/clock.js';

/**
 * Profile.freeze() (the snapshot a response is rendered from) is reused by the seal when nothing
 * changed in between. Each case runs twice, with and without a freeze, and the sealed JSON must
 * be the same: reuse is an optimisation, never a different output.
 */
type Between = (p: Profile, c: ReturnType<typeof fakeClock>) => void;

function run(freeze: boolean, between: Between): { sealed: ProfileJSON; frozen: ProfileJSON | null } {
  const c = fakeClock(100);
  const p = new Profile('GET /', resolveCore(fixed(c) as Record<string, unknown>), { method: 'GET', path: '/' });
  let late: (() => void) | undefined;
  runInProfile(p, () => {
    step('a', () => {
      c.t = 101;
      timing('sql', 'select 1', () => {
        c.t = 102;
      });
    });
    const t = step('still running at the freeze');
    late = () => t.stop();
    if (!between.name.startsWith('running')) t.stop();
  });
  c.t = 103;
  p.stopRoot();
  const frozen = freeze ? p.freeze() : null;
  c.t = 104;
  runInProfile(p, () => between(p, c));
  if (between.name.startsWith('running')) {
    c.t = 105;
    late!();
  }
  p.request!.status = 200;
  closeProfile(p);
  return { sealed: p.data(), frozen };
}

const cases: Between[] = [
  function nothing() {},
  function stepAdded() {
    step('after', () => {});
  },
  function customAdded() {
    timing('sql', 'select 2', () => {});
  },
  function warned(p) {
    p.warn('late warning');
  },
  function failed(p) {
    p.failRoot();
  },
  function dropped(p) {
    p.droppedSteps++;
  },
  function runningStepEnds() {},
];

describe('freeze, then seal', () => {
  for (const between of cases) {
    test(`${between.name}: the sealed JSON is the one a fresh build gives`, () => {
      const a = run(true, between);
      const b = run(false, between);
      const { id: _a, ...sa } = a.sealed;
      const { id: _b, ...sb } = b.sealed;
      expect(JSON.stringify(sa)).toBe(JSON.stringify(sb));
      expect(a.sealed.request).toEqual({ method: 'GET', path: '/', status: 200 });
    });
  }

  test('nothing changed: the frozen snapshot itself is sealed, with the request outcome patched in', () => {
    const a = run(true, cases[0]!);
    expect(a.sealed).toBe(a.frozen);
    expect(a.sealed.request).toEqual({ method: 'GET', path: '/', status: 200 });
  });

  test('a step added after the freeze: the seal builds the JSON again', () => {
    const a = run(true, cases[1]!);
    expect(a.sealed).not.toBe(a.frozen);
    expect(a.sealed.root.children.map((t) => t.name)).toEqual(['a', 'still running at the freeze', 'after']);
  });

  test('a step running at the freeze: the seal measures its real end', () => {
    const a = run(true, cases[6]!);
    expect(a.sealed).not.toBe(a.frozen);
    const t = a.sealed.root.children[1]!;
    expect(t.unfinished).toBeUndefined();
    expect(t.durationMs).toBe(3);
  });
});
