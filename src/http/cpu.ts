import { monotonic } from '../core/clock.js';
import { report, type InternalErrorHandler } from '../core/errors.js';
import type { Profile } from '../core/profile.js';
import { CPU_INTERVAL_US, startCpu, type CpuCapture, type Sampling } from '../analysis/cpu-sampler.js';
import type { CpuState } from '../analysis/cpu-samples.js';
import type { CpuProfileJSON } from '../core/types.js';
import { headerString, type HeaderView } from './inject.js';

/**
 * CPU sampling on request: a developer's request with `x-miniprof-cpu: 1`, or with the one-shot
 * cookie the badge's "Profile CPU" button sets for the next page load. Only the adapters' developer
 * path calls here (never for anyone else, never for a captured request), and only when the request
 * asks: with no such header or cookie nothing below runs.
 *
 * The cookie needs no signature: it is honoured only for a request already judged a developer's
 * (isDeveloper or the signed opt-in), it can only ask for a sampling of that developer's own
 * request, and a cross-site page can neither set it nor have it sent (SameSite=Strict).
 */
export const CPU_HEADER = 'x-miniprof-cpu';
export const CPU_COOKIE = 'miniprof-cpu';

/** The `.cpuprofile` is kept with the profile up to this size; a larger one is dropped (the steps keep their functions). */
export const MAX_CPUPROFILE_BYTES = 512 * 1024;

/** Sent back on the response that used the cookie: it asks for one page load only. */
const CLEAR_COOKIE = `${CPU_COOKIE}=; Max-Age=0; Path=/; SameSite=Strict`;

const COOKIE = new RegExp(`(?:^|;)\\s*${CPU_COOKIE}=1\\s*(?:;|$)`);

/** A sampled (or refused) request's state, kept by its ProfiledResponse. */
export interface CpuRequest {
  sampling: Sampling | null;
  /** It came with the cookie, which the response clears. */
  cookie: boolean;
  /** Why it was not sampled, said in the profile. */
  note: string | undefined;
}

/** The headers CPU sampling reads, for an adapter whose request has no Node headers object (Hono). */
export function cpuHeaders(get: (name: string) => string | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const h = get(CPU_HEADER);
  const c = get('cookie');
  if (h !== undefined) out[CPU_HEADER] = h;
  if (c !== undefined) out.cookie = c;
  return out;
}

/** Did the request ask? The header `1`, or the cookie. */
export function cpuAsked(headers: Record<string, unknown>): { header: boolean; cookie: boolean } | null {
  const h = headers[CPU_HEADER];
  const header = h !== undefined && headerString(h).trim() === '1';
  const c = headers.cookie;
  const cookie = typeof c === 'string' && c.includes(CPU_COOKIE) && COOKIE.test(c);
  return header || cookie ? { header, cookie } : null;
}

/**
 * Start sampling when the request asks (before its profile opens: starting the profiler can take
 * tens of ms while V8 logs the code it has, and that is not the app's time). Null when it did not
 * ask. One sampling at a time in the process; a fault is reported and the request goes on.
 */
export function openCpu(headers: Record<string, unknown>, clock: unknown, onError: InternalErrorHandler): CpuRequest | null {
  const asked = cpuAsked(headers);
  if (asked === null) return null;
  const out: CpuRequest = { sampling: null, cookie: asked.cookie, note: undefined };
  if (clock !== monotonic) {
    out.note = 'CPU not sampled: sampling needs the default clock';
    return out;
  }
  try {
    out.sampling = startCpu(headers);
    if (out.sampling === null) out.note = 'CPU not sampled: another request was being sampled (one at a time per process)';
  } catch (err) {
    report(onError, err);
    out.note = 'CPU not sampled: the sampler failed (the fault went to onInternalError)';
  }
  return out;
}

/** Said in the profile once it is open. */
export function noteCpu(r: CpuRequest | null, profile: Profile): void {
  if (r !== null && r.note !== undefined) profile.warn(r.note);
}

/** Stop the sampling (once) and hand the samples to the profile; before its outputs are rendered. */
export function stopCpu(r: CpuRequest | null, profile: Profile, onError: InternalErrorHandler): void {
  if (r === null || r.sampling === null) return;
  const s = r.sampling;
  r.sampling = null;
  try {
    profile.cpu = keep(s.stop(), profile.t0);
  } catch (err) {
    report(onError, err);
    profile.warn('CPU sampling failed to stop (the fault went to onInternalError)');
  }
}

/** The one-shot cookie is cleared on the response that used it. */
export function clearCpuCookie(r: CpuRequest | null, h: HeaderView & { setHeader(name: string, value: string | string[]): unknown }): void {
  if (r === null || !r.cookie) return;
  const prev = h.getHeader('set-cookie');
  if (prev === undefined) h.setHeader('Set-Cookie', CLEAR_COOKIE);
  else h.setHeader('Set-Cookie', [...(Array.isArray(prev) ? prev.map(String) : [String(prev)]), CLEAR_COOKIE]);
}

/**
 * The samples as the profile keeps them: from the request's start (the profiler's own start-up,
 * before it, is not the request's), V8's profile less its per-line ticks, hit counts made again for
 * the samples kept, within the byte bound. `t0`: the profile's start on `performance.now()`'s clock.
 */
function keep(capture: CpuCapture, t0: number): CpuState {
  const p = capture.profile;
  const startTime = Math.max(p.startTime, Math.round(t0 * 1000 + capture.offsetUs));
  let ts = p.startTime;
  let k = 0;
  while (k < p.samples.length && ts + (p.timeDeltas[k] ?? 0) < startTime) ts += p.timeDeltas[k++] ?? 0;
  const samples = p.samples.slice(k);
  const timeDeltas = p.timeDeltas.slice(k);
  if (timeDeltas.length > 0) timeDeltas[0] = ts + timeDeltas[0]! - startTime;
  const hits = new Map<number, number>();
  for (const id of samples) hits.set(id, (hits.get(id) ?? 0) + 1);
  const kept: CpuProfileJSON = {
    nodes: p.nodes.map((n) => ({ id: n.id, callFrame: n.callFrame, hitCount: hits.get(n.id) ?? 0, children: n.children })),
    startTime,
    endTime: Math.max(p.endTime, startTime),
    samples,
    timeDeltas,
  };
  const bytes = Buffer.byteLength(JSON.stringify(kept));
  if (bytes > MAX_CPUPROFILE_BYTES) {
    const note = `the samples (${Math.ceil(bytes / 1024)} KiB) are over the ${MAX_CPUPROFILE_BYTES / 1024} KiB bound and were not kept`;
    return { capture, kept: undefined, keptBytes: 0, note, intervalUs: CPU_INTERVAL_US };
  }
  return { capture, kept, keptBytes: bytes, note: undefined, intervalUs: CPU_INTERVAL_US };
}
