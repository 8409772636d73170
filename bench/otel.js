// miniprof/otel's cost, on the built package (`npm run build` first):
//
//   node bench/otel.js [--http] [--micro] [--rounds N] [--slice SECONDS] [--connections N] [--spans N]
//
// --http: an Express app traced by OpenTelemetry (NodeTracerProvider, the http instrumentation,
//   a route that makes --spans spans), requests that are not a developer's. Two servers, the
//   same code, one with MiniprofSpanProcessor in its span processors and one without, loaded in
//   turns by autocannon for --slice seconds each, --rounds times; the ratio of requests per second
//   within each round, then the median. Target: >= 0.99.
// --micro [--json]: inside a developer's profile, per span, what MiniprofSpanProcessor adds to an
//   SDK span (startSpan + end, against the same tracer with no processor), a minimal processor
//   built on miniprof's public API (the least a processor can do: open a timing at onStart, stop it
//   at onEnd), and what miniprof's own `timing()` costs around a no-op; with the profile's seal
//   (which analyses every custom timing) and without; and outside a profile, what the processor
//   adds to a span against an empty processor. Target: the processor costs no more than
//   `timing()`. `npm run bench` runs it (bench/run.js, --json); --http is by hand.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { entry } from './http/page.js';

const argv = process.argv.slice(2);
const opt = (name, def) => {
  const i = argv.indexOf(name);
  return i !== -1 && argv[i + 1] !== undefined ? Number(argv[i + 1]) : def;
};
const spans = opt('--spans', 5);
const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];

if (argv[0] === '--serve') await serve(argv[1] === 'with');
else {
  const both = !argv.includes('--http') && !argv.includes('--micro');
  if (both || argv.includes('--micro')) await micro();
  if (both || argv.includes('--http')) await http();
}

/** One server: OpenTelemetry first (instrumentations patch at require time), then Express. */
async function serve(withProcessor) {
  const require = createRequire(import.meta.url);
  const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node');
  const { registerInstrumentations } = require('@opentelemetry/instrumentation');
  const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http');
  const { MiniprofSpanProcessor } = await import(entry('otel'));
  // No exporter: what is measured is what miniprof adds to an app's tracing, not the export.
  const provider = new NodeTracerProvider({ spanProcessors: withProcessor ? [new MiniprofSpanProcessor()] : [] });
  provider.register();
  registerInstrumentations({ tracerProvider: provider, instrumentations: [new HttpInstrumentation()] });
  const { api } = { api: require('@opentelemetry/api') };
  const express = require('express');
  const { miniprof } = await import(entry('express'));
  const tracer = api.trace.getTracer('app');
  const app = express();
  app.use(miniprof({ isDeveloper: (req) => req.headers['x-dev'] === '1' }));
  app.get('/', (_req, res) => {
    for (let i = 0; i < spans; i++) {
      tracer.startSpan('db', { kind: api.SpanKind.CLIENT, attributes: { 'db.system.name': 'postgresql', 'db.query.text': 'select 1' } }).end();
    }
    res.send('<html><body>ok</body></html>');
  });
  const server = app.listen(0, '127.0.0.1', () => console.log(server.address().port));
}

async function start(mode) {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--serve', mode, '--spans', String(spans)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = await once(child.stdout, 'data');
  return { child, url: `http://127.0.0.1:${String(line).trim()}/` };
}

async function http() {
  const autocannon = (await import('autocannon')).default;
  const rounds = opt('--rounds', 5);
  const slice = opt('--slice', 3);
  const connections = opt('--connections', 10);
  const servers = { without: await start('without'), with: await start('with') };
  const load = async (url) => (await autocannon({ url, connections, duration: slice })).requests.average;
  // Warm both up before measuring.
  await Promise.all([load(servers.without.url), load(servers.with.url)]);
  const ratios = [];
  for (let r = 0; r < rounds; r++) {
    // Alternate who goes first, so drift in the machine's load falls on both.
    const order = r % 2 === 0 ? ['without', 'with'] : ['with', 'without'];
    const rps = {};
    for (const k of order) rps[k] = await load(servers[k].url);
    ratios.push(rps.with / rps.without);
    console.log(`round ${r + 1}: without ${rps.without.toFixed(0)} req/s, with processor ${rps.with.toFixed(0)} req/s, ratio ${(rps.with / rps.without).toFixed(3)}`);
  }
  console.log(`http: OTel-traced non-developer request, ${spans} spans each, with MiniprofSpanProcessor / without: median x${median(ratios).toFixed(3)} (target >= 0.99)`);
  for (const s of Object.values(servers)) s.child.kill();
}

