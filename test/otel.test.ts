/**
 * miniprof/otel with the real OpenTelemetry SDK (NodeTracerProvider, AsyncLocalStorageContextManager,
 * InMemorySpanExporter) and spans made by hand: where spans land in the tree, what they map to,
 * late spans, limits, the trace id, export. Instrumentations of real libraries: otel-real.test.ts.
 */
import { afterAll, afterEach, describe, expect, test } from 'vitest';
import { SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { exportProfile, MiniprofSpanProcessor } from '../adapters/otel.js';
import { currentProfile, renderText, step, withProfile, type Profile, type TimingJSON } from '../src/index.js';
import { renderProfilePage } from '../src/results/pages.js';
import { fakeClock, fixed, sleep } from './helpers/clock.js';

const exporter = new InMemorySpanExporter();
const processor = new MiniprofSpanProcessor();
const provider = new NodeTracerProvider({ spanProcessors: [processor, new SimpleSpanProcessor(exporter)] });
provider.register({ contextManager: new AsyncLocalStorageContextManager() });
const tracer = trace.getTracer('test');

afterEach(() => exporter.reset());
afterAll(() => provider.shutdown());

/** The tree without times: names, custom timings as `[category] command`, and the `traced` marks. */
interface Shape {
  name: string;
  traced?: true;
  error?: true;
  unfinished?: true;
  custom?: string[];
  children?: Shape[];
}
function shape(t: TimingJSON): Shape {
  const out: Shape = { name: t.name };
  if (t.traced) out.traced = true;
  if (t.error) out.error = true;
  if (t.unfinished) out.unfinished = true;
  if (t.custom) out.custom = t.custom.map((c) => `[${c.category}] ${c.command}${c.traced ? ' (traced)' : ''}${c.error ? ' (error)' : ''}`);
  if (t.children.length > 0) out.children = t.children.map(shape);
  return out;
}

function span<T>(name: string, fn: (s: Span) => T, kind = SpanKind.INTERNAL, attributes: Record<string, string | number | string[]> = {}): T {
  return tracer.startActiveSpan(name, { kind, attributes }, (s) => {
    const r = fn(s);
    if (r instanceof Promise) return r.finally(() => s.end()) as T;
    s.end();
    return r;
  });
}

/** A client span started and ended around `ms` of waiting, as an instrumentation makes one. */
async function client(name: string, attributes: Record<string, string | number | string[]>, ms = 1, fail = false): Promise<void> {
  const s = tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes });
  await sleep(ms);
  if (fail) s.setStatus({ code: SpanStatusCode.ERROR });
  s.end();
}

