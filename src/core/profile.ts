import { CustomNode, F_ERROR, F_HANDLER, F_OFF_CPU, F_SYNC, F_TRACED, RUNNING, TimingNode, type Pending } from './timing.js';
import type { CoreConfig } from './options.js';
import { report } from './errors.js';
import { analyseCustom } from '../analysis/custom.js';
import { analyseFanOut } from '../analysis/fanout.js';
import { analyseNPlusOne } from '../analysis/nplusone.js';
import { attributeStalls, MAX_STALLS, notRunMs, STALL, type Stalls } from '../analysis/blocking.js';
import { loopCredit } from '../analysis/loop.js';
import { attributeCpu, type CpuState } from '../analysis/cpu-samples.js';
import { attributeGc, gcFlush, MAX_GC } from '../analysis/gc.js';
import { selfMs } from '../analysis/self.js';
import { warnLostContext } from './lost-context.js';
import type { CustomTimingJSON, ProfileJSON, RequestInfo, TimingJSON } from './types.js';
import { jsonCopy } from './json.js';
import { randomUUID } from 'node:crypto';
import { flat } from './names.js';
import type { Linked } from './linked.js';
import { sampled, traceHooks, validTraceId, type TraceRef } from './trace.js';

const MAX_WARNINGS = 20;

/** The JSON's milliseconds from the live nodes' whole microseconds. */
function ms(us: number): number {
  return us / 1000;
}

/**
 * The timing tree of one request (or one `withProfile` call). While it is open, steps are added
 * to it; once sealed it is an immutable JSON value and the live nodes are let go.
 */
export class Profile implements Linked {
  readonly id: string;
  readonly name: string;
  readonly machine: string;
  /** Epoch milliseconds at the start. */
  readonly startedAt: number;
  request: RequestInfo | undefined;
  droppedSteps: number;
  readonly warnings: string[];
  /** @internal */ readonly config: CoreConfig;
  /** @internal */ readonly t0: number;
  /** @internal */ root: TimingNode<Profile>;
  /** @internal steps and custom timings recorded so far, against `maxSteps`. */
  count: number;
  /**
   * @internal Custom timings by the step they were recorded under, in order; null until the first
   * (and again once sealed). Here rather than in a field of every node: see TimingNode.
   */
  customs: Map<TimingNode, CustomNode[]> | null;
  private sealedJSON: ProfileJSON | null;
  /** The snapshot `freeze()` took, and what the profile looked like then (see `unchanged`). */
  private frozenJSON: ProfileJSON | null;
  private frozenKey: number[] | null;
  /** {@link jsonBound} of the last snapshot, of `frozenJSON` and of `sealedJSON`. */
  private snapBound: number;
  private frozenBound: number;
  private sealedBound: number;
  private extraWarnings: number;
  private clockFailed: boolean;
  private lateWarned: boolean;
  /** @internal The largest event-loop delay seen while open (src/analysis/loop.ts), in ms. */
  loopDelayMs: number;
  /** @internal Stalls of more than `blockingMs` seen while open (src/analysis/blocking.ts); null until one. */
  stalls: Stalls | null;
  /** @internal Entered with runInProfile and not yet closed (src/core/context.ts). */
  entered: boolean;
  /** @internal The first profile the event-loop monitor measured in this process (src/analysis/loop.ts). */
  startup: boolean;
  /** @internal The thread's CPU time (µs) as the monitor began measuring it (src/analysis/loop.ts). */
  cpu0: number;
  /** @internal Links in the event-loop sampler's set of open profiles (src/core/linked.ts). */
  prevLink: Linked | null;
  /** @internal */
  nextLink: Linked | null;
  /** The id of the OpenTelemetry trace that was active as the profile opened, if sampled (miniprof/otel). */
  readonly traceId: string | undefined;
  /** @internal That span's context, for exportProfile: the parent of the exported steps. */
  readonly trace: TraceRef | undefined;
  /**
   * @internal Calls in flight that both miniprof's own instrumentation and an OpenTelemetry span
   * may report (src/instrument/record.ts); null until the first, and again once sealed.
   */
  pending: Pending[] | null;
  /** @internal The request's CPU samples once its sampling stopped (src/http/cpu.ts); null if not sampled. */
  cpu: CpuState | null;
  /** @internal GC pauses while open, flat `[fromUs, durUs, …]` (src/analysis/gc.ts); null until one. */
  gc: number[] | null;

