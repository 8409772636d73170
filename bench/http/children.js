// The HTTP bench's processes, shared by bench/run.js and bench/http/decompose.js: bench servers
// (bench/http/server.js) pinned to CPU 0 and the autocannon loader (bench/http/load.js) pinned to
// CPU 1 where `taskset` exists, and one measured slice of load against one server.
import { fork, spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

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

/** One slice of load against `port`: the loader's numbers, and the server's CPU and GC pauses per request. */
export async function slice(server, port, loader, seconds, connections) {
  const a = await ask(server, { cmd: 'stats' });
  const r = await ask(loader, { url: `http://127.0.0.1:${port}/`, seconds, connections });
  const b = await ask(server, { cmd: 'stats' });
  const cpu = b.cpu.user + b.cpu.system - a.cpu.user - a.cpu.system;
  const n = Math.max(1, b.requests - a.requests);
  return { ...r, cpuUs: cpu / n, sysUs: (b.cpu.system - a.cpu.system) / n, gcUs: ((b.gcMs - a.gcMs) * 1000) / n };
}

export const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];

/**
 * A row against the base row (the unprofiled server), round by round: the median over the rounds
 * of `fn(this row's slice, the base's slice of the same round)`. Every server of a round shares
 * the VM's phase of that minute, so differences and ratios are taken within a round.
 */
export const perRound = (row, base, fn) => median(row.map((x, i) => fn(x, base[i])));

/**
 * Bench servers side by side on CPU 0, loaded in turn by one autocannon loader on CPU 1 (50
 * connections): each row (`{ config, env, execArgv }`) gets a 1 s warm-up slice, then `rounds`
 * slices of SLICE seconds (default 2), round after round. Resolves each row's slices, in order.
 * Shared by bench/http/decompose.js, bench/http/amplify.js and bench/http/ab.js.
 */
export async function sideBySide(framework, rows, rounds) {
  const loader = (await startLoader()).cp;
  const servers = [];
  try {
    for (const { config, env, execArgv } of rows) {
      const { cp, first } = await startServer(process.execPath, framework, config, { env, execArgv });
      servers.push({ cp, port: first.port, slices: [] });
    }
    const seconds = Number(process.env.SLICE ?? 2);
    for (const s of servers) await slice(s.cp, s.port, loader, 1, 50);
    for (let r = 0; r < rounds; r++) {
      for (const s of servers) s.slices.push(await slice(s.cp, s.port, loader, seconds, 50));
    }
    return servers.map((s) => s.slices);
  } finally {
    for (const s of servers) s.cp.send({ cmd: 'exit' });
    loader.send({ cmd: 'exit' });
  }
}
