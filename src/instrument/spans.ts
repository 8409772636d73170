import { currentScope } from '../core/context.js';
import { codedError, describe, report } from '../core/errors.js';
import { toText } from '../core/names.js';
import type { Profile } from '../core/profile.js';
import { CustomNode, F_ERROR, F_SPAN, F_TRACED, parentIn, RUNNING, TimingNode } from '../core/timing.js';
import { classify, commandOf, dialectOf, ownLibOf, STEP, valuesOf, type SpanParts } from './otel-map.js';
import { claim, pend, unpend } from './record.js';
import { isPlumbing } from '../analysis/plumbing.js';

/**
 * Spans joining the current profile's tree (miniprof/otel's processor calls these): a span that
 * starts while a profile is current becomes a step or a custom timing under the step current
 * then, or under the step made from its parent span when that is nested deeper.
 */

/** The step a span starting here would go under, if a live profile is current: one check. */
export function profiledScope(): TimingNode<Profile> | undefined {
  const scope = currentScope();
  return scope !== undefined && scope.profile !== null ? scope : undefined;
}

/** A span's place in its profile, kept by the processor until the span ends. */
export interface SpanNode {
  readonly profile: Profile;
  /** A step (TimingNode) or a custom timing (CustomNode). */
  readonly node: TimingNode<Profile> | CustomNode;
}

/**
 * Record a span that just started in `scope` (from {@link profiledScope}). `parent`: the SpanNode
 * of its parent span, if it has one; `lagUs`: how long before now it started (0 for a span
 * started now).
 * Returns undefined when nothing is recorded: no live profile here, a span of another trace than
 * the profile's, a span miniprof does not show (the request's own, one it exported), a call
 * miniprof's own instrumentation reported first, or a full profile.
 */
export function spanStarted(scope: TimingNode<Profile>, s: SpanParts, parent: SpanNode | undefined, lagUs: number): SpanNode | undefined {
  const profile = scope.profile!;
  // Code that runs in another request's async context (a library that keeps callbacks without
  // their context) may still start its span in the right trace, when its instrumentation carried
  // OpenTelemetry's context: such a span does not join a profile of another trace.
  if (profile.trace !== undefined && s.spanContext().traceId !== profile.trace.traceId) return undefined;
  try {
    const category = classify(s);
    if (category === null) return undefined;
    const step = parentIn(scope);
    const under = placeOf(step, parent, profile);
    const cfg = profile.config;
    let lib: string | null = null;
    // A pool checkout is no call of miniprof's own instrumentation: never paired with one.
    if (category !== STEP && !isPlumbing(category)) {
      lib = ownLibOf(s);
      // miniprof's own instrumentation opened this very call: it stays, marked as traced, and
      // nests where the span does. Both sides name a call by the step current where it runs (the
      // span may nest deeper, under a resolver's span), as that is all they share.
      const own = lib === null ? null : claim(profile, lib, step, true);
      if (own !== null) {
        if (under !== step) profile.moveCustom(step, under, own);
        return undefined;
      }
    }
    if (profile.count >= cfg.maxSteps || (category === STEP && under.depth >= cfg.maxDepth)) {
      profile.droppedSteps++;
      return undefined;
    }
    profile.count++;
    const now = profile.nowUs();
    const startUs = lagUs > 0 && now > lagUs ? now - lagUs : now;
    if (category === STEP) {
      const t = new TimingNode(toText(s.name, cfg.maxNameLength), under, profile, startUs);
      t.flags |= F_TRACED;
      return { profile, node: t };
    }
    const c = new CustomNode(toText(category, cfg.maxNameLength), toText(commandOf(s), cfg.maxCommandLength), startUs, dialectOf(s));
    c.values = valuesOf(s);
    c.flags |= F_SPAN | F_TRACED;
    profile.addCustom(under, c);
    if (lib !== null) pend(profile, { lib, parent: step, node: c, at: under, own: false });
    return { profile, node: c };
  } catch (err) {
    report(profile.config.onInternalError, err);
    return undefined;
  }
}

/**
 * The span ended after `durationUs`: its node ends with it; a custom timing whose command was
 * only the span's name at the start takes the one its final attributes give (pg sets the query
 * text just after the span started). A sealed profile is not
 * changed, nor is a custom timing miniprof's own instrumentation took over (it ends it itself).
 */
