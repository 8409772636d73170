import { closeProfile, currentScope, runInProfile, runStep } from './context.js';
import { codedError, describe, report } from './errors.js';
import { toText } from './names.js';
import { checkObject, CORE_KEYS, resolveCore, type CoreOptions } from './options.js';
import { instrument } from '../instrument/channels.js';
import { valuesDigest } from '../instrument/values.js';
import type { SqlDialect } from './types.js';
import { Profile } from './profile.js';
import { CustomNode, F_ERROR, F_OFF_CPU, F_SYNC, F_USING, NOOP_TIMING, parentIn, RUNNING, TimingNode, type Timing } from './timing.js';
import { ranSinceTickUs } from '../analysis/loop.js';

/**
 * Time a block of code as a step of the current request's profile.
 *
 * With a function, `fn` runs as the parent of every step it starts (also across `await` and
 * inside `Promise.all`), and `step` returns what `fn` returns, rethrowing the very error it
 * throws. When `fn` returns a promise or any thenable, `step` returns a native promise that
 * settles the same way once the step has been stopped (a lazy thenable, such as a query builder,
 * runs exactly once and inside the step, and an unhandled rejection stays unhandled, and visible).
 *
 * Without a function it returns a {@link Timing} for `using t = step('x')` or `t.stop()`; it is
 * the parent of the steps that follow it in the same async context until it stops. Use the
 * callback form for concurrent code.
 *
 * Outside a profile both forms cost a check of the open profiles' count and, while another
 * request's profile is open, one `getStore()`: `fn` is called directly, and the no-op
 * `Timing` is one shared frozen object.
 *
 * @example
 * const user = await step('load user', () => db.users.find(id));
 * { using _ = step('render'); html = render(user); }
 */
export function step<T>(name: string, fn: () => T): T;
export function step(name: string): Timing;
export function step<T>(name: string, fn?: () => T): T | Timing {
  const scope = currentScope();
  if (scope === undefined || scope.profile === null) return fn === undefined ? NOOP_TIMING : fn();
  if (fn === undefined) return open(scope, scope.profile, name);
  // Past maxDepth or maxSteps, fn is called from here, as outside a profile: one frame (this one)
  // between the caller and fn, so deep synchronous recursion through step() reaches about the
  // same depth for a developer as for anyone else (test/depth.test.ts). Few locals, for the
  // same reason: they make this frame, which everyone's recursion pays, larger.
  const parent = admitted(scope);
  return parent === null ? fn() : run(scope.profile, parent, name, fn);
}

/** The parent a new step goes under, or null when maxSteps or maxDepth drops it (counted). */
function admitted(scope: TimingNode<Profile>): TimingNode<Profile> | null {
  const parent = parentIn(scope);
  return admit(scope.profile!, parent) ? parent : null;
}

/** The optional fourth argument of {@link timing}. */
export interface TimingOptions {
  /**
   * The SQL dialect of `command` (`'postgres'`, `'mysql'`, `'mssql'`, `'sqlite'`), so its
   * literals are masked by that dialect's rules and its quoted names kept. Default: unknown,
   * masked by every dialect's rules at once (a double-quoted name is then masked too).
   */
  dialect?: SqlDialect;
  /**
   * Parameter values sent apart from `command` (`$1`, `?`): only a digest of them is kept, so two
   * calls with the same command and values count as duplicates. Never shown, never stored.
   */
  values?: readonly unknown[];
}

const DIALECTS: readonly unknown[] = ['postgres', 'mysql', 'mssql', 'sqlite'];

/**
 * Time one call to something outside the process (a query, an HTTP call, a cache lookup) as a
 * custom timing of the current step, under `category`. Same contract as `step(name, fn)`. Its
 * command is masked by category (`sql`, `redis`, `http`; anything else as unknown text) unless
 * `redact: false`; `options` can name a SQL dialect and pass parameter values (as a digest).
 *
 * @example
 * const rows = await timing('sql', 'select * from users where id = $1', () => pool.query(q, [id]), { dialect: 'postgres', values: [id] });
 */
