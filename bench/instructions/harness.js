// One process, server and keep-alive client together: `node --predictable harness.js
// <express|fastify> <config> <requests>` serves the bench page (bench/http/page.js) over real
// loopback sockets, IN_FLIGHT requests at a time (default 25), then exits. KEEP_OPEN=1,
// FAKE_CLOCK=1 and CPU_FROM are explained where they act; run.js sets the first three unless given
// --load.
// bench/instructions/run.js counts the instructions it executes under valgrind. The client is most
// of a `none` row (~230,000 of Fastify's ~300,000), and a developer response costs it ~14,000 more
// to parse (headers, comment). Other differences are the server's.
//
// Configurations: none; hook (an empty global hook of the kind miniprof registers: Fastify's
// `onRequest`, an Express middleware; the framework's own share of a non-developer request, as
// in bench/http/server.js); nondev (miniprof installed, nobody a developer, its steps called); visited
// (the same after one developer request: on Express its `end`, `writeHead` and `emit` are then on
// the shared response prototype and every response passes through them); hooks
// (promise hooks on, nothing else); open (a profile per request with plain calls instead of
// steps, no outputs, no results store); steps (+ the page's 10 steps); outputs (+ comment and
// Server-Timing); dev (+ the results store: the default setup); ref (bench/reference.js, the
// budget's reference profiler, on its real clock: `--configs none,ref,dev` puts it next to ours;
// MP_DIRECT=1 makes its steps plain calls and REF_OUTPUTS=0 leaves out its comment and header, to
// split it into the same layers).
import http from 'node:http';
import { getter } from './get.js';
import { AsyncLocalStorage } from 'node:async_hooks';
import { direct, entry, emptyHook, servePage } from '../http/page.js';
import { installReference, referencePageStep } from '../reference.js';


const [framework, config, count] = process.argv.slice(2);
const CONFIGS = {
  none: null,
  hook: null,
  nondev: {},
  visited: {},
  hooks: null,
  open: { results: false, htmlComment: false, serverTiming: false },
  steps: { results: false, htmlComment: false, serverTiming: false },
  outputs: { results: false },
  dev: {},
  ref: null,
};
if (!['express', 'fastify'].includes(framework) || !(config in CONFIGS) || !(Number(count) > 0)) {
  throw new Error(`usage: harness.js <express|fastify> <${Object.keys(CONFIGS).join('|')}> <requests>`);
}
const extra = CONFIGS[config];
const s =
  config === 'ref' ? (process.env.MP_DIRECT === '1' ? direct : referencePageStep) : extra !== null && config !== 'open' ? (await import(entry('index'))).step : direct;
// FAKE_CLOCK=1: every reading 13 us after the last. Under valgrind real durations are ~50x longer
// and vary run to run, and with them the profile's shape (blocking flags, overlaps, digits), so
// its cost; a counter makes each request's profile the same. It also leaves out the event-loop
// sampler, which runs only on the default clock.
let t = 0;
const fake = process.env.FAKE_CLOCK === '1' ? { clock: () => (t += 0.013) } : {};
// MP_OPTIONS='{"htmlComment":false}' adds options (JSON) to the configuration's, to split a row.
const more = process.env.MP_OPTIONS === undefined ? {} : JSON.parse(process.env.MP_OPTIONS);
let visits = 0;
const isDeveloper = config === 'nondev' ? () => false : config === 'visited' ? () => visits++ === 0 : () => true;
const options = { isDeveloper, machine: 'bench', ...fake, ...extra, ...more };

// COMPRESSION=1 (Express) mounts compression() first, as the README advises: miniprof then finds
// compression's own `res.end` and takes its own-wrapper path.
const compression = process.env.COMPRESSION === '1' && framework === 'express' ? (await import('compression')).default : null;
const server = await servePage(framework, s, async (app) => {
  if (compression !== null) app.use(compression());
  if (config === 'ref') await installReference(framework, app, process.env.REF_OUTPUTS !== '0');
  if (config === 'hook') emptyHook(framework, app);
  if (extra === null) return;
  const { miniprof } = await import(entry(framework));
  if (framework === 'express') app.use(miniprof(options));
  else await app.register(miniprof, options);
});
// Switches the promise hooks on for the rest of the process, as a first profile would on Node <= 22.
if (config === 'hooks') new AsyncLocalStorage().enterWith({});
// One request at a time (IN_FLIGHT=1) repeats best, but each close is then the last open profile,
// and the hooks' release timer fires on wall-clock time, which valgrind stretches: a profile kept
// open all run keeps the count steady. It is not what load looks like. Under bench/run.js's 50
// connections the open count touches zero between nearly every two requests too (Run 13),
// and this setting hid what each such close cost: a refresh of the release timer (7,249
// instructions a Fastify developer request: KEEP_OPEN=0, the build before and after the fix) and,
// on the real clock, a restart of the loop sampler. Both now only note the close; KEEP_OPEN=0
// and 1 differ by ~1,500 (the release timer's own firings).
if (extra !== null && config !== 'nondev' && config !== 'visited' && process.env.KEEP_OPEN === '1') {
  // On a counter clock too: on the real one it would run the event-loop sampler, whose ticks per
  // request depend on how fast valgrind runs that minute.
  void (await import(entry('index'))).withProfile('keep-open', () => new Promise(() => {}), { clock: () => 0 });
}

const inFlight = Number(process.env.IN_FLIGHT ?? 25);
const agent = new http.Agent({ keepAlive: true, maxSockets: inFlight });
const { port } = server.address();
const get = getter(port, agent);
let left = Number(count);
let bytes = 0;
// CPU_FROM=N: the process's CPU time (all threads, user + system)
// from the N-th response to the last, printed as JSON: the steady state, without start-up.
const cpuFrom = Number(process.env.CPU_FROM ?? 0);
let answered = 0;
let cpuAt = null;
await Promise.all(
  Array.from({ length: inFlight }, async () => {
    while (left-- > 0) {
      const n = await get();
      bytes += n;
      if (++answered === cpuFrom) cpuAt = process.cpuUsage();
    }
  }),
);
if (process.env.SHOW === '1') console.log(`${framework}/${config}: ${bytes} body bytes`);
if (cpuAt !== null) {
  const c = process.cpuUsage(cpuAt);
  console.log(JSON.stringify({ requests: answered - cpuFrom, userUs: c.user, systemUs: c.system }));
}
agent.destroy();
server.close();
process.exit(0);
