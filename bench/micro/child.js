// One contender per process: `node bench/micro/child.js <contender>` prints one JSON line.
// Every contender measures its own baselines (a bare call, a bare await) in the same process, so
// ratios survive the minute-to-minute drift of a shared VM. With --expose-gc and `--mem` it
// measures retained heap per step instead.
import { AsyncLocalStorage } from 'node:async_hooks';
import { measure } from 'mitata';
import { dist } from '../http/page.js';
import { floorSteps, referenceStep } from '../reference.js';

const contender = process.argv[2];
const memMode = process.argv.includes('--mem');
const MIN_MS = Number(process.env.MINIPROF_BENCH_MICRO_MS ?? 300);
// Steps recorded into one open profile before it is emptied, so a long mitata loop neither hits
// maxSteps (which would measure the "dropped" path) nor grows the heap without bound.
const RESET = 512;

let sink = 0;
function work() {
  sink++;
  return sink;
}
async function aw() {
  await undefined;
  return ++sink;
}
function id(v) {
  return v;
}
function nestBase(d) {
  return d === 0 ? work() : call(() => nestBase(d - 1));
}
function call(fn) {
  return fn();
}

const out = { contender, node: process.version, ops: {} };

async function m(name, fn) {
  // Warm up first: a cold first call can exceed mitata's batching threshold, and an unbatched
  // sample of a 1 ns operation measures the clock instead.
  // Time-based too: V8's tiering of a fresh async loop takes ~100 ms.
  const t0 = performance.now();
  const until = t0 + Math.min(150, MIN_MS / 2);
  let i = 0;
  for (; i < 20000 || performance.now() < until; i++) {
    const r = fn();
    if (r instanceof Promise) await r;
  }
  // Short batches for slow operations: with other processes on the cores, a 4096-call batch of
  // a 1 us operation is almost always preempted, while the median of 128-call batches is not.
  const perCallNs = ((performance.now() - t0) * 1e6) / i;
  const batch_samples = perCallNs > 50 ? 128 : 4096;
  // Always batch: on a loaded machine one preempted warm-up call would
  // otherwise switch mitata to single-call samples.
  const r = await measure(fn, { min_cpu_time: MIN_MS * 1e6, batch_samples, batch_threshold: Infinity, warmup_threshold: Infinity });
  out.ops[name] = r.p50;
}

/** The baselines every contender reports next to its own rows. */
async function baselines(prefix = '') {
  await m(`${prefix}bare.sync`, () => work());
  // Twice: the first async loop of a process is still being tiered up on a loaded machine.
  await m(`${prefix}bare.async`, () => aw());
  await m(`${prefix}bare.async`, () => aw());
  await m(`${prefix}bare.nested10`, () => nestBase(10));
  await m(`${prefix}bare.calls100`, () => {
    for (let i = 0; i < 100; i++) work();
  });
}

async function loadOurs() {
  const index = await import(dist('src/index.js'));
  const context = await import(dist('src/context.js'));
  const profileMod = await import(dist('src/profile.js'));
  const options = await import(dist('src/options.js'));
  return { ...index, ...context, Profile: profileMod.Profile, resolveCore: options.resolveCore };
}

/** Run `body` inside one open profile that is emptied every RESET steps by `tick()`. */
async function insideProfile(ours, body, maxSteps = 100_000) {
  const cfg = ours.resolveCore({ maxSteps, machine: 'bench' });
  const profile = new ours.Profile('bench', cfg);
  let k = 0;
  const tick = () => {
    if (++k === RESET) {
      k = 0;
      profile.root.children = null;
      profile.customs = null;
      profile.count = 0;
    }
  };
  try {
    await ours.runInProfile(profile, () => body(profile, tick));
  } finally {
    ours.closeProfile(profile);
  }
}

