/**
 * The floor of `tools/call` on the bench's machine (issue 9): the two shapes
 * the prototypes measured, each as small as it can be, so that a
 * bench run shows what any gateway of that shape costs here — and how much of
 * the real gateway's cost is the shape and how much is everything else it
 * does (validation, limits, timeouts, strict framing, metrics, SSE, auth).
 *
 *  - `inline`:  one thread — uWebSockets.js, `JSON.parse` of the body, the
 *               tool name checked, the client's argument bytes spliced into a
 *               pre-built upstream request, one `write` on a keep-alive
 *               `net.Socket`, nothing of the answer parsed but its head's
 *               `Content-Length`, the body wrapped as a JSON-RPC result;
 *  - `sharded`: the same, with everything after the parse on one worker
 *               thread, reached through the gateway's own shared-memory rings
 *               (src/shared/threads/ring.ts; one ring each way, `Atomics`
 *               notify on empty → non-empty): the acceptor sends
 *               `[callId][tool][argument bytes]`, the worker answers
 *               `[callId][status][body]`, the acceptor writes the envelope.
 *
 * Not a gateway: no timeouts, no chunked answers, no limits, no error paths
 * beyond a 502; a Tool Service that misbehaves breaks it. Only the echo Tool
 * Service of the bench stands behind it.
 *
 * Usage: `node dist/bench/floor-gateway.js --mode inline|sharded --port P
 * --upstream URL [--tools N] [--connections C] [--host H]`. Prints
 * `listening <port>` once accepting; serves `POST /mcp`.
 */
import { connect, type Socket } from 'node:net';
import { parseArgs } from 'node:util';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import type { HttpResponse } from 'uWebSockets.js';
import { argumentsBytes } from '../src/shared/protocol/arguments-span.js';
import { createRing, RingReader, RingWriter, type RingMemory } from '../src/shared/threads/ring.js';
import type { Manifest } from './catalog.js';

const FLOOR_MODES = ['inline', 'sharded'] as const;
type FloorMode = (typeof FLOOR_MODES)[number];
const RING_BYTES = 1024 * 1024;
const HEAD_END = Buffer.from('\r\n\r\n');
const LENGTH_FIELD = Buffer.from('content-length:');

/** One tool's request, all but the content-length and the arguments (strings: it crosses to the worker by structured clone). */
interface ToolSpec {
  head: string;
  prefix: string;
}

/** A {@link ToolSpec} with its body prefix encoded once. */
interface ToolRequest {
  head: string;
  prefix: Buffer;
}

interface WorkerInput {
  upstream: string;
  connections: number;
  tools: ToolSpec[];
  toWorker: RingMemory;
  toAcceptor: RingMemory;
}

type Answer = (status: number, body: Buffer) => void;

function toolSpecs(upstream: URL, manifest: Manifest): ToolSpec[] {
  return manifest.tools.map((t) => ({
    head: `POST ${t.execution.path} HTTP/1.1\r\nhost: ${upstream.host}\r\ncontent-type: application/json\r\naccept: application/json\r\ncontent-length: `,
    prefix: `{"name":${JSON.stringify(t.name)},"version":${JSON.stringify(t.version)},"arguments":`,
  }));
}

const toolRequests = (specs: ToolSpec[]): ToolRequest[] => specs.map((t) => ({ head: t.head, prefix: Buffer.from(t.prefix) }));

/** The request for `tool` with `args` spliced in: one buffer, one write. */
function requestBytes(tool: ToolRequest, args: Uint8Array): Buffer {
  const bodyLength = tool.prefix.length + args.length + 1;
  const head = `${tool.head}${bodyLength}\r\n\r\n`;
  const out = Buffer.allocUnsafe(head.length + bodyLength);
  let o = out.write(head, 0, 'latin1');
  o += tool.prefix.copy(out, o);
  out.set(args, o);
  out[o + args.length] = 0x7d; // }
  return out;
}

/** A keep-alive HTTP/1.1 connection: one request at a time, answers framed by Content-Length only. */
class LeanConnection {
  private pending: Buffer | null = null;
  private answer: Answer | null = null;

