import { debuglog } from 'node:util';

/** Reasons and faults are written here; `NODE_DEBUG=miniprof` shows them. */
export const debug = debuglog('miniprof');

export type InternalErrorHandler = (err: unknown) => void;

export const defaultOnInternalError: InternalErrorHandler = (err) => {
  debug('internal error: %s', err instanceof Error ? (err.stack ?? err.message) : String(err));
};

const QUIET = Symbol('miniprof.quiet');

/**
 * Mark a fault that was already reported in another form (a store skipped after it timed out,
 * src/results/timeout.ts): `report` only logs it, so one outage is not reported per request.
 */
export function quiet<E extends Error>(err: E): E {
  (err as E & { [QUIET]?: true })[QUIET] = true;
  return err;
}

/**
 * Report one of the profiler's own faults without ever throwing into the app: a handler that
 * throws is itself only logged, and so is an async handler that rejects (left alone, that
 * rejection would be unhandled and, by Node's default, end the process). A {@link quiet} fault is
 * only logged.
 */
export function report(handler: InternalErrorHandler, err: unknown): void {
  if (err instanceof Error && (err as Error & { [QUIET]?: true })[QUIET] === true) return debug('%s', err.message);
  try {
    const r = handler(err) as unknown;
    if (r !== null && typeof r === 'object' && typeof (r as { then?: unknown }).then === 'function') {
      (r as PromiseLike<unknown>).then(undefined, (inner: unknown) => debug('onInternalError rejected: %s', String(inner)));
    }
  } catch (inner) {
    debug('onInternalError threw: %s', String(inner));
  }
}

/** Setup errors carry a code, in fastify-plugin's style, so apps can tell them apart. */
export type MiniprofErrorCode = 'MINIPROF_ERR_INVALID_OPTION' | 'MINIPROF_ERR_UNKNOWN_OPTION' | 'MINIPROF_ERR_INVALID_ARGUMENT';

export interface MiniprofTypeError extends TypeError {
  code: MiniprofErrorCode;
}

export function codedError(code: MiniprofErrorCode, message: string): MiniprofTypeError {
  const err = new TypeError(`miniprof: ${message}`) as MiniprofTypeError;
  err.code = code;
  return err;
}

/** A short, safe description of any value for an error message. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value) + ' (string)';
    case 'number':
    case 'boolean':
    case 'bigint':
      return `${String(value)} (${typeof value})`;
    case 'undefined':
      return 'undefined';
    case 'symbol':
      return `${value.toString()} (symbol)`;
    case 'function':
      return 'a function';
    default:
      return Array.isArray(value) ? 'an array' : 'an object';
  }
}
