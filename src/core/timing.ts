import type { SqlDialect } from './types.js';

/**
 * What a live node needs from the profile it belongs to: its clock and a place for warnings.
 * `Profile` is the one implementation; declared here so that this module needs nothing from it.
 */
export interface NodeOwner {
  nowUs(): number;
  warn(message: string): void;
  /** Work arrived under a step that had ended (see parentIn): said once per profile. */
  lateWork(ended: string, at: string): void;
}

/**
 * What `step(name)` returns. Stop it with `t.stop()` or let `using` dispose of it; `stop()` is
 * idempotent. Outside a profile every call returns one shared, frozen no-op.
 */
export interface Timing {
  readonly name: string;
  stop(): void;
  [Symbol.dispose](): void;
}

function noop(): void {}

/** The one Timing handed out when nothing is being profiled: no allocation, no clock read. */
export const NOOP_TIMING: Timing = Object.freeze({ name: '', stop: noop, [Symbol.dispose]: noop });

export const RUNNING = -1;
export const F_ERROR = 1;
export const F_USING = 2;
/** A callback step whose `fn` returned a plain value: all of it ran synchronously. */
export const F_SYNC = 4;
/**
 * An OpenTelemetry span covers this step or custom timing: it was made from one, or it is
 * miniprof's own timing of a call a span also saw (src/instrument/spans.ts). It is in the trace
 * already, so `exportProfile` leaves it out, and the JSON says `traced`.
 */
export const F_TRACED = 8;
/** A custom timing a span opened and will close (not one miniprof's own instrumentation took over). */
export const F_SPAN = 16;
/**
 * A step whose synchronous part took longer than `blockingMs` by the clock while the process had
 * less CPU time than that: the machine was busy (or the process paused), the step did not block.
 */
export const F_OFF_CPU = 32;
/**
 * A step miniprof opened for the framework's route handler (src/http/fastify-handler.ts): the
 * JSON says `handler`, and Server-Timing looks through it to the app's own steps inside.
 */
export const F_HANDLER = 64;
/**
 * A step miniprof opened itself (src/core/auto.ts) and ended at an event (a send, the engine's
 * callback): work that follows in its async context (the app's render callback, a stream's
 * events, Fastify's onSend hooks) is the request's, not lost, and goes one level up unremarked.
 */
export const F_AUTO = 128;
/** A node's depth is kept in `flags` above the flag bits (maxDepth is at most 256): a field less. */
const DEPTH_SHIFT = 8;

/**
 * `CustomNode.values` of a call whose client sent parameter values that miniprof cannot see (mssql's
 * channels carry their names only): never a digest's value (those are 16 characters), so such a
 * call is never called a duplicate (src/analysis/custom.ts).
 */
export const VALUES_UNKNOWN = '?';

/** A custom timing (sql, http, redis…) recorded on the step that was current when it ran. */
export class CustomNode {
  category: string;
  command: string;
  startUs: number;
  durationUs: number;
  flags: number;
  /**
   * The SQL dialect of `command`, where the client that ran it says (pg, mysql2, knex's client,
   * OpenTelemetry's `db.system`): masking reads it. Undefined: not known, mask the most.
   */
  dialect: SqlDialect | undefined;
  /**
   * What tells this call's parameter values apart when the client sent them apart from the text
   * (a digest, never the values themselves): duplicate detection compares it. Undefined: none
   * were seen.
   */
  values: string | undefined;
  constructor(category: string, command: string, startUs: number, dialect?: SqlDialect) {
    this.category = category;
    this.command = command;
    this.startUs = startUs;
    this.durationUs = RUNNING;
    this.flags = 0;
    this.dialect = dialect;
    this.values = undefined;
  }
}

/**
 * A call in flight that miniprof's own instrumentation (`own`) or an OpenTelemetry span opened,
 * and that the other may report too: `lib` names the library (src/instrument/record.ts).
 */
export interface Pending {
  readonly lib: string;
  /** The step current where the call runs: what both sides pair by. */
  readonly parent: TimingNode;
  readonly node: CustomNode;
  /** The step the node is under (deeper than `parent` for a span nested in a span made a step). */
  readonly at: TimingNode;
  readonly own: boolean;
}

/**
 * A live step. It is also the AsyncLocalStorage store of the code it wraps, so a new step finds
 * its parent with one `getStore()`. All fields are set in the constructor so every node shares
 * one hidden class. When the profile is sealed the node is cut loose (profile, parent, children
 * set to null) so a timer the request leaked cannot keep the tree alive. A node's custom timings
 * are kept by its profile (`Profile.customs`), not in a field: most steps have none, and a field
 * is 8 bytes more per step.
 */