  /** @internal Profiles are made by `withProfile` and the adapters. */
  constructor(name: string, config: CoreConfig, request?: RequestInfo) {
    this.config = config;
    this.id = randomUUID();
    this.name = name;
    this.machine = config.machine;
    // A `now` that gives no valid date (NaN, a string, an object whose conversion throws) would
    // make the seal throw. One that throws is a setup fault: the adapters report it and leave
    // the request unprofiled.
    const started = toNumber(config.now());
    this.startedAt = Number.isFinite(started) && Math.abs(started) <= 8.64e15 ? started : Date.now();
    this.request = request;
    this.droppedSteps = 0;
    this.warnings = [];
    this.count = 0;
    this.customs = null;
    this.loopDelayMs = 0;
    this.stalls = null;
    this.entered = false;
    this.startup = false;
    this.cpu0 = 0;
    this.prevLink = null;
    this.nextLink = null;
    this.sealedJSON = null;
    this.frozenJSON = null;
    this.frozenKey = null;
    this.snapBound = -1;
    this.frozenBound = -1;
    this.sealedBound = -1;
    this.extraWarnings = 0;
    this.clockFailed = false;
    this.lateWarned = false;
    this.pending = null;
    this.cpu = null;
    this.gc = null;
    this.trace = activeTrace(config);
    // A trace the sampler dropped is nowhere to link to; its spans may still join (MiniprofSampler).
    this.traceId = this.trace !== undefined && sampled(this.trace) ? this.trace.traceId : undefined;
    // A clock returning a bigint (process.hrtime.bigint) must not throw on mixing.
    this.t0 = toNumber(config.clock());
    this.root = new TimingNode(name, null, this, 0);
  }

  /**
   * @internal Whole microseconds since the profile started, on its monotonic clock. Microsecond
   * precision is all a clock on a VM gives (and all the JSON shows), and whole numbers keep each
   * node small. Rounded as `floor(x + 0.5)`, which never gives -0.
   *
   * An injected clock that throws is the profiler's fault, not the app's: it is reported once
   * and reads as the start from then on, so the app's steps (and the seal) keep working.
   */
  nowUs(): number {
    try {
      return Math.floor((toNumber(this.config.clock()) - this.t0) * 1000 + 0.5);
    } catch (err) {
      if (!this.clockFailed) {
        this.clockFailed = true;
        this.warn('the clock threw; later times read as 0');
        report(this.config.onInternalError, err);
      }
      return 0;
    }
  }

  get sealed(): boolean {
    return this.sealedJSON !== null;
  }

  /** The root's duration: so far while open, final once sealed. */
  get durationMs(): number {
    return this.data().durationMs;
  }

  /** @internal A custom timing under `parent` (already counted against `maxSteps`). */
  addCustom(parent: TimingNode, c: CustomNode): void {
    if (this.customs === null) this.customs = new Map();
    const list = this.customs.get(parent);
    if (list === undefined) this.customs.set(parent, [c]);
    else list.push(c);
  }

  /** @internal A custom timing found to nest deeper than where it was opened (src/instrument/spans.ts). */
  moveCustom(from: TimingNode, to: TimingNode, c: CustomNode): void {
    if (this.removeCustom(from, c)) this.addCustom(to, c);
  }

  /**
   * @internal A custom timing found to be part of another call already recorded (a span of one
   * command of a node-redis MULTI, src/instrument/record.ts): out of the tree and of the count.
   */
  dropCustom(at: TimingNode, c: CustomNode): void {
    if (this.removeCustom(at, c)) this.count--;
  }

