/**
 * Nesting depth of parsed JSON, measured without recursion. `JSON.parse`
 * accepts any depth, but `JSON.stringify`, structured cloning and every
 * recursive walk overflow the stack somewhere past ~10,000 levels with only
 * `RangeError: Maximum call stack size exceeded`. Values from outside are
 * measured once, on arrival, so the refusal can name its place.
 */

/**
 * The JSON pointer of the first value nested deeper than `limit` levels
 * (the top value is level 0), or null. O(size), iterative. Values within
 * the limit — every accepted manifest — cost one walk that allocates nothing
 * per leaf and no strings (a manifest has thousands of nodes); the pointer
 * is built by a second walk only when there is something to name.
 */
export function deeperThan(value: unknown, limit: number): string | null {
  return exceeds(value, limit) ? firstTooDeep(value, limit) : null;
}

/** Whether any object or array sits at level `limit` or deeper. */
function exceeds(value: unknown, limit: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const values: object[] = [value];
  const depths: number[] = [0];
  while (values.length > 0) {
    const v = values.pop() as object;
    const depth = depths.pop() as number;
    if (depth >= limit) return true;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const child: unknown = v[i];
        if (typeof child === 'object' && child !== null) {
          values.push(child);
          depths.push(depth + 1);
        }
      }
      continue;
    }
    for (const k in v) {
      if (!Object.hasOwn(v, k)) continue;
      const child: unknown = (v as Record<string, unknown>)[k];
      if (typeof child === 'object' && child !== null) {
        values.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/** The pointer {@link deeperThan} reports: the first too-deep value in this depth-first order. */
function firstTooDeep(value: unknown, limit: number): string | null {
  const stack: Array<{ v: unknown; at: string; depth: number }> = [{ v: value, at: '', depth: 0 }];
  while (stack.length > 0) {
    const { v, at, depth } = stack.pop() as { v: unknown; at: string; depth: number };
    if (typeof v !== 'object' || v === null) continue;
    if (depth >= limit) return at || '/';
    if (Array.isArray(v)) for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], at: `${at}/${i}`, depth: depth + 1 });
    else for (const [k, child] of Object.entries(v)) stack.push({ v: child, at: `${at}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`, depth: depth + 1 });
  }
  return null;
}

/** A pointer cut to `max` characters for messages (a 256-level pointer is kilobytes long). */
export function shortPointer(pointer: string, max = 120): string {
  return pointer.length <= max ? pointer : `${pointer.slice(0, max / 2)}…${pointer.slice(-max / 2)}`;
}
