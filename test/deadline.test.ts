import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { unwatch, watch, watched, type Expiring } from '../src/http/deadline.js';
import { resolveHttp } from '../src/http/config.js';
import { ProfiledResponse } from '../src/http/response.js';

function response(log: string[], name: string): Expiring {
  return {
    deadlineAt: 0,
    prevLink: null,
    nextLink: null,
    expire() {
      log.push(name);
    },
  };
}

describe('maxDurationMs deadlines on one shared timer', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('expires each response at its own deadline, in deadline order, and only the ones still open', () => {
    const log: string[] = [];
    const slow = response(log, 'slow');
    const quick = response(log, 'quick');
    const closed = response(log, 'closed');
    const last = response(log, 'last');
    watch(slow, 100);
    // Earlier than the one the timer is armed for: it must be re-armed, not wait for 100.
    watch(quick, 30);
    watch(closed, 60);
    watch(last, 250);
    unwatch(closed);
    expect(watched()).toBe(3);

    vi.advanceTimersByTime(29);
    expect(log).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(log).toEqual(['quick']);
    vi.advanceTimersByTime(69);
    expect(log).toEqual(['quick']);
    vi.advanceTimersByTime(1);
    expect(log).toEqual(['quick', 'slow']);
    vi.advanceTimersByTime(150);
    expect(log).toEqual(['quick', 'slow', 'last']);
    expect(watched()).toBe(0);
    // Nothing left: no timer either.
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a response closed before its deadline is never expired, and its slot is let go', () => {
    const log: string[] = [];
    const a = response(log, 'a');
    watch(a, 50);
    unwatch(a);
    expect(watched()).toBe(0);
    vi.advanceTimersByTime(1000);
    expect(log).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a response watched while the timer is armed for an earlier one is expired on time too', () => {
    const log: string[] = [];
    watch(response(log, 'first'), 40);
    vi.advanceTimersByTime(20);
    watch(response(log, 'second'), 40);
    vi.advanceTimersByTime(20);
    expect(log).toEqual(['first']);
    vi.advanceTimersByTime(19);
    expect(log).toEqual(['first']);
    vi.advanceTimersByTime(1);
    expect(log).toEqual(['first', 'second']);
  });
});

describe('a developer response gets its maxDurationMs on real time', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const open = (options: Record<string, unknown>): ProfiledResponse =>
    new ProfiledResponse(resolveHttp({ isDeveloper: () => true, results: false, maxDurationMs: 1000, ...options }, 'test', () => undefined) as never, 'GET', '/');

  it('whatever an injected clock reads', () => {
    // The profile's own clock is far from real time: the deadline must not be taken from it.
    vi.advanceTimersByTime(50_000);
    const early = open({ clock: () => 0 });
    const late = open({ clock: () => 1e9 });
    vi.advanceTimersByTime(999);
    expect([early.profile.sealed, late.profile.sealed]).toEqual([false, false]);
    vi.advanceTimersByTime(1);
    expect([early.profile.sealed, late.profile.sealed]).toEqual([true, true]);
  });

  it('on the default clock, from the profile start', () => {
    vi.advanceTimersByTime(50_000);
    const r = open({});
    vi.advanceTimersByTime(999);
    expect(r.profile.sealed).toBe(false);
    vi.advanceTimersByTime(1);
    expect(r.profile.sealed).toBe(true);
  });
});