  private removeCustom(at: TimingNode, c: CustomNode): boolean {
    const list = this.customs?.get(at);
    const i = list === undefined ? -1 : list.indexOf(c);
    if (i === -1) return false;
    list!.splice(i, 1);
    if (list!.length === 0) this.customs!.delete(at);
    return true;
  }

  /**
   * @internal The loop was busy without a break over `[fromUs, toUs]` (src/analysis/loop.ts). The
   * same stall seen again later (at a freeze, then at the tick) starts at the same time: extended.
   */
  addStall(fromUs: number, toUs: number, shared: boolean, cpuUs: number): void {
    const s = this.stalls;
    const at = s === null ? -1 : s.length - STALL;
    if (s !== null && s[at] === fromUs) {
      // Seen again later: the CPU time is read from the same tick, so the later reading covers it.
      if (toUs > s[at + 1]!) s[at + 1] = toUs;
      if (shared) s[at + 2] = 1;
      if (cpuUs > s[at + 3]!) s[at + 3] = cpuUs;
      return;
    }
    if (s === null) this.stalls = [fromUs, toUs, shared ? 1 : 0, cpuUs];
    else if (s.length < STALL * MAX_STALLS) s.push(fromUs, toUs, shared ? 1 : 0, cpuUs);
  }

  /**
   * @internal Work was recorded after the step it ran in had ended (src/core/timing.ts parentIn):
   * one warning per profile, naming the first such step.
   */
  lateWork(ended: string, at: string): void {
    if (this.lateWarned) return;
    this.lateWarned = true;
    this.warn(
      `work was recorded after its step "${ended}" had ended, and is shown under "${at}": the step did not await it, ` +
        'or a library lost the async context on the way (a promise library without async hooks). Await the work inside its step.',
    );
  }

  /** @internal A GC pause while open (src/analysis/gc.ts); bounded like the stalls. */
  addGc(fromUs: number, durUs: number): void {
    if (this.sealedJSON !== null) return;
    if (this.gc === null) this.gc = [fromUs, durUs];
    else if (this.gc.length < 2 * MAX_GC) this.gc.push(fromUs, durUs);
  }

  /** @internal Warnings are bounded like everything else a request can make. */
  warn(message: string): void {
    if (this.warnings.length < MAX_WARNINGS) this.warnings.push(message);
    else this.extraWarnings++;
  }

  /** @internal Stop the root now if it is still running (the response is complete). */
  stopRoot(): void {
    if (this.sealedJSON === null && this.root.durationUs === RUNNING) this.root.end(this, 0);
  }

  /** @internal Mark the root as errored (the request's handler threw). */
  failRoot(): void {
    this.root.flags |= F_ERROR;
  }

  /**
   * Seal: stop the root, freeze the JSON, and cut every live node loose so that nothing a
   * request left behind (a timer, a never-awaited promise) keeps the tree alive. Idempotent.
   */
  seal(): ProfileJSON {
    if (this.sealedJSON !== null) return this.sealedJSON;
    this.stopRoot();
    let json = this.reusable();
    let bound = this.frozenBound;
    if (json === null) {
      json = this.snapshot(false);
      bound = this.snapBound;
    }
    this.frozenJSON = null;
    this.sealedJSON = json;
    // The request's part is counted here: reusable() put the request's final state in.
    this.sealedBound = withRequest(bound, json.request);
    detach(this.root);
    this.customs = null;
    this.pending = null;
    return json;
  }

  /**
   * The v1 JSON: final once sealed; while open, a snapshot with running steps measured to now.
   * Always a fresh object of the caller's own: changing it changes neither the profile nor the
   * copy the results store keeps.
   */
  toJSON(): ProfileJSON {
    return this.sealedJSON === null ? this.snapshot(true) : jsonCopy(this.sealedJSON);
  }

