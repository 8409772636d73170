import type { IncomingMessage } from 'node:http';
import { resolveHttp, type MiniprofOptions } from '../src/http/config.js';
import { developerMiddleware, encrypted, type NodeMiddleware } from '../src/http/node.js';
import { timeExpressRender } from '../src/http/views.js';

export type { MiniprofOptions } from '../src/http/config.js';

type Req = IncomingMessage & { originalUrl?: string; secure?: boolean };

/**
 * Express middleware (Express 4.21+ and 5). Mount it early, after `compression()` if you use
 * it, so the comment is written before the body is compressed.
 *
 * For a developer's request it runs the rest of the chain inside a profile, adds the HTML
 * comment to a whole HTML body, and sets `Server-Timing`, through wrappers on that request's own
 * `res`. For anyone else it calls `next()` and touches nothing; with `capture` on, a sampled request runs
 * inside a profile and its response is still left as the app made it.
 *
 * @example
 * import { miniprof } from 'miniprof/express';
 * app.use(miniprof({ isDeveloper: (req) => req.user?.admin === true }));
 */
export function miniprof<R extends Req = Req>(options?: MiniprofOptions<R>): NodeMiddleware<R> {
  // Generic so `isDeveloper: (req: express.Request) => …` type-checks without this file importing express.
  // `req.secure` is Express's: it also believes X-Forwarded-Proto when the app set `trust proxy`.
  const https = (req: R) => req.secure === true || encrypted(req);
  const cfg = resolveHttp<R>(options, 'miniprof/express', (req) => req.socket?.remoteAddress, [], undefined, https);
  // autoSteps: `res.render` timed as a step `render <view>` (src/http/views.ts).
  const onError = cfg.core.onInternalError;
  return developerMiddleware(cfg, cfg.autoSteps ? (res) => timeExpressRender(res, onError) : undefined);
}

export default miniprof;
