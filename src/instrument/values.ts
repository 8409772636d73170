import { createHash } from 'node:crypto';

/**
 * A digest of the parameter values a client sent apart from its query text (`CustomNode.values`):
 * two calls with the same text are duplicates only when their digests match, and the values
 * themselves never reach a profile. Undefined when there are none. (Engineer i57 writes the shared
 * helper of this name; this local one has the same contract until the two are merged.)
 */
export function valuesDigest(values: unknown): string | undefined {
  if (!Array.isArray(values) || values.length === 0) return undefined;
  const h = createHash('sha256');
  for (const v of values) h.update(`${typeof v}:${stringOf(v)}\u0000`);
  return h.digest('base64url').slice(0, 16);
}

function stringOf(v: unknown): string {
  if (v instanceof Date) return String(v.getTime());
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
  if (v !== null && typeof v === 'object') {
    try {
      return JSON.stringify(v) ?? '';
    } catch {
      return '[unprintable]';
    }
  }
  return String(v);
}
