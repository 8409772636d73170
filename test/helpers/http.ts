/**
 * Socket-level helpers for the adapter end-to-end tests (Express and Fastify). Everything talks
 * to 127.0.0.1 only. The API is deliberately small:
 *
 * - `serve(listener)`: an `http.Server` on `127.0.0.1:0`; returns its port. Every server made
 *   here (and any passed to `track`) is closed, its sockets destroyed, by `closeServers()`:
 *   call that in `afterEach`.
 * - `raw(port, request)`: one request on a fresh TCP socket with `Connection: close`, returning
 *   the exact bytes the server wrote, split into informational heads (1xx), the final status
 *   line, headers and body. Use it for byte identity, Content-Length checks and chunked uploads
 *   (pass `body` as an array: each element goes out as one chunk, `chunkDelayMs` apart).
 * - `withoutDate(bytes)`: the same response bytes minus the `Date` header line, the one part of
 *   two otherwise identical responses that may differ.
 * - `get(port, path, options)`: a request through Node's own `http` client (its default
 *   `maxHeaderSize` included), for when the client's view is what matters; pass `agent` for
 *   keep-alive.
 * - `dechunk(body)`: the payload of a `Transfer-Encoding: chunked` body.
 * - `leaveDuringBody(port, path)`: a client that reads the first bytes of a large response, then
 *   resets the connection while the server is still writing it.
 * - `TEST_TLS` and `tlsGet(port, path, headers, method)`: the test certificate, and a verified
 *   HTTPS request (HTTP/1.1 by ALPN, GET unless `method` says otherwise) to a server using it.
 * - `waitFor(cond)`: poll until `cond()` holds (a profile sealed on 'close', say); rejects
 *   after `timeoutMs` so a test fails instead of hanging.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { ConnectionOptions as TlsConnectionOptions, TLSSocket } from 'node:tls';

const servers = new Set<{ server: http.Server; sockets: Set<net.Socket> }>();

/** Follow `server`'s sockets so `closeServers()` can end even never-ending responses. */
export function track(server: http.Server): void {
  const entry = { server, sockets: new Set<net.Socket>() };
  server.on('connection', (s: net.Socket) => {
    entry.sockets.add(s);
    s.once('close', () => entry.sockets.delete(s));
  });
  servers.add(entry);
}

