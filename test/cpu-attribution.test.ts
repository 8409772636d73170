/**
 * src/analysis/cpu.ts on a synthetic V8 profile: exact attribution by time, with no sampler and
 * no clock (the times are chosen, the mapping is the capture's offset).
 */
import { describe, expect, it } from 'vitest';
import { attributeCpu, type CpuState } from '../src/analysis/cpu-samples.js';
import type { CpuProfileJSON, TimingJSON } from '../src/core/types.js';

const frame = (functionName: string, url: string, lineNumber: number) => ({ functionName, scriptId: '1', url, lineNumber, columnNumber: 0 });

/** root → handler (app) → JSON.stringify (builtin); root → (idle); root → (garbage collector). */
function profile(samples: number[], timeDeltas: number[]): CpuProfileJSON {
  return {
    nodes: [
      { id: 1, callFrame: frame('(root)', '', -1), children: [2, 4, 5] },
      { id: 2, callFrame: frame('handler', 'file:///srv/app.js', 9), children: [3] },
      { id: 3, callFrame: frame('stringify', '', -1) },
      { id: 4, callFrame: frame('(idle)', '', -1) },
      { id: 5, callFrame: frame('(garbage collector)', '', -1) },
    ],
    // V8's clock: the profile starts at 1,000,000 µs; the offset below puts that at t0 = 100 ms.
    startTime: 1_000_000,
    endTime: 1_000_000 + timeDeltas.reduce((a, b) => a + b, 0),
    samples,
    timeDeltas,
  };
}

function step(name: string, startMs: number, durationMs: number, children: TimingJSON[] = [], extra: Partial<TimingJSON> = {}): TimingJSON {
  return { name, startMs, durationMs, children, ...extra };
}

function state(p: CpuProfileJSON, shared: number[] = []): CpuState {
  // offsetUs = V8 µs − performance.now() µs: V8's 1,000,000 µs is performance.now() 100 ms.
  return { capture: { profile: p, offsetUs: 1_000_000 - 100_000, shared }, kept: undefined, keptBytes: 0, note: undefined, intervalUs: 1000 };
}

describe('attributeCpu', () => {
  it('each sample goes to the innermost step open then, named by the innermost frame with a URL, idle left out', () => {
    // Samples every 1 ms from the profile's start (t0 = 100 ms on the clock: profile time 0).
    const p = profile([2, 3, 3, 4, 2, 5, 5, 3, 4, 4], [1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000]);
    const child = step('child', 4.5, 3, [], { blocking: true });
    const root = step('GET /', 0, 10, [step('parse', 0.5, 3), child]);
    const { json } = attributeCpu(root, state(p), 100, 1);
    // parse [0.5, 3.5]: samples at 1, 2, 3 ms (handler, stringify→handler ×2), the last cut at its
    // end: 2.5 ms. child [4.5, 7.5]: 5, 6, 7 ms (handler, GC, GC cut): 2.5 ms.
    expect(root.children[0]!.cpu).toEqual({ ms: 2.5, top: [{ fn: 'handler', url: 'file:///srv/app.js', line: 10, ms: 2.5 }] });
    expect(child.cpu).toEqual({
      ms: 2.5,
      top: [
        { fn: '(garbage collector)', url: '', line: 0, ms: 1.5 },
        { fn: 'handler', url: 'file:///srv/app.js', line: 10, ms: 1 },
      ],
    });
    // The root's own: 8 ms (stringify→handler), 1 ms, not above blockingMs: no `cpu` on it.
    expect(root.cpu).toBeUndefined();
    expect(json).toEqual({
      intervalUs: 1000,
      ms: 6,
      top: [
        { fn: 'handler', url: 'file:///srv/app.js', line: 10, ms: 4.5 },
        { fn: '(garbage collector)', url: '', line: 0, ms: 1.5 },
      ],
    });
  });

  it('samples taken while another request was in flight are counted as shared', () => {
    const p = profile([2, 2, 2, 2], [1000, 1000, 1000, 1000]);
    const s = step('work', 0.5, 4, [], { blocking: true });
    // Another request in flight from 101.5 to 102.5 ms on the clock: the sample at 102 ms.
    attributeCpu(step('GET /', 0, 5, [s]), state(p, [101.5, 102.5]), 100, 1);
    expect(s.cpu).toEqual({ ms: 3.5, sharedMs: 1, top: [{ fn: 'handler', url: 'file:///srv/app.js', line: 10, ms: 3.5 }] });
  });

  it('a step that neither blocked nor had more than blockingMs of samples gets nothing', () => {
    const p = profile([2, 2], [1000, 1000]);
    const s = step('light', 0.5, 3);
    attributeCpu(step('GET /', 0, 5, [s]), state(p), 100, 5);
    expect(s.cpu).toBeUndefined();
  });
});
