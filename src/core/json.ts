/**
 * JSON without the string: the memory store keeps a saved profile as the object it was given
 * and only needs its size, and `JSON.stringify` builds a string nobody reads.
 *
 * Both functions follow `JSON.stringify`'s rules for what JSON data can hold: objects (own
 * enumerable keys in order), arrays, strings, numbers, booleans, null, members that are
 * `undefined`, functions or symbols (left out; `null` in arrays), non-finite numbers (`null`) and
 * `toJSON` methods. BigInts throw a TypeError as they do there. Boxed primitives (`new
 * Number(1)`) are not unboxed: profiles never hold them. A cycle ends in a RangeError (stack
 * exhausted) rather than `JSON.stringify`'s TypeError; either way `save` rejects.
 */

import type { ProfileJSON, TimingJSON } from './types.js';

/** `Buffer.byteLength(JSON.stringify(value))`, without building the string. */
export function jsonBytes(value: unknown): number {
  return bytes(value, '');
}

/**
 * `jsonBytes` of a profile miniprof sealed, whose nodes have only the fields nodeJSON writes:
 * the tree is measured field by field, without `jsonBytes`' walk over every key. The top level and
 * any custom timings take the general path.
 */
export function profileBytes(p: ProfileJSON): number {
  // {"v":…,"id":…,"name":…,"machine":…,"started":…,"durationMs":…,"droppedSteps":…,"warnings":…,"root":…}
  // `id` (crypto.randomUUID) and `started` (Date#toISOString) are ASCII with nothing to escape:
  // their length and two quotes.
  let b = 5 + numberBytes(p.v) + 6 + (p.id.length + 2) + 8 + stringBytes(p.name) + 11 + stringBytes(p.machine) + 11 + (p.started.length + 2);
  b += 14 + numberBytes(p.durationMs) + 16 + numberBytes(p.droppedSteps) + 12 + bytes(p.warnings, 'warnings') + 8 + treeBytes(p.root);
  if (p.request !== undefined) b += 11 + bytes(p.request, 'request');
  if (p.customSummary !== undefined) b += 17 + bytes(p.customSummary, 'customSummary');
  if (p.similar !== undefined) b += 11 + bytes(p.similar, 'similar');
  if (p.eventLoopDelayMs !== undefined) b += 20 + numberBytes(p.eventLoopDelayMs);
  if (p.notRunMs !== undefined) b += 12 + numberBytes(p.notRunMs);
  if (p.startup !== undefined) b += 15;
  if (p.traceId !== undefined) b += 11 + stringBytes(p.traceId);
  if (p.cpu !== undefined) b += 7 + bytes(p.cpu, 'cpu');
  if (p.miniprofMs !== undefined) b += 14 + numberBytes(p.miniprofMs);
  return b + 1;
}

function treeBytes(t: TimingJSON): number {
  // {"name":…,"startMs":…,"durationMs":…,"children":[…]
  let b = 8 + stringBytes(t.name) + 11 + numberBytes(t.startMs) + 14 + numberBytes(t.durationMs) + 13;
  const c = t.children;
  const n = c.length;
  for (let i = 0; i < n; i++) b += treeBytes(c[i]!);
  if (n > 1) b += n - 1;
  b += 1;
  // Each optional member: a comma, its quoted key, a colon and the value.
  if (t.custom !== undefined) b += 10 + bytes(t.custom, 'custom');
  if (t.error !== undefined) b += 13;
  if (t.unfinished !== undefined) b += 18;
  if (t.syncMs !== undefined) b += 10 + numberBytes(t.syncMs);
  if (t.blocking !== undefined) b += 16;
  if (t.parallelism !== undefined) b += 15 + numberBytes(t.parallelism);
  if (t.traced !== undefined) b += 14;
  if (t.handler !== undefined) b += 15;
  // The analysis fields (src/analysis), on few steps: the general path.
  if (t.heldMs !== undefined) b += 10 + numberBytes(t.heldMs);
  if (t.blockingAmbiguous !== undefined) b += 25;
  if (t.concurrency !== undefined) b += 15 + numberBytes(t.concurrency);
  if (t.serialized !== undefined) b += 18;
  if (t.fanOut !== undefined) b += 10 + bytes(t.fanOut, 'fanOut');
  if (t.cpu !== undefined) b += 7 + bytes(t.cpu, 'cpu');
  if (t.gcMs !== undefined) b += 8 + numberBytes(t.gcMs);
  if (t.nPlusOne !== undefined) b += 12 + bytes(t.nPlusOne, 'nPlusOne');
  // The root's time in no step.
  if (t.selfMs !== undefined) b += 10 + numberBytes(t.selfMs);
  return b + 1;
}

/** What `JSON.parse(JSON.stringify(value))` gives, without the string in between. */
export function jsonCopy<T>(value: T): T {
  return copy(value, '') as T;
}

