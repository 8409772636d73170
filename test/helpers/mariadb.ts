import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { freePort, mariadbPath } from './services.js';

export interface MariadbServer {
  port: number;
  /** SIGTERM (a clean shutdown), wait for the exit, remove the data directory. */
  stop(): Promise<void>;
}

/**
 * A throwaway MariaDB (Debian's `mariadb-server`, which `npm test` apt-installs first) on a free
 * loopback port: an empty data directory in a temp directory, `--skip-grant-tables` (any user
 * connects with no password: no `mariadb-install-db`, which costs seconds), a small InnoDB buffer.
 * mariadbd refuses to run as root, so under root it runs as the `mysql` user the package creates.
 * Resolves once a query answers.
 */
export async function startMariadb(): Promise<MariadbServer> {
  const bin = mariadbPath();
  const dir = mkdtempSync(join(tmpdir(), 'miniprof-mariadb-'));
  const data = join(dir, 'data');
  mkdirSync(data);
  const root = process.getuid?.() === 0;
  if (root) {
    const uid = Number(execFileSync('id', ['-u', 'mysql'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'mysql'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
    chownSync(data, uid, gid);
  }
  const port = await freePort();
  const proc: ChildProcess = spawn(
    bin,
    [
      '--no-defaults',
      `--datadir=${data}`,
      `--socket=${join(dir, 'sock')}`,
      `--pid-file=${join(dir, 'pid')}`,
      `--port=${port}`,
      '--bind-address=127.0.0.1',
      '--skip-grant-tables',
      '--skip-log-bin',
      '--innodb-buffer-pool-size=16M',
      ...(root ? ['--user=mysql'] : []),
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; i < 200; i++) {
    if (proc.exitCode !== null) break;
    try {
      const c = await mysql.createConnection({ host: '127.0.0.1', port, user: 'root' });
      await c.query('select 1');
      await c.end();
      return { port, stop };
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  await stop();
  throw new Error(`mariadbd did not start on port ${port}`);
}
