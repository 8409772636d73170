import { AsyncLocalStorage } from 'node:async_hooks';
import type { Profile } from './profile.js';
import { loopClosed, loopOpened } from '../analysis/loop.js';
import { gcClosed, gcOpened } from '../analysis/gc.js';
import type { TimingNode } from './timing.js';
import { traceHooks } from './trace.js';
import { report } from './errors.js';
import { probeLostContext, warnLostContext } from './lost-context.js';

/**
 * The one AsyncLocalStorage of the process. ESM-only packaging keeps it single: a dual CJS/ESM
 * build would give an app two instances that cannot see each other's steps.
 */
export const als = new AsyncLocalStorage<TimingNode<Profile>>();

/**
 * On Node ≤ 22 the first `run()` switches on promise hooks for the whole process and every
 * `await` costs about twice as much until the instance is disabled again. So the hooks are
 * released once no profile has been open for RELEASE_GRACE_MS: one developer's visit does not
 * tax everyone after it.
 * With AsyncContextFrame there is no such tax, and `disable()` would mutate the current frame, so
 * it is left alone there. Which implementation runs is decided as Node documents it: the default
 * from Node 24 on (`--no-async-context-frame` turns it off), behind
 * `--experimental-async-context-frame` on Node 22.
 */
const releasesHooks = !usesContextFrame(Number(process.versions.node.split('.')[0]), `${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS ?? ''}`);

/** @internal Exported for its test. */
export function usesContextFrame(major: number, flags: string): boolean {
  if (major >= 24) return !/--no-async-context-frame\b/.test(flags);
  return /--experimental-async-context-frame\b/.test(flags);
}

/** Profiles entered with runInProfile and not yet closed (`Profile.entered`). */
let open = 0;

/** Open profiles right now (for tests and the hook release). */
export function openProfiles(): number {
  return open;
}

/**
 * The store of this async context (the step new steps go under), or undefined outside a profile.
 * While no profile is open anywhere in the process there is none to find, so `getStore()` is not
 * called: on Node 24, once any AsyncLocalStorage has been entered, `getStore()` reads the async
 * context frame, and everyone's `step()` would pay for it after one developer's visit. A profile
 * sealed by hand, without closeProfile, keeps the count up: that only costs the lookup.
 */
export function currentScope(): TimingNode<Profile> | undefined {
  return open === 0 ? undefined : als.getStore();
}

/** Run `fn` with the callback step `t` as the store of what it starts. */
export function runStep<R>(t: TimingNode<Profile>, fn: () => R): R {
  return als.run(t, fn);
}

/** Run `fn(...args)` with `profile`'s root as the store: the only way miniprof enters a profile. */
export function runInProfile<A extends unknown[], R>(profile: Profile, fn: (...args: A) => R, ...args: A): R {
  if (!profile.entered) {
    profile.entered = true;
    open++;
    loopOpened(profile);
    gcOpened(profile);
    probeLostContext(als as AsyncLocalStorage<unknown>);
  }
  return als.run(profile.root, fn, ...args);
}

/**
 * Seal `profile` (once) and let go of the hooks if it was the last one open. `announce` false: the
 * caller decides later whether the sealed profile is kept, and calls announceSealed for a kept one
 * (a captured request's: one that is dropped is exported nowhere).
 */
export function closeProfile(profile: Profile, announce = true): void {
  if (profile.sealed) return;
  loopClosed(profile);
  gcClosed(profile);
  warnLostContext(profile);
  profile.seal();
  if (announce) announceSealed(profile);
  if (!profile.entered) return;
  profile.entered = false;
  if (--open === 0 && releasesHooks) releaseSoon();
}

/** Hand a sealed profile to the `sealed` trace hook (miniprof/otel's exportProfiles), if set. */
export function announceSealed(profile: Profile): void {
  const sealed = traceHooks.sealed;
  if (sealed === null) return;
  try {
    sealed(profile);
  } catch (err) {
    report(profile.config.onInternalError, err);
  }
}

/**
 * How long the hooks stay on after the last profile closed, at least (at most twice this).
 * Toggling them is not free, and requests that come one after another would pay it twice per
 * request; a profile opened within the grace finds them still on. The
 * await tax on others lasts at most twice this long after a developer's last request.
 */
export const RELEASE_GRACE_MS = 20;

/**
 * One timer for the process, made at load (outside any profile, so it carries no store; its first
 * run finds nothing to release) and re-armed with refresh(): nothing allocated per close.
 * Unref'd, so it never keeps a process alive.
 *
 * Not refreshed at every close: under load the count of open profiles can touch zero between
 * nearly every two requests, and a close while the timer is pending only notes that the grace
 * must start over when it fires.
 */
const releaseTimer: NodeJS.Timeout | null = releasesHooks ? setTimeout(release, RELEASE_GRACE_MS).unref() : null;
/** The timer is pending (it is at load). */
let armed = releasesHooks;
/** A last profile closed while the timer was pending: it must wait one more grace. */
let closedSince = false;

function releaseSoon(): void {
  if (armed) {
    closedSince = true;
    return;
  }
  armed = true;
  releaseTimer!.refresh();
}

function release(): void {
  if (open === 0 && closedSince) {
    closedSince = false;
    releaseTimer!.refresh();
    return;
  }
  armed = false;
  closedSince = false;
  // With a profile open now, its close arms the timer again.
  if (open === 0) als.disable();
}
