// `node bench/http/server.js <express|fastify|koa|hono|http> <config>`: one server on 127.0.0.1:0, started by
// bench/run.js over IPC. It reports its port once listening, and on {cmd:'stats'} its own CPU
// time and request count, so CPU per request is the server's alone.
import { constants, PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';
import { AsyncLocalStorage } from 'node:async_hooks';
import { DEVELOPER_HEADER, direct, entry, emptyHook, otelCollector, otelStep, servePage } from './page.js';
import { installReference, referencePageStep } from '../reference.js';

const [framework, config] = process.argv.slice(2);
// capture-<rate>: mixed traffic, nobody a developer and `capture` on at that rate: the share of
// requests sampled are profiled invisibly (and dropped, the page is fast), the rest are not.
const CAPTURE = ['capture-0.001', 'capture-0.01', 'capture-0.1'];
const CONFIGS = {
  express: ['none', 'hook', 'nondev', 'dev', 'dev-nostore', 'ref', 'otel', 'otel-proc', 'otel-view', 'spin10', 'floor', 'als', ...CAPTURE],
  fastify: ['none', 'hook', 'nondev', 'dev', 'dev-nostore', 'ref', 'otel', 'otel-proc', 'otel-view', 'spin10', 'floor', 'als', ...CAPTURE],
  // Koa, Hono and node:http: their non-developer request against the same app without them.
  koa: ['none', 'hook', 'nondev', 'dev'],
  hono: ['none', 'hook', 'nondev', 'dev'],
  http: ['none', 'hook', 'nondev', 'dev'],
};
if (!CONFIGS[framework]?.includes(config)) {
  throw new Error(`usage: server.js <${Object.keys(CONFIGS).join('|')}> <config>; configs: ${JSON.stringify(CONFIGS)}`);
}

let s = direct;
let tracer;
let view;
let floor;
// dev-nostore: a developer request with the results store off (`results: false`): no profile
// kept for the results pages and no link headers, the features the reference profiler lacks.
const capture = CAPTURE.includes(config);
const ours = config === 'dev' || config === 'dev-nostore' || config === 'nondev' || capture;
if (ours) {
  s = (await import(entry('index'))).step;
  // MP_DIRECT=1: the profile is opened but the page's steps are plain calls (to split the cost;
  // the same for the reference).
  if (process.env.MP_DIRECT === '1') s = direct;
} else if (config === 'ref') {
  // The reference profiler of the budget (bench/reference.js): every request profiled, the same
  // comment and header, none of miniprof's safety, store or links.
  s = process.env.MP_DIRECT === '1' ? direct : referencePageStep;
} else if (config === 'floor') {
  // The least any profiler meeting the contract must do for a developer request (floor.js).
  // Loaded for this configuration alone, as OTel is: every other server loads the same modules
  // as before (Run 30: on Node 20 each module a server loads can cost it).
  floor = await import('./floor.js');
  s = floor.floorStep;
  if (floor.floorOutputs) view = floor.floorView;
} else if (config === 'otel' || config === 'otel-proc' || config === 'otel-view') {
  const api = await import('@opentelemetry/api');
  const { BasicTracerProvider } = await import('@opentelemetry/sdk-trace-base');
  const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  if (config === 'otel') {
    // The cheapest OTel setup there is: sampled spans, no processor, no exporter. It shows nothing.
    api.trace.setGlobalTracerProvider(new BasicTracerProvider());
  } else if (config === 'otel-proc') {
    // The same, with miniprof/otel's span processor registered and nobody a developer: what the
    // processor costs an OTel-traced request that is not profiled (one check per span).
    const { MiniprofSpanProcessor } = await import(entry('otel'));
    api.trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new MiniprofSpanProcessor()] }));
  } else {
    // The same page shown as miniprof shows it: spans kept per request, rendered into the response.
    const c = otelCollector(api);
    api.trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [c.processor] }));
    view = c.view;
  }
  tracer = api.trace.getTracer('bench');
  s = otelStep(tracer);
}
// SPIN_US=n (config none), or config spin10: the route burns n µs of CPU in plain JavaScript, a
// server made slower by work of a known size, to see what any added cost of that size does to the
// bench's figures (`contest.js <fw> none spin10`).
const spinUs = config === 'spin10' ? 10 : Number(process.env.SPIN_US ?? 0);
if (spinUs > 0) {
  if (config !== 'none' && config !== 'spin10') throw new Error('SPIN_US is for the none configuration');
  s = (name, fn) => {
    if (name === 'render') for (const end = performance.now() + spinUs / 1000; performance.now() < end; );
    return fn();
  };
}
function counterClock() {
  let t = 0;
  return () => (t += 0.013);
}
// `nondev`: a developer is a request with the bench's developer header (none of the load's
// requests; the one the mixed-traffic rows keep in flight). `dev`, `dev-nostore`: every request.
// Hono hands isDeveloper its context, whose Node request is `c.env.incoming`.
const headersOf = (req) => req.headers ?? req.env?.incoming?.headers ?? {};
const isDeveloper = config === 'nondev' ? (req) => headersOf(req)[DEVELOPER_HEADER] === '1' : () => true;
const miniprofOptions = {
  // capture-<rate>: nobody is a developer; capture samples that share of the requests. The
  // maxPerMinute is high enough never to stop the sampling: the bench's page is never slow, so
  // nothing is kept and the budget is never spent anyway.
  isDeveloper: capture ? () => false : isDeveloper,
  ...(capture ? { capture: { rate: Number(config.slice('capture-'.length)), maxPerMinute: 10_000 } } : {}),
  machine: 'bench',
  ...(config === 'dev-nostore' ? { results: false } : {}),
  // MP_COUNTER_CLOCK=1: profiles on a counter clock (as the instruction harness runs them), which
  // also leaves out the event-loop sampler: what reading the real clock costs over HTTP.
  ...(process.env.MP_COUNTER_CLOCK === '1' ? { clock: counterClock() } : {}),
  // MP_OWN_CLOCK=1: the same real clock passed in as the user's own, which leaves out only the
  // event-loop sampler (it runs on the default clock alone): the sampler's share, apart from the clock's.
  ...(process.env.MP_OWN_CLOCK === '1' ? { clock: () => performance.now() } : {}),
  ...JSON.parse(process.env.MP_OPTS || '{}'),
};

