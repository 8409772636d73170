// One measurement per process, printed as one JSON line (bench/run.js runs several, interleaved):
//
//   node bench/micro/child.js off                 step() outside a profile (mitata)
//   node bench/micro/child.js on <contender>      a step inside an open profile: miniprof, reference, otel
//   node --expose-gc bench/micro/child.js mem     bytes an open profile keeps per step
//
// miniprof is loaded as users load it, through the package's bundled entry (dist/bundle/index.js,
// or MINIPROF_BENCH_DIST's), and only its public API is used.
//
// `on`: mitata cannot time a step inside a profile through the public API alone (a profile
// holds at most maxSteps steps, and emptying it needs internals), so each sample is a batch of
// BATCH steps inside a fresh profile, timed from the first step to the last (opening and sealing
// the profile are outside the timing). The process alternates the contender's batches with the
// same batches of a plain call (`bare`), so both see the same minute of the VM. Each contender
// runs in a process of its own, with its own AsyncLocalStorage alone in it, as in an app.
import { measure } from 'mitata';
import { AsyncLocalStorage } from 'node:async_hooks';
import { entry, otelStep } from '../http/page.js';
import { referenceStep } from '../reference.js';

const [mode, contender] = process.argv.slice(2);
const MIN_MS = Number(process.env.MINIPROF_BENCH_MICRO_MS ?? 300);
const BATCH = 500;

let sink = 0;
function work() {
  sink++;
  return sink;
}
async function aw() {
  await undefined;
  return ++sink;
}

const out = { mode, contender, node: process.version, ops: {} };

async function m(name, fn) {
  // Warm up first, time-based too: V8's tiering of a fresh async loop takes ~100 ms, and a cold
  // first call can exceed mitata's batching threshold.
  const t0 = performance.now();
  const until = t0 + Math.min(150, MIN_MS / 2);
  for (let i = 0; i < 20000 || performance.now() < until; i++) {
    const r = fn();
    if (r instanceof Promise) await r;
  }
  const r = await measure(fn, { min_cpu_time: MIN_MS * 1e6, batch_samples: 4096, batch_threshold: Infinity, warmup_threshold: Infinity });
  out.ops[name] = r.p50;
}

/**
 * step() outside a profile, over a direct call through a function of the same shape that has
 * seen the same calls: once a call site inside either has seen a sync and an async `fn`, calling
 * `fn` costs ~2 ns more on Node 20 whoever makes it, so a bare call would flatter the baseline.
 * Then once more after one profile was opened and closed, and the bare await before and after
 * it: the promise hooks a profile switched on (Node <= 22) must be released once it closes.
 */
async function off() {
  const { step, withProfile } = await import(entry('index'));
  const direct = (_name, fn) => fn();
  await m('bare.sync', () => work());
  await m('direct.sync', () => direct('s', work));
  await m('step.off.sync', () => step('s', work));
  await m('bare.async', () => aw());
  await m('bare.async', () => aw());
  await m('direct.async', () => direct('s', aw));
  await m('step.off.async', () => step('s', aw));
  await m('bare.async', () => aw());
  await withProfile('once', async () => {
    await step('a', aw);
  });
  // miniprof releases the hooks a few tens of ms after the last profile closed.
  await new Promise((r) => setTimeout(r, 100));
  await m('released.step.off.sync', () => step('s', work));
  await m('released.direct.sync', () => direct('s', work));
  await m('released.bare.async', () => aw());
}

/** How each contender opens a profile (`enter(fn)`) and times a step inside it. */
async function contenderOf(name) {
  if (name === 'miniprof') {
    const { step, withProfile } = await import(entry('index'));
    return { step, enter: (fn) => withProfile('bench', fn, { maxSteps: BATCH + 10 }) };
  }
  if (name === 'reference') {
    // The reference profiler (bench/reference.js): a root node in its own store per "request".
    const als = new AsyncLocalStorage();
    return { step: referenceStep(als), enter: (fn) => als.run({ name: 'bench', start: performance.now(), end: 0, children: null }, fn) };
  }
  if (name === 'otel') {
    // OpenTelemetry's SDK with no processor (it shows nothing): a span per step under a request span.
    const api = await import('@opentelemetry/api');
    const { BasicTracerProvider } = await import('@opentelemetry/sdk-trace-base');
    const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
    api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    api.trace.setGlobalTracerProvider(new BasicTracerProvider());
    const tracer = api.trace.getTracer('bench');
    const enter = (fn) =>
      tracer.startActiveSpan('request', async (span) => {
        try {
          return await fn();
        } finally {
          span.end();
        }
      });
    return { step: otelStep(tracer), enter };
  }
  throw new Error(`unknown contender ${name}; known: miniprof, reference, otel`);
}

/** ns per step of one batch: BATCH steps of `kind` inside a fresh profile, the profile's open and seal untimed. */
async function batch(c, kind) {
  let ms = 0;
  await c.enter(async () => {
    const t0 = performance.now();
    if (kind === 'sync') for (let i = 0; i < BATCH; i++) c.step('s', work);
    else for (let i = 0; i < BATCH; i++) await c.step('s', aw);
    ms = performance.now() - t0;
  });
  return (ms * 1e6) / BATCH;
}

async function on() {
  const sides = { step: await contenderOf(contender), bare: { step: (_name, fn) => fn(), enter: (fn) => fn() } };
  const samples = {};
  const ROUNDS = 6;
  const roundMs = Math.max(20, MIN_MS / 3);
  for (let r = -1; r < ROUNDS; r++) {
    for (const kind of ['sync', 'async']) {
      for (const [side, c] of Object.entries(sides)) {
        const until = performance.now() + roundMs;
        const xs = [];
        for (let i = 0; i < 10 || performance.now() < until; i++) xs.push(await batch(c, kind));
        // Round -1 warms both sides up (V8's tiers), unrecorded.
        if (r >= 0) (samples[`${side}.${kind}`] ??= []).push(...xs);
      }
    }
  }
  for (const [k, xs] of Object.entries(samples)) out.ops[k] = median(xs);
}

/** Bytes kept per step while the profile is open (what a request holds until it renders). */
async function mem() {
  if (typeof globalThis.gc !== 'function') throw new Error('run with --expose-gc');
  const { step, withProfile, currentProfile } = await import(entry('index'));
  const N = 200_000;
  const heap = () => {
    globalThis.gc();
    globalThis.gc();
    return process.memoryUsage().heapUsed;
  };
  for (const kind of ['sync', 'async']) {
    // Let the profile before this one go (the hooks' release and the event-loop sampler hold on
    // for a few tens of ms after the last profile closes), or its freeing is counted against this one.
    await new Promise((r) => setTimeout(r, 200));
    await withProfile(
      'mem',
      async () => {
        const h0 = heap();
        if (kind === 'sync') for (let i = 0; i < N; i++) step('s', work);
        else for (let i = 0; i < N; i++) await step('s', aw);
        out.ops[`retained.${kind}`] = (heap() - h0) / N;
        if (currentProfile().toJSON().droppedSteps !== 0) throw new Error('steps were dropped');
      },
      { maxSteps: N + 10 },
    );
  }
}

function median(xs) {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  const k = s.length >> 1;
  return s.length % 2 ? s[k] : (s[k - 1] + s[k]) / 2;
}

const modes = { off, on, mem };
if (modes[mode] === undefined) throw new Error(`usage: child.js <off | on miniprof|reference|otel | mem>`);
await modes[mode]();
out.sink = sink > 0;
process.stdout.write(JSON.stringify(out) + '\n');
