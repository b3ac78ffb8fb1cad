/**
 * Same-run micro-bench of the per-request CPU the protocol eras cost
 * (docs/decisions/0014-protocol-eras.md): the pure parts of the hot paths,
 * with no sockets, run from two builds in one process, interleaved round by
 * round so that a busy machine slows both alike.
 *
 * - **legacy tools/list** (acceptor): gate → `answerRequest` → the reply bytes
 *   (template + `<id>}` copied into a scratch buffer, as `reply-writer.ts` does);
 * - **legacy tools/call** (acceptor + shard, without the Tool Service's
 *   socket): gate → `answerRequest` → call frame written and read →
 *   `prepareCall` (resolve, compiled argument check) → the Tool Service's
 *   JSON mapped (and, in this build, shaped per era) → result frame → the
 *   JSON-RPC envelope;
 * - **2026-07-28 tools/list** (this build only): gate → `answerModernRequest`
 *   → the reply bytes (template + `<ttlMs>},"id":<id>}`).
 *
 * Usage: `npm run build && node dist/bench/protocol-eras.js --base <other build's dist>`
 * (e.g. `git archive <commit> | tar -x -C /tmp/base && cd /tmp/base && npx tsc`).
 * Without `--base` only this build is measured. Prints CPU ns per operation
 * (median of the rounds) and the median of the per-round ratios this build ÷ base.
 */
import { pathToFileURL } from 'node:url';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PooledCallRequest } from '../src/shared/calls.js';

/** A minimal loose view of the modules both builds have (their exact types differ between builds). */
type Mod = Record<string, (...args: never[]) => unknown>;
interface Build {
  name: string;
  layout: Mod;
  gate: Mod;
  http: Mod;
  answer: Mod;
  modern: Mod | null;
  frames: Mod & { ResultKind: { Result: number } };
  toolCall: Mod;
  runtime: { RouteRuntime: new (view: unknown) => { resolve(name: string): unknown } };
  toolResult: Mod;
  callResult: Mod | null;
  replyWriter: Mod;
}

async function load(dist: string, name: string): Promise<Build> {
  const imp = async (path: string): Promise<Mod> => (await import(pathToFileURL(join(dist, path)).href)) as Mod;
  const optional = async (path: string): Promise<Mod | null> => {
    try {
      return await imp(path);
    } catch {
      return null;
    }
  };
  return {
    name,
    layout: await imp('src/shared/snapshot/layout.js'),
    gate: await imp('src/shared/protocol/gate.js'),
    http: await imp('src/shared/protocol/http-policy.js'),
    answer: await imp('src/shared/protocol/answer.js'),
    modern: await optional('src/shared/protocol/answer-modern.js'),
    frames: (await imp('src/shared/threads/call-frames.js')) as Build['frames'],
    toolCall: await imp('src/workers/shard/tool-call.js'),
    runtime: (await imp('src/workers/shard/route-runtime.js')) as unknown as Build['runtime'],
    toolResult: await imp('src/workers/shard/tool-result.js'),
    callResult: await optional('src/workers/shard/call-result.js'),
    replyWriter: await imp('src/main/reply-writer.js'),
  };
}

const TOOLS = 50;
const catalog = {
  routeKey: 'core',
  revision: 'sha256:0000000000000000',
  source: 'static',
  builtAt: Date.now(),
  tools: Array.from({ length: TOOLS }, (_, i) => ({
    name: `tool_${String(i).padStart(2, '0')}`,
    version: '1.0.0',
    active: true,
    serviceId: 'svc',
    description: `Tool number ${i}: ${'lorem ipsum dolor sit amet '.repeat(20)}`,
    inputSchema: { type: 'object', properties: { text: { type: 'string', description: 'what to echo back' }, n: { type: 'integer', minimum: 0 } }, required: ['text'] },
    timeoutMs: 5000,
    executionUrl: `http://127.0.0.1:9/tools/tool_${i}`,
  })),
};
const LIST = Buffer.from('{"jsonrpc":"2.0","id":17,"method":"tools/list"}');
const CALL = Buffer.from('{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"tool_07","arguments":{"text":"hello","n":3}}}');
const MODERN_LIST = Buffer.from(
  JSON.stringify({ jsonrpc: '2.0', id: 19, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } }),
);
const TOOL_ANSWER = '{"content":[{"type":"text","text":"hello"}]}';
const head = (protocolVersion: string): Record<string, unknown> => ({
  method: 'post',
  path: '/mcp/core',
  host: '127.0.0.1:8080',
  origin: '',
  contentType: 'application/json',
  accept: 'application/json',
  protocolVersion,
  contentLength: 60,
});

