import { currentScope, runStep } from './context.js';
import { report } from './errors.js';
import { toText } from './names.js';
import type { Profile } from './profile.js';
import { admit } from './step.js';
import { F_AUTO, F_ERROR, parentIn, RUNNING, TimingNode } from './timing.js';

/**
 * Steps miniprof opens by itself for the framework's own work (a view rendered, Fastify's route
 * handler: see docs/auto-steps.md). They are callback steps whose end is an event (a callback, a
 * send) rather than a function's return, so `step(name, fn)` cannot time them; everything else
 * is as for `step()`: opened under the current step, counted against maxSteps and maxDepth, the
 * parent of what the work it wraps starts (`runStep`), and a no-op once the profile is sealed.
 */

/**
 * @internal A step named `name` under the current step of `scope` (this async context's by
 * default), or null outside a profile, past the limits, or when opening it failed (reported:
 * nothing here may throw into the app).
 */
export function openStep(name: string, onError: (err: unknown) => void, scope: TimingNode<Profile> | undefined = currentScope(), flags = 0): TimingNode<Profile> | null {
  if (scope === undefined || scope.profile === null) return null;
  try {
    const profile = scope.profile;
    const parent = parentIn(scope);
    if (!admit(profile, parent)) return null;
    const t = new TimingNode(toText(name, profile.config.maxNameLength), parent, profile, profile.nowUs());
    t.flags |= flags | F_AUTO;
    return t;
  } catch (err) {
    report(onError, err);
    return null;
  }
}

/** @internal End `t` once, errored or not; after the seal (or a second time) it changes nothing. */
export function closeStep(t: TimingNode<Profile>, error: boolean): void {
  const profile = t.profile;
  if (profile === null || t.durationUs !== RUNNING) return;
  t.end(profile, error ? F_ERROR : 0);
}

/** @internal Mark `t` errored now; it ends later (a no-op once its profile is sealed). */
export function markFailed(t: TimingNode<Profile>): void {
  if (t.profile !== null) t.flags |= F_ERROR;
}

/**
 * @internal Call `fn` with `t` as the current step of what it starts. A synchronous throw ends
 * `t` as errored and is rethrown as it is.
 */
export function runIn<R>(t: TimingNode<Profile>, fn: () => R): R {
  try {
    return runStep(t, fn);
  } catch (err) {
    closeStep(t, true);
    throw err;
  }
}
