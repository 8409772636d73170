import { codedError, describe } from '../core/errors.js';
import { Profile } from '../core/profile.js';
import type { ProfileJSON } from '../core/types.js';

/** Renderers take a live `Profile` or its JSON (for example one read back from a store). */
export type Renderable = Profile | ProfileJSON;

export function dataOf(p: Renderable, fn: string): ProfileJSON {
  if (p instanceof Profile) return p.data();
  if (p !== null && typeof p === 'object' && (p as ProfileJSON).v === 1 && typeof (p as ProfileJSON).root === 'object') {
    return p;
  }
  throw codedError('MINIPROF_ERR_INVALID_ARGUMENT', `${fn}() takes a Profile or its v1 JSON, got ${describe(p)}`);
}
