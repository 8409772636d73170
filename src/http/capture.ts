import { codedError, describe, report } from '../core/errors.js';
import { boolOption, fnOption, intOption, invalid, type CoreConfig } from '../core/options.js';
import type { ProfileJSON, TimingJSON } from '../core/types.js';

/** The `capture` option: a sample of everyone's requests, profiled without a trace in the response. */
export interface CaptureOptions {
  /**
   * The share of requests that are not a developer's to profile, above 0 and at most 1. Default
   * 0.01. On Node 22 and older an open profile keeps AsyncLocalStorage's promise hooks on for the
   * whole process, so while a sampled request is open every request's awaits cost more: keep the
   * rate low there (see the README).
   */
  rate?: number;
  /** A sampled request that took this long or longer is kept. Default 1000. */
  slowerThanMs?: number;
  /** Also keep a sampled request that was answered 5xx or in which a step threw. Default true. */
  errors?: boolean;
  /**
   * At most this many captured profiles are kept per minute: once the minute's are kept, nothing
   * more is sampled until the next minute. Only kept profiles count; requests still open do not.
   * Default 60.
   */
  maxPerMinute?: number;
  /**
   * At most this many sampled requests are open at once. When they are, a newly sampled request
   * takes the place of the oldest if that one has been open for `slowerThanMs` already (it is
   * slow whatever comes next): it is sealed now, marked, and kept. Otherwise the new request is not
   * sampled. So requests held open (long polls, a visitor's on purpose) cannot stop capture; they
   * can only be kept, like any slow request. Default 10.
   */
  maxOpen?: number;
}

/** A sampled request still open, as the capture's bound sees it. */
export interface OpenCapture {
  /** When it was sampled, on the profile's clock (`clock`, the one its duration is measured with). */
  readonly openedAt: number;
  /** Seal it now, as if it had closed, and judge it (it leaves `live` then). */
  evict(): void;
}

/** @internal */
export interface CaptureConfig {
  rate: number;
  slowerThanMs: number;
  errors: boolean;
  maxPerMinute: number;
  /** The profile options of a captured request: the app's, with commands always redacted. */
  core: CoreConfig;
  /** `captureLabel`, or null. */
  label: ((req: never) => unknown) | null;
  /** Epoch milliseconds: the minute windows (the app's `now`, so tests can move them). */
  now: () => number;
  maxOpen: number;
  /** The current minute (epoch ms / 60000) and what it has used. */
  minute: number;
  kept: number;
  /** Sampled requests not closed yet, oldest first (a Set keeps the order they were added in). */
  live: Set<OpenCapture>;
}

export { CAPTURE_OWNER } from '../results/store.js';

/** A label longer than this is cut: it names a user or tenant, never carries data. */
export const MAX_LABEL_LENGTH = 100;

const CAPTURE_KEYS = ['rate', 'slowerThanMs', 'errors', 'maxPerMinute', 'maxOpen'];

/**
 * `capture` and `captureLabel`, once at setup: null when capture is off. `hasResults`: captured
 * profiles live in the results store, so capture without one is refused.
 */
export function resolveCapture(o: Record<string, unknown>, core: CoreConfig, hasResults: boolean): CaptureConfig | null {
  const v = o.capture;
  const label = fnOption<((req: never) => unknown) | null>(o, 'captureLabel', null);
  if (v === undefined || v === false) {
    if (label !== null) throw invalid('captureLabel', 'unset while capture is off', label);
    return null;
  }
  if (v !== true && (v === null || typeof v !== 'object' || Array.isArray(v))) {
    throw invalid('capture', `a boolean or { ${CAPTURE_KEYS.join(', ')} }`, v);
  }
  const c = (v === true ? {} : v) as Record<string, unknown>;
  for (const key of Object.keys(c)) {
    if (!CAPTURE_KEYS.includes(key)) {
      throw codedError('MINIPROF_ERR_UNKNOWN_OPTION', `unknown option "capture.${key}" (${describe(c[key])}); known: ${CAPTURE_KEYS.join(', ')}`);
    }
  }
  if (!hasResults) throw invalid('capture', 'off when results is false (captured profiles are kept in the results store)', v);
  const rate = c.rate ?? 0.01;
  if (typeof rate !== 'number' || !(rate > 0 && rate <= 1)) throw invalid('capture.rate', 'a number above 0 and at most 1', rate);
  // Named in full in the errors: `capture.slowerThanMs`, not a bare `slowerThanMs`.
  const q: Record<string, unknown> = {};
  for (const key of CAPTURE_KEYS) q[`capture.${key}`] = c[key];
  return {
    rate,
    slowerThanMs: intOption(q, 'capture.slowerThanMs', 1000, 0, 3_600_000),
    errors: boolOption(q, 'capture.errors', true),
    maxPerMinute: intOption(q, 'capture.maxPerMinute', 60, 1, 10_000),
    maxOpen: intOption(q, 'capture.maxOpen', 10, 1, 10_000),
    // Commands are redacted whatever `redact` says: nobody asked to see these users' values.
    core: core.redact ? core : { ...core, redact: true },
    label,
    now: core.now,
    minute: -1,
    kept: 0,
    live: new Set(),
  };
}

