import type { CpuFunctionJSON, CpuJSON, CpuProfileJSON, TimingJSON } from '../core/types.js';
import type { CpuCapture } from './cpu-sampler.js';
import { resolveFrame, type CallFrame, type Frame } from './cpu-source.js';

/**
 * CPU samples attributed to steps by time. Each sample ran at a known moment (V8's timestamps,
 * mapped to the profile's clock by the capture's offset); it is counted for the innermost step open
 * then (a child, not its parent, when both are), as its self time, under the function it names.
 * A step that held the CPU (it is `blocking`, or its samples add up to more than `blockingMs`)
 * gets `cpu`: its sampled time, the part taken while other requests were in flight (`sharedMs`:
 * V8 cannot tell whose callback ran) and its top three functions by self time.
 *
 * A sample's time is the gap to the next one (as DevTools counts it), cut at its step's end.
 *
 * A sample is named by the innermost frame in the app or a package, not by a builtin below it: 80 ms
 * in `JSON.stringify` called from `render` reads as `render`, which is the developer's to change
 * (the flame chart and the .cpuprofile keep the builtin). Steps of concurrent branches open at
 * once: the one opened last gets the sample (the same assumption as blocking's split,
 * src/analysis/blocking.ts).
 */

/** What the profile keeps from a stopped sampling (src/http/cpu.ts made it). */
export interface CpuState {
  capture: CpuCapture;
  /** The `.cpuprofile` to keep, unless over the bound (then `note` says so). */
  kept: CpuProfileJSON | undefined;
  /** Its UTF-8 JSON size (for the store's byte bound), 0 when not kept. */
  keptBytes: number;
  note: string | undefined;
  intervalUs: number;
}

const IDLE = '(idle)';
const STEP_TOP = 3;
const PROFILE_TOP = 5;