  /**
   * @internal The JSON without a copy, for miniprof's own readers (renderers, the store): once
   * sealed it is the one object the store keeps, so callers must not change it.
   */
  data(): ProfileJSON {
    return this.sealedJSON ?? this.snapshot(false);
  }

  /**
   * @internal The snapshot the outputs are rendered from (the response is complete). Kept, so
   * that the seal right after can reuse it instead of building the JSON (and its analysis) again
   * when nothing changed in between. Callers must not mutate it.
   */
  freeze(): ProfileJSON {
    if (this.sealedJSON !== null) return this.sealedJSON;
    // A stall in the work that just finished the response is seen before the monitor's next tick.
    loopCredit(this);
    gcFlush();
    warnLostContext(this);
    sawRunning = false;
    const json = this.snapshot(false);
    // A running step or custom timing would be measured to a later "now" at the seal.
    if (sawRunning) {
      this.frozenJSON = this.frozenKey = null;
    } else {
      this.frozenJSON = json;
      this.frozenKey = this.key();
      this.frozenBound = this.snapBound;
    }
    return json;
  }

  /**
   * Everything that can change a profile with nothing running: steps and custom timings added
   * (`count`) or dropped, warnings, the root's flags (`failRoot`), the event-loop delay and its
   * stalls. Ends and moves only happen to running nodes, which `freeze` ruled out. Read only at
   * freeze and seal, so the step hot path pays nothing for it.
   */
  private key(): number[] {
    const s = this.stalls;
    const n = s === null ? 0 : s.length;
    // The last stall can still grow (addStall) or turn out shared.
    const lastEnd = n === 0 ? 0 : s![n - 3]!;
    const lastShared = n === 0 ? 0 : s![n - 2]!;
    const lastCpu = n === 0 ? 0 : s![n - 1]!;
    return [this.count, this.droppedSteps, this.warnings.length, this.extraWarnings, this.root.flags, this.root.durationUs, this.loopOut(), n, lastEnd, lastShared, lastCpu, this.cpu === null ? 0 : 1, this.gc === null ? 0 : this.gc.length];
  }

  /** The `eventLoopDelayMs` the JSON would show, or -1 for none. */
  private loopOut(): number {
    return this.loopDelayMs > this.config.blockingMs ? Math.round(this.loopDelayMs * 10) / 10 : -1;
  }

  private reusable(): ProfileJSON | null {
    const json = this.frozenJSON;
    const k = this.frozenKey;
    if (json === null || k === null) return null;
    const now = this.key();
    for (let i = 0; i < k.length; i++) if (k[i] !== now[i]) return null;
    // The request's outcome (status, aborted) is set after the response was rendered; a key
    // added now would change the JSON's key order, so that case is rebuilt.
    if ((json.request === undefined) !== (this.request === undefined)) return null;
    if (this.request !== undefined) json.request = requestJSON(this.request);
    return json;
  }

