/**
 * MiniprofSampler with the real SDK: a production sampler drops most traces, and a developer's
 * request in a dropped trace would show no spans; wrapped, the spans started inside the profile are
 * recorded (not sampled), so they join the tree and are still not exported. In a file of its own:
 * the provider and its sampler are per process.
 */
import { afterAll, afterEach, expect, test } from 'vitest';
import { SpanKind, trace, TraceFlags } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { AlwaysOnSampler, InMemorySpanExporter, NodeTracerProvider, ParentBasedSampler, SimpleSpanProcessor, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-node';
import { MiniprofSampler, MiniprofSpanProcessor } from '../adapters/otel.js';
import { step, withProfile, type TimingJSON } from '../src/index.js';

const exporter = new InMemorySpanExporter();
const drops = new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(0) });
// Two providers in one process: the same processor, a sampler that drops every trace, with and without the wrapper.
const wrapped = new NodeTracerProvider({ sampler: new MiniprofSampler(drops), spanProcessors: [new MiniprofSpanProcessor(), new SimpleSpanProcessor(exporter)] });
const bare = new NodeTracerProvider({ sampler: drops, spanProcessors: [new MiniprofSpanProcessor(), new SimpleSpanProcessor(exporter)] });
wrapped.register({ contextManager: new AsyncLocalStorageContextManager() });
// Made last, so its options are in effect: every sealed profile is exported (through the global provider, `wrapped`).
const keeps = new NodeTracerProvider({ sampler: new MiniprofSampler(new AlwaysOnSampler()), spanProcessors: [new MiniprofSpanProcessor({ exportProfiles: true }), new SimpleSpanProcessor(exporter)] });

afterEach(() => exporter.reset());
afterAll(async () => {
  await Promise.all([wrapped.shutdown(), bare.shutdown(), keeps.shutdown()]);
});

function calls(t: TimingJSON): string[] {
  const own = (t.custom ?? []).map((c) => `[${c.category}] ${c.command}`);
  return [...own, ...t.children.flatMap((c) => [`${c.name}:`, ...calls(c)])];
}

/** A request span (the server's, sampled out) and, inside it, a profile with a query and a resolver span. */
async function request(provider: NodeTracerProvider) {
  const tracer = provider.getTracer('app');
  return tracer.startActiveSpan('GET /', { kind: SpanKind.SERVER }, async (server) => {
    const out = await withProfile('GET /', () =>
      step('load', async () => {
        tracer.startSpan('pg.query:SELECT', { kind: SpanKind.CLIENT, attributes: { 'db.system.name': 'postgresql', 'db.query.text': 'select * from users where id = 7' } }).end();
        await tracer.startActiveSpan('resolver', async (s) => {
          await new Promise((r) => setTimeout(r, 1));
          s.end();
        });
      }),
    );
    const outside = tracer.startSpan('after the profile');
    outside.end();
    server.end();
    // The export runs a turn after the seal.
    await new Promise((r) => setTimeout(r, 5));
    return { profile: out.profile.toJSON(), server: server.spanContext(), outside: outside.isRecording() };
  });
}

test('a trace the sampler drops: inside the profile spans are recorded, not sampled, and join the tree; nothing is exported, nor are the profile\'s steps; outside it the sampler decides', async () => {
  const r = await request(wrapped);
  expect(r.server.traceFlags & TraceFlags.SAMPLED).toBe(0);
  expect(calls(r.profile.root)).toEqual(['load:', '[sql] select * from users where id = ?', 'resolver:']);
  expect(exporter.getFinishedSpans()).toEqual([]);
  expect(r.outside).toBe(false);
  // The trace is not in the backend: no trace id to link to.
  expect(r.profile.traceId).toBeUndefined();
});

test('without MiniprofSampler the same request shows no spans (what the wrapper is for)', async () => {
  const r = await request(bare);
  expect(calls(r.profile.root)).toEqual(['load:']);
  expect(exporter.getFinishedSpans()).toEqual([]);
});

test('a sampled trace is left as the sampler decided: exported, and its trace id recorded', async () => {
  const r = await request(keeps);
  expect(r.server.traceFlags & TraceFlags.SAMPLED).toBe(TraceFlags.SAMPLED);
  expect(calls(r.profile.root)).toEqual(['load:', '[sql] select * from users where id = ?', 'resolver:']);
  // The app's spans, and the profile's own step (`load`, exported under the request's span).
  const spans = exporter.getFinishedSpans();
  expect(spans.map((s) => `${s.instrumentationScope.name}:${s.name}`).sort()).toEqual(['app:GET /', 'app:after the profile', 'app:pg.query:SELECT', 'app:resolver', 'miniprof:load']);
  expect(spans.find((s) => s.name === 'load')!.parentSpanContext?.spanId).toBe(r.server.spanId);
  expect(r.profile.traceId).toBe(r.server.traceId);
  expect(String(new MiniprofSampler(new AlwaysOnSampler()))).toBe('MiniprofSampler{AlwaysOnSampler}');
});

test('a bad argument is a coded TypeError naming what was given', () => {
  expect(() => new MiniprofSampler({} as never)).toThrow(expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_ARGUMENT', message: 'miniprof: MiniprofSampler needs the sampler to wrap, got an object' }));
});
