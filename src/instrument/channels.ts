import dc from 'node:diagnostics_channel';
import type { SqlDialect } from '../core/types.js';
import type { ClientRequest } from 'node:http';
import { mssqlChannels } from './mssql.js';
import { closeCall, openCall, type OpenCall } from './record.js';

/**
 * Outgoing calls timed through `diagnostics_channel`, without patching any library: the libraries
 * publish, miniprof listens. Every handler starts with `openCall`, which is `currentScope()` and a
 * branch when the calling context has no live profile; only then is the command text built.
 *
 * Channels (names as the libraries publish them):
 * - `undici:request:create` / `:headers` / `:error`: global `fetch` and undici. `create` fires in
 *   the caller's context; the rest are matched to it by the request object (a WeakMap).
 * - `http.client.request.start` / `http.client.response.finish` / `http.client.request.error`:
 *   Node's `http`/`https` client. A request that closes without a response is an error (the
 *   `error` channel is missing on older Node 20 releases).
 * - TracingChannels `ioredis:command` (ioredis 5.11+), `node-redis:command` and, for MULTI,
 *   `node-redis:batch` (@redis/client 5.12+),
 *   `mysql2:query` and `mysql2:execute` (mysql2 3.20+). A call ends at `asyncEnd` (the promise
 *   settled or the callback ran), never at `end`, which fires as soon as the call returns.
 */
let subscribed = false;

/**
 * Subscribe to the channels above, once per process (later calls do nothing). The adapters and
 * `withProfile` call it at setup unless `instrument: false`; call it yourself if you only use
 * `step()` under your own profiles.
 *
 * @example
 * import { instrument } from 'miniprof';
 * instrument();
 */
export function instrument(): void {
  if (subscribed) return;
  subscribed = true;
  undici();
  httpClient();
  traced('ioredis:command', 'ioredis', 'redis', (ctx) => redisCommand(ctx.command, ctx.args, 0));
  traced('node-redis:command', 'node-redis', 'redis', (ctx) => redisCommand(ctx.command, ctx.args, 1));
  // A node-redis MULTI sends its commands without a command event each (a pipeline has them);
  // OpenTelemetry's redis instrumentation makes a span of each.
  traced('node-redis:batch', 'node-redis', 'redis', (ctx) => `MULTI (${String(ctx.batchSize)} commands)`, (ctx) => ctx.batchMode === 'MULTI', (ctx) => Number(ctx.batchSize));
  // query() sends the text with its values already in it (mysql2 formats them client-side).
  traced('mysql2:query', 'mysql2', 'sql', sqlOf, undefined, undefined, 'mysql');
  // execute() sends its values apart from the text (a prepared statement): a digest of them.
  traced('mysql2:execute', 'mysql2', 'sql', sqlOf, undefined, undefined, 'mysql', (ctx) => ctx.values);
  // mssql 12.7+ (src/instrument/mssql.ts).
  mssqlChannels();
}

type Ctx = Record<string, unknown> & { error?: unknown };

/** `GET key`: the command name and the key, never a value (the key is masked at the seal). */
function redisCommand(command: unknown, args: unknown, keyAt: number): string {
  const name = String(command).toUpperCase();
  const key = Array.isArray(args) && args.length > keyAt ? args[keyAt] : undefined;
  return key === undefined ? name : `${name} ${String(key)}`;
}

function sqlOf(ctx: Ctx): string {
  return String(ctx.query ?? '');
}

/**
 * One TracingChannel: open at `start` (the caller's context), close at `asyncEnd`, or at `end`
 * when the call threw synchronously (then there is no async part).
 */
function traced(
  name: string,
  lib: string,
  category: string,
  command: (ctx: Ctx) => string,
  accept?: (ctx: Ctx) => boolean,
  spans?: (ctx: Ctx) => number,
  dialect?: SqlDialect,
  values?: (ctx: Ctx) => unknown,
): void {
  const open = new WeakMap<object, OpenCall>();
  dc.tracingChannel(name).subscribe({
    start(ctx: Ctx) {
      if (accept !== undefined && !accept(ctx)) return;
      const call = openCall(lib, category, command, ctx, spans, dialect, values);
      if (call !== undefined) open.set(ctx, call);
    },
    end(ctx: Ctx) {
      if (ctx.error !== undefined && open.has(ctx)) {
        closeCall(open.get(ctx), true);
        open.delete(ctx);
      }
    },
    asyncStart() {},
    asyncEnd(ctx: Ctx) {
      const call = open.get(ctx);
      if (call === undefined) return;
      closeCall(call, ctx.error !== undefined);
      open.delete(ctx);
    },
    error() {},
  } as never);
}

interface UndiciRequest {
  method: string;
  origin: unknown;
  path: string;
}

function undici(): void {
  const open = new WeakMap<object, OpenCall>();
  dc.subscribe('undici:request:create', (m) => {
    const { request } = m as { request: UndiciRequest };
    const call = openCall('undici', 'http', (r: UndiciRequest) => `${r.method} ${String(r.origin)}${r.path}`, request);
    if (call !== undefined) open.set(request, call);
  });
  const settle = (failed: boolean) => (m: unknown) => {
    const { request } = m as { request: object };
    const call = open.get(request);
    if (call === undefined) return;
    closeCall(call, failed);
    open.delete(request);
  };
  dc.subscribe('undici:request:headers', settle(false));
  dc.subscribe('undici:request:error', settle(true));
}

function httpCommand(req: ClientRequest): string {
  // Through a forward proxy the path is already the absolute URL.
  if (/^https?:\/\//i.test(req.path)) return `${req.method} ${req.path}`;
  const host = req.getHeader('host');
  return `${req.method} ${req.protocol}//${host === undefined ? req.host : String(host)}${req.path}`;
}

function httpClient(): void {
  const open = new WeakMap<object, OpenCall>();
  const close = (req: object, failed: boolean): void => {
    const call = open.get(req);
    if (call === undefined) return;
    closeCall(call, failed);
    open.delete(req);
  };
  dc.subscribe('http.client.request.start', (m) => {
    const { request } = m as { request: ClientRequest };
    const call = openCall('http', 'http', httpCommand, request);
    if (call === undefined) return;
    open.set(request, call);
    // Listening for `close` changes nothing for the app (unlike an `error` listener would).
    request.once('close', () => close(request, true));
  });
  dc.subscribe('http.client.response.finish', (m) => close((m as { request: object }).request, false));
  dc.subscribe('http.client.request.error', (m) => close((m as { request: object }).request, true));
}
