/**
 * Stable route → shard assignment: FNV-1a (32-bit) of the route key modulo the
 * shard count. Stable across restarts and threads, so every acceptor and the
 * catalog builder agree on the owner without talking to each other.
 */

/** FNV-1a 32-bit hash of a string's UTF-16 code units (route keys are ASCII). */
export function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The shard that owns `routeKey`. */
export function shardFor(routeKey: string, shardCount: number): number {
  return fnv1a(routeKey) % shardCount;
}
