/**
 * The one way tests locate the Debian services they start (redis-server, PostgreSQL, nginx,
 * Chromium): the same lookups scripts/services.mjs makes before `npm test` runs anything, so a
 * missing binary is a failure with the command that installs it, never a skipped suite.
 *
 * Also a throwaway nginx (`startNginx`), in the spirit of ./redis-server.ts and ./postgres.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findChromium, findMariadb, findNginx, findPostgresBin, findRedisServer, installCommand } from '../../scripts/services.mjs';

function required(what: string, found: string | null, debianPackage: string): string {
  if (found !== null) return found;
  throw new Error(`${what} not found: \`npm test\` installs it (scripts/services.mjs); or run: ${installCommand([debianPackage], process.getuid?.() === 0)}`);
}

/** Debian's redis-server (/usr/bin/redis-server), else one on PATH. */
export function redisServerPath(): string {
  return required('redis-server', findRedisServer(), 'redis-server');
}

/** Debian's Chromium, the browser playwright-core drives (never one it downloads). */
export function chromiumPath(): string {
  return required('Chromium (/usr/bin/chromium)', findChromium(), 'chromium');
}

/** The bin directory of Debian's newest PostgreSQL (`initdb`, `postgres`). */
export function postgresBinDir(): string {
  return required('PostgreSQL (/usr/lib/postgresql/*/bin/initdb)', findPostgresBin(), 'postgresql');
}

/** Debian's nginx (/usr/sbin/nginx), else one on PATH. */
export function nginxPath(): string {
  return required('nginx (/usr/sbin/nginx)', findNginx(), 'nginx');
}

/** Debian's MariaDB server (/usr/sbin/mariadbd), else one on PATH. */
export function mariadbPath(): string {
  return required('MariaDB (/usr/sbin/mariadbd)', findMariadb(), 'mariadb-server');
}

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

/** Whether something accepts TCP connections on 127.0.0.1:`port`. */
export function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

export interface NginxOptions {
  /**
   * Directives inside `http { }` before the server block, e.g.
   * `proxy_cache_path cache keys_zone=c:1m;`. Relative paths resolve against `dir` (nginx's
   * prefix), so a cache or a file to serve stays in the throwaway directory.
   */
  http?: string;
  /** Directives inside `server { }` after its `listen`, e.g. `location / { proxy_pass http://127.0.0.1:1234; }`. */
  server: string;
}

export interface NginxServer {
  port: number;
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** The temp directory: nginx's prefix, config, pid file, logs and temp paths. */
  dir: string;
  proc: ChildProcess;
  /** The error log so far (startup problems, upstream errors). */
  errorLog(): string;
  /** SIGTERM (fast shutdown), wait for the exit, remove the directory. */
  stop(): Promise<void>;
}

/**
 * A throwaway nginx on a free loopback port: a generated config in a temp directory that is also
 * its prefix (`-p`), `daemon off` so the process is this one's child, and every path nginx would
 * otherwise take from its build (pid, error and access logs, the five temp paths) inside that
 * directory, so it runs as root without touching /etc/nginx or /var. Resolves once it accepts
 * connections.
 */
export async function startNginx(options: NginxOptions): Promise<NginxServer> {
  const bin = nginxPath();
  const dir = mkdtempSync(join(tmpdir(), 'miniprof-nginx-'));
  // As root the workers run as nginx's default unprivileged user: they must reach the temp
  // paths (request bodies, proxied responses, a cache) through this directory.
  if (process.getuid?.() === 0) chmodSync(dir, 0o755);
  const port = await freePort();
  const config = join(dir, 'nginx.conf');
  writeFileSync(
    config,
    `daemon off;
worker_processes 1;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} info;
events { worker_connections 64; }
http {
  access_log ${join(dir, 'access.log')};
  client_body_temp_path ${join(dir, 'client_body')};
  proxy_temp_path ${join(dir, 'proxy')};
  fastcgi_temp_path ${join(dir, 'fastcgi')};
  uwsgi_temp_path ${join(dir, 'uwsgi')};
  scgi_temp_path ${join(dir, 'scgi')};
${options.http ?? ''}
  server {
    listen 127.0.0.1:${port};
${options.server}
  }
}
`,
  );
  // -e: the log for problems before the config's error_log is read (default /var/log/nginx).
  const proc = spawn(bin, ['-p', `${dir}/`, '-c', config, '-e', join(dir, 'error.log')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  let failed: Error | null = null;
  proc.once('error', (err) => (failed = err));
  const errorLog = (): string => {
    const file = join(dir, 'error.log');
    return existsSync(file) ? readFileSync(file, 'utf8') : '';
  };
  const stop = async (): Promise<void> => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; i < 100; i++) {
    if (failed !== null) {
      rmSync(dir, { recursive: true, force: true });
      throw failed;
    }
    if (proc.exitCode !== null || proc.signalCode !== null) {
      const why = `${stderr}${errorLog()}`.trim();
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`nginx exited with ${proc.exitCode ?? proc.signalCode} before listening on ${port}:\n${why}`);
    }
    if (await canConnect(port)) {
      return { port, url: `http://127.0.0.1:${port}`, dir, proc, errorLog, stop };
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const log = errorLog();
  await stop();
  throw new Error(`nginx did not start on port ${port}:\n${stderr}${log}`);
}
