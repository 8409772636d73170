import type { Profile } from '../core/profile.js';
import type { CustomTimingJSON, TimingJSON } from '../core/types.js';

/**
 * A sealed profile's steps and custom timings, handed to a tracer as spans (miniprof/otel's
 * `exportProfile` supplies the OpenTelemetry side). Times are wall-clock epoch milliseconds: the
 * profile's `started` plus each node's `startMs`. What came from a span, or was paired with one
 * (`traced`), is in the trace already and is left out, with everything under it. A route
 * handler's step (`handler`) is looked through: its steps go where it would have gone.
 */
export interface SpanSink<H> {
  /** Start a span under `parent` (null: under the request's span, or a root). */
  start(name: string, startMs: number, parent: H | null, custom: CustomTimingJSON | null): H;
  end(span: H, endMs: number, error: boolean): void;
}

/**
 * Emit `profile`'s tree through `sink`, under `top` (the request's span; null: the profile's root
 * becomes a span of its own, the root of a new trace). Returns how many spans were made.
 */
export function emitProfile<H>(profile: Profile, sink: SpanSink<H>, top: H | null): number {
  const json = profile.data();
  const t0 = profile.startedAt;
  let count = 0;
  const walk = (t: TimingJSON, parent: H | null): void => {
    const custom = t.custom;
    if (custom !== undefined) {
      for (const c of custom) {
        if (c.traced === true) continue;
        const span = sink.start(`${c.category}`, t0 + c.startMs, parent, c);
        sink.end(span, t0 + c.startMs + c.durationMs, c.error === true);
        count++;
      }
    }
    for (const child of t.children) {
      if (child.traced === true) continue;
      // Fastify's route handler as a step (autoSteps): the framework's own frame, which the
      // trace's request span (and a framework instrumentation's handler span) covers already.
      if (child.handler === true) {
        walk(child, parent);
        continue;
      }
      const span = sink.start(child.name, t0 + child.startMs, parent, null);
      count++;
      walk(child, span);
      sink.end(span, t0 + child.startMs + child.durationMs, child.error === true);
    }
  };
  if (top !== null) {
    walk(json.root, top);
    return count;
  }
  const root = sink.start(json.root.name, t0, null, null);
  walk(json.root, root);
  sink.end(root, t0 + json.root.durationMs, json.root.error === true);
  return count + 1;
}
