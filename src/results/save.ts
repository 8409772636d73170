import { report, type InternalErrorHandler } from '../core/errors.js';
import type { ProfileJSON } from '../core/types.js';
import { SAVE_SEALED, type ProfileStore, type SealedSave } from './store.js';

/** Where writeHeaders puts our headers: the response itself, or the headers given to writeHead. */
export interface HeaderTarget {
  getHeader(name: string): unknown;
  setHeader(name: string, value: string | string[]): unknown;
  removeHeader(name: string): void;
  /** The names set so far (Node gives them lowercase). */
  getHeaderNames(): string[];
}

/**
 * Whether a profile is worth keeping: not when the app answered 404 and nothing was timed (a
 * browser's `/favicon.ico`, a scanner's probes), unless `keepNotFound`. Such a profile says
 * nothing, and a page's favicon request after every view would push the view's own profile down
 * the list.
 */
export function worthKeeping(json: ProfileJSON, keepNotFound: boolean): boolean {
  if (keepNotFound || json.request?.status !== 404) return true;
  const root = json.root;
  return root.children.length > 0 || (root.custom !== undefined && root.custom.length > 0) || json.droppedSteps > 0;
}

/**
 * Store faults never reach the app: the request that made the profile is already answered.
 * `json` must be a sealed profile's (`Profile.data()` after the seal), and `bound` its
 * `jsonBound()` (-1: not known): see SAVE_SEALED. A 404 with nothing timed is not saved unless
 * `keepNotFound` (`results.keepNotFound`): see worthKeeping.
 */
export function saveProfile(store: ProfileStore, owner: string, json: ProfileJSON, onInternalError: InternalErrorHandler, bound = -1, keepNotFound = false): void {
  let p: Promise<void>;
  try {
    if (!worthKeeping(json, keepNotFound)) return;
    const fast = (store as Partial<SealedSave>)[SAVE_SEALED];
    // Only while `save` is the store's own: a wrapper that replaced it (`{ ...memoryStore(), save }`)
    // must see every save.
    if (fast !== undefined && fast.save === store.save) return fast.put(owner, json, bound);
    p = Promise.resolve(store.save(owner, json));
  } catch (err) {
    return report(onInternalError, err);
  }
  p.catch((err: unknown) => report(onInternalError, err));
}

/** `X-Miniprof-Id` and a `Link` to the page, appended to a `Link` the app set. */
export function linkHeaders(res: HeaderTarget, base: string, id: string): void {
  res.setHeader('X-Miniprof-Id', id);
  const link = `<${base}/${id}>; rel="related"; title="miniprof"`;
  const prev = res.getHeader('link');
  if (prev === undefined) res.setHeader('Link', link);
  else if (Array.isArray(prev)) res.setHeader('Link', [...prev, link]);
  else res.setHeader('Link', `${String(prev)}, ${link}`);
}