async function micro() {
  const require = createRequire(import.meta.url);
  const api = require('@opentelemetry/api');
  const { BasicTracerProvider } = require('@opentelemetry/sdk-trace-base');
  const { MiniprofSpanProcessor } = await import(entry('otel'));
  const { step, timing, withProfile } = await import(entry('index'));
  // The least a processor keeping the contract can do with miniprof's public API: open a timing on
  // the current step at onStart and stop it at onEnd. The SDK hands both calls only the span, so
  // the two are joined by a WeakMap (a span that never ends must not be kept alive).
  const open = new WeakMap();
  const OFF = step('off');
  const minimal = {
    onStart(span) {
      const t = step('q');
      if (t !== OFF) open.set(span, t);
    },
    onEnd(span) {
      const t = open.get(span);
      if (t === undefined) return;
      open.delete(span);
      t.stop();
    },
    forceFlush: async () => {},
    shutdown: async () => {},
  };
  const tracerWith = (spanProcessors) => new BasicTracerProvider({ spanProcessors }).getTracer('bench');
  const withP = tracerWith([new MiniprofSpanProcessor()]);
  const withMinimal = tracerWith([minimal]);
  // For scale outside a profile: what the SDK's dispatch to any processor costs a span.
  const withEmpty = tracerWith([{ onStart() {}, onEnd() {}, forceFlush: async () => {}, shutdown: async () => {} }]);
  const without = tracerWith([]);
  const attributes = { 'db.system.name': 'postgresql', 'db.query.text': 'select * from users where id = $1' };
  const perProfile = 500;
  const noop = () => 0;
  const span = (tracer) => () => tracer.startSpan('q', { kind: api.SpanKind.CLIENT, attributes }).end();
  const cases = {
    processor: span(withP),
    minimal: span(withMinimal),
    span: span(without),
    timing: () => timing('sql', 'select * from users where id = $1', noop),
    direct: noop,
  };
  // One batch: perProfile calls inside a fresh profile (maxSteps above it: every one recorded).
  // `loop` is the calls alone, `total` adds opening and sealing the profile (the seal analyses
  // every custom timing: what a developer's request pays for each one).
  const run = async (fn) => {
    let loop = 0;
    const t0 = process.hrtime.bigint();
    await withProfile('bench', () => {
      const t1 = process.hrtime.bigint();
      for (let i = 0; i < perProfile; i++) fn();
      loop = Number(process.hrtime.bigint() - t1) / perProfile;
    }, { maxSteps: perProfile + 10, instrument: false });
    return { loop, total: Number(process.hrtime.bigint() - t0) / perProfile };
  };
  // Warmed up first, then measured in turns; each difference is taken within a round, so drift
  // in the machine's load falls on both sides of it.
  for (let r = 0; r < 10; r++) for (const fn of Object.values(cases)) await run(fn);
  const diffs = { processor: [], minimal: [], timing: [] };
  const loops = { processor: [], minimal: [], timing: [] };
  // Outside any profile (a request that is not a developer's): what registering the processor
  // adds to a span, the non-developer's whole cost of miniprof/otel.
  const outside = (fn) => {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < perProfile; i++) fn();
    return Number(process.hrtime.bigint() - t0) / perProfile;
  };
  const away = [];
  const awayEmpty = [];
  const spanAlone = [];
  const emptySpan = span(withEmpty);
  for (let r = 0; r < 41; r++) {
    const m = {};
    for (const [name, fn] of Object.entries(cases)) m[name] = await run(fn);
    const bare = outside(cases.span);
    away.push(outside(cases.processor) - bare);
    awayEmpty.push(outside(emptySpan) - bare);
    spanAlone.push(bare);
    for (const k of ['processor', 'minimal']) {
      diffs[k].push(m[k].total - m.span.total);
      loops[k].push(m[k].loop - m.span.loop);
    }
    diffs.timing.push(m.timing.total - m.direct.total);
    loops.timing.push(m.timing.loop - m.direct.loop);
  }
  const ops = {};
  for (const k of Object.keys(diffs)) {
    ops[`${k}.total`] = median(diffs[k]);
    ops[`${k}.loop`] = median(loops[k]);
  }
  ops['outside.processor'] = median(away);
  ops['outside.span'] = median(spanAlone);
  ops['outside.empty'] = median(awayEmpty);
  if (argv.includes('--json')) {
    console.log(JSON.stringify({ node: process.version, ops }));
    return;
  }
  const ns = (x) => `${x.toFixed(0)} ns`;
  console.log(`per span inside a developer's profile (median of 41 rounds x ${perProfile}; "calls": the calls alone, "with the seal": opening and sealing the profile too)`);
  console.log(`  MiniprofSpanProcessor, over an SDK span without it: ${ns(ops['processor.total'])} with the seal, ${ns(ops['processor.loop'])} calls`);
  console.log(`  a minimal processor (step at onStart, stop at onEnd): ${ns(ops['minimal.total'])} with the seal, ${ns(ops['minimal.loop'])} calls`);
  console.log(`  timing() around a no-op, over a direct call:          ${ns(ops['timing.total'])} with the seal, ${ns(ops['timing.loop'])} calls`);
  console.log(`  outside a profile, MiniprofSpanProcessor over an SDK span without it:   ${ns(ops['outside.processor'])} (an empty processor ${ns(ops['outside.empty'])}; the span itself ${ns(ops['outside.span'])})`);
  console.log(`micro: the processor costs x${(ops['processor.total'] / ops['timing.total']).toFixed(2)} of timing() per span (target: <= x1)`);
}
