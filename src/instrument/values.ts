import { createHmac, randomBytes } from 'node:crypto';

/**
 * A key of this process only: the digest tells two calls' values apart within a profile, and
 * is useless for guessing a value (a PIN, a short password) from anywhere else.
 */
const KEY = randomBytes(32);

/**
 * What tells the parameter values of one call apart from another's, when the client sent them
 * apart from the text (pg's `$1`, mysql2's `execute`): a short keyed digest (16 characters),
 * never the values. Duplicate detection compares it (`CustomNode.values`); it never leaves the
 * process and is never part of a command. Undefined when there are no values (not an array, or
 * empty). Call it only inside a live profile: it costs a hash of every value.
 *
 * @example
 * node.values = valuesDigest([42, 'bob']); // 'mJ1x…' (16 characters)
 */
export function valuesDigest(values: unknown): string | undefined {
  if (!Array.isArray(values) || values.length === 0) return undefined;
  const h = createHmac('sha256', KEY);
  for (const v of values as unknown[]) {
    // The type and the length before each value: `['a,b']` and `['a', 'b']`, `1` and `'1'` differ.
    const [tag, body] = encode(v);
    h.update(`${tag}${typeof body === 'string' ? body.length : body.byteLength}:`);
    h.update(body);
  }
  return h.digest('base64url').slice(0, 16);
}

function encode(v: unknown): [string, string | Uint8Array] {
  if (v === null) return ['n', ''];
  if (v === undefined) return ['u', ''];
  if (v instanceof Uint8Array) return ['b', v];
  if (v instanceof Date) return ['d', Number.isNaN(v.getTime()) ? 'Invalid Date' : v.toISOString()];
  switch (typeof v) {
    case 'string':
      return ['s', v];
    case 'number':
    case 'bigint':
    case 'boolean':
      return [typeof v, String(v)];
    case 'object':
      try {
        return ['o', JSON.stringify(v) ?? String(v)];
      } catch {
        // A cycle, a throwing toJSON: such values are never told apart, so never duplicates either.
        return ['x', String(Math.random())];
      }
    default:
      return ['?', String(v)];
  }
}
