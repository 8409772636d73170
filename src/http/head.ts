import { validateHeaderName, validateHeaderValue, type ServerResponse } from 'node:http';
import onHeaders from 'on-headers';
import type { ProfiledResponse } from './response.js';

type WriteHead = (this: ServerResponse, ...args: unknown[]) => ServerResponse;

/**
 * Our headers on one developer's response as its head goes out (`p.headers`), through
 * on-headers, except on a `writeHead` call that Node is going to refuse.
 *
 * on-headers turns `writeHead(status, headers)` into `setHeader` calls before Node sees them, so
 * a call with a valid header and then an invalid one (`x-bad: a\0b`) left the valid one on the
 * response, where the app's error page then carried it; Node alone, on a response with no header
 * set yet, refuses the whole call and leaves nothing. Such a call goes to Node's own `writeHead`,
 * which throws exactly as it does for everyone else; our hook, not fired yet, then fires on the
 * error page's head.
 */
export function hookHead(p: ProfiledResponse, res: ServerResponse): void {
  const plain = res.writeHead as WriteHead;
  onHeaders(res, function (this: ServerResponse) {
    p.headers(this, this.statusCode);
  });
  const hooked = res.writeHead as WriteHead;
  res.writeHead = function (this: ServerResponse, ...args: unknown[]): ServerResponse {
    return (refused(args) ? plain : hooked).apply(this, args);
  } as ServerResponse['writeHead'];
}

/**
 * Whether Node's `writeHead(status, [reason], [headers])` will throw for these arguments: a status
 * outside 100–999, a reason or a header Node's own validators refuse, a flat header list of odd
 * length. Read as on-headers reads them (a falsy name is skipped by both).
 */
function refused(args: unknown[]): boolean {
  const status = Number(args[0]) | 0;
  if (status < 100 || status > 999) return true;
  const reason = typeof args[1] === 'string' ? args[1] : undefined;
  const headers = reason === undefined ? args[1] : args[2];
  try {
    if (reason !== undefined) validateHeaderValue('status message', reason);
    for (const [name, value] of pairs(headers)) {
      if (!name) continue;
      validateHeaderName(name as string);
      validateHeaderValue(name as string, value as string);
    }
    return false;
  } catch {
    return true;
  }
}

/** The headers given to writeHead as name–value pairs: an object, `[[k, v], …]` or `[k, v, k, v, …]`. */
function pairs(headers: unknown): Array<[unknown, unknown]> {
  if (Array.isArray(headers)) {
    if (headers.length > 0 && Array.isArray(headers[0])) return (headers as unknown[][]).map((h) => [h[0], h[1]]);
    if (headers.length % 2 !== 0) throw new TypeError('headers array is malformed');
    const out: Array<[unknown, unknown]> = [];
    for (let i = 0; i < headers.length; i += 2) out.push([headers[i], headers[i + 1]]);
    return out;
  }
  if (headers === null || typeof headers !== 'object') return [];
  return Object.entries(headers);
}
