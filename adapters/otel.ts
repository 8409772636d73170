import { context, isSpanContextValid, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type HrTime, type Span, type SpanContext, type Tracer } from '@opentelemetry/api';
import { codedError, describe, report } from '../src/core/errors.js';
import { boolOption, checkObject, fnOption } from '../src/core/options.js';
import { Profile } from '../src/core/profile.js';
import { traceHooks, type TraceHooks } from '../src/core/trace.js';
import { emitProfile, type SpanSink } from '../src/instrument/export.js';
import { EXPORT_SCOPE, hr, lagUs, usOf, type SpanParts } from '../src/instrument/otel-map.js';
import { pairWithSpans } from '../src/instrument/record.js';
import { profiledScope, spanEnded, spanStarted, type SpanNode } from '../src/instrument/spans.js';

export { MiniprofSampler } from '../src/instrument/spans.js';

/** Options of {@link MiniprofSpanProcessor}. */
export interface MiniprofSpanProcessorOptions {
  /**
   * The tracing backend's page for a trace (Jaeger, Tempo, Honeycomb…): the results page links a
   * profile's `traceId` there. Only an `http:` or `https:` URL is linked. Default: no link.
   * @example traceUrl: (id) => `http://localhost:16686/trace/${id}`
   */
  traceUrl?: (traceId: string) => string;
  /**
   * Export every sealed profile's steps and custom timings as spans ({@link exportProfile}),
   * after the response, under the request's span: a developer's, a `withProfile`'s, and a
   * captured request's only when `capture` keeps it (one it drops is kept nowhere). Default false.
   */
  exportProfiles?: boolean;
}

/** The span as the SDK hands it over: what the mapping reads, and its times and status. */
type SdkSpan = SpanParts & { readonly startTime?: HrTime; readonly duration?: HrTime; readonly status?: { code: number } };

/** Each recorded span's place in its profile, until it ends. */
const nodes = new WeakMap<object, SpanNode>();
/** How many are in `nodes`: while none, a span's end is one check. */
let live = 0;
/** The processor whose options are in effect (the last one made). */
let current: MiniprofSpanProcessor | null = null;

/**
 * An OpenTelemetry `SpanProcessor`: a span that starts while a miniprof profile is current joins
 * that profile's tree, under the step current when it started. Database calls become custom
 * timings (`sql`, or the system's name: `redis`, `mongodb`…), HTTP calls `http` timings, other
 * spans steps nested as the spans nest; the request's own (server) span is the profile's root.
 * A call miniprof times itself (fetch, http, ioredis, node-redis, mysql2, instrumentPg) is shown
 * once: miniprof's own timing, marked `traced`. Outside a profile `onStart` is one check.
 *
 * Making one also has every profile record the `traceId` of the span active as it opens; with
 * `exportProfiles` it sends each sealed profile's steps to the trace. The last one made sets
 * these for the process.
 *
 * @example
 * import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
 * import { MiniprofSpanProcessor } from 'miniprof/otel';
 * const spanProcessors = [new MiniprofSpanProcessor(), new BatchSpanProcessor(exporter)];
 * new NodeTracerProvider({ spanProcessors }).register(); // or new NodeSDK({ spanProcessors, … })
 */
export class MiniprofSpanProcessor {
  constructor(options?: MiniprofSpanProcessorOptions) {
    const o = checkObject(options, ['traceUrl', 'exportProfiles'], 'MiniprofSpanProcessor');
    const traceUrl = fnOption<((id: string) => unknown) | null>(o, 'traceUrl', null);
    const exporting = boolOption(o, 'exportProfiles', false);
    Object.assign(traceHooks, { active: activeSpan, sealed: exporting ? exportLater : null, link: traceUrl } satisfies TraceHooks);
    current = this;
    pairWithSpans();
  }

  onStart(span: Span, parentContext: Context): void {
    const scope = profiledScope();
    if (scope === undefined) return;
    const s = span as unknown as SdkSpan;
    // A parent in `nodes` is a span recorded here and not ended: while there is none, not looked up.
    const parent = live === 0 || parentContext === undefined ? undefined : trace.getSpan(parentContext);
    const sn = spanStarted(scope, s, parent === undefined ? undefined : nodes.get(parent), lagUs(s.startTime));
    if (sn === undefined) return;
    nodes.set(span, sn);
    live++;
  }

  onEnd(span: object): void {
    if (live === 0) return;
    const sn = nodes.get(span);
    if (sn === undefined) return;
    nodes.delete(span);
    live--;
    const s = span as SdkSpan;
    spanEnded(sn, s, usOf(s.duration), s.status?.code === SpanStatusCode.ERROR);
  }

  forceFlush(): Promise<void> {
    return Promise.resolve();
  }

  /** Profiles stop reading trace ids and exporting, unless a later processor took over. */
  shutdown(): Promise<void> {
    if (current === this) {
      Object.assign(traceHooks, { active: null, sealed: null, link: null } satisfies TraceHooks);
      current = null;
    }
    return Promise.resolve();
  }
}

function activeSpan(): SpanContext | undefined {
  const sc = trace.getSpanContext(context.active());
  return sc !== undefined && isSpanContextValid(sc) ? sc : undefined;
}

/**
 * Send a sealed profile's steps and custom timings to the trace as spans, with their real start
 * and end times, as children of the span that was active when the profile opened (the request's);
 * without one, under a root span of the profile's own. Steps and calls that came from spans are
 * not sent again. Returns how many spans were made. Uses the global tracer provider unless a
 * `tracer` is given.
 *
 * @example
 * const { profile } = await withProfile('nightly import', importAll);
 * exportProfile(profile);
 */
export function exportProfile(profile: Profile, tracer: Tracer = trace.getTracer(EXPORT_SCOPE)): number {
  if (!(profile instanceof Profile)) throw codedError('MINIPROF_ERR_INVALID_ARGUMENT', `exportProfile needs a Profile, got ${describe(profile)}`);
  if (!profile.sealed) throw codedError('MINIPROF_ERR_INVALID_ARGUMENT', 'exportProfile needs a sealed profile (the request or withProfile has finished)');
  const sc = profile.trace as SpanContext | undefined;
  const top = sc === undefined ? null : trace.wrapSpanContext(sc);
  const sink: SpanSink<Span> = {
    start(name, startMs, parent, custom) {
      const ctx = parent === null ? ROOT_CONTEXT : trace.setSpan(ROOT_CONTEXT, parent);
      const attributes = custom === null ? undefined : { 'miniprof.category': custom.category, 'miniprof.command': custom.command };
      return tracer.startSpan(name, { startTime: hr(startMs), kind: custom === null ? SpanKind.INTERNAL : SpanKind.CLIENT, attributes }, ctx);
    },
    end(span, endMs, error) {
      if (error) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end(hr(endMs));
    },
  };
  return emitProfile(profile, sink, top);
}

/** After the response: the seal runs at its close, and the export waits one more turn. */
function exportLater(profile: object): void {
  setImmediate(exportQuietly, profile as Profile);
}

function exportQuietly(profile: Profile): void {
  try {
    exportProfile(profile);
  } catch (err) {
    report(profile.config.onInternalError, err);
  }
}
