/**
 * The floor gateways' upstream side (bench/floor-gateway.ts): pre-built
 * request bytes per tool and a keep-alive HTTP/1.1 client that parses
 * nothing of an answer but its head's `Content-Length` — the lean client of
 * issue 9's prototypes, as small as it can be. Not a real client: no
 * timeouts, no chunked answers, no limits (see ADR-0005 for the gateway's).
 */
import { connect, type Socket } from 'node:net';
import type { RingMemory } from '../src/shared/threads/ring.js';
import type { Manifest } from './catalog.js';

const HEAD_END = Buffer.from('\r\n\r\n');
const LENGTH_FIELD = 'content-length:';

/** One tool's request, all but the content-length and the arguments (strings: it crosses to the worker by structured clone). */
export interface ToolSpec {
  head: string;
  prefix: string;
}

/** A {@link ToolSpec} with its body prefix encoded once. */
export interface ToolRequest {
  head: string;
  prefix: Buffer;
}

export interface FloorWorkerInput {
  upstream: string;
  connections: number;
  tools: ToolSpec[];
  toWorker: RingMemory;
  toAcceptor: RingMemory;
}

export type Answer = (status: number, body: Buffer) => void;

export function toolSpecs(upstream: URL, manifest: Manifest): ToolSpec[] {
  return manifest.tools.map((t) => ({
    head: `POST ${t.execution.path} HTTP/1.1\r\nhost: ${upstream.host}\r\ncontent-type: application/json\r\naccept: application/json\r\ncontent-length: `,
    prefix: `{"name":${JSON.stringify(t.name)},"version":${JSON.stringify(t.version)},"arguments":`,
  }));
}

export const toolRequests = (specs: ToolSpec[]): ToolRequest[] => specs.map((t) => ({ head: t.head, prefix: Buffer.from(t.prefix) }));

/** The request for `tool` with `args` spliced in: one buffer, one write. */
export function requestBytes(tool: ToolRequest, args: Uint8Array): Buffer {
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
    const lengthAt = buf.toString('latin1', 0, headEnd).toLowerCase().indexOf(LENGTH_FIELD);
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
export class LeanPool {
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
