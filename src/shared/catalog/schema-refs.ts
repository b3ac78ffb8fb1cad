/**
 * `$ref` checks of a tool schema at catalog build (issue 11 Low #8).
 *
 * A validator follows a `$ref` without consuming any of the argument, so a
 * loop of references that never descends into the argument (`a → b → a`,
 * or `allOf: [{ $ref: "#" }]` at the root) recurses forever for every value:
 * each call would fail with a misleading "nests too deeply". A reference
 * that resolves to nothing makes every call fail instead. Both are refused
 * here, naming the references involved.
 *
 * The walk follows the keyword positions that hold schemas. Edges that keep
 * the same instance (the loop danger) are `$ref` and the in-place
 * applicators; edges that descend (properties, items, …) make recursion
 * legitimate (a tree schema), because the argument is finite.
 *
 *   same instance:  $ref  allOf/anyOf/oneOf[i]  not  if  then  else  dependentSchemas/*
 *   descends:       properties/*  patternProperties/*  additionalProperties  items  prefixItems[i]
 *                   contains  propertyNames  unevaluatedProperties  unevaluatedItems  additionalItems
 */

type Schema = Record<string, unknown>;

const IN_PLACE_VALUES = ['not', 'if', 'then', 'else'] as const;
const IN_PLACE_LISTS = ['allOf', 'anyOf', 'oneOf'] as const;
const IN_PLACE_MAPS = ['dependentSchemas'] as const;
const DESCENDING_VALUES = ['additionalProperties', 'items', 'contains', 'propertyNames', 'unevaluatedProperties', 'unevaluatedItems', 'additionalItems'] as const;
const DESCENDING_LISTS = ['prefixItems'] as const;
const DESCENDING_MAPS = ['properties', 'patternProperties'] as const;
// Not applied to the instance at all; walked only to find what references point into.
const DEFINITION_MAPS = ['$defs', 'definitions'] as const;

interface Node {
  schema: Schema;
  at: string;
}