/** A plain buffer a frame encoder writes into (what a ring's reservation is). */
class Sink {
  buf = Buffer.alloc(64 * 1024);
  at = 0;
  /** Offset and length of the frame reserved last. */
  last = 0;
  lastLength = 0;
  reserve(length: number): number {
    if (this.at + length > this.buf.length) this.at = 0;
    this.last = this.at;
    this.lastLength = length;
    this.at += length;
    return this.last;
  }
  commit(): void {}
}

let scratch = Buffer.allocUnsafe(64 * 1024);
/** The reply bytes as reply-writer.ts assembles them: template, then the tail, in one scratch buffer. */
function join2(body: Uint8Array, tail: string): number {
  const need = body.length + tail.length * 3;
  if (need > scratch.length) scratch = Buffer.allocUnsafe(need * 2);
  scratch.set(body, 0);
  return body.length + scratch.write(tail, body.length, 'utf8');
}

/** The per-operation closures of one build. */
function pipelines(b: Build): Record<string, () => number> {
  const buffer = b.layout['encodeSnapshot']?.(catalog as never) as SharedArrayBuffer;
  const sections = b.layout['acceptorSections'] as ((buf: SharedArrayBuffer) => Record<string, unknown>) | undefined;
  const listTemplateOf = b.layout['snapshotListTemplate'] as ((buf: SharedArrayBuffer) => Uint8Array) | undefined;
  const snapshot =
    sections !== undefined
      ? (() => {
          const s = sections(buffer);
          return { ...s, listTemplate: Buffer.from(s['listTemplate'] as Uint8Array), modernListTemplate: Buffer.from(s['modernListTemplate'] as Uint8Array) };
        })()
      : { listTemplate: Buffer.from((listTemplateOf as (buf: SharedArrayBuffer) => Uint8Array)(buffer)) };
  const route = { shard: 0, snapshot, unavailable: null };
  const lookup = (key: string): unknown => (key === 'core' ? route : undefined);
  const policy = b.http['buildHttpPolicy']?.({ host: '127.0.0.1', port: 0, maxBodyBytes: 1 << 20, allowedOrigins: null, allowedHosts: null, retryAfterSeconds: 5, exposeErrorDetails: false } as never);
  const gate = b.gate['gateMcpRequest'] as (h: unknown, p: unknown, l: unknown) => { kind: string; snapshot?: Record<string, unknown> };
  const answer = b.answer['answerRequest'] as (body: Uint8Array, s: unknown) => Record<string, unknown>;
  const view = b.layout['decodeSnapshot']?.(buffer as never);
  const runtime = new b.runtime.RouteRuntime(view);
  const prepare = b.toolCall['prepareCall'] as (rt: unknown, req: unknown) => Record<string, unknown>;
  const mapJson = b.toolResult['mapJsonAnswer'] as (v: unknown, raw: string) => Record<string, unknown>;
  const final = b.callResult?.['finalAnswer'] as ((m: unknown, c: unknown, out: unknown) => { payload: string }) | undefined;
  const writeCall = b.frames['writeCall'] as (s: Sink, id: number, req: unknown, args: Uint8Array | null) => boolean;
  const readCall = b.frames['readCall'] as (buf: Buffer, off: number, len: number, into: unknown) => void;
  const writeResult = b.frames['writeResult'] as (s: Sink, kind: number, id: number, outcome: number, status: number, payload: string) => boolean;
  const assemble = b.replyWriter['assembleRpcAnswer'] as (idText: string, isError: boolean, payload: Uint8Array, sse: boolean) => Uint8Array;
  const legacyHead = head('');
  const callSink = new Sink();
  const resultSink = new Sink();
  const req = new PooledCallRequest();
  const into = new PooledCallRequest();
  const extended = b.modern !== null;
  const out: Record<string, () => number> = {
    'legacy tools/list': () => {
      const g = gate(legacyHead, policy, lookup);
      const d = answer(LIST, g.snapshot) as { reply: { body: Uint8Array; bodyTail: string } };
      return join2(d.reply.body, d.reply.bodyTail);
    },
    'legacy tools/call': () => {
      const g = gate(legacyHead, policy, lookup);
      const d = answer(CALL, g.snapshot) as Record<string, string | number | boolean>;
      // Field by field into a pooled request, as mcp-endpoint.ts does (a base build copies the fields it knows).
      req.routeKey = 'core';
      req.requestId = 'req-1';
      req.toolName = d['toolName'] as string;
      req.argumentsJson = d['argumentsJson'] as string;
      req.progressTokenJson = d['progressTokenJson'] as string;
      req.logLevel = d['logLevel'] as number;
      req.traceparent = (d['traceparent'] as string | undefined) ?? '';
      if (extended) {
        req.modern = d['modern'] as boolean;
        req.tracestate = d['tracestate'] as string;
        req.baggage = d['baggage'] as string;
        req.clientCapabilitiesJson = d['clientCapabilitiesJson'] as string;
        req.inputResponsesJson = d['inputResponsesJson'] as string;
        req.requestStateJson = d['requestStateJson'] as string;
      }
      // The client's argument bytes, spliced into the frame as the acceptor does (arguments-span.ts).
      writeCall(callSink, 1, req, (d['argumentsBytes'] as Uint8Array | null | undefined) ?? null);
      readCall(callSink.buf, callSink.last, callSink.lastLength, into);
      const prepared = prepare(runtime, into) as { kind: string; outputValidator?: unknown };
      const mapped = mapJson(JSON.parse(TOOL_ANSWER), TOOL_ANSWER) as { json: string };
      const payload = final !== undefined ? final(mapped, into, prepared.outputValidator ?? null).payload : mapped.json;
      writeResult(resultSink, b.frames.ResultKind.Result, 1, 0, 200, payload);
      const start = resultSink.last + 12;
      return assemble(d['idText'] as string, false, resultSink.buf.subarray(start, resultSink.last + resultSink.lastLength), false).length;
    },
  };
  const modern = b.modern?.['answerModernRequest'] as ((body: Uint8Array, s: unknown, h: unknown, f: unknown) => Record<string, unknown>) | undefined;
  if (modern !== undefined) {
    const modernHead = head('2026-07-28');
    const mirrored = { mcpMethod: 'tools/list', mcpName: '', paramHeaders: [] };
    const freshness = { refreshIntervalMs: 30_000, refreshJitterRatio: 0.1, now: Date.now };
    out['2026-07-28 tools/list'] = () => {
      const g = gate(modernHead, policy, lookup);
      const d = modern(MODERN_LIST, g.snapshot, mirrored, freshness) as { reply: { body: Uint8Array; bodyTail: string } };
      return join2(d.reply.body, d.reply.bodyTail);
    };
  }
  return out;
}