function bytes(v: unknown, key: string | number): number {
  switch (typeof v) {
    case 'string':
      return stringBytes(v);
    case 'number':
      return numberBytes(v);
    case 'boolean':
      return v ? 4 : 5;
    case 'bigint':
      return bytes(toJSON(v, key), key);
    case 'object': {
      if (v === null) return 4;
      if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return bytes(toJSON(v, key), key);
      if (Array.isArray(v)) {
        const n = v.length;
        let b = n > 1 ? n + 1 : 2;
        for (let i = 0; i < n; i++) {
          const e = bytes(v[i], i);
          b += e < 0 ? 4 : e;
        }
        return b;
      }
      let b = 1;
      // Own enumerable keys in order, as JSON.stringify takes them.
      for (const k in v) {
        if (!Object.hasOwn(v, k)) continue;
        const e = bytes((v as Record<string, unknown>)[k], k);
        // Quoted key, colon, value, and a comma or the closing brace.
        if (e >= 0) b += keyBytes(k) + e + 2;
      }
      return b === 1 ? 2 : b;
    }
    default:
      // undefined, functions and symbols are no JSON value: the member is left out.
      return -1;
  }
}

function copy(v: unknown, key: string | number): unknown {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v;
    case 'number':
      // -0 reads back as 0; NaN and the infinities as null.
      return Number.isFinite(v) ? v + 0 : null;
    case 'bigint':
      return copy(toJSON(v, key), key);
    case 'object': {
      if (v === null) return null;
      if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return copy(toJSON(v, key), key);
      if (Array.isArray(v)) {
        const out: unknown[] = [];
        for (let i = 0; i < v.length; i++) {
          const e = copy(v[i], i);
          out.push(e === undefined ? null : e);
        }
        return out;
      }
      const out: Record<string, unknown> = {};
      const keys = Object.keys(v);
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i]!;
        const e = copy((v as Record<string, unknown>)[k], k);
        if (e === undefined) continue;
        // JSON.parse makes "__proto__" an own key; an assignment would set the prototype.
        if (k === '__proto__') Object.defineProperty(out, k, { value: e, writable: true, enumerable: true, configurable: true });
        else out[k] = e;
      }
      return out;
    }
    default:
      return undefined;
  }
}

function toJSON(v: unknown, key: string | number): unknown {
  const fn = (v as { toJSON?: unknown }).toJSON;
  if (typeof fn !== 'function') throw new TypeError('Do not know how to serialize a BigInt');
  return (fn as (k: string) => unknown).call(v, String(key));
}

/**
 * A number's JSON length. The profile's times are rounded to microseconds, and such a number
 * below 2^31 µs (35 minutes) has as its shortest round-trip form its decimal with at most three
 * fraction digits (doubles there are far closer together than 0.001), so the length follows
 * from 32-bit integers; any other number asks V8.
 */
function numberBytes(x: number): number {
  const k = Math.round(x * 1000);
  if (k / 1000 === x && k < 2147483648 && k > -2147483648) {
    const a = (k < 0 ? -k : k) | 0;
    const f = a % 1000;
    return (k < 0 ? 1 : 0) + (f === 0 ? 0 : f % 100 === 0 ? 2 : f % 10 === 0 ? 3 : 4) + digits(((a - f) / 1000) | 0);
  }
  return Number.isFinite(x) ? String(x).length : 4;
}

function digits(i: number): number {
  if (i < 10) return 1;
  if (i < 100) return 2;
  if (i < 1000) return 3;
  if (i < 10000) return 4;
  if (i < 100000) return 5;
  if (i < 1000000) return 6;
  return 7;
}

/**
 * Keys repeat (a profile has a dozen distinct ones, each written once per node), and scanning
 * them was half of the walk; the cache is bounded, since JSON from elsewhere may have any keys.
 */
const KEY_BYTES = new Map<string, number>();

function keyBytes(k: string): number {
  let b = KEY_BYTES.get(k);
  if (b === undefined) {
    b = stringBytes(k);
    if (KEY_BYTES.size < 256) KEY_BYTES.set(k, b);
  }
  return b;
}

/** A string's quoted, escaped JSON form in UTF-8 bytes. */
function stringBytes(s: string): number {
  const n = s.length;
  let b = n + 2;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c < 0x7f) {
      if (c === 0x22 || c === 0x5c) b++;
    } else if (c < 0x20) {
      // \b \t \n \f \r have short escapes; the other controls become \u00XX.
      b += c === 8 || c === 9 || c === 10 || c === 12 || c === 13 ? 1 : 5;
    } else if (c < 0x80) {
      // DEL is not escaped.
    } else if (c < 0x800) {
      b++;
    } else if (c < 0xd800 || c > 0xdfff) {
      b += 2;
    } else if (c < 0xdc00 && i + 1 < n && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      // A surrogate pair: 4 bytes for 2 code units.
      b += 2;
      i++;
    } else {
      // A lone surrogate is written as \uXXXX.
      b += 5;
    }
  }
  return b;
}
