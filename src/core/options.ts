import { hostname } from 'node:os';
import { monotonic, wall, type Clock, type WallClock } from './clock.js';
import { codedError, defaultOnInternalError, describe, type InternalErrorHandler } from './errors.js';

/** Options every profile understands (`withProfile`, and both adapters). */
export interface CoreOptions {
  /** Steps (and custom timings) recorded per profile; the rest run but are only counted. Default 1000. */
  maxSteps?: number;
  /** Deepest nesting recorded; deeper steps run but are only counted. Default 64. */
  maxDepth?: number;
  /** Step names are cut to this many characters. Default 200. */
  maxNameLength?: number;
  /** Custom-timing commands are cut to this many characters. Default 2000. */
  maxCommandLength?: number;
  /** Shown in the text tree's header. Default `os.hostname()`. */
  machine?: string;
  /** Monotonic milliseconds. Default `performance.now()`; inject one in tests. */
  clock?: Clock;
  /** Epoch milliseconds for `started`. Default `Date.now()`. */
  now?: WallClock;
  /** Where the profiler's own faults go; it never throws into the app. Default: `util.debuglog('miniprof')`. */
  onInternalError?: (err: unknown) => void;
  /**
   * Mask string literals, numbers, ids and URL query values in custom-timing commands, in every
   * output. Default true; `false` shows commands as given (never in `Server-Timing`, which only
   * carries category totals).
   */
  redact?: boolean;
  /** A step whose synchronous part runs longer than this many ms is flagged as blocking. Default 20. */
  blockingMs?: number;
  /**
   * Time outgoing calls (fetch/undici, http, ioredis, node-redis, mysql2) through
   * `diagnostics_channel`. Default true. Subscribing happens once per process.
   */
  instrument?: boolean;
}

/** @internal Options resolved once, at setup. */
export interface CoreConfig {
  maxSteps: number;
  maxDepth: number;
  maxNameLength: number;
  maxCommandLength: number;
  machine: string;
  clock: Clock;
  now: WallClock;
  onInternalError: InternalErrorHandler;
  redact: boolean;
  blockingMs: number;
  instrument: boolean;
}

export const CORE_KEYS = [
  'maxSteps',
  'maxDepth',
  'maxNameLength',
  'maxCommandLength',
  'machine',
  'clock',
  'now',
  'onInternalError',
  'redact',
  'blockingMs',
  'instrument',
] as const;

export function invalid(name: string, expected: string, got: unknown): TypeError {
  return codedError('MINIPROF_ERR_INVALID_OPTION', `option "${name}" must be ${expected}, got ${describe(got)}`);
}

export function intOption(o: Record<string, unknown>, name: string, def: number, min: number, max: number): number {
  const v = o[name];
  if (v === undefined) return def;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw invalid(name, `an integer from ${min} to ${max}`, v);
  }
  return v;
}

export function boolOption(o: Record<string, unknown>, name: string, def: boolean): boolean {
  const v = o[name];
  if (v === undefined) return def;
  if (typeof v !== 'boolean') throw invalid(name, 'a boolean', v);
  return v;
}

export function fnOption<F>(o: Record<string, unknown>, name: string, def: F): F {
  const v = o[name];
  if (v === undefined) return def;
  if (typeof v !== 'function') throw invalid(name, 'a function', v);
  return v as F;
}

/** Options must be a plain object; unknown keys are refused so a typo cannot pass silently. */
export function checkObject(options: unknown, allowed: readonly string[], what: string): Record<string, unknown> {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw codedError('MINIPROF_ERR_INVALID_OPTION', `${what} options must be an object, got ${describe(options)}`);
  }
  const o = options as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (!allowed.includes(key)) {
      throw codedError(
        'MINIPROF_ERR_UNKNOWN_OPTION',
        `unknown option ${JSON.stringify(key)} for ${what}; known options: ${allowed.join(', ')}`,
      );
    }
  }
  return o;
}

let host: string | undefined;

export function resolveCore(o: Record<string, unknown>): CoreConfig {
  const machine = o.machine;
  if (machine !== undefined && (typeof machine !== 'string' || machine.length === 0 || machine.length > 200)) {
    throw invalid('machine', 'a non-empty string of at most 200 characters', machine);
  }
  return {
    maxSteps: intOption(o, 'maxSteps', 1000, 1, 1_000_000),
    maxDepth: intOption(o, 'maxDepth', 64, 1, 256),
    maxNameLength: intOption(o, 'maxNameLength', 200, 8, 10_000),
    maxCommandLength: intOption(o, 'maxCommandLength', 2000, 8, 100_000),
    machine: (machine as string | undefined) ?? (host ??= hostname()),
    clock: fnOption(o, 'clock', monotonic),
    now: fnOption(o, 'now', wall),
    onInternalError: fnOption(o, 'onInternalError', defaultOnInternalError),
    redact: boolOption(o, 'redact', true),
    blockingMs: intOption(o, 'blockingMs', 20, 0, 3_600_000),
    instrument: boolOption(o, 'instrument', true),
  };
}