/** This minute's counters, started again when the minute changed. */
function window(c: CaptureConfig): void {
  const t = Number(c.now());
  const minute = Number.isFinite(t) ? Math.floor(t / 60_000) : 0;
  if (minute !== c.minute) {
    c.minute = minute;
    c.kept = 0;
  }
}

/**
 * Whether to profile this request that is not a developer's: the dice first (the only cost of
 * the requests not sampled), then the minute's budget of kept profiles, then room among the open
 * ones (see `maxOpen`). Never throws (a faulty `now` reads as the same minute). A true answer is
 * followed by the caller adding the new request to `c.live`, until its ProfiledResponse lets go.
 */
export function sampled(c: CaptureConfig): boolean {
  if (Math.random() >= c.rate) return false;
  try {
    window(c);
  } catch (err) {
    report(c.core.onInternalError, err);
  }
  if (c.kept >= c.maxPerMinute) return false;
  if (c.live.size < c.maxOpen) return true;
  // Full. The oldest open one makes room only once it is known to be slow: younger ones may
  // still turn out fast (and be let go), and a burst of them is what the bound is for.
  const oldest = c.live.values().next().value!;
  let now: number;
  try {
    now = Number(c.core.clock());
  } catch (err) {
    report(c.core.onInternalError, err);
    return false;
  }
  if (!(now - oldest.openedAt >= c.slowerThanMs)) return false;
  oldest.evict();
  // Kept, it may have used the minute's last place: the new one could not be kept then.
  return c.kept < c.maxPerMinute;
}

/**
 * A sampled request closed with the sealed `json`: whether it is kept (slow, or with `errors` a
 * 5xx or a step that threw), counted against this minute's budget. Not kept, it is only let go.
 */
export function captureDone(c: CaptureConfig, json: ProfileJSON): boolean {
  const slow = json.durationMs >= c.slowerThanMs;
  if (!slow && !(c.errors && ((json.request?.status ?? 0) >= 500 || threw(json.root)))) return false;
  try {
    window(c);
  } catch (err) {
    report(c.core.onInternalError, err);
  }
  if (c.kept >= c.maxPerMinute) return false;
  c.kept++;
  return true;
}

/** A step or custom timing in the tree threw or rejected. Iterative: no tree overflows the stack. */
function threw(root: TimingJSON): boolean {
  const stack: TimingJSON[] = [root];
  while (stack.length > 0) {
    const t = stack.pop()!;
    if (t.error === true) return true;
    if (t.custom !== undefined) for (const c of t.custom) if (c.error === true) return true;
    for (const child of t.children) stack.push(child);
  }
  return false;
}

/**
 * The app's `captureLabel(req)` for a kept profile, or undefined: anything but a non-empty
 * string is ignored (and reported), and it is cut to MAX_LABEL_LENGTH without its control
 * characters. The pages escape it like every other text read back from the store.
 */
export function labelOf(c: CaptureConfig, req: unknown): string | undefined {
  if (c.label === null) return undefined;
  let v: unknown;
  try {
    v = c.label(req as never);
  } catch (err) {
    report(c.core.onInternalError, err);
    return undefined;
  }
  if (typeof v !== 'string' || v.length === 0) {
    report(c.core.onInternalError, codedError('MINIPROF_ERR_INVALID_ARGUMENT', `captureLabel must return a non-empty string, got ${describe(v)}`));
    return undefined;
  }
  // eslint-disable-next-line no-control-regex
  const flat = v.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, ' ');
  return flat.length > MAX_LABEL_LENGTH ? flat.slice(0, MAX_LABEL_LENGTH - 3).replace(/[\ud800-\udbff]$/, '') + '...' : flat;
}
