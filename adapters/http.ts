import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { resolveHttp, type MiniprofOptions } from '../src/http/config.js';
import { developerMiddleware, encrypted, type NodeMiddleware } from '../src/http/node.js';

export type { MiniprofOptions } from '../src/http/config.js';

/**
 * Connect-style middleware `(req, res, next)` for `node:http`, connect and polka (the Express
 * middleware is this same code). Mount it first. The opt-in cookie's `Secure` flag follows the
 * socket alone: no proxy header is believed.
 *
 * For a developer's request it runs the rest of the chain inside a profile, adds the HTML comment
 * to a whole HTML body and sets `Server-Timing`, through wrappers on that request's own `res`.
 * For anyone else it calls `next()` and touches nothing; with `capture` on, a sampled request runs
 * inside a profile and its response is still left as the app made it.
 *
 * @example
 * import connect from 'connect';
 * import { miniprof } from 'miniprof/http';
 * const app = connect();
 * app.use(miniprof({ isDeveloper: (req) => req.headers['x-dev'] === process.env.DEV_TOKEN }));
 */
export function miniprof<R extends IncomingMessage = IncomingMessage>(options?: MiniprofOptions<R>): NodeMiddleware<R> {
  return developerMiddleware(resolveHttp<R>(options, 'miniprof/http', (req) => req.socket?.remoteAddress, [], undefined, encrypted));
}

/**
 * A `node:http` request listener that profiles `listener` for developers:
 * `http.createServer(wrap(app, options))`. Options are checked here, once. For anyone else it
 * calls `listener(req, res)` and nothing else. An exception `listener` throws escapes as it would
 * without miniprof, after an async `isDeveloper` too.
 *
 * @example
 * import http from 'node:http';
 * import { wrap } from 'miniprof/http';
 * http.createServer(wrap((req, res) => res.end('<p>hi</p>'))).listen(3000);
 */
export function wrap<R extends IncomingMessage = IncomingMessage>(listener: (req: R, res: ServerResponse) => void, options?: MiniprofOptions<R>): RequestListener {
  const middleware = miniprof<R>(options);
  return function miniprofListener(req, res) {
    middleware(req as R, res, () => listener(req as R, res));
  } as RequestListener;
}

export default miniprof;