const contenders = {
  /** The physical floor: AsyncLocalStorage itself, and the await tax it switches on. */
  async als() {
    await baselines();
    const als = new AsyncLocalStorage();
    const store = { a: 1 };
    await m('als.getStore.never', () => als.getStore());
    als.run(store, () => undefined); // enables the instance (and, on Node <= 22, promise hooks)
    await m('als.getStore.entered', () => als.getStore());
    await m('als.run.sync', () => als.run(store, work));
    await m('als.run.async', () => als.run(store, aw));
    await m('armed.bare.async', () => aw());
    // One derived promise (what step() adds around an async fn) with and without promise hooks.
    await m('armed.then.async', () => aw().then(id));
    als.disable();
    await m('disabled.bare.async', () => aw());
    await m('disabled.then.async', () => aw().then(id));
  },

  /** step() with no profile, the ALS never entered by anyone. */
  async 'ours-off'() {
    const { step } = await loadOurs();
    await baselines();
    await m('step.off.sync', () => step('s', work));
    await m('step.off.async', () => step('s', aw));
  },

  /**
   * step() with no profile after one profile was opened and closed: on Node <= 22 closeProfile()
   * disable()s the ALS, so the await tax must be gone. `armed.*` shows what it would be without.
   */
  async 'ours-released'() {
    const ours = await loadOurs();
    const { step } = ours;
    await baselines();
    // The same calls before the profile as after it: on Node 24 a bare await's cost depends on
    // what this process awaited before (V8's feedback: the bare await reads ~72 ns fresh and
    // ~100-130 ns after `step('s', aw)` was measured, with no profile ever opened), so only a
    // baseline with the same history isolates what the profile left behind.
    // A direct call through a function of step()'s shape that has seen the same calls as step():
    // once `step('s', aw)` was measured, the call of `fn` inside either is no longer to one
    // function, and on Node 20 it costs ~2-3 ns more than the bare call of the process's baseline
    // (bench/RESULTS.md Run 38). What the profile left in step() is measured over this one.
    const direct = (_name, fn) => fn();
    await m('pre.step.off.sync', () => step('s', work));
    await m('pre.direct.sync', () => direct('s', work));
    await m('pre.step.off.async', () => step('s', aw));
    await m('pre.direct.async', () => direct('s', aw));
    await m('pre.bare.async', () => aw());
    await ours.withProfile('once', async () => {
      await step('a', aw);
    });
    out.openAfter = ours.openProfiles();
    // The hooks are released RELEASE_GRACE_MS (20 ms) after the last profile closed.
    await new Promise((r) => setTimeout(r, 60));
    await m('step.off.sync', () => step('s', work));
    await m('direct.sync', () => direct('s', work));
    await m('step.off.async', () => step('s', aw));
    await m('released.bare.async', () => aw());
    // What the release saves: the same ALS entered once and left enabled.
    ours.als.run(undefined, () => undefined);
    await m('armed.bare.async', () => aw());
    await m('armed.step.off.async', () => step('s', aw));
    if (typeof ours.als._enable === 'function') ours.als.disable();
  },

  /** step() and timing() inside an open profile. */
  async 'ours-on'() {
    const ours = await loadOurs();
    const { step, timing, als } = ours;
    await baselines();
    await insideProfile(ours, async (profile, tick) => {
      // A store other than the current one: `run` with the current store is a no-op shortcut.
      const store = new ours.Profile('other', profile.config).root;
      await baselines('in.');
      await m('als.run.sync', () => als.run(store, work));
      await m('als.run.async', () => als.run(store, aw));
      await m('step.on.sync', () => {
        tick();
        return step('s', work);
      });
      await m('step.on.async', () => {
        tick();
        return step('s', aw);
      });
      // The floor of any step timed with this clock, with no tree (bench/reference.js).
      const floor = floorSteps(als, store);
      await m('floor.sync', () => floor.sync(work));
      await m('floor.async', () => floor.async(aw));
      // The baseline again, right after: the budget's async ratio divides by the mean of the two,
      // so a phase change of the VM during these rows moves both sides alike (one run measured
      // `als.run` at 534 ns where others gave 286, and the ratio read as met).
      await m('als.run.async.after', () => als.run(store, aw));
      await m('timing.on', () => {
        tick();
        return timing('sql', 'select 1', work);
      });
      await m('step.on.using', () => {
        tick();
        const t = step('s');
        work();
        t.stop();
      });
      const nest = (d) => (d === 0 ? work() : step('n', () => nest(d - 1)));
      await m('step.on.nested10', () => {
        profile.root.children = null;
        profile.count = 0;
        return nest(10);
      });
      // The reference step (bench/reference.js) on the same ALS and clock: the floor the budget's
      // step figures were set against, measured on this machine in this run.
      const ref = referenceStep(als);
      const refRoot = { children: null };
      let r = 0;
      const refTick = () => {
        if (++r === RESET) {
          r = 0;
          refRoot.children = null;
        }
      };
      await als.run(refRoot, async () => {
        await m('ref.step.sync', () => {
          refTick();
          return ref('s', work);
        });
        await m('ref.step.async', () => {
          refTick();
          return ref('s', aw);
        });
      });
    });
    // A whole request: open a profile, 100 steps, seal it (the JSON snapshot included).
    const cfg = ours.resolveCore({ machine: 'bench' });
    await m('request100', () => {
      const p = new ours.Profile('GET /', cfg);
      ours.runInProfile(p, () => {
        for (let i = 0; i < 100; i++) step('s', work);
      });
      ours.closeProfile(p);
    });
    // Rendering a sealed 10-step profile: what a developer request adds after its steps.
    const p = new ours.Profile('GET /', cfg, { method: 'GET', path: '/' });
    ours.runInProfile(p, () => {
      for (let i = 0; i < 10; i++) step(`step ${i}`, work);
    });
    ours.closeProfile(p);
    const json = p.toJSON();
    await m('render.comment10', () => ours.renderHtmlComment(json));
    await m('render.servertiming10', () => ours.renderServerTiming(json));
  },

  /** OpenTelemetry SDK: BasicTracerProvider, no processor, no exporter; ALS context manager. */
  async 'otel-sdk'() {
    const api = await import('@opentelemetry/api');
    const { BasicTracerProvider } = await import('@opentelemetry/sdk-trace-base');
    const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
    await baselines();
    api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    api.trace.setGlobalTracerProvider(new BasicTracerProvider());
    await otelRows(api.trace.getTracer('bench'));
  },

  /** OpenTelemetry API with no SDK registered: non-recording spans. */
  async 'otel-api'() {
    const api = await import('@opentelemetry/api');
    await baselines();
    await otelRows(api.trace.getTracer('bench'));
  },

  /** miniprofiler 1.2.3: per-request state on `req`, a mutable current-step pointer. */
  async miniprofiler() {
    const { default: mp } = await import('miniprofiler');
    await baselines();
    const mw = mp.express();
    const fresh = () =>
      new Promise((resolve, reject) => {
        const req = { url: '/', headers: {} };
        const res = { on() {}, setHeader() {}, locals: {} };
        mw(req, res, (err) => (err ? reject(err) : resolve(req.miniprofiler)));
      });
    let ext = await fresh();
    let k = 0;
    const tick = () => {
      if (++k === RESET) {
        k = 0;
        ext.stepGraph.steps.length = 0;
      }
    };
    await m('step.on.sync', () => {
      tick();
      return ext.step('s', work);
    });
    // Its only way to time async work is the callback form.
    await m('step.on.async', () => {
      tick();
      return new Promise((resolve) => ext.step('s', (done) => aw().then((v) => (done(), resolve(v)))));
    });
    const nest = (d) => (d === 0 ? work() : ext.step('n', () => nest(d - 1)));
    await m('step.on.nested10', () => {
      ext.stepGraph.steps.length = 0;
      nest(10);
    });
    await m('request100', async () => {
      const e = await fresh();
      for (let i = 0; i < 100; i++) e.step('s', work);
    });
    ext = await fresh();
  },

  /** server-timing 3.3.3: flat named timers on `res`. */
  async 'server-timing'() {
    const { default: serverTiming } = await import('server-timing');
    await baselines();
    const mw = serverTiming();
    const fresh = () => {
      const res = { writeHead() {}, setHeader() {}, getHeader() {} };
      mw({}, res);
      return res;
    };
    let res = fresh();
    let k = 0;
    const tick = () => {
      if (++k === RESET) {
        k = 0;
        res = fresh();
      }
    };
    await m('step.on.sync', () => {
      tick();
      res.startTime('s');
      const r = work();
      res.endTime('s');
      return r;
    });
    await m('step.on.async', async () => {
      tick();
      const r0 = res;
      r0.startTime('s');
      try {
        return await aw();
      } finally {
        r0.endTime('s');
      }
    });
    await m('request100', () => {
      const r = fresh();
      for (let i = 0; i < 100; i++) {
        r.startTime('s');
        work();
        r.endTime('s');
      }
    });
  },
};

