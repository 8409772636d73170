import { performance } from 'node:perf_hooks';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { CpuProfileJSON } from '../core/types.js';

/**
 * CPU sampling of one request at a time, with `node:inspector`'s Profiler (documented, and
 * process-wide: V8 samples whatever the thread runs, so two requests sampled at once would each
 * get the other's samples). Nothing happens at import: the inspector module is loaded and a session
 * connected only when a developer asks, and disconnected when that request's sampling stops.
 *
 * The same-thread session answers synchronously (its callback runs inside `post`): sampling can
 * start before the app's code runs and stop before the response is rendered. A session that did
 * not answer at once is a fault, reported by the caller; the request then goes on unsampled.
 *
 * While a sampling runs, the HTTP server's diagnostics channels (`http.server.request.start`,
 * `http.server.response.finish`, public since Node 18) say when other requests were in flight, so
 * that samples taken then can be marked shared: V8 cannot tell whose callback it sampled.
 * Requests that started before the sampling count from its start when they finish during it; one
 * still running when it stops, having started before it, is not seen (a known gap).
 */

/** The sampling interval, in µs: fine enough for a 20 ms stall to show about eighty samples. */
export const CPU_INTERVAL_US = 250;

/** What a stopped sampling hands to the profile. */
export interface CpuCapture {
  profile: CpuProfileJSON;
  /** V8's timestamps (µs) minus `performance.now()` in µs: a sample at `ts` ran at `(ts - offsetUs) / 1000` ms. */
  offsetUs: number;
  /** Other requests in flight, flat `[fromMs, toMs, …]` on `performance.now()`'s clock. */
  shared: number[];
}

type Inspector = typeof import('node:inspector');
type Session = InstanceType<Inspector['Session']>;

/** The one sampling running in this process, if any. */
let active: Sampling | null = null;

/** Is a request being sampled now? (For tests and the bench.) */
export function cpuSampling(): boolean {
  return active !== null;
}

/** `session.post`, which must answer before it returns. */
function post(session: Session, method: string, params?: object): unknown {
  let done = false;
  let error: Error | null = null;
  let result: unknown;
  session.post(method, params ?? {}, (err: Error | null, r?: unknown) => {
    done = true;
    error = err;
    result = r;
  });
  if (!done) throw new Error(`miniprof: the inspector did not answer ${method} synchronously`);
  if (error !== null) throw error;
  return result;
}

const START = 'http.server.request.start';
const FINISH = 'http.server.response.finish';

/** One request's sampling: start with {@link startCpu}, `stop()` once. */
export class Sampling {
  private readonly session: Session;
  private readonly startedMs: number;
  /** Other requests seen starting, still in flight. */
  private readonly others = new Set<object>();
  private othersFrom = 0;
  private readonly shared: number[] = [];
  /** The sampled request's own headers object: its own finish is not another request. */
  private readonly own: object | null;
  private readonly onStart = (m: unknown): void => this.started(m);
  private readonly onFinish = (m: unknown): void => this.finished(m);
  private stopped = false;

  constructor(session: Session, own: object | null) {
    this.session = session;
    this.own = own;
    this.startedMs = performance.now();
    subscribe(START, this.onStart);
    subscribe(FINISH, this.onFinish);
  }

  private started(m: unknown): void {
    const req = (m as { request?: object } | null)?.request;
    if (req === undefined || (req as { headers?: object }).headers === this.own) return;
    if (this.others.size === 0) this.othersFrom = performance.now();
    this.others.add(req);
  }

  private finished(m: unknown): void {
    const req = (m as { request?: object } | null)?.request;
    if (req === undefined || (req as { headers?: object }).headers === this.own) return;
    if (this.others.delete(req)) {
      if (this.others.size === 0) this.shared.push(this.othersFrom, performance.now());
    } else {
      // It started before the sampling: it was in flight from the start.
      this.shared.push(this.startedMs, performance.now());
    }
  }

  /** Stop sampling and let the session go; the samples, or a fault thrown (the caller reports it). */
  stop(): CpuCapture {
    if (this.stopped) throw new Error('miniprof: CPU sampling stopped twice');
    this.stopped = true;
    unsubscribe(START, this.onStart);
    unsubscribe(FINISH, this.onFinish);
    if (this.others.size > 0) this.shared.push(this.othersFrom, performance.now());
    if (active === this) active = null;
    try {
      const r = post(this.session, 'Profiler.stop') as { profile: CpuProfileJSON };
      // Read together: V8's profiler stamps samples with the same monotonic clock as
      // process.hrtime (both CLOCK_MONOTONIC on Linux and macOS); the test checks the mapping.
      const offsetUs = Number(process.hrtime.bigint()) / 1000 - performance.now() * 1000;
      return { profile: r.profile, offsetUs, shared: this.shared };
    } finally {
      this.session.disconnect();
    }
  }
}

/**
 * Start sampling the CPU for one request, or null when another request is being sampled. `own`:
 * the request's headers object, as the HTTP server's channels carry it. Throws when the inspector
 * is not available (a Node built without it) or does not answer: the caller reports the fault.
 */
export function startCpu(own: object | null): Sampling | null {
  if (active !== null) return null;
  const inspector = process.getBuiltinModule('node:inspector') as Inspector | undefined;
  if (inspector === undefined) throw new Error('miniprof: node:inspector is not available in this Node build');
  const session = new inspector.Session();
  session.connect();
  try {
    post(session, 'Profiler.enable');
    post(session, 'Profiler.setSamplingInterval', { interval: CPU_INTERVAL_US });
    post(session, 'Profiler.start');
  } catch (err) {
    session.disconnect();
    throw err;
  }
  active = new Sampling(session, own);
  return active;
}
