// What bench/instructions/run.js needs: its command-line options and the one way the harness
// runs under valgrind, so that every count is taken alike.
import { execFile } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));

/** `--name value` from argv, else `def`. */
export function option(argv, name, def) {
  const i = argv.indexOf(name);
  return i === -1 ? def : argv[i + 1];
}

/** One request in flight on counter clocks with a profile kept open (harness.js); `load`: 25 in flight, real clock. */
export function harnessEnv(load, dist) {
  const env = load ? { ...process.env, IN_FLIGHT: '25' } : { ...process.env, IN_FLIGHT: '1', KEEP_OPEN: '1', FAKE_CLOCK: '1' };
  if (dist !== undefined) env.MINIPROF_BENCH_DIST = dist;
  if (env.MINIPROF_BENCH_DIST !== undefined) env.MINIPROF_BENCH_DIST = resolve(env.MINIPROF_BENCH_DIST);
  return env;
}

/**
 * Runs `node script ...args` under cachegrind (no cache simulation) with `node --predictable`, as
 * every count of bench/instructions is taken; resolves valgrind's stderr.
 */
export async function cachegrindScript({ node = process.execPath, script, args, env, outFile = '/dev/null' }) {
  const { stderr } = await run(
    'valgrind',
    ['--tool=cachegrind', '--cache-sim=no', `--cachegrind-out-file=${outFile}`, node, '--predictable', '--predictable-gc-schedule', script, ...args],
    { maxBuffer: 1 << 24, env },
  );
  return stderr;
}

/** Runs the harness for `requests` under cachegrind; resolves valgrind's stderr. */
export function cachegrind({ node, framework, config, requests, env, outFile }) {
  return cachegrindScript({ node, script: join(here, 'harness.js'), args: [framework, config, String(requests)], env, outFile });
}

/** The total instruction count ("I refs") in valgrind's stderr; `what` names the run in the error. */
export function instructionCount(stderr, what) {
  const m = /I\s+refs:\s+([\d,]+)/.exec(stderr);
  if (m === null) throw new Error(`no instruction count for ${what}:\n${stderr.slice(-2000)}`);
  return Number(m[1].replaceAll(',', ''));
}

/** Exits with a hint when valgrind is missing: every count here needs it. */
export async function needValgrind() {
  try {
    await run('valgrind', ['--version']);
  } catch {
    console.error('bench/instructions needs valgrind (apt-get install -y valgrind)');
    process.exit(2);
  }
}
