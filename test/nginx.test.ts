/**
 * The throwaway nginx of test/helpers/services.ts, proven on the smallest real proxy: Debian's
 * nginx in front of a node:http server on 127.0.0.1. Tests of miniprof behind nginx (a
 * `proxy_cache`, say) build on `startNginx`.
 */
import { existsSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { closeServers, serve } from './helpers/http.js';
import { startNginx, type NginxServer } from './helpers/services.js';

let nginx: NginxServer;
const seen: { url: string | undefined; via: string | undefined }[] = [];

beforeAll(async () => {
  const upstream = await serve((req: http.IncomingMessage, res: http.ServerResponse) => {
    seen.push({ url: req.url, via: req.headers['x-via'] as string | undefined });
    res.setHeader('content-type', 'text/plain');
    if (req.method === 'POST') {
      let n = 0;
      req.on('data', (c: Buffer) => (n += c.length)).on('end', () => res.end(`received ${n} bytes`));
    } else res.end(`hello from node: ${req.method} ${req.url}`);
  });
  nginx = await startNginx({
    server: `location / { proxy_pass http://127.0.0.1:${upstream}; proxy_set_header X-Via nginx; }
      location /upload { proxy_pass http://127.0.0.1:${upstream}; client_body_in_file_only clean; }`,
  });
});

afterAll(async () => {
  await nginx?.stop();
  await closeServers();
});

test('nginx proxies to a node:http server on loopback and returns its body', async () => {
  const res = await fetch(`${nginx.url}/a/b?c=1`);
  expect(res.status).toBe(200);
  expect(res.headers.get('server')).toMatch(/^nginx/);
  expect(await res.text()).toBe('hello from node: GET /a/b?c=1');
  expect(seen).toEqual([{ url: '/a/b?c=1', via: 'nginx' }]);
});

test('a request body goes through the temp path inside its directory (as root, written by an unprivileged worker)', async () => {
  // client_body_in_file_only: nginx writes every request body to client_body_temp_path first.
  const res = await fetch(`${nginx.url}/upload`, { method: 'POST', body: Buffer.alloc(100_000, 'm') });
  expect(await res.text()).toBe('received 100000 bytes');
  expect(nginx.errorLog()).not.toMatch(/\[(emerg|alert|crit)\]/);
});

test('stop() ends nginx and removes its directory, where its pid file and logs were', async () => {
  const other = await startNginx({ server: 'location / { return 204; }' });
  expect((await fetch(other.url)).status).toBe(204);
  expect(['nginx.pid', 'error.log', 'access.log'].filter((f) => !existsSync(join(other.dir, f)))).toEqual([]);
  await other.stop();
  expect(other.proc.exitCode ?? other.proc.signalCode).not.toBeNull();
  expect(existsSync(other.dir)).toBe(false);
  await expect(fetch(other.url)).rejects.toThrow();
});