// KEEP_OBJECTS=n: every configuration keeps n small objects from start-up, as any real app keeps
// far more than a bare bench page. On Node 24 a server a little over this edge splits from its
// twin by up to 17% per process (V8's GC schedule) and a bare one never does, so setting `none`
// against miniprof compared two regimes as well as two servers (Run 27).
// bench/run.js sets 20,000 for every server (its `--keep`). Read in the stats reply so the array
// outlives the module's evaluation.
const keepObjects = Number(process.env.KEEP_OBJECTS ?? 0);
if (!Number.isInteger(keepObjects) || keepObjects < 0) throw new Error(`KEEP_OBJECTS must be a whole number, got ${process.env.KEEP_OBJECTS}`);
const kept = Array.from({ length: keepObjects }, (_, i) => ({ i, s: `x${i}` }));

const server = await servePage(framework, s, async (app) => {
  if (ours) {
    const { miniprof, wrap } = await import(entry(framework));
    if (framework === 'http') app.listener = wrap(app.listener, miniprofOptions);
    else if (framework === 'fastify') await app.register(miniprof, miniprofOptions);
    else app.use(miniprof(miniprofOptions));
  } else if (config === 'ref') {
    // REF_OUTPUTS=0: the reference renders nothing (no comment, no Server-Timing).
    await installReference(framework, app, process.env.REF_OUTPUTS !== '0');
  } else if (config === 'hook') {
    emptyHook(framework, app);
  } else if (config === 'floor') {
    floor.installFloor(framework, app);
  } else if (config === 'als') {
    // The floor of mixed traffic: no profiler, a bare AsyncLocalStorage entered for the requests
    // with the developer header and kept open as long as they are (bench/run.js's mixed rows).
    // On Node <= 22 that switches promise hooks on for the whole process, so every request's
    // promises pay for it: the share of the mixed-traffic tax that is Node's, not miniprof's.
    const als = new AsyncLocalStorage();
    const dev = (headers) => headers[DEVELOPER_HEADER] === '1';
    if (framework === 'express') app.use((req, _res, next) => (dev(req.headers) ? als.run({}, next) : next()));
    else app.addHook('onRequest', (request, _reply, done) => (dev(request.headers) ? als.run({}, done) : done()));
  } else if (config.startsWith('otel') && framework === 'express') {
    app.use((req, res, next) =>
      tracer.startActiveSpan(`${req.method} ${req.path}`, (span) => {
        res.once('finish', () => span.end());
        next();
      }),
    );
  } else if (config.startsWith('otel')) {
    app.addHook('onRequest', (request, reply, done) =>
      tracer.startActiveSpan(`${request.method} ${request.url}`, (span) => {
        reply.raw.once('finish', () => span.end());
        done();
      }),
    );
  }
}, view);

// Only the load's requests (GET /) are counted: CPU per request is per page served.
let requests = 0;
server.on('request', (req) => {
  if (req.url === '/') requests++;
});
// Main-thread GC pauses, so a table can show what garbage kept alive costs (Run 8).
// Mark-compact apart (its pause and the incremental marking before it): its marking walks the
// whole live heap, so its share grows with what a server keeps (its own code and data included),
// where a scavenge's does not. Only main-thread pauses: V8's concurrent marking runs on helper
// threads, whose CPU is in cpuUsage() but not here.
let gcMs = 0;
let majorGcMs = 0;
let majorGcs = 0;
let minorGcs = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gcMs += e.duration;
    const kind = e.detail?.kind ?? e.kind;
    // Incremental marking's steps on the main thread belong to the mark-compact they lead to.
    if (kind === constants.NODE_PERFORMANCE_GC_MAJOR || kind === constants.NODE_PERFORMANCE_GC_INCREMENTAL) majorGcMs += e.duration;
    if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) majorGcs++;
    else if (kind === constants.NODE_PERFORMANCE_GC_MINOR) minorGcs++;
  }
}).observe({ entryTypes: ['gc'] });
// The young generation's size, shown in bench/http/contest.js's table: V8 grows it under load on
// each process's own schedule, and on Node 24 identical miniprof servers split with it.
const youngBytes = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
process.on('message', (msg) => {
  if (msg?.cmd === 'stats') process.send({ cpu: process.cpuUsage(), minorFaults: process.resourceUsage().minorPageFault, requests, gcMs, majorGcMs, majorGcs, minorGcs, youngBytes: youngBytes(), kept: kept.length });
  else if (msg?.cmd === 'exit') process.exit(0);
});
process.on('disconnect', () => process.exit(0));
process.send({ port: server.address().port });
