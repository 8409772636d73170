import { spawn, type ChildProcess } from 'node:child_process';
import { canConnect, freePort, redisServerPath } from './services.js';

export { freePort };

export interface RedisServer {
  port: number;
  url: string;
  proc: ChildProcess;
  /** SIGKILL and wait for the exit: the server goes away without a goodbye. */
  kill(): Promise<void>;
}

/**
 * Debian's `redis-server` (`npm test` apt-installs it first, scripts/services.mjs) on a free
 * loopback port, no persistence.
 * Resolves once it accepts connections. `port`: a port of our own (a server started again where
 * a killed one was), else a free one.
 */
export async function startRedis(port?: number): Promise<RedisServer> {
  const bin = redisServerPath();
  port ??= await freePort();
  const proc = spawn(bin, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  let failed: Error | null = null;
  proc.once('error', (err) => (failed = err));
  for (let i = 0; i < 100; i++) {
    if (failed !== null) throw failed;
    if (await canConnect(port)) {
      return {
        port,
        url: `redis://127.0.0.1:${port}`,
        proc,
        async kill() {
          if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
          await exited;
        },
      };
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  proc.kill('SIGKILL');
  throw new Error(`redis-server did not start on port ${port}`);
}
