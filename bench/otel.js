// miniprof/otel's cost, on the built package (`npm run build` first):
//
//   node bench/otel.js [--http] [--micro] [--rounds N] [--slice SECONDS] [--connections N] [--spans N]
//
// --http: an Express app traced by OpenTelemetry (NodeTracerProvider, the http instrumentation,
//   a route that makes --spans spans), requests that are not a developer's. Two servers, the
//   same code, one with MiniprofSpanProcessor in its span processors and one without, loaded in
//   turns by autocannon for --slice seconds each, --rounds times; the ratio of requests per second
//   within each round, then the median. Target: >= 0.99.
// --micro: inside a developer's profile, per span: the processor's onStart and onEnd alone (on
//   real SDK spans), an SDK span (startSpan + end) with the processor registered and without it,
//   and miniprof's own `timing()` around a no-op; each with the profile's seal (which analyses
//   every custom timing) included. Target: the processor costs no more than `timing()`.
// Neither runs by default under `npm run bench`: both run when no flag is given.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

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
  const { MiniprofSpanProcessor } = await import('../dist/bundle/otel.js');
  // No exporter: what is measured is what miniprof adds to an app's tracing, not the export.
  const provider = new NodeTracerProvider({ spanProcessors: withProcessor ? [new MiniprofSpanProcessor()] : [] });
  provider.register();
  registerInstrumentations({ tracerProvider: provider, instrumentations: [new HttpInstrumentation()] });
  const { api } = { api: require('@opentelemetry/api') };
  const express = require('express');
  const { miniprof } = await import('../dist/bundle/express.js');
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
  const { MiniprofSpanProcessor } = await import('../dist/bundle/otel.js');
  const { timing, withProfile } = await import('../dist/bundle/index.js');
  const withP = new BasicTracerProvider({ spanProcessors: [new MiniprofSpanProcessor()] }).getTracer('bench');
  const without = new BasicTracerProvider({ spanProcessors: [] }).getTracer('bench');
  const attributes = { 'db.system.name': 'postgresql', 'db.query.text': 'select * from users where id = $1' };
  const perProfile = 500;
  const noop = () => 0;
  // The processor's own part: onStart and onEnd called on real SDK spans made (and ended) beforehand.
  const made = Array.from({ length: perProfile }, () => {
    const s = without.startSpan('q', { kind: api.SpanKind.CLIENT, attributes });
    s.end();
    return s;
  });
  const processor = new MiniprofSpanProcessor();
  let at = 0;
  const cases = {
    'processor alone (onStart + onEnd)': () => {
      const s = made[at++ % perProfile];
      processor.onStart(s, api.ROOT_CONTEXT);
      processor.onEnd(s);
    },
    'span, processor registered': () => withP.startSpan('q', { kind: api.SpanKind.CLIENT, attributes }).end(),
    'span, no processor': () => without.startSpan('q', { kind: api.SpanKind.CLIENT, attributes }).end(),
    'timing()': () => timing('sql', 'select * from users where id = $1', noop),
    'direct call': () => noop(),
  };
  const run = async (fn) => {
    const t0 = process.hrtime.bigint();
    // maxSteps above perProfile: every span is recorded, none only counted.
    await withProfile('bench', () => {
      for (let i = 0; i < perProfile; i++) fn();
    }, { maxSteps: perProfile + 10, instrument: false });
    return Number(process.hrtime.bigint() - t0) / perProfile;
  };
  // Warmed up first, then measured in turns, so neither JIT warm-up nor drift favours one case.
  for (let r = 0; r < 10; r++) for (const fn of Object.values(cases)) await run(fn);
  const samples = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (let r = 0; r < 31; r++) for (const [name, fn] of Object.entries(cases)) samples[name].push(await run(fn));
  const ns = {};
  for (const name of Object.keys(cases)) {
    ns[name] = median(samples[name]);
    console.log(`${name}: ${ns[name].toFixed(0)} ns per call inside a developer's profile (median of 31 x ${perProfile}, the profile's seal included)`);
  }
  const added = ns['span, processor registered'] - ns['span, no processor'];
  const alone = ns['processor alone (onStart + onEnd)'] - ns['direct call'];
  const own = ns['timing()'] - ns['direct call'];
  console.log(
    `micro: per span the processor costs ${alone.toFixed(0)} ns alone and adds ${added.toFixed(0)} ns to an SDK span; timing() costs ${own.toFixed(0)} ns (target: processor <= timing())`,
  );
}