  constructor(
    private readonly socket: Socket,
    private readonly release: (c: LeanConnection) => void,
    private readonly forget: (c: LeanConnection) => void,
  ) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', () => undefined); // 'close' follows
    // The Tool Service closes idle keep-alive connections: drop this one from the pool, fail its call if any.
    socket.on('close', () => {
      this.forget(this);
      const answer = this.answer;
      this.answer = null;
      answer?.(502, Buffer.from('{}'));
    });
  }

  send(request: Buffer, answer: Answer): void {
    this.answer = answer;
    this.socket.write(request);
  }

  private onData(chunk: Buffer): void {
    const buf = this.pending === null ? chunk : Buffer.concat([this.pending, chunk]);
    const headEnd = buf.indexOf(HEAD_END);
    if (headEnd < 0) {
      this.pending = buf;
      return;
    }
    const lengthAt = buf.subarray(0, headEnd).toString('latin1').toLowerCase().indexOf(LENGTH_FIELD.toString('latin1'));
    const length = lengthAt < 0 ? 0 : Number.parseInt(buf.toString('latin1', lengthAt + LENGTH_FIELD.length, headEnd), 10);
    const bodyStart = headEnd + HEAD_END.length;
    if (buf.length < bodyStart + length) {
      this.pending = buf;
      return;
    }
    this.pending = null;
    const status = Number.parseInt(buf.toString('latin1', 9, 12), 10);
    const answer = this.answer;
    this.answer = null;
    this.release(this);
    answer?.(status, buf.subarray(bodyStart, bodyStart + length));
  }
}

/** At most `size` connections to one origin, FIFO wait when all are busy. */
class LeanPool {
  private readonly idle: LeanConnection[] = [];
  private readonly waiting: Array<{ request: Buffer; answer: Answer }> = [];
  private open = 0;

  constructor(
    private readonly origin: URL,
    private readonly size: number,
  ) {}

  call(request: Buffer, answer: Answer): void {
    const c = this.idle.pop();
    if (c !== undefined) c.send(request, answer);
    else if (this.open < this.size) {
      this.open++;
      new LeanConnection(connect(Number(this.origin.port), this.origin.hostname), this.released, this.forgotten).send(request, answer);
    } else this.waiting.push({ request, answer });
  }

  private readonly forgotten = (c: LeanConnection): void => {
    this.open--;
    const i = this.idle.indexOf(c);
    if (i >= 0) this.idle.splice(i, 1);
  };

  private readonly released = (c: LeanConnection): void => {
    const next = this.waiting.shift();
    if (next !== undefined) c.send(next.request, next.answer);
    else this.idle.push(c);
  };
}

/** The worker of `sharded`: call frames in, result frames out. */
function runWorker(input: WorkerInput): void {
  const pool = new LeanPool(new URL(input.upstream), input.connections);
  const tools = toolRequests(input.tools);
  const writer = new RingWriter(input.toAcceptor, { maxBacklogBytes: Number.POSITIVE_INFINITY });
  new RingReader(input.toWorker, (buf, offset, length) => {
    const callId = buf.readUInt32LE(offset);
    const tool = tools[buf.readUInt32LE(offset + 4)] as ToolRequest;
    // The ring's bytes are valid only during this callback: requestBytes copies them.
    pool.call(requestBytes(tool, buf.subarray(offset + 8, offset + length)), (status, body) => {
      const at = writer.reserve(8 + body.length);
      writer.buf.writeUInt32LE(callId, at);
      writer.buf.writeUInt32LE(status, at + 4);
      body.copy(writer.buf, at + 8);
      writer.commit();
    });
  });
  // A pending Atomics.waitAsync does not keep a worker alive; a port listener does.
  parentPort?.on('message', () => undefined);
  parentPort?.postMessage('ready');
}

/** The JSON-RPC answer around the Tool Service's body (or a gateway error). */
function envelope(idText: string, status: number, body: Uint8Array): string {
  if (status !== 200) return `{"jsonrpc":"2.0","id":${idText},"error":{"code":-32603,"message":"Tool Service answered ${status}"}}`;
  return `{"jsonrpc":"2.0","id":${idText},"result":${Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8')}}`;
}

/** One request on the acceptor: its response object, whether it was aborted, its id as JSON. */
interface Pending {
  res: HttpResponse;
  aborted: boolean;
  idText: string;
}

function reply(p: Pending, text: string): void {
  if (!p.aborted) p.res.cork(() => p.res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(text));
}

