import type { ProfileJSON } from '../core/types.js';

/**
 * A profile read back from a store, checked field by field before any page reads it. A store may
 * be shared (Redis) or handed objects by other code, so nothing in it is trusted: a number may be
 * a string, an array an object, a tree a thousand levels deep. A profile either has exactly the
 * shapes the pages read (`ok`), or it is not shown and the page says which field is wrong; the
 * pages never throw on one.
 */
export type ReadProfile = { ok: true; profile: ProfileJSON } | { ok: false; error: string };

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

class Malformed extends Error {}

function fail(path: string, what: string): never {
  throw new Malformed(`${path} is not ${what}`);
}

function str(o: Obj, key: string, path: string): void {
  if (typeof o[key] !== 'string') fail(`${path}.${key}`, 'a string');
}

function num(o: Obj, key: string, path: string, optional = false): void {
  const v = o[key];
  if (optional && v === undefined) return;
  if (!isNum(v)) fail(`${path}.${key}`, 'a number');
}

/** `true` or absent: the JSON never writes `false` for a flag. */
function flag(o: Obj, key: string, path: string): void {
  const v = o[key];
  if (v !== undefined && v !== true) fail(`${path}.${key}`, 'true or absent');
}

function arr(v: unknown, path: string): unknown[] {
  if (!Array.isArray(v)) fail(path, 'an array');
  return v;
}

/**
 * A node to check and where it sits: its parent's entry and its index there (-1: the root). The
 * path is built only when the node is wrong: built for every node, a deep tree's paths would be
 * quadratic, and a save through the Redis store checks every node.
 */
interface At {
  readonly node: unknown;
  readonly up: At | null;
  readonly index: number;
}

function pathOf(at: At): string {
  const parts: string[] = [];
  for (let a: At | null = at; a !== null; a = a.up) parts.push(a.up === null ? 'profile.root' : `.children[${a.index}]`);
  // The outermost and innermost levels say where; a thousand levels of `children[0]` would not.
  const shown = parts.length > 8 ? [...parts.slice(0, 6), '…', parts[parts.length - 1]!] : parts;
  return shown.reverse().join('');
}

function timing(at: At, stack: At[]): void {
  const t = at.node;
  if (!isObj(t)) fail(pathOf(at), 'an object');
  if (typeof t.name !== 'string') fail(`${pathOf(at)}.name`, 'a string');
  for (const k of NUMBERS) if (!isNum(t[k])) fail(`${pathOf(at)}.${k}`, 'a number');
  for (const k of OPTIONAL_NUMBERS) if (t[k] !== undefined && !isNum(t[k])) fail(`${pathOf(at)}.${k}`, 'a number');
  for (const k of FLAGS) if (t[k] !== undefined && t[k] !== true) fail(`${pathOf(at)}.${k}`, 'true or absent');
  if (t.fanOut !== undefined) {
    const f = t.fanOut;
    if (!isObj(f)) fail(`${pathOf(at)}.fanOut`, 'an object');
    if (typeof f.name !== 'string') fail(`${pathOf(at)}.fanOut.name`, 'a string');
    if (!isNum(f.count)) fail(`${pathOf(at)}.fanOut.count`, 'a number');
    if (f.category !== undefined && typeof f.category !== 'string') fail(`${pathOf(at)}.fanOut.category`, 'a string');
    if (f.similar !== undefined && !isNum(f.similar)) fail(`${pathOf(at)}.fanOut.similar`, 'a number');
  }
  if (t.nPlusOne !== undefined) {
    const g = t.nPlusOne;
    if (!isObj(g)) fail(`${pathOf(at)}.nPlusOne`, 'an object');
    for (const k of ['category', 'command']) if (typeof g[k] !== 'string') fail(`${pathOf(at)}.nPlusOne.${k}`, 'a string');
    for (const k of ['count', 'similar']) if (!isNum(g[k])) fail(`${pathOf(at)}.nPlusOne.${k}`, 'a number');
  }
  if (!Array.isArray(t.children)) fail(`${pathOf(at)}.children`, 'an array');
  const children = t.children as unknown[];
  // Pushed, not recursed into: no depth of a stored tree can overflow the stack.
  for (let i = children.length - 1; i >= 0; i--) stack.push({ node: children[i], up: at, index: i });
  if (t.custom === undefined) return;
  if (!Array.isArray(t.custom)) fail(`${pathOf(at)}.custom`, 'an array');
  const custom = t.custom as unknown[];
  for (let i = 0; i < custom.length; i++) {
    const c = custom[i];
    if (!isObj(c)) fail(`${pathOf(at)}.custom[${i}]`, 'an object');
    for (const k of CUSTOM_STRINGS) if (typeof c[k] !== 'string') fail(`${pathOf(at)}.custom[${i}].${k}`, 'a string');
    for (const k of NUMBERS) if (!isNum(c[k])) fail(`${pathOf(at)}.custom[${i}].${k}`, 'a number');
    if (c.similar !== undefined && !isNum(c.similar)) fail(`${pathOf(at)}.custom[${i}].similar`, 'a number');
    for (const k of CUSTOM_FLAGS) if (c[k] !== undefined && c[k] !== true) fail(`${pathOf(at)}.custom[${i}].${k}`, 'true or absent');
  }
}