export function spanEnded(sn: SpanNode, s: SpanParts, durationUs: number, failed: boolean): void {
  const { profile, node } = sn;
  if (profile.sealed || node.durationUs !== RUNNING) return;
  try {
    const d = durationUs > 0 ? durationUs : 0;
    if (node instanceof TimingNode) {
      node.durationUs = d;
      if (failed) node.flags |= F_ERROR;
      return;
    }
    if ((node.flags & F_SPAN) === 0) return;
    if (profile.pending !== null) unpend(profile, node);
    // Read again only when the text was not there at the start (pg sets it just after).
    if (node.command === s.name) {
      node.command = toText(commandOf(s), profile.config.maxCommandLength);
      node.values = valuesOf(s);
    }
    node.durationUs = d;
    if (failed) node.flags |= F_ERROR;
  } catch (err) {
    report(profile.config.onInternalError, err);
  }
}

/**
 * Under the current step, unless the span's parent span is a step made from a span within it
 * (then that one, or its nearest running ancestor, is the more precise place). A parent span
 * elsewhere in the tree (or in another profile) loses to where the code runs now.
 */
function placeOf(step: TimingNode<Profile>, parent: SpanNode | undefined, profile: Profile): TimingNode<Profile> {
  if (parent === undefined || parent.profile !== profile || !(parent.node instanceof TimingNode)) return step;
  let p: TimingNode<Profile> = parent.node;
  while (p.durationUs !== RUNNING && p.parent !== null) p = p.parent;
  for (let a: TimingNode<Profile> | null = p; a !== null; a = a.parent) if (a === step) return p;
  return step;
}

/** An OpenTelemetry SDK `Sampler`'s answer (`SamplingResult`; `decision` 0: dropped, 1: recorded, not sampled, 2: sampled). */
export interface Sampling {
  decision: number;
  attributes?: Readonly<Record<string, unknown>>;
  traceState?: unknown;
}

/**
 * An OpenTelemetry SDK `Sampler`, as `@opentelemetry/sdk-trace` declares it (miniprof does not load
 * the SDK); `R` is its `SamplingResult`, so a wrapped sampler is still the SDK's `Sampler` type.
 */
export interface Sampler<R extends Sampling = Sampling> {
  shouldSample(context: unknown, traceId: string, spanName: string, spanKind: number, attributes: Record<string, unknown>, links: unknown[]): R;
  toString(): string;
}

/** The specification's decisions (the SDK's `SamplingDecision`). */
const NOT_RECORD = 0;
const RECORD = 1;

/**
 * Your sampler, except inside a developer's profile: there a span it would drop is recorded but
 * not sampled (`RECORD`), so `MiniprofSpanProcessor` sees it and exporters, which send sampled
 * spans only, do not. Without it, a developer's request in a trace your sampler drops shows no
 * spans. Elsewhere its answer is your sampler's, after one check.
 *
 * @example
 * import { MiniprofSampler, MiniprofSpanProcessor } from 'miniprof/otel';
 * const sampler = new MiniprofSampler(new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(0.05) }));
 * new NodeSDK({ sampler, spanProcessors: [new MiniprofSpanProcessor(), batch] }).start();
 */
export class MiniprofSampler<R extends Sampling = Sampling> implements Sampler<R> {
  readonly #inner: Sampler<R>;
  constructor(inner: Sampler<R>) {
    if (typeof (inner as Partial<Sampler> | null)?.shouldSample !== 'function') throw codedError('MINIPROF_ERR_INVALID_ARGUMENT', `MiniprofSampler needs the sampler to wrap, got ${describe(inner)}`);
    this.#inner = inner;
  }

  shouldSample(context: unknown, traceId: string, spanName: string, spanKind: number, attributes: Record<string, unknown>, links: unknown[]): R {
    const r = this.#inner.shouldSample(context, traceId, spanName, spanKind, attributes, links);
    if (r.decision !== NOT_RECORD || profiledScope() === undefined) return r;
    return { ...r, decision: RECORD };
  }

  toString(): string {
    return `MiniprofSampler{${this.#inner.toString()}}`;
  }
}
