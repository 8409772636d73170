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

/** Where a node sits, built into a path only when it is wrong: a deep tree's paths would be quadratic. */
interface At {
  readonly up: At | null;
  readonly key: string;
}

function pathOf(at: At): string {
  const parts: string[] = [];
  for (let a: At | null = at; a !== null; a = a.up) parts.push(a.key);
  // The innermost few levels say where; a thousand levels of `children[0]` would not.
  const shown = parts.length > 8 ? [...parts.slice(0, 6), '…', parts[parts.length - 1]!] : parts;
  return shown.reverse().join('');
}

function timing(t: unknown, at: At, stack: [unknown, At][]): void {
  const path = pathOf.bind(null, at);
  if (!isObj(t)) fail(path(), 'an object');
  if (typeof t.name !== 'string') fail(`${path()}.name`, 'a string');
  for (const k of ['startMs', 'durationMs']) if (!isNum(t[k])) fail(`${path()}.${k}`, 'a number');
  for (const k of ['syncMs', 'heldMs', 'parallelism', 'concurrency']) if (t[k] !== undefined && !isNum(t[k])) fail(`${path()}.${k}`, 'a number');
  for (const k of ['error', 'unfinished', 'blocking', 'blockingAmbiguous', 'serialized']) if (t[k] !== undefined && t[k] !== true) fail(`${path()}.${k}`, 'true or absent');
  if (t.fanOut !== undefined) {
    const f = t.fanOut;
    if (!isObj(f)) fail(`${path()}.fanOut`, 'an object');
    if (typeof f.name !== 'string') fail(`${path()}.fanOut.name`, 'a string');
    if (!isNum(f.count)) fail(`${path()}.fanOut.count`, 'a number');
    if (f.category !== undefined && typeof f.category !== 'string') fail(`${path()}.fanOut.category`, 'a string');
    if (f.similar !== undefined && !isNum(f.similar)) fail(`${path()}.fanOut.similar`, 'a number');
  }
  if (!Array.isArray(t.children)) fail(`${path()}.children`, 'an array');
  const children = t.children as unknown[];
  // Pushed, not recursed into: no depth of a stored tree can overflow the stack.
  for (let i = children.length - 1; i >= 0; i--) stack.push([children[i], { up: at, key: `.children[${i}]` }]);
  if (t.custom === undefined) return;
  const custom = arr(t.custom, `${path()}.custom`);
  custom.forEach((c, i) => {
    const where = () => `${path()}.custom[${i}]`;
    if (!isObj(c)) fail(where(), 'an object');
    for (const k of ['category', 'command']) if (typeof c[k] !== 'string') fail(`${where()}.${k}`, 'a string');
    for (const k of ['startMs', 'durationMs']) if (!isNum(c[k])) fail(`${where()}.${k}`, 'a number');
    if (c.similar !== undefined && !isNum(c.similar)) fail(`${where()}.similar`, 'a number');
    for (const k of ['error', 'unfinished', 'duplicate']) if (c[k] !== undefined && c[k] !== true) fail(`${where()}.${k}`, 'true or absent');
  });
}

/** Check a stored profile has the shapes of the v1 JSON that the pages read. */
export function readProfile(p: unknown): ReadProfile {
  try {
    if (!isObj(p)) fail('the profile', 'an object');
    if (p.v !== 1) fail('v', '1');
    for (const k of ['id', 'name', 'machine', 'started']) str(p, k, 'profile');
    num(p, 'durationMs', 'profile');
    num(p, 'droppedSteps', 'profile');
    num(p, 'eventLoopDelayMs', 'profile', true);
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
    const stack: [unknown, At][] = [[p.root, { up: null, key: 'profile.root' }]];
    while (stack.length > 0) {
      const [t, at] = stack.pop()!;
      timing(t, at, stack);
    }
    return { ok: true, profile: p as unknown as ProfileJSON };
  } catch (err) {
    // Only our own messages: field paths and indexes, never stored text.
    if (err instanceof Malformed) return { ok: false, error: err.message };
    return { ok: false, error: 'the profile could not be read' };
  }
}
