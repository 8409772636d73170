import { currentScope } from '../core/context.js';
import { report } from '../core/errors.js';
import { toText } from '../core/names.js';
import type { Profile } from '../core/profile.js';
import type { SqlDialect } from '../core/types.js';
import { valuesDigest } from './values.js';
import { CustomNode, F_ERROR, F_SPAN, F_TRACED, parentIn, RUNNING, type Pending, type TimingNode } from '../core/timing.js';

/** A custom timing opened by an instrumentation, to be closed by a later event. */
export interface OpenCall {
  readonly profile: Profile;
  readonly node: CustomNode;
}

/**
 * Set by miniprof/otel: an OpenTelemetry instrumentation may report the same calls as
 * miniprof's own, so each call of a library both time is kept in `Profile.pending` while it runs
 * and the two are paired into one timing (see {@link claim}). Off, this costs nothing.
 */
let pairing = false;

/** @internal Called when a MiniprofSpanProcessor is made. */
export function pairWithSpans(): void {
  pairing = true;
}

/**
 * Open a custom timing on the current step, if this async context has a live profile. The
 * command is built by `command(arg)` only then, so an event outside a profile costs one
 * `currentScope()` and a branch. Returns undefined when nothing is recorded. `lib` names the
 * library (`pg`, `ioredis`, `http`…), to pair the call with an OpenTelemetry span of it. `spans`:
 * how many spans OpenTelemetry makes of this one call, when that is more than one. `dialect`: the
 * SQL dialect of the command, when the library says. `values`: the parameter values the client
 * sends apart from the text, kept only as a digest (src/instrument/values.ts), never in the command.
 */
export function openCall<A>(
  lib: string,
  category: string,
  command: (arg: A) => string,
  arg: A,
  spans?: (arg: A) => number,
  dialect?: SqlDialect,
  values?: (arg: A) => unknown,
): OpenCall | undefined {
  const scope = currentScope();
  if (scope === undefined || scope.profile === null) return undefined;
  const profile = scope.profile;
  // A throw in a diagnostics_channel subscriber would surface as an uncaught exception in the app.
  try {
    const parent = parentIn(scope);
    if (pairing) {
      // A span saw this call first: miniprof's own timing takes its place, with miniprof's command.
      const taken = claim(profile, lib, parent, false);
      if (taken !== null) {
        taken.flags &= ~F_SPAN;
        taken.command = toText(command(arg), profile.config.maxCommandLength);
        taken.dialect = dialect;
        if (values !== undefined) taken.values = valuesDigest(values(arg));
        // The same call's other spans (a node-redis MULTI: one span per queued command, started
        // as each is queued, ended together at EXEC) leave the tree: the call appears once.
        for (let n = spans === undefined ? 0 : spans(arg) - 1; n > 0; n--) {
          const more = take(profile, lib, parent, false);
          if (more === null) break;
          more.node.flags &= ~F_SPAN;
          profile.dropCustom(more.at, more.node);
        }
        return { profile, node: taken };
      }
    }
    if (profile.count >= profile.config.maxSteps) {
      profile.droppedSteps++;
      return undefined;
    }
    const c = new CustomNode(category, toText(command(arg), profile.config.maxCommandLength), profile.nowUs(), dialect);
    if (values !== undefined) c.values = valuesDigest(values(arg));
    profile.count++;
    profile.addCustom(parent, c);
    if (pairing) pend(profile, { lib, parent, node: c, at: parent, own: true });
    return { profile, node: c };
  } catch (err) {
    report(profile.config.onInternalError, err);
    return undefined;
  }
}

/** Close it (once): a call that ends after its profile was sealed changes nothing. */
export function closeCall(call: OpenCall | undefined, failed: boolean): void {
  if (call === undefined) return;
  const { profile, node } = call;
  if (profile.sealed || node.durationUs !== RUNNING) return;
  try {
    const d = profile.nowUs() - node.startUs;
    node.durationUs = d > 0 ? d : 0;
    if (failed) node.flags |= F_ERROR;
    if (profile.pending !== null) unpend(profile, node);
  } catch (err) {
    report(profile.config.onInternalError, err);
  }
}

/** @internal Note a call in flight under `parent` that the other side may report too. */
export function pend(profile: Profile, p: Pending): void {
  if (profile.pending === null) profile.pending = [p];
  else profile.pending.push(p);
}

/** @internal The call ended: nothing reports it any more. */
export function unpend(profile: Profile, node: CustomNode): void {
  const list = profile.pending!;
  for (let i = 0; i < list.length; i++) {
    if (list[i]!.node === node) {
      list.splice(i, 1);
      return;
    }
  }
}

/**
 * @internal The oldest call of `lib` under `parent` that the other side (`own`: miniprof's own
 * instrumentation, else a span) opened and no one has paired yet; it is paired now, and its node
 * returned. The same call reaches both sides from the same step: in one synchronous stretch when
 * the OpenTelemetry instrumentation wraps the library (http, ioredis, node-redis, mysql2: the
 * span first) or listens to the same channel (undici: whoever subscribed first), or a little
 * later when instrumentPg's wrapper runs before pg's own query (miniprof's first). A node-redis
 * MULTI's spans start as its commands are queued, before EXEC opens miniprof's.
 */
export function claim(profile: Profile, lib: string, parent: TimingNode, own: boolean): CustomNode | null {
  const p = take(profile, lib, parent, own);
  if (p === null) return null;
  p.node.flags |= F_TRACED;
  return p.node;
}

/** The oldest such call, no longer pending. */
function take(profile: Profile, lib: string, parent: TimingNode, own: boolean): Pending | null {
  const list = profile.pending;
  if (list === null) return null;
  for (let i = 0; i < list.length; i++) {
    const p = list[i]!;
    if (p.own === own && p.lib === lib && p.parent === parent) {
      list.splice(i, 1);
      return p;
    }
  }
  return null;
}