interface Tally {
  ms: number;
  sharedMs: number;
  fns: Map<string, { f: Frame; ms: number }>;
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

/** The frame each node's samples are named by (see above), memoized per node. */
function namer(p: CpuProfileJSON): (id: number) => Frame | null {
  const byId = new Map<number, CpuProfileJSON['nodes'][number]>();
  const parent = new Map<number, number>();
  for (const n of p.nodes) {
    byId.set(n.id, n);
    if (n.children !== undefined) for (const c of n.children) parent.set(c, n.id);
  }
  const memo = new Map<number, Frame | null>();
  return (id) => {
    const hit = memo.get(id);
    if (hit !== undefined) return hit;
    const leaf = byId.get(id);
    let out: Frame | null = null;
    if (leaf !== undefined && leaf.callFrame.functionName !== IDLE) {
      let named = leaf;
      // The innermost frame of the app or a package: skip builtins (no URL) and Node's own code.
      for (let n: typeof leaf | undefined = leaf; n !== undefined; n = byId.get(parent.get(n.id) ?? -1)) {
        const url = n.callFrame.url;
        if (url !== '' && !url.startsWith('node:')) {
          named = n;
          break;
        }
      }
      out = resolveFrame(named.callFrame as CallFrame);
    }
    memo.set(id, out);
    return out;
  };
}

function add(t: Tally, f: Frame, ms: number, shared: boolean): void {
  t.ms += ms;
  if (shared) t.sharedMs += ms;
  const key = `${f.fn}\u0000${f.url}\u0000${f.line}`;
  const e = t.fns.get(key);
  if (e === undefined) t.fns.set(key, { f, ms });
  else e.ms += ms;
}

function top(t: Tally, n: number): CpuFunctionJSON[] {
  return [...t.fns.values()]
    .sort((a, b) => b.ms - a.ms)
    .slice(0, n)
    .map((e) => ({ fn: e.f.fn, url: e.f.url, line: e.f.line, ms: round(e.ms) }));
}

function inShared(shared: number[], at: number): boolean {
  for (let i = 0; i + 1 < shared.length; i += 2) if (at >= shared[i]! && at <= shared[i + 1]!) return true;
  return false;
}

/** The steps in pre-order (a parent before its children), iteratively: no tree overflows the stack. */
function preorder(root: TimingJSON): TimingJSON[] {
  const out: TimingJSON[] = [];
  const stack = [root];
  while (stack.length > 0) {
    const t = stack.pop()!;
    out.push(t);
    for (let i = t.children.length - 1; i >= 0; i--) stack.push(t.children[i]!);
  }
  return out;
}

/** First index in the sorted `times` at or after `x`. */
function lowerBound(times: Float64Array, order: Uint32Array, x: number): number {
  let lo = 0;
  let hi = order.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (times[order[mid]!]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Set `cpu` on the steps of `root` that held the CPU and return the profile's `cpu` and at least
 * the UTF-8 bytes this adds to the JSON. `t0`: the profile's start on `performance.now()`'s clock.
 */
export function attributeCpu(root: TimingJSON, s: CpuState, t0: number, blockingMs: number): { json: CpuJSON; bound: number } {
  const p = s.capture.profile;
  const name = namer(p);
  const n = p.samples.length;
  // Each sample's time on the profile's clock (ms from its start) and its weight (the gap to the next).
  const times = new Float64Array(n);
  const weights = new Float64Array(n);
  let ts = p.startTime;
  for (let i = 0; i < n; i++) {
    ts += p.timeDeltas[i] ?? 0;
    times[i] = (ts - s.capture.offsetUs) / 1000 - t0;
  }
  for (let i = 0; i < n; i++) weights[i] = Math.max(0, (i + 1 < n ? (p.timeDeltas[i + 1] ?? 0) : s.intervalUs) / 1000);
  const order = Uint32Array.from({ length: n }, (_, i) => i).sort((a, b) => times[a]! - times[b]!);
  // The innermost step open at each sample: parents first, each child overwriting its own span.
  const steps = preorder(root);
  const owner = new Int32Array(n).fill(-1);
  for (let k = 0; k < steps.length; k++) {
    const t = steps[k]!;
    const end = t.startMs + t.durationMs;
    for (let j = lowerBound(times, order, t.startMs); j < n && times[order[j]!]! <= end; j++) owner[order[j]!] = k;
  }
  const tallies = new Map<number, Tally>();
  const whole: Tally = { ms: 0, sharedMs: 0, fns: new Map() };
  for (let i = 0; i < n; i++) {
    const k = owner[i]!;
    if (k === -1) continue;
    const f = name(p.samples[i]!);
    if (f === null) continue;
    const shared = inShared(s.capture.shared, times[i]! + t0);
    // A gap to the next sample (the sampler thread descheduled on a busy machine) counts no
    // further than the step's end: a step is never said to have had more CPU than its duration.
    const step = steps[k]!;
    const w = Math.min(weights[i]!, step.startMs + step.durationMs - times[i]!);
    let t = tallies.get(k);
    if (t === undefined) tallies.set(k, (t = { ms: 0, sharedMs: 0, fns: new Map() }));
    add(t, f, w, shared);
    add(whole, f, w, shared);
  }
  let bound = 0;
  for (const [k, t] of tallies) {
    const step = steps[k]!;
    if (step.blocking !== true && t.ms <= blockingMs) continue;
    step.cpu = { ms: round(t.ms), top: top(t, STEP_TOP) };
    if (t.sharedMs > 0) step.cpu.sharedMs = round(t.sharedMs);
    bound += cpuBytes(step.cpu);
  }
  const json: CpuJSON = { intervalUs: s.intervalUs, ms: round(whole.ms), top: top(whole, PROFILE_TOP) };
  if (whole.sharedMs > 0) json.sharedMs = round(whole.sharedMs);
  bound += cpuBytes(json) + 8;
  if (s.kept !== undefined) {
    json.profile = s.kept;
    bound += 11 + s.keptBytes;
  }
  if (s.note !== undefined) {
    json.note = s.note;
    bound += 10 + 6 * s.note.length;
  }
  return { json, bound };
}

/** At least the UTF-8 JSON bytes of a small value (names and URLs can hold anything: 6 bytes a unit). */
function cpuBytes(v: { top: CpuFunctionJSON[] }): number {
  let b = 128;
  for (const f of v.top) b += 96 + 6 * (f.fn.length + f.url.length);
  return b;
}
