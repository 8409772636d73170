import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, connect } from 'node:net';

/** A free loopback port: listen on 0, read it, close. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export interface RedisServer {
  port: number;
  url: string;
  proc: ChildProcess;
  /** SIGKILL and wait for the exit: the server goes away without a goodbye. */
  kill(): Promise<void>;
}

/**
 * Debian's `redis-server` (`.ci/run` apt-installs it) on a free loopback port, no persistence.
 * Resolves once it accepts connections.
 */
export async function startRedis(): Promise<RedisServer> {
  const port = await freePort();
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
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

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
