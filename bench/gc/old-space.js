// The old-space measurement of bench/gc/promotion.js, shared with bench/http/hidden-classes.js:
// one request at a time over a keep-alive socket, a minor GC every `every` requests, and the old
// space's growth over `count` requests. The process must run with `--expose-gc` and an old space
// large enough that no mark-compact falls in the window (`--initial-old-space-size=1024`); one
// that does is counted, and the caller must not trust that figure.
import http from 'node:http';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import v8 from 'node:v8';

/** Node flags a measuring process needs. */
export const OLD_SPACE_FLAGS = ['--expose-gc', '--initial-old-space-size=1024'];

/** GET / on 127.0.0.1:`port`, one request at a time over one keep-alive socket. */
export function keepAliveClient(port) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = () =>
    new Promise((resolve, reject) => {
      http
        .get({ port, host: '127.0.0.1', path: '/', agent }, (res) => {
          res.resume();
          res.on('end', resolve);
        })
        .on('error', reject);
    });
  return { get, close: () => agent.destroy() };
}

const oldSpace = () => v8.getHeapSpaceStatistics().find((x) => x.space_name === 'old_space').space_used_size;

let majors = 0;
let observing = false;

/**
 * `warm` requests, two full GCs, then `count` requests with a minor GC every `every`: the old
 * space's growth per request, and the mark-compacts that fell in the window (0 for a valid one).
 */
export async function oldSpacePerRequest(get, { warm = 3000, count = 20000, every = 500 } = {}) {
  if (!observing) {
    observing = true;
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++;
    }).observe({ entryTypes: ['gc'] });
  }
  for (let i = 0; i < warm; i++) await get();
  globalThis.gc();
  globalThis.gc();
  // The observer hears of those two a little later; they must not count as in the window.
  await new Promise((r) => setTimeout(r, 50));
  const majorsBefore = majors;
  const before = oldSpace();
  for (let i = 0; i < count; i++) {
    await get();
    if (i % every === 0) globalThis.gc({ type: 'minor' });
  }
  const grown = oldSpace() - before;
  await new Promise((r) => setTimeout(r, 50));
  return { bytesPerRequest: Math.round(grown / count), markCompacts: majors - majorsBefore };
}
