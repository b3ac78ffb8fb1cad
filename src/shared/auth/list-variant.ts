/**
 * Filtered `tools/list` templates: the same bytes as a route's template
 * with only the tools a caller may use, built once per (template, rule set)
 * and then served like the original (append `<id>}`).
 *
 * Works on any template of the shape the snapshot layout produces —
 *
 * ```
 *  {"jsonrpc":"2.0","result":{ …members… "tools":[ T0 , T1 , … ] …members… },"id":
 *  └──────── prefix ────────┘└──────────── result object ──────────────────┘└tail┘
 * ```
 *
 * — whatever other members `result` carries (a later protocol era adds some),
 * because it scans the bytes instead of re-serialising: every kept tool and
 * every other member is copied byte for byte (numbers, escapes and member
 * order stay exactly as published). Only each tool's `name` is parsed.
 */

const PREFIX = new TextEncoder().encode('{"jsonrpc":"2.0","result":');
const decoder = new TextDecoder();

/** Thrown when a template does not have the expected shape (a bug in whoever built it). */
export class TemplateShapeError extends Error {}

/** Index just past the JSON string starting at `i` (which holds `"`). */
function skipString(b: Uint8Array, i: number): number {
  for (let j = i + 1; j < b.length; j++) {
    const c = b[j];
    if (c === 0x5c) j++;
    else if (c === 0x22) return j + 1;
  }
  throw new TemplateShapeError('unterminated string');
}

/** Index just past the JSON value starting at `i` (no whitespace handling needed: the template is compact, but spaces are skipped anyway). */
function skipValue(b: Uint8Array, i: number): number {
  const c = b[i];
  if (c === 0x22) return skipString(b, i);
  if (c === 0x7b || c === 0x5b) {
    let depth = 0;
    for (let j = i; j < b.length; j++) {
      const d = b[j];
      if (d === 0x22) j = skipString(b, j) - 1;
      else if (d === 0x7b || d === 0x5b) depth++;
      else if (d === 0x7d || d === 0x5d) {
        depth--;
        if (depth === 0) return j + 1;
      }
    }
    throw new TemplateShapeError('unterminated container');
  }
  let j = i;
  while (j < b.length && b[j] !== 0x2c && b[j] !== 0x7d && b[j] !== 0x5d) j++;
  return j;
}

function skipSpace(b: Uint8Array, i: number): number {
  while (i < b.length && (b[i] === 0x20 || b[i] === 0x0a || b[i] === 0x0d || b[i] === 0x09)) i++;
  return i;
}

/** Byte ranges of the `tools` array's elements, and the array's bounds. */
interface ToolsArray {
  open: number;
  close: number;
  elements: Array<[number, number]>;
}

function locateTools(b: Uint8Array): ToolsArray {
  for (let k = 0; k < PREFIX.length; k++) if (b[k] !== PREFIX[k]) throw new TemplateShapeError('not a tools/list template');
  let i = skipSpace(b, PREFIX.length);
  if (b[i] !== 0x7b) throw new TemplateShapeError('result is not an object');
  i++;
  for (;;) {
    i = skipSpace(b, i);
    if (b[i] === 0x7d) throw new TemplateShapeError('result has no tools member');
    const keyStart = i;
    const keyEnd = skipString(b, i);
    const key = decoder.decode(b.subarray(keyStart, keyEnd));
    i = skipSpace(b, keyEnd);
    if (b[i] !== 0x3a) throw new TemplateShapeError('expected a colon');
    i = skipSpace(b, i + 1);
    if (key === '"tools"') {
      if (b[i] !== 0x5b) throw new TemplateShapeError('tools is not an array');
      const open = i;
      const elements: Array<[number, number]> = [];
      let j = skipSpace(b, i + 1);
      if (b[j] === 0x5d) return { open, close: j, elements };
      for (;;) {
        j = skipSpace(b, j);
        const end = skipValue(b, j);
        elements.push([j, end]);
        j = skipSpace(b, end);
        if (b[j] === 0x2c) j++;
        else if (b[j] === 0x5d) return { open, close: j, elements };
        else throw new TemplateShapeError('malformed tools array');
      }
    }
    i = skipSpace(b, skipValue(b, i));
    if (b[i] === 0x2c) i++;
  }
}

/**
 * A copy of `template` whose `tools` array keeps only the tools `allows`
 * accepts. Called once per (template, rule set); never per request.
 */
export function filterListTemplate(template: Uint8Array, allows: (toolName: string) => boolean): Uint8Array {
  const { open, close, elements } = locateTools(template);
  const kept: Uint8Array[] = [];
  let size = 0;
  for (const [start, end] of elements) {
    const slice = template.subarray(start, end);
    const tool = JSON.parse(decoder.decode(slice)) as { name?: unknown };
    if (typeof tool.name === 'string' && allows(tool.name)) {
      kept.push(slice);
      size += slice.length + 1;
    }
  }
  const head = template.subarray(0, open + 1);
  const tail = template.subarray(close);
  const out = new Uint8Array(head.length + Math.max(0, size - 1) + tail.length);
  let o = 0;
  out.set(head, o);
  o += head.length;
  kept.forEach((slice, n) => {
    if (n > 0) out[o++] = 0x2c;
    out.set(slice, o);
    o += slice.length;
  });
  out.set(tail, o);
  return out;
}