export class TimingNode<P extends NodeOwner = NodeOwner> implements Timing {
  name: string;
  startUs: number;
  durationUs: number;
  /** F_ERROR, F_USING, F_SYNC, F_TRACED, F_OFF_CPU, F_HANDLER, and the depth above them. */
  flags: number;
  children: TimingNode<P>[] | null;
  parent: TimingNode<P> | null;
  profile: P | null;
  /**
   * For a `using` timing (F_USING): the store (scope) it was opened in, so stop() can pop it.
   * For a scope (the root, a callback step): the innermost `using` timing opened in it and still
   * running. A `using` timing is never a scope, so one field serves both.
   */
  link: TimingNode<P> | null;
  /** For a callback step that returned a thenable: how long `fn` ran before returning; else -1. */
  syncUs: number;

  constructor(name: string, parent: TimingNode<P> | null, profile: P, startUs: number) {
    this.name = name;
    this.startUs = startUs;
    this.durationUs = RUNNING;
    this.flags = parent === null ? 0 : (parent.depth + 1) << DEPTH_SHIFT;
    this.children = null;
    this.parent = parent;
    this.profile = profile;
    this.link = null;
    this.syncUs = RUNNING;
    if (parent !== null) {
      if (parent.children === null) parent.children = [this];
      else parent.children.push(this);
    }
  }

  /** 0 for the root. */
  get depth(): number {
    return this.flags >>> DEPTH_SHIFT;
  }

  /** @internal Record the end. Negative spans (a clock that went backwards) become 0. */
  end(profile: NodeOwner, flags: number): void {
    const d = profile.nowUs() - this.startUs;
    this.durationUs = d > 0 ? d : 0;
    this.flags |= flags;
  }

  stop(): void {
    const profile = this.profile;
    if (profile === null || this.durationUs !== RUNNING) return;
    this.end(profile, 0);
    if ((this.flags & F_USING) !== 0 && this.link !== null) popUsing(this.link, this, profile);
  }

  [Symbol.dispose](): void {
    this.stop();
  }
}

/**
 * The parent for a new step or custom timing opened in `scope`: the innermost open `using`
 * timing there, else the scope itself; a stopped one gives way to its nearest running ancestor
 * (a timer that fires after its step ended still lands in the tree, one level up). That is work
 * the step did not wait for, or an async context a library lost on the way (a promise library
 * without async hooks): the profile says so, rather than showing it somewhere else in silence.
 */
export function parentIn<P extends NodeOwner>(scope: TimingNode<P>): TimingNode<P> {
  let p = scope.link ?? scope;
  if (p.durationUs === RUNNING || p.parent === null) return p;
  const ended = p;
  while (p.durationUs !== RUNNING && p.parent !== null) p = p.parent;
  if ((ended.flags & F_AUTO) === 0) ended.profile?.lateWork(ended.name, p.name);
  return p;
}

/**
 * A `using` timing ended. In order (it is the innermost) the scope's cursor moves back to its
 * nearest running `using` ancestor. Out of order means two `using` timings overlapped (often two
 * async branches sharing one scope): the timing opened inside it is moved up to be its sibling
 * and the profile says why, rather than keeping a tree that claims one contained the other.
 */
function popUsing<P extends NodeOwner>(scope: TimingNode<P>, t: TimingNode<P>, profile: NodeOwner): void {
  if (scope.link === t) {
    let c = t.parent;
    while (c !== null && openedIn(c, scope) && c.durationUs !== RUNNING) c = c.parent;
    scope.link = c !== null && openedIn(c, scope) ? c : null;
    return;
  }
  let inner = scope.link;
  while (inner !== null && inner.parent !== t) inner = inner.parent;
  if (inner === null) return;
  const up = t.parent ?? t;
  const siblings = t.children!;
  siblings.splice(siblings.indexOf(inner), 1);
  inner.parent = up;
  up.children!.push(inner);
  profile.warn(
    `using timings overlapped: "${t.name}" stopped while "${inner.name}", opened after it, was running; ` +
      'they are shown as siblings. Use step(name, fn) for concurrent code.',
  );
}

/** Whether `t` is a `using` timing opened in `scope`. */
function openedIn(t: TimingNode<NodeOwner>, scope: TimingNode<NodeOwner>): boolean {
  return (t.flags & F_USING) !== 0 && t.link === scope;
}
