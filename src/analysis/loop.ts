import { performance } from 'node:perf_hooks';
import { monotonic } from '../core/clock.js';
import { LinkedSet, type Linked } from '../core/linked.js';
import type { Clock } from '../core/clock.js';
import { cpuUs } from './cpu.js';

/** What the sampler needs of a profile (declared here so that core/profile.ts can call in). */
export interface Watched extends Linked {
  readonly t0: number;
  readonly sealed: boolean;
  readonly config: { readonly blockingMs: number; readonly clock: Clock };
  loopDelayMs: number;
  /** The first profile measured in this process: its stalls may be startup work (set here). */
  startup: boolean;
  /** The thread's CPU time (µs) when it opened (set here): what ran before is not its work. */
  cpu0: number;
  addStall(fromUs: number, toUs: number, shared: boolean, cpuUs: number): void;
}

/**
 * Event-loop delay per profile: how long the loop was stalled (by this process's work) while the
 * profile was open. One unref'd 10 ms timer runs while at least one measured profile is open.
 * Each tick's lateness is the delay; it is credited to every profile open at that tick (no more
 * of it than the profile was open for), and once more when a profile closes (a stall right before
 * the response shows up before the next tick would).
 *
 * Why not `perf_hooks.monitorEventLoopDelay`: its histogram is process-wide, so a per-profile
 * maximum needs a `reset()` at every profile boundary, and both `reset()` and `enable()` drop the
 * interval in progress: a stall right after a request starts is never recorded (on Node 20, 50 ms
 * of busy work just after `reset()` left `max` near 10 ms). A JS timer has no such gap
 * and costs about 100 callbacks a second, only while a developer's request is open.
 *
 * A late tick is not always the app's doing: on a busy machine (or a paused process: a debugger,
 * SIGSTOP, a VM's steal) the loop is late because the process did not run at all. So each tick
 * also reads the thread's CPU time (src/analysis/cpu.ts): of a stall, at most the CPU time the
 * process had since the last tick was its own work, and only that counts as delay and against
 * steps; the rest is kept with the stall, and the profile says once that the process did not run.
 *
 * Only profiles on the default clock are measured: the delay is real time, and a test's injected
 * clock must fully determine its output.
 *
 * The timer stops at the first tick that finds no profile open, not when the last one closes.
 * Under load the count of open profiles can touch zero between nearly every two requests, and a
 * stop at each close would start and stop an interval per developer request. It runs at most one
 * tick (10 ms) past the last profile.
 */
const RESOLUTION_MS = 10;

/** Linked through the profiles' own fields: a Set's table would churn once per request (src/core/linked.ts). */
const open = new LinkedSet<Watched>();
let timer: NodeJS.Timeout | null = null;
let last = 0;
/** The thread's CPU time (µs) at `last`. */
let lastCpu = 0;
/** A profile has been measured in this process: the first one's stalls may be startup work. */
let measuredBefore = false;

/**
 * A late tick's delay, as far as `p` saw it: a profile opened after the tick was due (a request
 * that arrived right after someone's stall) was not there for all of it. Its `t0` is on this same
 * clock: only default-clock profiles are sampled.
 */
function creditOne(p: Watched, lag: number, now: number, shared: boolean, cpu: number): void {
  const seen = Math.min(lag, now - p.t0);
  if (seen <= 0) return;
  // Of the stall the process ran at most its CPU time since the last tick (or since the profile
  // opened, if later): its own work. The rest it was not running (src/analysis/blocking.ts keeps
  // it apart).
  const ranMs = (cpu - (p.cpu0 > lastCpu ? p.cpu0 : lastCpu)) / 1000;
  const held = ranMs < seen ? ranMs : seen;
  if (held > p.loopDelayMs) p.loopDelayMs = held;
  // Kept for attribution to the steps open then (src/analysis/blocking.ts): from the tick's due
  // time, when the loop was already busy, to now. Whole microseconds, as the profile's times.
  // The start is computed from `last` alone, so that the same stall seen twice (at a freeze, then
  // at the tick) starts at the same microsecond and is extended rather than counted twice.
  if (seen > p.config.blockingMs) {
    const from = Math.max(last + RESOLUTION_MS, p.t0);
    p.addStall(Math.floor((from - p.t0) * 1000 + 0.5), Math.floor((now - p.t0) * 1000 + 0.5), shared, Math.floor(held * 1000 + 0.5));
  }
}

function tick(): void {
  const now = performance.now();
  const cpu = cpuUs();
  const lag = now - last - RESOLUTION_MS;
  if (lag > 0) for (const p of open) creditOne(p, lag, now, open.size > 1, cpu);
  last = now;
  lastCpu = cpu;
  // A profile sealed without closeProfile (by hand) must not keep the timer going.
  for (const p of open) if (p.sealed) open.delete(p);
  if (open.size === 0) stop();
}

function stop(): void {
  if (timer !== null) clearInterval(timer);
  timer = null;
}

/** @internal A profile was entered. */
export function loopOpened(profile: Watched): void {
  if (profile.config.clock !== monotonic || !open.add(profile)) return;
  profile.cpu0 = cpuUs();
  if (!measuredBefore) {
    measuredBefore = true;
    profile.startup = true;
  }
  if (timer === null) {
    last = performance.now();
    lastCpu = profile.cpu0;
    timer = setInterval(tick, RESOLUTION_MS);
    timer.unref();
  }
}

/**
 * @internal Credit `profile` with the stall since the last tick, if one is going on: its outputs
 * are about to be rendered, and the tick that would see it has not run yet.
 */
export function loopCredit(profile: Watched): void {
  if (!open.has(profile)) return;
  const now = performance.now();
  creditOne(profile, now - last - RESOLUTION_MS, now, open.size > 1, cpuUs());
}

/**
 * @internal At most how much CPU time (µs) the process had since the monitor's last tick, or -1
 * when `profile` is not measured. A step's synchronous part ran within that stretch (the loop
 * cannot tick during it), so a part that took long by the clock but not by this was the machine's
 * doing, not the step's (src/core/step.ts).
 */
export function ranSinceTickUs(profile: Watched): number {
  return timer !== null && open.has(profile) ? cpuUs() - (profile.cpu0 > lastCpu ? profile.cpu0 : lastCpu) : -1;
}

/** @internal A profile is about to be sealed: credit the stall since the last tick, then let go. */
export function loopClosed(profile: Watched): void {
  if (!open.has(profile)) return;
  loopCredit(profile);
  open.delete(profile);
}

/** @internal For tests: is the sampler running? */
export function loopSampling(): boolean {
  return timer !== null;
}