export function timing<T>(category: string, command: string, fn: () => T, options?: TimingOptions): T {
  const scope = currentScope();
  if (scope === undefined || scope.profile === null) return fn();
  const profile = scope.profile;
  if (profile.count >= profile.config.maxSteps) {
    profile.droppedSteps++;
    return fn();
  }
  profile.count++;
  const cfg = profile.config;
  const parent = parentIn(scope);
  const c = new CustomNode(toText(category, cfg.maxNameLength), toText(command, cfg.maxCommandLength), profile.nowUs());
  if (options !== undefined) optionsOf(profile, c, options);
  profile.addCustom(parent, c);
  let r: T;
  try {
    r = fn();
  } catch (err) {
    endCustom(profile, c, F_ERROR);
    throw err;
  }
  const then = thenOf(r, profile);
  if (then === undefined) {
    endCustom(profile, c, 0);
    return r;
  }
  return settle(then, r, () => endCustom(profile, c, 0), () => endCustom(profile, c, F_ERROR)) as T;
}

/**
 * {@link timing}'s options onto its node. A dialect it does not know is masked as unknown (the
 * most) and reported, and so are values that are no array (no digest): the app's call goes on.
 */
function optionsOf(profile: Profile, c: CustomNode, options: TimingOptions): void {
  try {
    const { dialect, values } = options;
    if (DIALECTS.includes(dialect)) c.dialect = dialect;
    else if (dialect !== undefined) {
      report(profile.config.onInternalError, codedError('MINIPROF_ERR_INVALID_ARGUMENT', `timing's dialect must be one of ${DIALECTS.join(', ')}, got ${describe(dialect)}`));
    }
    if (values !== undefined && !Array.isArray(values)) {
      report(profile.config.onInternalError, codedError('MINIPROF_ERR_INVALID_ARGUMENT', `timing's values must be an array, got ${describe(values)}`));
    }
    c.values = valuesDigest(values);
  } catch (err) {
    report(profile.config.onInternalError, err);
  }
}

/** The live profile of this async context, or undefined outside one (or after it was sealed). */
export function currentProfile(): Profile | undefined {
  return currentScope()?.profile ?? undefined;
}

/**
 * Profile work outside HTTP: a job, a script, a test. `fn` runs inside a new profile, which is
 * sealed when `fn` settles. Rejects with `fn`'s own error if it fails.
 *
 * @example
 * const { result, profile } = await withProfile('nightly import', () => importAll());
 * console.log(renderText(profile));
 */
export async function withProfile<T>(
  name: string,
  fn: () => T,
  options?: CoreOptions,
): Promise<{ result: Awaited<T>; profile: Profile }> {
  const config = resolveCore(checkObject(options, CORE_KEYS, 'withProfile'));
  if (config.instrument) instrument();
  const profile = new Profile(toText(name, config.maxNameLength), config);
  try {
    const result = await runInProfile(profile, fn);
    return { result, profile };
  } catch (err) {
    profile.failRoot();
    throw err;
  } finally {
    closeProfile(profile);
  }
}

/** @internal Count a new step against maxSteps and maxDepth; false: dropped (counted). Also src/core/auto.ts. */
export function admit(profile: Profile, parent: TimingNode): boolean {
  if (profile.count < profile.config.maxSteps && parent.depth < profile.config.maxDepth) {
    profile.count++;
    return true;
  }
  profile.droppedSteps++;
  return false;
}