async function otelRows(tracer) {
  const endSync = (span) => {
    try {
      return work();
    } finally {
      span.end();
    }
  };
  const endAsync = async (span) => {
    try {
      return await aw();
    } finally {
      span.end();
    }
  };
  await new Promise((resolve, reject) => {
    // Steps are children of an active request span, as in a traced request.
    tracer.startActiveSpan('request', async (root) => {
      try {
        await baselines('in.');
        await m('step.on.sync', () => tracer.startActiveSpan('s', endSync));
        await m('step.on.async', () => tracer.startActiveSpan('s', endAsync));
        const nest = (d) => (d === 0 ? work() : tracer.startActiveSpan('n', (span) => {
          try {
            return nest(d - 1);
          } finally {
            span.end();
          }
        }));
        await m('step.on.nested10', () => nest(10));
        root.end();
        resolve();
      } catch (err) {
        reject(err);
      }
    });
  });
  await m('request100', () =>
    tracer.startActiveSpan('GET /', (root) => {
      for (let i = 0; i < 100; i++) tracer.startActiveSpan('s', endSync);
      root.end();
    }),
  );
}

// ---- retained heap per step (run with --expose-gc) ----

// 200,000, not 20,000: what a run allocates once (compiled code, feedback vectors) spread over 20,000
// steps moved the figure by ±10 B between runs; over 200,000 runs agree to 0.1 B.
const N = Number(process.env.MEM_STEPS ?? 200_000);

