import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort, postgresBinDir } from './services.js';

export interface PostgresServer {
  port: number;
  /** Smart shutdown (waits for sessions to end), then the data directory is removed. */
  stop(): Promise<void>;
}

/**
 * A throwaway PostgreSQL on a free loopback port: `initdb` into a temp directory (trust auth,
 * no fsync), then `postgres` with its socket in that directory. PostgreSQL refuses to run as
 * root, so under root both run as the `postgres` user the Debian package creates.
 */
export async function startPostgres(): Promise<PostgresServer> {
  // Debian's newest PostgreSQL (`npm test` apt-installs `postgresql` first, scripts/services.mjs).
  const bin = postgresBinDir();
  const dir = mkdtempSync(join(tmpdir(), 'miniprof-pg-'));
  const data = join(dir, 'data');
  const root = process.getuid?.() === 0;
  if (root) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  const cmd = (file: string, args: string[]): [string, string[]] => (root ? ['runuser', ['-u', 'postgres', '--', file, ...args]] : [file, args]);
  execFileSync(...cmd(join(bin, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']), { stdio: 'ignore' });
  const port = await freePort();
  const proc: ChildProcess = spawn(
    ...cmd(join(bin, 'postgres'), ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-F']),
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    // The postmaster's own pid: a signal to runuser is not what shuts PostgreSQL down.
    const pidFile = join(data, 'postmaster.pid');
    if (existsSync(pidFile)) {
      const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
      if (pid > 0) {
        try {
          process.kill(pid, 'SIGTERM');
        } catch {
          // already gone
        }
      }
    } else proc.kill('SIGKILL');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; i < 100; i++) {
    const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres' });
    try {
      await client.connect();
      await client.query('select 1');
      await client.end();
      return { port, stop };
    } catch {
      await client.end().catch(() => {});
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  await stop();
  throw new Error(`postgres did not start on port ${port}`);
}
