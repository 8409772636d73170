import { quiet } from '../core/errors.js';

/** The rejection of a call that took longer than it was given: what opens a {@link breaker}. */
export class TimeoutError extends Error {
  readonly code = 'MINIPROF_ERR_TIMEOUT';
  /** A breaker acted on it already: one around the store's own (results.timeoutMs around redisStore's) passes it on. */
  counted = false;
}

/**
 * `call()` bounded by `ms`: settles as it does, or rejects with a {@link TimeoutError} saying
 * `message` once `ms` have passed. A call that throws synchronously rejects. The timer is
 * unref'd, so a store that never answers cannot keep the process alive.
 */
export function withTimeout<T>(call: () => T | PromiseLike<T>, ms: number, message: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new TimeoutError(message)), ms);
    timer.unref();
    new Promise<T>((res) => res(call())).then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

/** How long a store that timed out is skipped before one call tries it again. */
export const RETRY_AFTER_MS = 10_000;

/**
 * {@link withTimeout} behind a circuit breaker. A store that stops answering (Redis stopped, a
 * network partition) would make every call wait `ms`: an opted-in developer's every request,
 * since the opt-in is checked in the store. So once a call times out, the calls of the next
 * `retryAfterMs` are skipped: they reject at once. Then one call tries the store again (the others
 * are still skipped while it runs): an answer closes the breaker; another failure opens it again.
 * With `anyError`, a call that fails in any way trips it too (a Redis client that gives up on a
 * refused connection after its own retries); without, an error is the store's answer, and only a
 * timeout trips it (a custom store may refuse one call and answer the next).
 *
 * Reported once: the failure that opens the breaker rejects as usual (the caller reports it, and
 * its message says calls are skipped); skips and the failures of tries that find the store still
 * gone are {@link quiet}, so `onInternalError` hears of an outage once, not once per request.
 * `now` is `performance.now()` unless a test moves it.
 */
export function breaker(ms: number, retryAfterMs: number, anyError = false, now: () => number = () => performance.now()): <T>(call: () => T | PromiseLike<T>, message: string) => Promise<T> {
  /** When the store may be tried again; 0 while it answers. */
  let openUntil = 0;
  /** A try after a skip is running. */
  let trying = false;
  /** This outage was reported. */
  let reported = false;
  return function run<T>(call: () => T | PromiseLike<T>, message: string): Promise<T> {
    if (openUntil !== 0 && (trying || now() < openUntil)) {
      return Promise.reject(quiet(new Error(`${message}: skipped, the store failed (tried again ${retryAfterMs} ms after)`)));
    }
    const isTry = openUntil !== 0;
    if (isTry) trying = true;
    return withTimeout(call, ms, `${message} took longer than ${ms} ms`).then(
      (v) => {
        closed(isTry);
        return v;
      },
      (err: unknown) => {
        const timedOut = err instanceof TimeoutError;
        if (!timedOut && !anyError) {
          // The store answered, with an error: it is there.
          closed(isTry);
          throw err;
        }
        if (isTry) trying = false;
        // The store's own breaker timed it out and opened: this one leaves it to that one.
        if (timedOut && err.counted) throw err;
        const failure = timedOut ? err : new Error(`${message} failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
        if (timedOut) err.counted = true;
        openUntil = now() + retryAfterMs;
        if (reported) throw quiet(failure);
        reported = true;
        failure.message += `; the store is skipped for ${retryAfterMs} ms, then tried again (reported once until it answers)`;
        throw failure;
      },
    );
  };

  function closed(isTry: boolean): void {
    if (isTry) trying = false;
    openUntil = 0;
    reported = false;
  }
}