async function runServer(): Promise<void> {
  const { values } = parseArgs({
    options: {
      mode: { type: 'string', default: 'inline' },
      port: { type: 'string', default: '0' },
      host: { type: 'string', default: '127.0.0.1' },
      upstream: { type: 'string' },
      tools: { type: 'string', default: '50' },
      connections: { type: 'string', default: '64' },
    },
  });
  const mode = values.mode as FloorMode;
  if (!FLOOR_MODES.includes(mode)) throw new Error(`--mode: expected one of ${FLOOR_MODES.join(', ')}, got ${values.mode}`);
  if (values.upstream === undefined) throw new Error('--upstream URL is required');
  const upstream = new URL(values.upstream);
  const connections = Number(values.connections);
  const manifest = (await (await fetch(`${values.upstream}/manifest?tools=${values.tools}`, { signal: AbortSignal.timeout(5000) })).json()) as Manifest;
  const specs = toolSpecs(upstream, manifest);
  const toolIndex = new Map(manifest.tools.map((t, i) => [t.name, i]));

  let forward: (p: Pending, tool: number, args: Uint8Array) => void;
  if (mode === 'inline') {
    const pool = new LeanPool(upstream, connections);
    const tools = toolRequests(specs);
    forward = (p, tool, args) => pool.call(requestBytes(tools[tool] as ToolRequest, args), (status, body) => reply(p, envelope(p.idText, status, body)));
  } else {
    const input: WorkerInput = { upstream: values.upstream, connections, tools: specs, toWorker: createRing(RING_BYTES), toAcceptor: createRing(RING_BYTES) };
    const worker = new Worker(new URL(import.meta.url), { workerData: input });
    await new Promise((resolve) => worker.once('message', resolve));
    // Calls in flight by id: a slot table, no Map.
    const slots: Array<Pending | null> = [];
    const free: number[] = [];
    const writer = new RingWriter(input.toWorker, { maxBacklogBytes: Number.POSITIVE_INFINITY });
    new RingReader(input.toAcceptor, (buf, offset, length) => {
      const callId = buf.readUInt32LE(offset);
      const p = slots[callId] as Pending;
      slots[callId] = null;
      free.push(callId);
      reply(p, envelope(p.idText, buf.readUInt32LE(offset + 4), buf.subarray(offset + 8, offset + length)));
    });
    forward = (p, tool, args) => {
      const callId = free.pop() ?? slots.length;
      slots[callId] = p;
      const at = writer.reserve(8 + args.length);
      writer.buf.writeUInt32LE(callId, at);
      writer.buf.writeUInt32LE(tool, at + 4);
      writer.buf.set(args, at + 8);
      writer.commit();
    };
  }

  const { uWS } = await import('./uws.js');
  const { listenUntilSignal } = await import('./uws-listen.js');
  const app = uWS.App();
  app.post('/mcp', (res: HttpResponse) => {
    const p: Pending = { res, aborted: false, idText: 'null' };
    const chunks: Buffer[] = [];
    res.onAborted(() => {
      p.aborted = true;
    });
    res.onData((chunk, isLast) => {
      // uWS neuters `chunk` when this callback returns: copy it.
      const copy = Buffer.from(chunk.slice(0));
      if (!isLast) {
        chunks.push(copy);
        return;
      }
      const body = chunks.length === 0 ? copy : Buffer.concat([...chunks, copy]);
      const msg = JSON.parse(body.toString('utf8')) as { id?: unknown; method?: unknown; params?: { name?: unknown; arguments?: unknown } };
      p.idText = JSON.stringify(msg.id ?? null);
      const tool = msg.method === 'tools/call' && typeof msg.params?.name === 'string' ? toolIndex.get(msg.params.name) : undefined;
      if (tool === undefined) {
        reply(p, `{"jsonrpc":"2.0","id":${p.idText},"error":{"code":-32602,"message":"unknown tool"}}`);
        return;
      }
      forward(p, tool, argumentsBytes(body) ?? Buffer.from(JSON.stringify(msg.params?.arguments ?? {})));
    });
  });
  app.any('/*', (res) => {
    res.writeStatus('404 Not Found').end();
  });
  listenUntilSignal(app, values.host, Number(values.port));
}

if (isMainThread) await runServer();
else runWorker(workerData as WorkerInput);
