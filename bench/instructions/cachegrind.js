// What bench/instructions/run.js and functions.js share: their command-line options and the one
// way the harness runs under valgrind. Both must run it alike, or their figures do not compare.
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
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
  return env;
}

/** Runs the harness for `requests` under cachegrind (no cache simulation); resolves valgrind's stderr. */
export async function cachegrind({ node, framework, config, requests, env, outFile = '/dev/null' }) {
  const { stderr } = await run(
    'valgrind',
    ['--tool=cachegrind', '--cache-sim=no', `--cachegrind-out-file=${outFile}`, node, '--predictable', '--predictable-gc-schedule', join(here, 'harness.js'), framework, config, String(requests)],
    { maxBuffer: 1 << 24, env },
  );
  return stderr;
}