  /**
   * `own`: the caller's own copy (`toJSON`), every array its own. Otherwise miniprof's (outputs,
   * seal, store), whose leaves (and an empty `warnings`) share one frozen empty array: most nodes
   * are leaves, and the store would keep an empty array for each.
   */
  private snapshot(own: boolean): ProfileJSON {
    const now = this.nowUs();
    // Most profiles have none: miniprof's own JSON shares one frozen empty list, as for leaves.
    const warnings = own || this.warnings.length !== 0 || this.extraWarnings > 0 ? this.warnings.slice() : (NO_CHILDREN as unknown as string[]);
    if (this.extraWarnings > 0) warnings.push(`${this.extraWarnings} more warnings`);
    customsNow = this.customs;
    const nodes = this.customs === null ? null : new Map<CustomTimingJSON, CustomNode>();
    nodesNow = nodes;
    leafChildren = own ? null : NO_CHILDREN;
    boundNow = 0;
    wide = false;
    let root: TimingJSON;
    try {
      root = nodeJSON(this.root, now, this.config.blockingMs * 1000);
    } finally {
      // Not left to point at this profile's timings until the next snapshot.
      customsNow = null;
      nodesNow = null;
    }
    // The time in no step, on the root line of every output (src/analysis/self.ts).
    if (root.children.length > 0) root.selfMs = selfMs(root);
    // No custom-timing walk for a tree without any: this runs once per developer request (the
    // seal reuses it). The key order is the JSON's: `request` before `root`.
    const started = new Date(this.startedAt).toISOString();
    const json: ProfileJSON =
      this.request === undefined
        ? { v: 1, id: this.id, name: this.name, machine: this.machine, started, durationMs: root.durationMs, droppedSteps: this.droppedSteps, warnings, root }
        : {
            v: 1,
            id: this.id,
            name: this.name,
            machine: this.machine,
            started,
            durationMs: root.durationMs,
            droppedSteps: this.droppedSteps,
            warnings,
            request: requestJSON(this.request),
            root,
          };
    // Every step with custom timings is in the tree, so the Map says whether there are any.
    const custom = nodes !== null ? analyseCustom(root, this.config.redact, this.config.maxCommandLength, nodes) : undefined;
    if (custom !== undefined) {
      json.customSummary = custom.customSummary;
      json.similar = custom.similar;
      boundNow += analyseNPlusOne(root, custom.similar);
    }
    // Analysis of the finished tree (src/analysis): only where a step had enough children for it.
    if (wide) boundNow += analyseFanOut(root, custom?.similar);
    if (this.stalls !== null) boundNow += attributeStalls(root, this.stalls, this.config.blockingMs);
    // After the stalls: both read `blocking`.
    if (this.gc !== null) boundNow += attributeGc(root, this.gc);
    if (this.cpu !== null) {
      const cpu = attributeCpu(root, this.cpu, this.t0, this.config.blockingMs);
      // The caller's own copy for toJSON(): the samples are otherwise shared with the store's.
      json.cpu = own ? jsonCopy(cpu.json) : cpu.json;
      boundNow += cpu.bound;
    }
    const loop = this.loopOut();
    if (loop !== -1) {
      json.eventLoopDelayMs = loop;
      // The process's first measured request: module loading and compilation hold the loop too.
      if (this.startup) json.startup = true;
    }
    if (this.stalls !== null) {
      const off = notRunMs(this.stalls);
      if (off > this.config.blockingMs) json.notRunMs = off;
    }
    if (this.traceId !== undefined) json.traceId = this.traceId;
    this.snapBound = topBound(json, custom === undefined ? boundNow : boundNow + custom.bound);
    return json;
  }

  /**
   * @internal At least the UTF-8 length of the sealed JSON (`profileBytes(data())`), or -1 when
   * not known: not sealed yet, or a `request` member the adapters would not write. Found while the
   * snapshot was built (custom timings by analyseCustom), so the memory store can leave the exact
   * walk until its byte bound could be reached.
   */
  jsonBound(): number {
    return this.sealedJSON === null ? -1 : this.sealedBound;
  }
}

/**
 * The request as the JSON shows it: the members RequestInfo has, in the order the adapters set
 * them. Not a spread: the bound above counts these four, whatever else a caller put on `request`.
 */
function requestJSON(r: RequestInfo): RequestInfo {
  const out: RequestInfo = { method: r.method, path: r.path };
  if (r.status !== undefined) out.status = r.status;
  if (r.aborted !== undefined) out.aborted = r.aborted;
  return out;
}

/**
 * A node's JSON is at most 6 bytes per UTF-16 unit of its name (`\u00XX` is the longest escape;
 * a surrogate pair is 4 bytes) plus this: its four keys and punctuation (48), two numbers of at
 * most 24 characters (the longest a double prints as), every optional member (error 13,
 * unfinished 18, syncMs 10 + 24, blocking 16, parallelism 15 + 24, traced 14, handler 15), a
 * comma in its parent's list and the name's quotes: 248, rounded up.
 */
