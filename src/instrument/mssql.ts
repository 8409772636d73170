import dc from 'node:diagnostics_channel';
import { VALUES_UNKNOWN } from '../core/timing.js';
import { closeCall, openCall, type OpenCall } from './record.js';

type Ctx = Record<string, unknown> & { error?: unknown };

/**
 * `mssql` (12.7+) publishes TracingChannels: `mssql:query` and `mssql:batch` (`command`: the
 * text) and `mssql:execute` (`procedure`: a stored procedure's name). Timed with no call, as
 * mysql2 is: open at `start` (the caller's context), close at `asyncEnd`, or at `end` when the
 * call threw. The channels carry the parameters' names only, so the values are unknown and such a
 * call is never called a duplicate: a query's `@name` placeholders say so, and a procedure (whose
 * text `EXEC name` has none) carries `VALUES_UNKNOWN`. Called by `instrument()`.
 */
export function mssqlChannels(): void {
  for (const [name, text] of [
    ['mssql:query', (c: Ctx) => String(c.command ?? '')],
    ['mssql:batch', (c: Ctx) => String(c.command ?? '')],
    ['mssql:execute', (c: Ctx) => `EXEC ${String(c.procedure ?? '')}`],
  ] as const) {
    const open = new WeakMap<object, OpenCall>();
    dc.tracingChannel(name).subscribe({
      start(ctx: Ctx) {
        const call = openCall('mssql', 'sql', text, ctx, undefined, 'mssql');
        if (call === undefined) return;
        // A procedure's parameters are not in its text (`EXEC name`): two calls with other values
        // would otherwise read as duplicates.
        if (name === 'mssql:execute') call.node.values = VALUES_UNKNOWN;
        open.set(ctx, call);
      },
      end(ctx: Ctx) {
        if (ctx.error === undefined) return;
        closeCall(open.get(ctx), true);
        open.delete(ctx);
      },
      asyncStart() {},
      asyncEnd(ctx: Ctx) {
        closeCall(open.get(ctx), ctx.error !== undefined);
        open.delete(ctx);
      },
      error() {},
    } as never);
  }
}