describe('spans join the current profile', () => {
  test('internal spans become steps nested as the spans nest, under the step current when they started; db, http and rpc client spans become custom timings', async () => {
    const { profile } = await withProfile('job', async () => {
      await step('load', async () => {
        await span('resolver', async () => {
          await client('SELECT shop', { 'db.system.name': 'postgresql', 'db.query.text': "select * from users where name = 'bob' and id = 42" });
          await span('prisma:client:operation', async () => {
            await client('prisma:engine:db_query', { 'db.system': 'mysql', 'db.statement': 'select 1' });
          });
        });
        await client('get', { 'db.system.name': 'redis', 'db.query.text': 'get user:7' });
        await client('find', { 'db.system': 'mongodb', 'db.operation': 'find', 'db.mongodb.collection': 'orders' });
      });
      await client('GET', { 'http.request.method': 'GET', 'url.full': 'https://user:pw@api.example.com/v1/items?token=abc&page=2' });
      await client('GET', { 'http.method': 'POST', 'http.scheme': 'http', 'net.peer.name': 'old.example', 'net.peer.port': 8080, 'http.target': '/send' });
      await client('S3.GetObject', { 'rpc.system': 'aws-api', 'rpc.service': 'S3' });
    });
    expect(shape(profile.toJSON().root)).toEqual({
      name: 'job',
      custom: [
        '[http] GET https://api.example.com/v1/items?token=?&page=? (traced)',
        '[http] POST http://old.example:8080/send (traced)',
        '[aws-api] S3.GetObject (traced)',
      ],
      children: [
        {
          name: 'load',
          custom: ['[redis] get user:? (traced)', '[mongodb] find orders (traced)'],
          children: [
            {
              name: 'resolver',
              traced: true,
              custom: ['[sql] select * from users where name = ? and id = ? (traced)'],
              children: [{ name: 'prisma:client:operation', traced: true, custom: ['[sql] select ? (traced)'] }],
            },
          ],
        },
      ],
    });
  });

  test('the request\'s own (server) span is not a step; what starts under it goes under the current step', async () => {
    const { profile } = await withProfile('GET /', async () => {
      await span('GET /', () => span('handler', () => client('q', { 'db.system': 'sqlite', 'db.statement': 'select 2' })), SpanKind.SERVER);
    });
    expect(shape(profile.toJSON().root)).toEqual({ name: 'GET /', children: [{ name: 'handler', traced: true, custom: ['[sql] select ? (traced)'] }] });
  });

  test('a step opened inside a span goes under the profile\'s current step (steps are not spans), and a span inside that step goes under the step', async () => {
    const { profile } = await withProfile('job', async () => {
      await span('outer', async () => {
        await step('inner step', () => span('deep', () => {}));
      });
    });
    expect(shape(profile.toJSON().root)).toEqual({
      name: 'job',
      children: [
        { name: 'outer', traced: true },
        { name: 'inner step', children: [{ name: 'deep', traced: true }] },
      ],
    });
  });

  test('a span whose status is ERROR is marked as errored; N+1 over spans is flagged similar, duplicate only when values repeat', async () => {
    const { profile } = await withProfile('job', async () => {
      await client('boom', { 'db.system.name': 'postgresql', 'db.query.text': 'select * from nope' }, 1, true);
      for (const id of ['1', '2', '1']) {
        await client('q', { 'db.system.name': 'postgresql', 'db.query.text': 'select * from users where id = $1', 'db.postgresql.values': [id] });
      }
    });
    const json = profile.toJSON();
    expect(json.root.custom!.map((c) => [c.command, c.error, c.duplicate, c.similar])).toEqual([
      ['select * from nope', true, undefined, undefined],
      ['select * from users where id = $1', undefined, true, 1],
      ['select * from users where id = $1', undefined, undefined, 1],
      ['select * from users where id = $1', undefined, true, 1],
    ]);
    expect(json.similar).toEqual([{ id: 1, category: 'sql', command: 'select * from users where id = $1', count: 3, durationMs: expect.any(Number) }]);
  });

  test("issue 57: a database span's dialect comes from db.system; its parameter values are a digest, never in the command", async () => {
    const text = 'select "users"."id" from "users" where "email" = $1 -- don\'t log';
    const { profile } = await withProfile('job', async () => {
      await client('q', { 'db.system.name': 'postgresql', 'db.query.text': text, 'db.postgresql.values': ['victim@example.com'] });
      await client('q', { 'db.system': 'mysql', 'db.statement': "select `it's` from t where a = 'victim@example.com'" });
      await client('q', { 'db.system': 'mssql', 'db.statement': "select [it's] from t where a = N'victim@example.com'", 'db.query.parameter.0': 'x' });
      await client('q', { 'db.system.name': 'oracle', 'db.query.text': text });
    });
    const json = profile.toJSON();
    expect(json.root.custom!.map((c) => c.command)).toEqual([
      'select "users"."id" from "users" where "email" = $1',
      "select `it's` from t where a = ?",
      "select [it's] from t where a = ?",
      // A dialect miniprof does not know: masked by every dialect's rules at once.
      'select ?.? from ? where ? = ?',
    ]);
    expect(JSON.stringify(json)).not.toContain('victim');
  });

  test('times: a span starts at the profile\'s clock reading when it starts and lasts what the span lasted', async () => {
    const c = fakeClock(100);
    const { profile } = await withProfile('job', async () => {
      c.t = 105;
      await client('q', { 'db.system': 'redis', 'db.statement': 'ping' }, 30);
      c.t = 150;
    }, fixed(c));
    const [t] = profile.toJSON().root.custom!;
    expect(t!.startMs).toBe(5);
    expect(t!.durationMs).toBeGreaterThanOrEqual(29);
    expect(t!.durationMs).toBeLessThan(1000);
  });

  test('a span started with an explicit past start time (Prisma\'s engine spans) is placed that far back', async () => {
    let nowMs = 0;
    const { profile } = await withProfile('job', async () => {
      await sleep(60);
      nowMs = currentProfile()!.durationMs;
      const s = tracer.startSpan('prisma:engine:db_query', { kind: SpanKind.CLIENT, startTime: Date.now() - 50, attributes: { 'db.system': 'postgresql', 'db.statement': 'select 3' } });
      s.end();
    });
    const [t] = profile.toJSON().root.custom!;
    // Date.now() has whole milliseconds: the start is placed to within a couple of them.
    expect(Math.abs(t!.startMs - (nowMs - 50))).toBeLessThan(3);
    expect(t!.durationMs).toBeGreaterThanOrEqual(49);
  });

  test('a span of another trace than the profile\'s does not join it (a library that lost the async context runs another request\'s call here)', async () => {
    const { profile } = await span('request', () =>
      withProfile('job', () => {
        tracer.startSpan('another request\'s query', { root: true, kind: SpanKind.CLIENT, attributes: { 'db.system': 'redis', 'db.statement': 'get x' } }).end();
        tracer.startSpan('this request\'s query', { kind: SpanKind.CLIENT, attributes: { 'db.system': 'redis', 'db.statement': 'get y' } }).end();
      }),
    );
    expect(shape(profile.toJSON().root)).toEqual({ name: 'job', custom: ['[redis] get y (traced)'] });
    // Without a trace of its own (no span was active as it opened), a profile takes any span.
    const { profile: untraced } = await withProfile('job', () => {
      tracer.startSpan('q', { root: true, kind: SpanKind.CLIENT, attributes: { 'db.system': 'redis', 'db.statement': 'get z' } }).end();
    });
    expect(shape(untraced.toJSON().root)).toEqual({ name: 'job', custom: ['[redis] get z (traced)'] });
  });

  test('outside a profile nothing is recorded, and spans are exported as usual', async () => {
    await span('alone', () => client('q', { 'db.system': 'redis', 'db.statement': 'get a' }));
    const { profile } = await withProfile('job', () => {});
    expect(shape(profile.toJSON().root)).toEqual({ name: 'job' });
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['q', 'alone']);
  });

  test('a sealed profile is never changed by late spans: one still running is unfinished, its end and a later start change nothing', async () => {
    let late!: Span;
    let later!: () => void;
    const { profile } = await withProfile('job', () => {
      late = tracer.startSpan('late', { kind: SpanKind.INTERNAL });
      const child = tracer.startSpan('late q', { kind: SpanKind.CLIENT, attributes: { 'db.system': 'redis', 'db.statement': 'get k' } });
      later = () => {
        tracer.startSpan('after seal').end();
        child.end();
      };
    });
    const before = profile.toJSON();
    expect(shape(before.root)).toEqual({ name: 'job', custom: ['[redis] get k (traced)'], children: [{ name: 'late', traced: true, unfinished: true }] });
    expect(before.root.custom![0]!.unfinished).toBe(true);
    late.end();
    later();
    expect(profile.toJSON()).toEqual(before);
  });

  test('limits: spans count against maxSteps (then only counted) and maxDepth', async () => {
    const { profile } = await withProfile('job', async () => {
      for (let i = 0; i < 4; i++) await client('q', { 'db.system': 'redis', 'db.statement': `get ${i}` });
      span('a', () => span('b', () => span('c', () => {})));
    }, { maxSteps: 5, maxDepth: 2 });
    const json = profile.toJSON();
    expect(shape(json.root)).toEqual({
      name: 'job',
      custom: ['[redis] get ? (traced)', '[redis] get ? (traced)', '[redis] get ? (traced)', '[redis] get ? (traced)'],
      children: [{ name: 'a', traced: true }],
    });
    expect(json.droppedSteps).toBe(2);
  });
});

