/**
 * Where a tracing library plugs into the core without the core importing it: `miniprof/otel`
 * sets these when a `MiniprofSpanProcessor` is made. Unset, each costs nothing (profiles open
 * and seal as before), and nothing here loads OpenTelemetry.
 */

/**
 * The active span's context as a profile opens (OpenTelemetry's `SpanContext`): its trace id, its
 * flags (bit 1: sampled) and, opaque, what export needs.
 */
export interface TraceRef {
  readonly traceId: string;
  readonly traceFlags: number;
}

/** A trace the backend keeps: its spans are exported. */
export function sampled(ref: TraceRef): boolean {
  return (ref.traceFlags & 1) === 1;
}

/** @internal */
export interface TraceHooks {
  /** The span active in the caller's context, if any (read once per profile, as it opens). */
  active: (() => TraceRef | undefined) | null;
  /**
   * Called with each profile (a `Profile`: typed loosely so that this file, which profile.ts
   * reads, does not read profile.ts) right after it is sealed: the response is complete.
   */
  sealed: ((profile: object) => void) | null;
  /** The backend's page for a trace id, for the results page. */
  link: ((traceId: string) => unknown) | null;
}

/** @internal One set per process: the last `MiniprofSpanProcessor` made sets them. */
export const traceHooks: TraceHooks = { active: null, sealed: null, link: null };

const TRACE_ID = /^[0-9a-f]{32}$/;

/** W3C trace ids are 32 lowercase hex digits, not all zero; anything else is not recorded. */
export function validTraceId(id: unknown): id is string {
  return typeof id === 'string' && TRACE_ID.test(id) && id !== '00000000000000000000000000000000';
}

/**
 * The results page's link to a trace, or undefined: only an http(s) URL the hook returned, so
 * a `traceUrl` that returns something else (or throws) costs the link, never the page.
 */
export function traceLink(traceId: string): string | undefined {
  const link = traceHooks.link;
  if (link === null) return undefined;
  try {
    const url = link(traceId);
    if (typeof url !== 'string') return undefined;
    const protocol = new URL(url).protocol;
    return protocol === 'https:' || protocol === 'http:' ? url : undefined;
  } catch {
    return undefined;
  }
}
