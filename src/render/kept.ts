/**
 * The renderers' caches of what depends on a name alone (a token, a metric's fixed parts, a
 * comment line's escaped name). Step names are mostly literals, so the same few come back request
 * after request; names may also hold ids, so each cache is bounded in count, and in the length of
 * the names it keeps, as names may be up to maxNameLength (10,000) long.
 */
export const MAX_KEPT = 512;
export const MAX_KEPT_NAME = 96;

/** `value` kept under `name` in `cache`, emptied first when full. Returns `value`. */
export function keep<V>(cache: Map<string, V>, name: string, value: V): V {
  if (cache.size >= MAX_KEPT) cache.clear();
  cache.set(name, value);
  return value;
}