function heap() {
  globalThis.gc();
  globalThis.gc();
  return process.memoryUsage().heapUsed;
}

const memContenders = {
  async 'ours-on'() {
    const ours = await loadOurs();
    const cfg = ours.resolveCore({ maxSteps: 1_000_000, machine: 'bench' });
    const res = {};
    for (const kind of ['sync', 'async']) {
      const p = new ours.Profile('mem', cfg);
      const h0 = heap();
      await ours.runInProfile(p, async () => {
        if (kind === 'sync') for (let i = 0; i < N; i++) ours.step('s', work);
        else for (let i = 0; i < N; i++) await ours.step('s', aw);
      });
      // The tree is what a request keeps until it renders: measured while the profile is open.
      res[kind] = (heap() - h0) / N;
      if (p.root.children.length !== N) throw new Error('steps were dropped');
      ours.closeProfile(p);
    }
    return res;
  },
  async miniprofiler() {
    const { default: mp } = await import('miniprofiler');
    const mw = mp.express();
    const req = { url: '/', headers: {} };
    await new Promise((resolve) => mw(req, { on() {}, setHeader() {}, locals: {} }, resolve));
    const ext = req.miniprofiler;
    const h0 = heap();
    for (let i = 0; i < N; i++) ext.step('s', work);
    const sync = (heap() - h0) / N;
    if (ext.stepGraph.steps.length !== N) throw new Error('steps missing');
    return { sync };
  },
  async 'server-timing'() {
    const { default: serverTiming } = await import('server-timing');
    const res = { writeHead() {}, setHeader() {}, getHeader() {} };
    serverTiming()({}, res);
    const h0 = heap();
    for (let i = 0; i < N; i++) {
      res.startTime('s');
      work();
      res.endTime('s');
    }
    return { sync: (heap() - h0) / N };
  },
};

if (memMode) {
  if (typeof globalThis.gc !== 'function') throw new Error('run with --expose-gc');
  const fn = memContenders[contender];
  if (fn === undefined) throw new Error(`no memory bench for ${contender}`);
  out.mem = await fn();
} else {
  const fn = contenders[contender];
  if (fn === undefined) throw new Error(`unknown contender ${contender}; known: ${Object.keys(contenders).join(', ')}`);
  await fn();
}
out.sink = sink > 0;
process.stdout.write(JSON.stringify(out) + '\n');
