/**
 * Reads what `valgrind --tool=callgrind --separate-threads=yes` dumped for one
 * thread, and names the JIT code in it from the `--perf-basic-prof` map that
 * node wrote for the same process (`/tmp/perf-<pid>.map`). Used by
 * bench/instructions.ts: instructions executed, unlike CPU time, do not move
 * with what else the machine is doing.
 *
 * The format (valgrind's "Callgrind Format Specification"): `ob=` / `fn=`
 * lines name the object and function the cost lines below them belong to,
 * with name compression (`(id) name` the first time, `(id)` after); a cost
 * line is `<line> <Ir>`; a `calls=` line is followed by one cost line that is
 * the *inclusive* cost of that call, which is not the caller's own (self) cost.
 */

/** Instructions a thread executed, by function (self cost). */
export interface ThreadCost {
  /** Every instruction of the dump. */
  total: number;
  /** Self cost per function, keyed `object\u0000function`. */
  byFunction: Map<string, number>;
}

/** Where a function's instructions belong in the report. */
export type CostGroup = 'JavaScript (JIT)' | 'V8 compiler' | 'V8 GC' | 'JSON parse/stringify' | 'V8 builtins' | 'V8 runtime and API' | 'Node and libuv' | 'uWS' | 'libc';

function named(spec: string, table: Map<string, string>): string {
  const m = /^\((\d+)\)(?: (.*))?$/.exec(spec);
  if (m === null) return spec;
  const id = m[1] as string;
  if (m[2] !== undefined) table.set(id, m[2]);
  return table.get(id) ?? spec;
}

/** Self cost per function of one callgrind dump (one thread with --separate-threads). */
export function parseCallgrind(text: string): ThreadCost {
  const objects = new Map<string, string>();
  const functions = new Map<string, string>();
  const byFunction = new Map<string, number>();
  let ob = '';
  let fn = '';
  let inclusiveNext = false;
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('ob=')) ob = named(line.slice(3), objects);
    else if (line.startsWith('fn=')) fn = named(line.slice(3), functions);
    else if (line.startsWith('cob=')) named(line.slice(4), objects);
    else if (line.startsWith('cfn=')) named(line.slice(4), functions);
    else if (line.startsWith('calls=')) inclusiveNext = true;
    else if (/^[0-9+*-]/.test(line)) {
      const parts = line.split(/\s+/);
      if (parts.length < 2) continue;
      if (inclusiveNext) {
        inclusiveNext = false;
        continue;
      }
      const ir = Number(parts[1]);
      if (!Number.isFinite(ir)) continue;
      const key = `${ob}\u0000${fn}`;
      byFunction.set(key, (byFunction.get(key) ?? 0) + ir);
      total += ir;
    }
  }
  return { total, byFunction };
}

/** A `--perf-basic-prof` map: code start addresses (sorted), sizes and names. */
export interface PerfMap {
  starts: number[];
  sizes: number[];
  names: string[];
}

/** Parses `/tmp/perf-<pid>.map` lines (`<start hex> <size hex> <name>`). */
export function parsePerfMap(text: string): PerfMap {
  const rows: Array<[number, number, string]> = [];
  for (const line of text.split('\n')) {
    const m = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
    if (m !== null) rows.push([Number.parseInt(m[1] as string, 16), Number.parseInt(m[2] as string, 16), m[3] as string]);
  }
  rows.sort((a, b) => a[0] - b[0]);
  return { starts: rows.map((r) => r[0]), sizes: rows.map((r) => r[1]), names: rows.map((r) => r[2]) };
}

/** The name of the JIT code at `address`, or null. */
export function jitName(map: PerfMap, address: number): string | null {
  let lo = 0;
  let hi = map.starts.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if ((map.starts[mid] as number) <= address) lo = mid + 1;
    else hi = mid - 1;
  }
  if (hi < 0) return null;
  return address < (map.starts[hi] as number) + (map.sizes[hi] as number) ? (map.names[hi] as string) : null;
}

/** Callgrind names code outside any symbol table by its address (`0x…`, with a `'N` suffix for recursion). */
function addressOf(fn: string): number | null {
  const m = /^0x([0-9a-f]+)/.exec(fn);
  return m === null ? null : Number.parseInt(m[1] as string, 16);
}

const V8_GC = /Heap::|Scaveng|Marking|MarkCompact|Sweep|Evacuat|MemoryChunk|RememberedSet|SlotSet|PagedSpace|NewSpace|Collector|IterateObjectCache/;

/** The group of one function of object `ob`. */
export function groupOf(ob: string, fn: string): CostGroup {
  // Code in no mapped file: what V8 generated (JIT tiers, regexps; builtins are in the node binary).
  if (ob === '???') return 'JavaScript (JIT)';
  if (ob.endsWith('.node')) return 'uWS';
  if (/\/lib(c|m|stdc\+\+|gcc_s|pthread)[.-]/.test(ob) || ob.includes('ld-linux')) return 'libc';
  if (fn.includes('compiler::') || fn.includes('maglev') || fn.includes('Compiler::') || fn.includes('baseline::') || fn.includes('interpreter::')) return 'V8 compiler';
  if (V8_GC.test(fn)) return 'V8 GC';
  if (fn.includes('Json')) return 'JSON parse/stringify';
  if (fn.startsWith('Builtins_')) return 'V8 builtins';
  if (fn.startsWith('node::') || fn.startsWith('uv_') || fn.startsWith('uv__')) return 'Node and libuv';
  return 'V8 runtime and API';
}

/** One thread's instructions by group, and its JavaScript functions named from the perf map. */
export interface ThreadBreakdown {
  total: number;
  groups: Map<CostGroup, number>;
  javascript: Map<string, number>;
}

export function breakdown(cost: ThreadCost, map: PerfMap | null): ThreadBreakdown {
  const groups = new Map<CostGroup, number>();
  const javascript = new Map<string, number>();
  for (const [key, ir] of cost.byFunction) {
    const [ob = '', fn = ''] = key.split('\u0000');
    const group = groupOf(ob, fn);
    groups.set(group, (groups.get(group) ?? 0) + ir);
    if (group !== 'JavaScript (JIT)') continue;
    const address = addressOf(fn);
    const name = (map !== null && address !== null ? jitName(map, address) : null) ?? '(unnamed JIT code)';
    javascript.set(name, (javascript.get(name) ?? 0) + ir);
  }
  return { total: cost.total, groups, javascript };
}
