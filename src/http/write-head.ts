import type { ServerResponse } from 'node:http';
import type { ProfiledResponse } from './response.js';

/** `end` or `writeHead` as found on a response or a prototype. */
export type ResMethod = (this: ServerResponse, ...args: unknown[]) => ServerResponse;

/**
 * A developer's response's writeHead, as on-headers does it: at the first call only, headers
 * passed to writeHead become the response's own first (so ours merge with them rather than being
 * overwritten), then ours, then `head` (the writeHead the app would have reached) with the status
 * (and reason) only. Later calls go straight to `head`, as on-headers fired once.
 *
 * Not on-headers itself: it puts a new closure on each response, and a per-request closure kept
 * in a property of `res` got everything of the request promoted to the old generation (see
 * adapters/fastify.ts). On a per-response holder object instead, it measured ~80,000 instructions
 * more per Express developer request (bench/instructions, `open` row, twice).
 */
export function writeHeadWith(state: ProfiledResponse, res: ServerResponse, args: IArguments, head: ResMethod): ServerResponse {
  if (state.headersWritten) return head.apply(res, args as unknown as unknown[]);
  state.headersWritten = true;
  const n = args.length;
  const at = n > 1 && typeof args[1] === 'string' ? 2 : 1;
  const given: unknown = n > at ? args[at] : undefined;
  res.statusCode = args[0] as number;
  if (Array.isArray(given)) setFromArray(res, given);
  else if (given !== null && typeof given === 'object') for (const k of Object.keys(given)) res.setHeader(k, (given as Record<string, never>)[k]);
  state.writeHeaders(res);
  return at === 2 ? head.call(res, args[0], args[1]) : head.call(res, args[0]);
}

/** `[[name, value], …]` or `[name, value, name, value, …]`, the two forms writeHead takes. */
function setFromArray(res: ServerResponse, given: unknown[]): void {
  if (given.length > 0 && Array.isArray(given[0])) {
    for (const pair of given as [string, never][]) res.setHeader(pair[0], pair[1]);
    return;
  }
  // The TypeError on-headers gives for it (miniprof used on-headers before).
  if (given.length % 2 !== 0) throw new TypeError('headers array is malformed');
  for (let i = 0; i < given.length; i += 2) res.setHeader(given[i] as string, given[i + 1] as never);
}