/** Listen on 127.0.0.1 with an ephemeral port; resolves to the port. */
export async function serve(listener: http.RequestListener): Promise<number> {
  const server = http.createServer(listener);
  track(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

/** Close every server from `serve`/`track`, destroying open sockets first. */
export async function closeServers(): Promise<void> {
  const all = [...servers];
  servers.clear();
  await Promise.all(
    all.map(
      ({ server, sockets }) =>
        new Promise<void>((resolve) => {
          for (const s of sockets) s.destroy();
          if (!server.listening) return resolve();
          server.close(() => resolve());
        }),
    ),
  );
}

export interface RawRequest {
  method?: string;
  path?: string;
  /** Sent in this order after `Host` and `Connection: close`. */
  headers?: Record<string, string>;
  /** One piece (sent with `Content-Length`) or several (sent chunked, one chunk each). */
  body?: string | Buffer | Array<string | Buffer>;
  /** Pause between chunks of an array body. Default 0 (still one write per chunk). */
  chunkDelayMs?: number;
  /** The client's address, another loopback one for a second peer (`127.0.0.2`). */
  localAddress?: string;
}

export interface RawResponse {
  /** Everything the server wrote, byte for byte. */
  bytes: Buffer;
  /** 1xx heads (e.g. 103 Early Hints) that came before the final one, as latin1 text. */
  informational: string[];
  /** The final head, latin1, without the blank line. */
  head: string;
  status: number;
  /** Header name (lower case) to values, in the order received. */
  headers: Record<string, string[]>;
  /** The body bytes exactly as sent (still chunk-framed if chunked). */
  body: Buffer;
  /** The body's payload: `dechunk(body)` when chunked, else `body`. */
  payload: Buffer;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Send one request on a new socket and read until the server closes it. */
export async function raw(port: number, req: RawRequest = {}, timeoutMs = 5000): Promise<RawResponse> {
  const socket = net.connect({ port, host: '127.0.0.1', localAddress: req.localAddress });
  const got: Buffer[] = [];
  socket.on('data', (b: Buffer) => got.push(b));
  const done = new Promise<Buffer>((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`raw ${req.method ?? 'GET'} ${req.path ?? '/'}: no end after ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(got));
    });
  });
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  let head = `${req.method ?? 'GET'} ${req.path ?? '/'} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n`;
  for (const [k, v] of Object.entries(req.headers ?? {})) head += `${k}: ${v}\r\n`;
  const body = req.body;
  if (Array.isArray(body)) {
    socket.write(`${head}Transfer-Encoding: chunked\r\n\r\n`);
    for (const piece of body) {
      if (req.chunkDelayMs) await sleep(req.chunkDelayMs);
      const b = Buffer.from(piece);
      socket.write(Buffer.concat([Buffer.from(`${b.length.toString(16)}\r\n`), b, Buffer.from('\r\n')]));
    }
    socket.write('0\r\n\r\n');
  } else if (body !== undefined) {
    const b = Buffer.from(body);
    socket.write(Buffer.concat([Buffer.from(`${head}Content-Length: ${b.length}\r\n\r\n`), b]));
  } else {
    socket.write(`${head}\r\n`);
  }
  return parse(await done);
}

function parse(bytes: Buffer): RawResponse {
  const informational: string[] = [];
  let at = 0;
  for (;;) {
    const end = bytes.indexOf('\r\n\r\n', at);
    if (end === -1) throw new Error(`incomplete response: ${JSON.stringify(bytes.toString('latin1').slice(0, 200))}`);
    const head = bytes.toString('latin1', at, end);
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1]);
    at = end + 4;
    if (status >= 100 && status < 200) {
      informational.push(head);
      continue;
    }
    const headers: Record<string, string[]> = {};
    for (const line of head.split('\r\n').slice(1)) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).toLowerCase();
      (headers[name] ??= []).push(line.slice(colon + 1).trim());
    }
    const body = bytes.subarray(at);
    const chunked = headers['transfer-encoding']?.some((v) => /chunked/i.test(v)) === true;
    return { bytes, informational, head, status, headers, body, payload: chunked ? dechunk(body) : body };
  }
}

/** The payload of a chunked body; throws on framing errors (a corrupted body must fail loudly). */
export function dechunk(body: Buffer): Buffer {
  const out: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = body.indexOf('\r\n', at);
    if (eol === -1) throw new Error('chunked body: missing size line');
    const size = parseInt(body.toString('latin1', at, eol).split(';')[0]!, 16);
    if (!Number.isFinite(size)) throw new Error('chunked body: bad size');
    if (size === 0) return Buffer.concat(out);
    out.push(body.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size;
    if (body.toString('latin1', at, at + 2) !== '\r\n') throw new Error('chunked body: chunk not followed by CRLF');
    at += 2;
  }
}

/** The response bytes without the `Date:` header line. */
export function withoutDate(bytes: Buffer): Buffer {
  const end = bytes.indexOf('\r\n\r\n');
  const head = bytes.toString('latin1', 0, end).replace(/\r\nDate: [^\r\n]*/i, '');
  return Buffer.concat([Buffer.from(head, 'latin1'), bytes.subarray(end)]);
}

export interface GetOptions {
  method?: string;
  headers?: http.OutgoingHttpHeaders;
  /** Default `false`: a fresh socket per request. */
  agent?: http.Agent | false;
}

export interface GetResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
}

/** One request through Node's `http` client; the body is read to the end. */
export function get(port: number, path: string, options: GetOptions = {}): Promise<GetResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers: options.headers, agent: options.agent ?? false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.once('error', reject);
        res.once('end', () =>
          resolve({ status: res.statusCode!, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks) }),
        );
      },
    );
    req.once('error', reject);
    req.end();
  });
}

/**
 * GET `path`, then leave at the first bytes with the rest unread, so the connection is reset (RST,
 * as unread data is discarded) while the server is still writing. The response must be larger
 * than the kernel can buffer between the two ends (~4 MB send and ~128 KB receive here, with no
 * read to grow the latter): use tens of megabytes. Resolves once the socket is closed.
 */
export function leaveDuringBody(port: number, path: string, headers = ''): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n${headers}\r\n`));
    socket.once('data', () => {
      socket.pause();
      socket.destroy();
    });
    socket.once('error', reject);
    socket.once('close', () => resolve());
  });
}

/** Poll (every few ms) until `cond()` is true. */
export async function waitFor(cond: () => boolean, timeoutMs = 3000, what = 'condition'): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`waitFor: ${what} not met after ${timeoutMs} ms`);
    await sleep(2);
  }
}

/**
 * A self-signed certificate for 127.0.0.1 and localhost, valid until 2126, made for the tests with
 * `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 36500
 * -subj "/CN=miniprof test" -addext "subjectAltName=IP:127.0.0.1,DNS:localhost"`. Clients trust
 * exactly it (`ca`), so the handshake is verified, not skipped.
 */
export const TEST_TLS = {
  key: readFileSync(new URL('../fixtures/tls/key.pem', import.meta.url)),
  cert: readFileSync(new URL('../fixtures/tls/cert.pem', import.meta.url)),
};

/**
 * GET over TLS on a fresh connection, offering only HTTP/1.1 by ALPN; the body as bytes, and the
 * protocol the server chose (false when it chose none).
 */
export function tlsGet(port: number, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ res: http.IncomingMessage; body: Buffer; alpn: string | false | null }> {
  // ALPNProtocols reaches tls.connect through the agent, though https' types leave it out.
  const options: https.RequestOptions & TlsConnectionOptions = { host: '127.0.0.1', port, path, method, headers, ca: TEST_TLS.cert, agent: false, ALPNProtocols: ['http/1.1'] };
  // A Host of the test's own (a public name): the certificate is still checked, for localhost.
  if (headers.Host !== undefined) options.servername = 'localhost';
  return new Promise((resolve, reject) => {
    https
      .request(options, (res) => {
        const chunks: Buffer[] = [];
        const alpn = (res.socket as TLSSocket).alpnProtocol;
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ res, body: Buffer.concat(chunks), alpn }));
        res.on('error', reject);
      })
      .on('error', reject)
      .end();
  });
}