const NODE_BOUND = 256;
/** The tree's part of the bound, summed by nodeJSON. */
let boundNow = 0;

/** Each string member: 6 bytes per unit and its quotes. */
function strBound(s: string): number {
  return 6 * s.length + 2;
}

/**
 * The top level's part added to the tree's, but for `request`: the keys and punctuation of every
 * member (125), four numbers of at most 24 characters, the strings, each warning with its quotes
 * and comma.
 */
function topBound(p: ProfileJSON, tree: number): number {
  let b = 128 + 4 * 24 + tree + strBound(p.id) + strBound(p.name) + strBound(p.machine) + strBound(p.started);
  const w = p.warnings;
  for (let i = 0; i < w.length; i++) b += strBound(w[i]!) + 1;
  if (p.notRunMs !== undefined) b += 12 + 24;
  if (p.startup !== undefined) b += 15;
  // `,"traceId":` and the id's 32 hex digits in quotes.
  if (p.traceId !== undefined) b += 11 + strBound(p.traceId);
  // The root's `,"selfMs":` and a number.
  if (p.root.selfMs !== undefined) b += 10 + 24;
  return b;
}

/**
 * `request`'s part: its keys and punctuation (44), a status of at most 24 characters, the two
 * strings. -1 where a member is not what the adapters write (only a caller's own assignment to
 * `profile.request` can make that).
 */
function withRequest(b: number, r: RequestInfo | undefined): number {
  if (r === undefined) return b;
  if (typeof r.method !== 'string' || typeof r.path !== 'string') return -1;
  if (r.status !== undefined && typeof r.status !== 'number') return -1;
  if (r.aborted !== undefined && r.aborted !== true) return -1;
  return b + 48 + 24 + strBound(r.method) + strBound(r.path);
}

/** Set by nodeJSON when a step has MIN_GROUP (3) children or custom timings: worth a fan-out look. */
let wide = false;
/** Set by nodeJSON/customJSON when they measured something still running (for `freeze`). */
let sawRunning = false;
/** A leaf's `children` in miniprof's own snapshots (null: a new array per leaf), and an empty `warnings`. */
let leafChildren: TimingJSON[] | null = null;
const NO_CHILDREN: TimingJSON[] = Object.freeze([]) as unknown as TimingJSON[];
/** The custom timings of the profile `snapshot` is reading, for nodeJSON. */
let customsNow: Map<TimingNode, CustomNode[]> | null = null;
/**
 * Each custom timing's JSON and the node it was made from, for analyseCustom: the dialect and the
 * values digest it reads stay out of the JSON.
 */
let nodesNow: Map<CustomTimingJSON, CustomNode> | null = null;

/** `now` and `blockingUs` in whole microseconds, as the live nodes keep their times. */
function nodeJSON(node: TimingNode, now: number, blockingUs: number): TimingJSON {
  const running = node.durationUs === RUNNING;
  if (running) sawRunning = true;
  const d = running ? now - node.startUs : node.durationUs;
  boundNow += NODE_BOUND + 6 * node.name.length;
  const out: TimingJSON = {
    name: node.name,
    startMs: ms(node.startUs),
    durationMs: ms(d > 0 ? d : 0),
    children: node.children === null ? (leafChildren ?? []) : childrenJSON(node.children, now, blockingUs),
  };
  const custom = customsNow === null ? undefined : customsNow.get(node);
  if (custom !== undefined) {
    out.custom = customsJSON(custom, now);
    if (custom.length >= 3) wide = true;
  }
  if (out.children.length >= 3) wide = true;
  if ((node.flags & F_ERROR) !== 0) out.error = true;
  if (running && node.parent !== null) out.unfinished = true;
  if ((node.flags & F_TRACED) !== 0) out.traced = true;
  if ((node.flags & F_HANDLER) !== 0) out.handler = true;
  if (node.syncUs > 0) out.syncMs = ms(node.syncUs);
  // A synchronous callback step blocked the loop for all of its duration, unless the process was
  // not running for most of it (F_OFF_CPU, src/core/step.ts).
  const sync = (node.flags & F_SYNC) !== 0 ? node.durationUs : node.syncUs;
  if (sync > blockingUs && (node.flags & F_OFF_CPU) === 0) out.blocking = true;
  if (out.children.length > 1 && out.durationMs > 0) parallelism(out);
  return out;
}