function nsPerOp(fn: () => number, n: number): number {
  let sink = 0;
  // CPU time of this process, not wall time: on a busy machine the time the
  // thread waits for a core is not charged to the code under test.
  const t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) sink += fn();
  const used = process.cpuUsage(t0);
  const ns = ((used.user + used.system) * 1000) / n;
  if (sink === -1) console.log('unreachable');
  return ns;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const baseAt = args.indexOf('--base');
  const rounds = Number(process.env['ROUNDS'] ?? 15);
  const n = Number(process.env['N'] ?? 20_000);
  const here = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const builds: Build[] = [await load(here, 'this build')];
  if (baseAt >= 0 && args[baseAt + 1] !== undefined) builds.unshift(await load(resolve(args[baseAt + 1] as string), 'base'));
  const runs = builds.map((b) => ({ b, p: pipelines(b) }));
  const names = [...new Set(runs.flatMap((r) => Object.keys(r.p)))];
  const samples = new Map<string, number[]>();
  for (const r of runs) for (const name of Object.keys(r.p)) nsPerOp(r.p[name] as () => number, n); // warm-up: JIT both
  for (let round = 0; round < rounds; round++) {
    // Alternate the order per round so neither build always runs first.
    const order = round % 2 === 0 ? runs : [...runs].reverse();
    for (const name of names) {
      for (const r of order) {
        const fn = r.p[name];
        if (fn === undefined) continue;
        const key = `${name}\u0000${r.b.name}`;
        const list = samples.get(key) ?? [];
        list.push(nsPerOp(fn, n));
        samples.set(key, list);
      }
    }
  }
  console.log(`protocol-eras micro-bench: ${TOOLS}-tool catalog, ${rounds} interleaved rounds × ${n} ops, ns/op (median)`);
  for (const name of names) {
    const mine = samples.get(`${name}\u0000this build`) ?? [];
    const base = samples.get(`${name}\u0000base`);
    if (base === undefined) {
      console.log(`  ${name.padEnd(24)} this build ${median(mine).toFixed(0).padStart(6)}`);
      continue;
    }
    const ratios = mine.map((m, i) => m / (base[i] as number));
    console.log(
      `  ${name.padEnd(24)} base ${median(base).toFixed(0).padStart(6)}   this build ${median(mine).toFixed(0).padStart(6)}   ratio (per-round median) ${median(ratios).toFixed(3)}  [${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}]`,
    );
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