const NUMBERS = ['startMs', 'durationMs'];
const OPTIONAL_NUMBERS = ['syncMs', 'heldMs', 'parallelism', 'concurrency'];
const FLAGS = ['error', 'unfinished', 'blocking', 'blockingAmbiguous', 'serialized'];
const CUSTOM_STRINGS = ['category', 'command'];
const CUSTOM_FLAGS = ['error', 'unfinished', 'duplicate'];

/** Check a stored profile has the shapes of the v1 JSON that the pages read. */
export function readProfile(p: unknown): ReadProfile {
  try {
    if (!isObj(p)) fail('the profile', 'an object');
    if (p.v !== 1) fail('v', '1');
    for (const k of ['id', 'name', 'machine', 'started']) str(p, k, 'profile');
    num(p, 'durationMs', 'profile');
    num(p, 'droppedSteps', 'profile');
    num(p, 'eventLoopDelayMs', 'profile', true);
    num(p, 'miniprofMs', 'profile', true);
    num(p, 'notRunMs', 'profile', true);
    flag(p, 'startup', 'profile');
    arr(p.warnings, 'profile.warnings').forEach((w, i) => {
      if (typeof w !== 'string') fail(`profile.warnings[${i}]`, 'a string');
    });
    if (p.request !== undefined) {
      const r = p.request;
      if (!isObj(r)) fail('profile.request', 'an object');
      str(r, 'method', 'profile.request');
      str(r, 'path', 'profile.request');
      num(r, 'status', 'profile.request', true);
      flag(r, 'aborted', 'profile.request');
    }
    if (p.similar !== undefined) {
      arr(p.similar, 'profile.similar').forEach((g, i) => {
        const at = `profile.similar[${i}]`;
        if (!isObj(g)) fail(at, 'an object');
        for (const k of ['id', 'count', 'durationMs']) num(g, k, at);
        str(g, 'category', at);
        str(g, 'command', at);
      });
    }
    if (p.customSummary !== undefined) {
      arr(p.customSummary, 'profile.customSummary').forEach((s, i) => {
        const at = `profile.customSummary[${i}]`;
        if (!isObj(s)) fail(at, 'an object');
        str(s, 'category', at);
        for (const k of ['count', 'durationMs', 'duplicate', 'similar']) num(s, k, at);
        num(s, 'wallMs', at, true);
      });
    }
    const stack: At[] = [{ node: p.root, up: null, index: -1 }];
    while (stack.length > 0) timing(stack.pop()!, stack);
    return { ok: true, profile: p as unknown as ProfileJSON };
  } catch (err) {
    // Only our own messages: field paths and indexes, never stored text.
    if (err instanceof Malformed) return { ok: false, error: err.message };
    return { ok: false, error: 'the profile could not be read' };
  }
}
