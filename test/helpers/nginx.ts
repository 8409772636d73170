/**
 * A throwaway nginx (Debian's `/usr/sbin/nginx`) in front of a test app, on a free loopback port.
 * Everything it writes (pid, logs, temp files, the proxy cache) stays in a temp directory made
 * for it; `daemon off;` keeps it a child of the test, stopped by `stop()` (its pid, nothing else).
 *
 * - `startNginx(server, http)`: `server` is the body of one `server { … }` block without `listen`
 *   (`location / { proxy_pass http://127.0.0.1:<app port>; }`), `http` extra text for the
 *   `http { … }` block (a `proxy_cache_path`); `{{dir}}` in either stands for the temp dir.
 *   Returns the port nginx listens on, its error log and `stop()`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const NGINX = '/usr/sbin/nginx';

export interface Nginx {
  port: number;
  /** The error log so far (for a failing test's message). */
  errors(): string;
  stop(): Promise<void>;
}

/** A port free right now on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * `http` is extra text for the `http { … }` block (a `proxy_cache_path`, say), with `{{dir}}`
 * standing for the temp directory; `server` is the `server { … }` body.
 */
export async function startNginx(server: string, http = ''): Promise<Nginx> {
  const dir = mkdtempSync(join(tmpdir(), 'miniprof-nginx-'));
  const port = await freePort();
  const conf = `
${process.getuid?.() === 0 ? 'user root;' : ''}
daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 64; }
http {
  access_log ${dir}/access.log;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  ${http.replaceAll('{{dir}}', dir)}
  server {
    listen 127.0.0.1:${port};
    ${server.replaceAll('{{dir}}', dir)}
  }
}
`;
  writeFileSync(join(dir, 'nginx.conf'), conf);
  const child: ChildProcess = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const errors = () => {
    try {
      return stderr + readFileSync(join(dir, 'error.log'), 'utf8');
    } catch {
      return stderr;
    }
  };
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nginx exited (${child.exitCode}): ${errors()}`);
    if (await accepts(port)) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`nginx did not listen on ${port}: ${errors()}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  return {
    port,
    errors,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGQUIT');
        const t = setTimeout(() => child.kill('SIGKILL'), 3000);
        await exited;
        clearTimeout(t);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1' });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
