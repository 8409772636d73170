import { currentScope } from '../core/context.js';
import { report } from '../core/errors.js';
import { toText } from '../core/names.js';
import type { Profile } from '../core/profile.js';
import { CustomNode, F_ERROR, parentIn, RUNNING } from '../core/timing.js';

/** A custom timing opened by an instrumentation, to be closed by a later event. */
export interface OpenCall {
  readonly profile: Profile;
  readonly node: CustomNode;
}

/**
 * Open a custom timing on the current step, if this async context has a live profile. The
 * command is built by `command(arg)` only then, so an event outside a profile costs one
 * `currentScope()` and a branch. Returns undefined when nothing is recorded.
 */
export function openCall<A>(category: string, command: (arg: A) => string, arg: A): OpenCall | undefined {
  const scope = currentScope();
  if (scope === undefined || scope.profile === null) return undefined;
  const profile = scope.profile;
  if (profile.count >= profile.config.maxSteps) {
    profile.droppedSteps++;
    return undefined;
  }
  // A throw in a diagnostics_channel subscriber would surface as an uncaught exception in the app.
  try {
    const c = new CustomNode(category, toText(command(arg), profile.config.maxCommandLength), profile.nowUs());
    profile.count++;
    const parent = parentIn(scope);
    profile.addCustom(parent, c);
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
  } catch (err) {
    report(profile.config.onInternalError, err);
  }
}

function literal(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if ((typeof v === 'number' && Number.isFinite(v)) || typeof v === 'bigint') return String(v);
  let text: string;
  if (typeof v === 'string') text = v;
  else if (v instanceof Date) text = Number.isNaN(v.getTime()) ? 'Invalid Date' : v.toISOString();
  else if (v instanceof Uint8Array) text = `<${v.byteLength} bytes>`;
  else {
    try {
      text = JSON.stringify(v) ?? String(v);
    } catch {
      text = '[unprintable]';
    }
  }
  // Backslashes doubled as well as quotes, so the redactor reads the literal exactly as written.
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}

/**
 * A query whose values travel apart from its text (pg's `$1`, mysql2's `execute`): the values
 * are appended as SQL literals, so two calls are duplicates only when their values match too,
 * and the redactor masks them like any literal (`/* params: ?, ? *\/`) unless `redact: false`.
 */
export function withParams(text: string, values: unknown): string {
  if (!Array.isArray(values) || values.length === 0) return text;
  return `${text} /* params: ${values.map(literal).join(', ')} */`;
}