describe('cost outside a profile', () => {
  test('onStart and onEnd outside a profile read nothing of the span (one check each)', () => {
    const untouchable = new Proxy({}, {
      get(_t, key) {
        throw new Error(`read ${String(key)}`);
      },
    });
    const p = new MiniprofSpanProcessor();
    expect(() => p.onStart(untouchable as never, untouchable as never)).not.toThrow();
    expect(() => p.onEnd(untouchable)).not.toThrow();
  });
});

describe('the JSON with spans in it', () => {
  test('`traced` and `traceId` are counted by profileBytes (exact) and jsonBound (at least)', async () => {
    const { profileBytes } = await import('../src/core/json.js');
    const { profile } = await span('request', () =>
      withProfile('job', async () => {
        await span('from otel', () => client('q', { 'db.system.name': 'postgresql', 'db.query.text': 'select "é" from t where x = 1' }));
      }),
    );
    const json = profile.toJSON();
    expect(json.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(json.root.children[0]!.traced).toBe(true);
    const size = Buffer.byteLength(JSON.stringify(json));
    expect(profileBytes(json)).toBe(size);
    expect(profile.jsonBound()).toBeGreaterThanOrEqual(size);
  });
});

describe('the trace id', () => {
  test('a profile opened while a span is active records its trace id: JSON, the text tree\'s header line, the results page', async () => {
    const c = fakeClock();
    let traceId = '';
    const { profile } = await span('request', (s) => {
      traceId = s.spanContext().traceId;
      return withProfile('job', () => {}, fixed(c));
    }, SpanKind.SERVER);
    expect(profile.traceId).toBe(traceId);
    expect(profile.toJSON().traceId).toBe(traceId);
    expect(renderText(profile)).toBe(`web-1 at 2026-11-29T12:00:00.000Z trace ${traceId}\n job = 0.0ms\n`);
    const page = renderProfilePage(profile.toJSON(), '/_miniprof', profile.id);
    expect(page).toContain(`<div><dt>Trace</dt><dd>${traceId}</dd></div>`);
  });

  test('without an active span there is no trace id', async () => {
    const { profile } = await withProfile('job', () => {});
    expect(profile.traceId).toBeUndefined();
    expect('traceId' in profile.toJSON()).toBe(false);
  });

  test('traceUrl links the page to the backend; only an http(s) URL is linked, escaped', async () => {
    const { profile } = await span('request', () => withProfile('job', () => {}));
    const id = profile.traceId!;
    const urls: Record<string, string> = {
      jaeger: `http://localhost:16686/trace/${id}`,
      quoted: `https://ui.example/t?id=${id}&x="><script>`,
      script: 'javascript:alert(1)',
    };
    const pages: Record<string, string> = {};
    for (const [k, url] of Object.entries(urls)) {
      const p = new MiniprofSpanProcessor({ traceUrl: () => url });
      pages[k] = /<dt>Trace<\/dt><dd>.*?<\/dd>/.exec(renderProfilePage(profile.toJSON(), '/_miniprof', profile.id))![0];
      await p.shutdown();
    }
    expect(pages).toEqual({
      jaeger: `<dt>Trace</dt><dd><a href="http://localhost:16686/trace/${id}" rel="noreferrer">${id}</a></dd>`,
      quoted: `<dt>Trace</dt><dd><a href="https://ui.example/t?id=${id}&amp;x=&quot;&gt;&lt;script&gt;" rel="noreferrer">${id}</a></dd>`,
      script: `<dt>Trace</dt><dd>${id}</dd>`,
    });
    // Shut down, a processor leaves nothing set: the next profile records no trace id.
    const { profile: after } = await span('request', () => withProfile('job', () => {}));
    expect(after.traceId).toBeUndefined();
    new MiniprofSpanProcessor();
  });

  test('bad options are a coded TypeError at setup, naming what was given', () => {
    expect(() => new MiniprofSpanProcessor({ traceUrl: 'http://x' as never })).toThrow(
      expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_OPTION', message: 'miniprof: option "traceUrl" must be a function, got "http://x" (string)' }),
    );
    expect(() => new MiniprofSpanProcessor({ exportProfiles: 1 as never })).toThrow(expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_OPTION' }));
    expect(() => new MiniprofSpanProcessor({ tracer: 1 } as never)).toThrow(expect.objectContaining({ code: 'MINIPROF_ERR_UNKNOWN_OPTION' }));
    new MiniprofSpanProcessor();
  });
});

describe('exportProfile', () => {
  function byName(spans: ReadableSpan[]): Record<string, ReadableSpan> {
    return Object.fromEntries(spans.map((s) => [s.name, s]));
  }
  const ms = (t: [number, number]): number => t[0] * 1e3 + t[1] / 1e6;

  test('steps and custom timings become spans with their real times, children of the request\'s span; what came from spans is not sent again', async () => {
    let request!: Span;
    const { profile } = await span('request', (s) => {
      request = s;
      return withProfile('job', async () => {
        await step('load', async () => {
          await sleep(5);
          await span('from otel', () => sleep(1));
          await step('inner', () => sleep(5));
        });
        step('sync', () => {});
      });
    }, SpanKind.SERVER);
    exporter.reset();
    expect(exportProfile(profile)).toBe(3);
    const spans = byName(exporter.getFinishedSpans());
    expect(Object.keys(spans).sort()).toEqual(['inner', 'load', 'sync']);
    const requestId = request.spanContext().spanId;
    expect(spans.load!.parentSpanContext?.spanId).toBe(requestId);
    expect(spans.sync!.parentSpanContext?.spanId).toBe(requestId);
    expect(spans.inner!.parentSpanContext?.spanId).toBe(spans.load!.spanContext().spanId);
    for (const s of Object.values(spans)) expect(s.spanContext().traceId).toBe(profile.traceId);
    const json = profile.toJSON();
    const start = profile.startedAt;
    const end = start + json.durationMs;
    for (const s of Object.values(spans)) {
      expect(ms(s.startTime)).toBeGreaterThanOrEqual(start);
      expect(ms(s.endTime)).toBeLessThanOrEqual(end + 0.001);
    }
    const load = json.root.children[0]!;
    expect(ms(spans.load!.startTime)).toBeCloseTo(start + load.startMs, 3);
    expect(ms(spans.load!.endTime)).toBeCloseTo(start + load.startMs + load.durationMs, 3);
    expect(ms(spans.inner!.startTime)).toBeGreaterThanOrEqual(ms(spans.load!.startTime) + 5);
  });

  test('without a request span the profile becomes a trace of its own; custom timings are client spans with the redacted command', async () => {
    const { timing } = await import('../src/index.js');
    const { profile } = await withProfile('nightly', async () => {
      await timing('sql', "select * from t where id = 42", () => sleep(2));
      await step('failing', async () => {
        throw new Error('x');
      }).catch(() => {});
    });
    exporter.reset();
    expect(exportProfile(profile)).toBe(3);
    const spans = byName(exporter.getFinishedSpans());
    expect(spans.nightly!.parentSpanContext).toBeUndefined();
    expect(spans.sql!.parentSpanContext?.spanId).toBe(spans.nightly!.spanContext().spanId);
    expect(spans.sql!.kind).toBe(SpanKind.CLIENT);
    expect(spans.sql!.attributes).toEqual({ 'miniprof.category': 'sql', 'miniprof.command': 'select * from t where id = ?' });
    expect(spans.failing!.status.code).toBe(SpanStatusCode.ERROR);
    expect(spans.nightly!.instrumentationScope.name).toBe('miniprof');
  });

  test('exportProfiles: every sealed profile is exported after it closes, not before', async () => {
    const p = new MiniprofSpanProcessor({ exportProfiles: true });
    try {
      let sealed!: Profile;
      await span('request', async () => {
        const { profile } = await withProfile('job', () => step('a', () => {}));
        sealed = profile;
        expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual([]);
      });
      await new Promise((r) => setImmediate(r));
      expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['request', 'a']);
      expect(exporter.getFinishedSpans()[1]!.parentSpanContext?.spanId).toBe(exporter.getFinishedSpans()[0]!.spanContext().spanId);
      expect(sealed.sealed).toBe(true);
    } finally {
      await p.shutdown();
      new MiniprofSpanProcessor();
    }
  });

  test('refuses what is not a sealed profile, with a coded TypeError', async () => {
    expect(() => exportProfile({} as never)).toThrow(expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_ARGUMENT' }));
    await withProfile('open', () => {
      expect(() => exportProfile(step as never)).toThrow(expect.objectContaining({ code: 'MINIPROF_ERR_INVALID_ARGUMENT' }));
    });
  });
});
