import { spawn, type ChildProcess } from 'node:child_process';

export interface Hogs {
  /** Stop every hog (SIGKILL, by pid) and wait until each has exited. */
  stop(): Promise<void>;
}

/**
 * `n` child processes that each spin on a CPU core: a busy machine, made on purpose. Bounded
 * twice: each stops by itself after `maxMs` (it checks the clock as it spins), and `stop()` kills
 * it sooner. Started and stopped by the test that needs them; nothing else is touched.
 */
export async function startHogs(n = 2, maxMs = 120_000): Promise<Hogs> {
  const procs: ChildProcess[] = [];
  const exits: Promise<void>[] = [];
  const ready: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const p = spawn(process.execPath, ['-e', `process.stdout.write('x'); const end = Date.now() + ${maxMs}; while (Date.now() < end);`], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    procs.push(p);
    exits.push(new Promise((resolve) => p.once('exit', () => resolve())));
    ready.push(new Promise((resolve) => p.stdout!.once('data', () => resolve())));
  }
  await Promise.all(ready);
  return {
    async stop() {
      for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
      await Promise.all(exits);
    },
  };
}