function isSchemaObject(v: unknown): v is Schema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Every schema object of `root` with its JSON pointer, plus the `$id` / `$anchor` index. */
function collect(root: Schema): { nodes: Node[]; ids: Map<string, Schema>; anchors: Map<string, Schema> } {
  const nodes: Node[] = [];
  const ids = new Map<string, Schema>();
  const anchors = new Map<string, Schema>();
  // Iterative: the structural check already bounds the depth, but this walk must never be the one that overflows.
  const stack: Node[] = [{ schema: root, at: '' }];
  while (stack.length > 0) {
    const node = stack.pop() as Node;
    nodes.push(node);
    const s = node.schema;
    if (typeof s['$id'] === 'string') ids.set(s['$id'].replace(/#$/, ''), s);
    if (typeof s['$anchor'] === 'string') anchors.set(s['$anchor'], s);
    for (const k of [...IN_PLACE_VALUES, ...DESCENDING_VALUES]) if (isSchemaObject(s[k])) stack.push({ schema: s[k], at: `${node.at}/${k}` });
    for (const k of [...IN_PLACE_LISTS, ...DESCENDING_LISTS]) {
      const list = s[k];
      if (!Array.isArray(list)) continue;
      for (const [i, sub] of list.entries()) if (isSchemaObject(sub)) stack.push({ schema: sub, at: `${node.at}/${k}/${i}` });
    }
    for (const k of [...IN_PLACE_MAPS, ...DESCENDING_MAPS, ...DEFINITION_MAPS]) {
      const map = s[k];
      if (isSchemaObject(map)) for (const [name, sub] of Object.entries(map)) if (isSchemaObject(sub)) stack.push({ schema: sub, at: `${node.at}/${k}/${escapePointer(name)}` });
    }
  }
  return { nodes, ids, anchors };
}

function escapePointer(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** The schema a `$ref` names inside the same document, or undefined. Booleans resolve to themselves. */
function resolve(ref: string, root: Schema, ids: Map<string, Schema>, anchors: Map<string, Schema>): unknown {
  const hash = ref.indexOf('#');
  const base = hash === -1 ? ref : ref.slice(0, hash);
  const fragment = hash === -1 ? '' : ref.slice(hash + 1);
  const document = base === '' ? root : ids.get(base);
  if (document === undefined) return undefined;
  if (fragment === '') return document;
  let decoded: string;
  try {
    decoded = decodeURIComponent(fragment);
  } catch {
    return undefined;
  }
  if (!decoded.startsWith('/')) return anchors.get(decoded);
  let target: unknown = document;
  for (const raw of decoded.slice(1).split('/')) {
    const token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof target !== 'object' || target === null || !Object.hasOwn(target, token)) return undefined;
    target = (target as Record<string, unknown>)[token];
  }
  return target;
}

/**
 * Problems with the `$ref`s of a structurally valid schema: references that
 * resolve to no schema of the document (remote documents are never fetched),
 * and reference loops that never descend into the argument. Each names the
 * pointer of the `$ref` (relative to the schema), like the other schema problems.
 */
export function refProblems(root: unknown): string[] {
  if (!isSchemaObject(root)) return [];
  const { nodes, ids, anchors } = collect(root);
  const pointerOf = new Map<Schema, string>(nodes.map((n) => [n.schema, n.at]));
  const problems: string[] = [];
  // Same-instance edges of each schema object.
  const edges = new Map<Schema, Schema[]>();
  for (const { schema: s, at } of nodes) {
    const next: Schema[] = [];
    const ref = s['$ref'];
    if (typeof ref === 'string') {
      const target = resolve(ref, root, ids, anchors);
      if (isSchemaObject(target)) next.push(target);
      else if (typeof target !== 'boolean') problems.push(`${at}/$ref: ${JSON.stringify(ref)} does not resolve to a schema in this document (remote references are not fetched)`);
    }
    for (const k of IN_PLACE_VALUES) if (isSchemaObject(s[k])) next.push(s[k]);
    for (const k of IN_PLACE_LISTS) {
      const list = s[k];
      if (Array.isArray(list)) for (const sub of list) if (isSchemaObject(sub)) next.push(sub);
    }
    for (const k of IN_PLACE_MAPS) {
      const map = s[k];
      if (isSchemaObject(map)) for (const sub of Object.values(map)) if (isSchemaObject(sub)) next.push(sub);
    }
    edges.set(s, next);
  }
  // Three-colour DFS over same-instance edges, iterative; a grey node reached again closes a loop.
  const colour = new Map<Schema, 1 | 2>();
  const reported = new Set<string>();
  for (const { schema: start } of nodes) {
    if (colour.has(start)) continue;
    const path: Schema[] = [start];
    const cursor: number[] = [0];
    colour.set(start, 1);
    while (path.length > 0) {
      const top = path[path.length - 1] as Schema;
      const i = cursor[cursor.length - 1] as number;
      const out = edges.get(top) ?? [];
      if (i >= out.length) {
        colour.set(top, 2);
        path.pop();
        cursor.pop();
        continue;
      }
      cursor[cursor.length - 1] = i + 1;
      const next = out[i] as Schema;
      const c = colour.get(next);
      if (c === 1) {
        const loop = [...path.slice(path.indexOf(next)), next].map((s) => pointerOf.get(s) || '#');
        const key = [...loop].sort().join(' ');
        if (!reported.has(key)) {
          reported.add(key);
          problems.push(
            `${loop[0] === '#' ? '' : loop[0]}: $ref loop ${loop.map((p) => (p === '#' ? '#' : `#${p}`)).join(' → ')} never descends into the argument (every check would recurse forever)`,
          );
        }
      } else if (c === undefined) {
        colour.set(next, 1);
        path.push(next);
        cursor.push(0);
      }
    }
  }
  return problems;
}