/**
 * A parent's children, each as JSON, in a list of exactly their length: the results store keeps
 * these lists, and one grown by `push` would keep spare room.
 */
function childrenJSON(children: TimingNode[], now: number, blockingUs: number): TimingJSON[] {
  const out = children.slice() as unknown as TimingJSON[];
  for (let i = 0; i < children.length; i++) out[i] = nodeJSON(children[i]!, now, blockingUs);
  return out;
}

/** The same for a step's custom timings. */
function customsJSON(custom: CustomNode[], now: number): CustomTimingJSON[] {
  const out = custom.slice() as unknown as CustomTimingJSON[];
  for (let i = 0; i < custom.length; i++) out[i] = customJSON(custom[i]!, now);
  return out;
}

/**
 * Only where children overlapped in time (concurrency was attempted): the sum of their durations
 * over the parent's. Sequential children would always give <= 1 and say nothing new.
 */
function parallelism(t: TimingJSON): void {
  let sum = 0;
  let end = -Infinity;
  let overlapped = false;
  const children = t.children;
  for (let i = 0; i < children.length; i++) {
    const c = children[i]!;
    sum += c.durationMs;
    if (c.startMs < end) overlapped = true;
    if (c.startMs + c.durationMs > end) end = c.startMs + c.durationMs;
  }
  // Shown with one decimal: only what reads as more than x1.0 says that work overlapped.
  const p = Math.round((sum / t.durationMs) * 100) / 100;
  if (overlapped && p >= PARALLEL_FROM) t.parallelism = p;
}

/** The least `parallelism` shown: x1.1 once rounded to one decimal. */
const PARALLEL_FROM = 1.05;

function customJSON(c: CustomNode, now: number): CustomTimingJSON {
  const running = c.durationUs === RUNNING;
  if (running) sawRunning = true;
  const d = running ? now - c.startUs : c.durationUs;
  const out: CustomTimingJSON = {
    category: c.category,
    command: c.command,
    startMs: ms(c.startUs),
    durationMs: ms(d > 0 ? d : 0),
  };
  if ((c.flags & F_ERROR) !== 0) out.error = true;
  if (running) out.unfinished = true;
  if ((c.flags & F_TRACED) !== 0) out.traced = true;
  nodesNow?.set(out, c);
  return out;
}

/** Iterative, so no tree shape can overflow the stack. */
function detach(root: TimingNode): void {
  const stack: TimingNode[] = [root];
  while (stack.length > 0) {
    const n = stack.pop()!;
    const children = n.children;
    if (children !== null) for (let i = 0; i < children.length; i++) stack.push(children[i]!);
    n.children = null;
    n.parent = null;
    n.profile = null;
    n.link = null;
  }
}

/**
 * The span active as the profile opens, when miniprof/otel asked for it. The hook is OpenTelemetry
 * code; a fault in it is the profiler's, reported, and the profile opens without a trace id.
 */
function activeTrace(config: CoreConfig): TraceRef | undefined {
  const active = traceHooks.active;
  if (active === null) return undefined;
  try {
    const ref = active();
    return ref !== undefined && validTraceId(ref.traceId) ? ref : undefined;
  } catch (err) {
    report(config.onInternalError, err);
    return undefined;
  }
}

/**
 * A user-supplied clock's reading as a number. Number() alone is not enough: an object whose
 * conversion throws (a `toString` that is not callable) would throw inside the app's request.
 */
function toNumber(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  try {
    return Number(v);
  } catch {
    return NaN;
  }
}