/** A step admitted under `parent`: `fn` runs as its store. */
function run<T>(profile: Profile, parent: TimingNode<Profile>, name: string, fn: () => T): T {
  const t = new TimingNode(toText(name, profile.config.maxNameLength), parent, profile, profile.nowUs());
  let r: T;
  try {
    r = runStep(t, fn);
  } catch (err) {
    t.end(profile, F_ERROR | F_SYNC);
    throw err;
  }
  const then = thenOf(r, profile);
  if (then === undefined) {
    t.end(profile, F_SYNC);
    if (t.durationUs > profile.config.blockingMs * 1000) offCpu(profile, t);
    return r;
  }
  // The part before the first await: the event loop was blocked for this long.
  t.syncUs = profile.nowUs() - t.startUs;
  if (t.syncUs > profile.config.blockingMs * 1000) offCpu(profile, t);
  if (then === nativeThen && r instanceof Promise && r.constructor === Promise) {
    // The common case, a native promise: two closures per step instead of settle()'s four.
    return r.then(
      (v: unknown) => {
        endStep(profile, t, 0);
        return v;
      },
      (err: unknown) => {
        endStep(profile, t, F_ERROR);
        throw err;
      },
    ) as T;
  }
  // A thenable's `then` is called inside the step: a lazy one (a knex or Bookshelf query builder)
  // only starts its work there, and that work belongs under the step, not beside it.
  return runStep(t, () => settle(then, r, () => endStep(profile, t, 0), () => endStep(profile, t, F_ERROR))) as T;
}

const nativeThen = Promise.prototype.then;

/**
 * A synchronous part that ran longer than `blockingMs` by the clock: the loop cannot tick during
 * it, so the CPU time since the monitor's last tick bounds what the step itself ran. When even
 * that is within `blockingMs`, the process was starved or paused, and the step is not flagged.
 * Read only here, for the rare long part: a CPU reading costs about as much as a whole step.
 */
function offCpu(profile: Profile, t: TimingNode): void {
  const ran = ranSinceTickUs(profile);
  if (ran >= 0 && ran <= profile.config.blockingMs * 1000) t.flags |= F_OFF_CPU;
}

function open(scope: TimingNode<Profile>, profile: Profile, name: string): Timing {
  const parent = parentIn(scope);
  if (!admit(profile, parent)) return NOOP_TIMING;
  const t = new TimingNode(toText(name, profile.config.maxNameLength), parent, profile, profile.nowUs());
  t.flags |= F_USING;
  t.link = scope;
  scope.link = t;
  return t;
}

/** A step that settles after its profile was sealed changes nothing. */
function endStep(profile: Profile, t: TimingNode, flags: number): void {
  if (t.profile !== null && t.durationUs === RUNNING) t.end(profile, flags);
}

function endCustom(profile: Profile, c: CustomNode, flags: number): void {
  if (profile.sealed || c.durationUs !== RUNNING) return;
  const d = profile.nowUs() - c.startUs;
  c.durationUs = d > 0 ? d : 0;
  c.flags |= flags;
}

type Then = (onFulfilled: (v: unknown) => unknown, onRejected: (e: unknown) => unknown) => unknown;

/**
 * The `then` of a promise or thenable, read once. A getter that throws is the app's object
 * misbehaving, not a reason to throw from `step`: the value is then treated as a plain value.
 */
function thenOf(r: unknown, profile: Profile): Then | undefined {
  if (r === null || (typeof r !== 'object' && typeof r !== 'function')) return undefined;
  try {
    const then = (r as { then?: unknown }).then;
    return typeof then === 'function' ? (then as Then) : undefined;
  } catch (err) {
    report(profile.config.onInternalError, err);
    return undefined;
  }
}

/**
 * Return a native promise that settles as `r` does, after the timing ended. `then` is called once,
 * now, in the caller's async context (for a step: the step's own, see run), so a lazy thenable (a
 * query builder) runs once, and where its step can see it; the error is the very object `r` rejected
 * with, and if the app never handles the returned promise Node still reports the rejection.
 * A plain native promise is chained directly; anything else (a subclass whose constructor takes
 * other arguments, a thenable whose `then` returns nothing) goes through a fresh native promise.
 */
function settle(then: Then, r: unknown, ok: () => void, fail: () => void): Promise<unknown> {
  const onOk = (v: unknown): unknown => {
    ok();
    return v;
  };
  const onErr = (e: unknown): never => {
    fail();
    throw e;
  };
  if (r instanceof Promise && r.constructor === Promise) return r.then(onOk, onErr);
  return new Promise((resolve, reject) => {
    try {
      then.call(r, (v) => resolve(onOk(v)), (e) => {
        fail();
        reject(e);
      });
    } catch (e) {
      fail();
      reject(e);
    }
  });
}
