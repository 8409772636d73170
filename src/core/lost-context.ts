import { createRequire } from 'node:module';
import type { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Promise libraries that lose the async context, said in the profile rather than hidden in a
 * wrong tree (issue 59). bluebird runs its callbacks from a queue of its own: without its async
 * hooks, the work of parallel steps (eight Bookshelf fetches) all lands under whichever step
 * queued first. miniprof cannot mend that; it can tell, and name the remedy.
 *
 * How it tells, with public APIs only: as a profile opens, at most every PROBE_MS, every bluebird
 * copy loaded through `require` (found in `require.cache`) is probed with its own `resolve` and
 * `then` under marker stores of miniprof's AsyncLocalStorage. A callback that does not see its
 * marker means the library does not carry the context. A second probe returns a thenable from a
 * callback, as Bookshelf returns a knex query builder: bluebird 3.7 calls its `then` after leaving
 * the callback's async scope even with `asyncHooks` on, so those queries stay misplaced.
 *
 * The probe runs from its own `setImmediate`, outside every profile (`als.exit`), after the turn
 * the request started in, so that bluebird's queue is most likely scheduled by the app itself.
 * Should app callbacks share the probe's turn of bluebird's queue anyway, they run outside any
 * profile (as they would have run in some other step's without hooks): never put in a wrong step
 * by the probe. The markers are stores with no profile (`profile: null`), which `step()` and the
 * instrumentation treat as "not profiled"; only the probe's own callbacks see them. Once a second
 * at most, and only while developers' requests come in.
 */
const PROBE_MS = 1000;
const BLUEBIRD = /[\\/]node_modules[\\/]bluebird[\\/]js[\\/]release[\\/]bluebird\.js$/;

export const NO_HOOKS =
  'bluebird is loaded without its async hooks: work chained on its promises (Bookshelf, older Sequelize) may be shown under the wrong step. ' +
  'Call Promise.config({ asyncHooks: true }) on bluebird before serving requests.';
export const THENABLES =
  'bluebird starts a thenable returned from a callback (a knex query builder, as Bookshelf returns) outside the async context: ' +
  'queries of Bookshelf calls made in parallel may be shown under the first of their steps. Await them one after another to see each under its own.';

/** What the probes found, worst over every copy: 0 nothing lost, 1 thenables lost, 2 callbacks lost. */
let found = 0;
const byCopy = new Map<string, number>();
let probedAt = -Infinity;

interface Owner {
  readonly warnings: string[];
  warn(message: string): void;
}

interface Bluebird {
  resolve(): { then(f: () => unknown): unknown };
}

/** A profile opened: probe again if the last probe is older than PROBE_MS. */
export function probeLostContext(als: AsyncLocalStorage<unknown>): void {
  const now = performance.now();
  if (now - probedAt < PROBE_MS) return;
  probedAt = now;
  als.exit(() => setImmediate(probeAll, als).unref());
}

/** Add the warning for what the probes found so far to `profile`, once (at freeze and at seal). */
export function warnLostContext(profile: Owner): void {
  const message = found === 2 ? NO_HOOKS : found === 1 ? THENABLES : undefined;
  if (message !== undefined && !profile.warnings.includes(message)) profile.warn(message);
}

function probeAll(als: AsyncLocalStorage<unknown>): void {
  // One cache for the process, whichever module's require reads it (as src/http/insert.ts does).
  const cache = createRequire(import.meta.url).cache;
  for (const path of Object.keys(cache)) {
    if (!BLUEBIRD.test(path)) continue;
    const B: unknown = cache[path]?.exports;
    if (typeof B === 'function' && typeof (B as { resolve?: unknown }).resolve === 'function') probe(path, B as unknown as Bluebird, als);
  }
}

function probe(path: string, B: Bluebird, als: AsyncLocalStorage<unknown>): void {
  const callback = { profile: null };
  const thenable = { profile: null };
  let lostCallback: boolean | undefined;
  let lostThenable: boolean | undefined;
  const done = (): void => {
    if (lostCallback === undefined || lostThenable === undefined) return;
    byCopy.set(path, lostCallback ? 2 : lostThenable ? 1 : 0);
    found = Math.max(0, ...byCopy.values());
  };
  try {
    // Queued first, outside any profile: without hooks, bluebird's queue then runs every
    // callback of this turn there, not under the markers.
    B.resolve().then(() => {});
    als.run(callback, () =>
      B.resolve().then(() => {
        lostCallback = als.getStore() !== callback;
        done();
      }),
    );
    als.run(thenable, () =>
      B.resolve().then(() => ({
        then(resolve: (v: unknown) => void) {
          lostThenable = als.getStore() !== thenable;
          done();
          resolve(undefined);
        },
      })),
    );
  } catch {
    // Not the bluebird this expects: nothing is said about it.
  }
}
