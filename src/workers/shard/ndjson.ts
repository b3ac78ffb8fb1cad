/**
 * Incremental reader of a Tool Service's NDJSON answer (docs/contracts/tool-execution-v1.md): progress
 * and log frames, then exactly one result or error frame. Progress and log
 * frames go to `onFrame` (the SSE forwarder, or nothing for a JSON answer).
 *
 * Linear and bounded (issue 11 #5): each received byte is scanned for `\n`
 * once; a line that spans reads is copied once into one growable buffer
 * (never re-concatenated or re-scanned), and a line longer than the bound
 * fails the call. Lines are decoded from bytes only when complete, so a UTF-8
 * sequence split across reads needs no streaming decoder.
 *
 *   read n   ...{"type":"log",...}\n{"type":"progress","pro│     (n+1)  gress":1}\n{"ty…
 *            complete line → decoded from the read itself   │ partial → line buffer → completed there
 */
import { Buffer } from 'node:buffer';
import type { StreamFrame } from './notification-forwarder.js';
import { mapCallToolResult, toolError } from './tool-result.js';
import type { UpstreamResult } from './upstream.js';

const NEWLINE = 0x0a;
/** A line buffer that grew past this is dropped at reset, so a pooled reader does not keep a huge line's memory. */
const KEEP_LINE_BUFFER_BYTES = 64 * 1024;

/** Feeds chunks; `push` returns the final result as soon as the terminal frame arrives. */
export class NdjsonReader {
  /** Bytes of the current unterminated line. */
  private line: Buffer = Buffer.alloc(0);
  private lineLength = 0;

  constructor(
    private onFrame: ((frame: StreamFrame) => void) | null = null,
    /** Longest accepted line in bytes (without its `\n`). */
    private maxLineBytes: number = Number.MAX_SAFE_INTEGER,
  ) {}

  /** Prepares a pooled reader for a new stream. */
  reset(onFrame: ((frame: StreamFrame) => void) | null, maxLineBytes: number): void {
    this.onFrame = onFrame;
    this.maxLineBytes = maxLineBytes;
    this.lineLength = 0;
    if (this.line.length > KEEP_LINE_BUFFER_BYTES) this.line = Buffer.alloc(0);
  }

  /**
   * Consumes `chunk[start, end)`; returns the call's result once a result or
   * error frame (or a broken or oversize line) is seen, else null. Bytes after
   * the terminal frame are ignored.
   */
  push(chunk: Uint8Array, start = 0, end: number = chunk.length): UpstreamResult | null {
    // A view bounded at `end`, so indexOf never scans past the valid bytes of a reused read buffer.
    const view = Buffer.from(chunk.buffer, chunk.byteOffset + start, end - start);
    let at = 0;
    for (;;) {
      const nl = view.indexOf(NEWLINE, at);
      if (nl < 0) break;
      let done: UpstreamResult | null;
      if (this.lineLength === 0) {
        if (nl - at > this.maxLineBytes) return this.tooLong();
        done = this.frame(view.toString('utf8', at, nl));
      } else {
        if (!this.append(view, at, nl)) return this.tooLong();
        done = this.frame(this.line.toString('utf8', 0, this.lineLength));
        this.lineLength = 0;
      }
      if (done !== null) return done;
      at = nl + 1;
    }
    if (at < view.length && !this.append(view, at, view.length)) return this.tooLong();
    return null;
  }

  /** The stream ended: the last unterminated line, or "no result frame". */
  end(): UpstreamResult {
    const last = this.lineLength === 0 ? null : this.frame(this.line.toString('utf8', 0, this.lineLength));
    this.lineLength = 0;
    return last ?? malformed('it ended without a result frame');
  }

  /** Appends `src[from, to)` to the line buffer; false when the line would pass the bound. */
  private append(src: Buffer, from: number, to: number): boolean {
    const needed = this.lineLength + (to - from);
    if (needed > this.maxLineBytes) return false;
    if (needed > this.line.length) {
      const grown = Buffer.allocUnsafeSlow(Math.min(Math.max(needed, 2 * this.line.length, 4096), this.maxLineBytes));
      this.line.copy(grown, 0, 0, this.lineLength);
      this.line = grown;
    }
    src.copy(this.line, this.lineLength, from, to);
    this.lineLength = needed;
    return true;
  }

  private tooLong(): UpstreamResult {
    this.lineLength = 0;
    return { ...toolError(`Tool Service stream is malformed: a line is longer than ${this.maxLineBytes} bytes`), cause: 'too_large' };
  }

  private frame(line: string): UpstreamResult | null {
    if (line.trim() === '') return null;
    let frame: unknown;
    try {
      frame = JSON.parse(line);
    } catch {
      return malformed('a line is not valid JSON');
    }
    if (typeof frame !== 'object' || frame === null || Array.isArray(frame)) return malformed('a line is not a JSON object');
    const f = frame as Record<string, unknown>;
    switch (f['type']) {
      case 'progress': {
        const { progress, total, message } = f;
        if (typeof progress !== 'number' || (total !== undefined && typeof total !== 'number') || (message !== undefined && typeof message !== 'string')) {
          return malformed('a progress frame needs a numeric "progress" (and optional numeric "total", string "message")');
        }
        this.onFrame?.({ type: 'progress', progress, ...(total !== undefined ? { total } : {}), ...(message !== undefined ? { message } : {}) });
        return null;
      }
      case 'log': {
        const { level, data, logger } = f;
        if (typeof level !== 'string' || (logger !== undefined && typeof logger !== 'string')) return malformed('a log frame needs a string "level"');
        this.onFrame?.({ type: 'log', level, data, ...(logger !== undefined ? { logger } : {}) });
        return null;
      }
      case 'result': {
        const result = f['result'];
        if (typeof result !== 'object' || result === null || Array.isArray(result)) return malformed('the result frame carries no result object');
        const mapped = mapCallToolResult(result);
        return { ...mapped, cause: mapped.isError ? 'tool_error' : 'ok' };
      }
      case 'error': {
        const message = f['message'];
        return { ...toolError(`Tool Service reported an error: ${typeof message === 'string' ? message : 'no message'}`), cause: 'tool_error' };
      }
      default:
        return malformed(`unknown frame type ${JSON.stringify(f['type'] ?? null)}`);
    }
  }
}

function malformed(why: string): UpstreamResult {
  return { ...toolError(`Tool Service stream is malformed: ${why}`), cause: 'malformed' };
}
