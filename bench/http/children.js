// The HTTP bench's processes, shared by bench/run.js and bench/http/contest.js: bench servers
// (bench/http/server.js) pinned to CPU 0 and the autocannon loader (bench/http/load.js) pinned to
// CPU 1 where `taskset` exists, and one measured slice of load against one server.
import { fork, spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEVELOPER_HEADER } from './page.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '../..');

export const taskset = spawnSync('taskset', ['-c', '0', 'true']).status === 0;

/**
 * Fork `script` on `cpu` with the node binary `bin`; resolves `{cp, first}` once its first IPC
 * message (a server's port, the loader's ready) arrives. `env` is added to this process's
 * environment; `execArgv` are node flags.
 */
export function startChild(cpu, bin, script, args, { env, execArgv = [] } = {}) {
  // fork(modulePath, args, {execPath, execArgv}) runs `execPath ...execArgv modulePath ...args`.
  const cp = fork(script, args, {
    execPath: taskset ? 'taskset' : bin,
    execArgv: taskset ? ['-c', String(cpu), bin, ...execArgv] : execArgv,
    cwd: root,
    env: env === undefined ? process.env : { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    cp.once('message', (m) => resolve({ cp, first: m }));
    cp.once('exit', (code) => reject(new Error(`${script} ${args.join(' ')} exited with ${code}`)));
  });
}

export const startServer = (bin, framework, config, options) => startChild(0, bin, join(here, 'server.js'), [framework, config], options);
export const startLoader = () => startChild(1, process.execPath, join(here, 'load.js'), []);

export function ask(cp, msg) {
  return new Promise((resolve) => {
    cp.once('message', resolve);
    cp.send(msg);
  });
}

/**
 * What a server spent between two of its stats replies (bench/http/server.js), per request it
 * served in between: CPU (all, and system time), main-thread GC pauses (all, and mark-compact's),
 * the count of mark-compacts and the scavenges per 1,000 requests.
 */
function perRequest(a, b) {
  const cpu = b.cpu.user + b.cpu.system - a.cpu.user - a.cpu.system;
  const n = Math.max(1, b.requests - a.requests);
  return {
    cpuUs: cpu / n,
    cpuTotal: cpu,
    sysUs: (b.cpu.system - a.cpu.system) / n,
    gcUs: ((b.gcMs - a.gcMs) * 1000) / n,
    majorGcUs: ((b.majorGcMs - a.majorGcMs) * 1000) / n,
    majorGcs: b.majorGcs - a.majorGcs,
    scavengesPer1000: ((b.minorGcs - a.minorGcs) * 1000) / n,
    faultsPer1000: ((b.minorFaults - a.minorFaults) * 1000) / n,
  };
}

/** One slice of load against `port`: the loader's numbers, and what the server spent per request (perRequest). */
export async function slice(server, port, loader, seconds, connections) {
  const a = await ask(server, { cmd: 'stats' });
  const r = await ask(loader, { url: `http://127.0.0.1:${port}/`, seconds, connections });
  const b = await ask(server, { cmd: 'stats' });
  return { ...r, ...perRequest(a, b) };
}

export const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];

/** Each pair's own median of `xs` (one value per round of the contest `m`), in pair order. */
export const pairMedians = (m, xs, med = median) => [...new Set(m.map((x) => x.pair))].map((p) => med(xs.filter((_, i) => m[i].pair === p)));

/**
 * Keeps exactly one developer request in flight against `port` (GET /slow with the bench's
 * developer header, ~80 ms each, back to back) until the returned function is called; that
 * function resolves the number of requests made. This is the developer browsing production while
 * everyone else's requests come in: on Node <= 22 an open profile keeps promise hooks on for the
 * whole process. Runs in this (the parent) process: ~12 requests a second cost it next to nothing.
 */
export function hold(port, headers = {}) {
  let on = true;
  const done = (async () => {
    let n = 0;
    while (on) {
      const res = await fetch(`http://127.0.0.1:${port}/slow`, { headers: { [DEVELOPER_HEADER]: '1', ...headers } });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`GET /slow answered ${res.status}`);
      n++;
    }
    return n;
  })();
  return () => {
    on = false;
    return done;
  };
}

/**
 * Two servers under load at the same time (the method of bench/http/contest.js, which explains
 * why): A and B (`{ config, env, execArgv }`) pinned together to CPU 0, each loaded by its own
 * autocannon process on CPU 1 (`connections` each, `seconds` per slice), the loaders swapping
 * servers every round. `pairs` fresh pairs of processes, each left idle `idleMs` (default 0) and
 * warmed by two unmeasured slices, then `rounds` rounds. A side with `hold: true` has one
 * developer request in flight at all times, from its start to its end (`hold`). Pass two started loaders (`startLoader`)
 * to reuse them across contests.
 * Resolves one entry per measured round: `{ pair, a, b, wallUs }`, where `a` and `b` hold the
 * loader's req/s, p50, p99 and errors, the size of the server's young generation at the end of
 * the round, and what the server spent per request in it (perRequest: CPU, GC pauses).
 */
export async function contest({ bin = process.execPath, framework, a, b, pairs, rounds, seconds, connections, loaders, idleMs = 0 }) {
  async function round(servers, swap) {
    const before = await Promise.all(servers.map((s) => ask(s.cp, { cmd: 'stats' })));
    const t0 = process.hrtime.bigint();
    const loads = await Promise.all(loaders.map((l, i) => ask(l, { url: `http://127.0.0.1:${servers[(i + swap) % 2].port}/`, seconds, connections })));
    const wallUs = Number(process.hrtime.bigint() - t0) / 1000;
    const after = await Promise.all(servers.map((s) => ask(s.cp, { cmd: 'stats' })));
    const [sa, sb] = servers.map((_, k) => {
      const load = loads[(k - swap + 2) % 2];
      return {
        rps: load.rps,
        p50: load.p50,
        p99: load.p99,
        errors: load.errors + load.non2xx,
        youngBytes: after[k].youngBytes,
        ...perRequest(before[k], after[k]),
      };
    });
    return { a: sa, b: sb, wallUs };
  }
  const out = [];
  for (let p = 0; p < pairs; p++) {
    // Started one after the other, A first in even pairs and B first in odd ones.
    const order = p % 2 === 0 ? [a, b] : [b, a];
    const started = [];
    const holds = [];
    try {
      for (const side of order) {
        const { cp, first } = await startServer(bin, framework, side.config, { env: side.env, execArgv: side.execArgv });
        started.push({ cp, port: first.port });
      }
      for (const [i, side] of order.entries()) if (side.hold) holds.push(hold(started[i].port, side.holdHeaders));
      const servers = p % 2 === 0 ? started : [started[1], started[0]];
      // `idleMs`: both servers up and idle this long before any load (contest.js --idle-ms).
      if (idleMs > 0) await new Promise((r) => setTimeout(r, idleMs));
      // Two full slices, not measured: with 1 s each, a developer server's first measured round
      // still came out 20-30% below its next two, in every pair (Express on Node 20 runs only
      // ~2,000 requests a second here).
      await round(servers, 0);
      await round(servers, 1);
      for (let r = 0; r < rounds; r++) out.push({ pair: p, ...(await round(servers, r % 2)) });
    } finally {
      await Promise.all(holds.map((stop) => stop()));
      for (const s of started) s.cp.send({ cmd: 'exit' });
    }
  }
  return out;
}
