import type { NPlusOneJSON, SimilarGroupJSON, TimingJSON } from '../core/types.js';

/** A group of similar custom timings is an N+1 from this many members on. */
export const N_PLUS_ONE_MIN = 3;

/**
 * Name each N+1 on the step that ran it: for every group of at least {@link N_PLUS_ONE_MIN}
 * similar custom timings (`similar`, from analyseCustom), the innermost step that holds all its
 * members (the loop's step: `step('load posts', …)` whose loop ran 12 queries, or the parent of
 * 12 steps that ran one each). A step that ran several keeps the largest (the first on a tie);
 * the others are in the profile's `similar` list. Returns at least the UTF-8 bytes it added to
 * the JSON (jsonBound).
 */
export function analyseNPlusOne(root: TimingJSON, similar: SimilarGroupJSON[]): number {
  const wanted = similar.some((g) => g.count >= N_PLUS_ONE_MIN);
  if (!wanted) return 0;
  // Per group id: the path from the root to the innermost step holding every member seen so far.
  const paths = new Map<number, TimingJSON[]>();
  // Iterative, pre-order, so no depth of tree can overflow the stack: `path` is cut to the depth
  // of the step being visited, then the step is added to it.
  const path: TimingJSON[] = [];
  const stack: TimingJSON[] = [root];
  const depths: number[] = [0];
  while (stack.length > 0) {
    const t = stack.pop()!;
    const depth = depths.pop()!;
    path.length = depth;
    path.push(t);
    const custom = t.custom;
    if (custom !== undefined) {
      for (const c of custom) {
        const id = c.similar;
        if (id === undefined || (similar[id - 1]?.count ?? 0) < N_PLUS_ONE_MIN) continue;
        const p = paths.get(id);
        if (p === undefined) paths.set(id, path.slice());
        else {
          let k = 0;
          while (k < p.length && k < path.length && p[k] === path[k]) k++;
          p.length = k;
        }
      }
    }
    for (let i = t.children.length - 1; i >= 0; i--) {
      stack.push(t.children[i]!);
      depths.push(depth + 1);
    }
  }
  let bound = 0;
  for (const [id, p] of paths) {
    const g = similar[id - 1]!;
    const at = p[p.length - 1]!;
    if (at.nPlusOne !== undefined && at.nPlusOne.count >= g.count) continue;
    const mark: NPlusOneJSON = { category: g.category, command: g.command, count: g.count, similar: id };
    at.nPlusOne = mark;
    // Keys, punctuation and two numbers of at most 24 characters; 6 bytes per unit of each string.
    bound += 120 + 6 * (g.category.length + g.command.length);
  }
  return bound;
}
