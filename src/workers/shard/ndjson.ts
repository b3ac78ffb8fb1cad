/**
 * Incremental reader of a Tool Service's NDJSON answer (docs/contracts/tool-execution-v1.md): progress
 * and log frames, then exactly one result or error frame. Progress and log
 * frames go to `onFrame` (the SSE forwarder, or nothing for a JSON answer).
 */
import type { StreamFrame } from './notification-forwarder.js';
import { mapCallToolResult, toolError } from './tool-result.js';
import type { UpstreamResult } from './upstream.js';

/** Feeds chunks; `push` returns the final result as soon as the terminal frame arrives. */
export class NdjsonReader {
  private readonly decoder = new TextDecoder();
  private pending = '';

  constructor(private readonly onFrame: ((frame: StreamFrame) => void) | null = null) {}

  /** Consumes a chunk; the call's result once a result/error frame (or a broken line) is seen, else null. */
  push(chunk: Uint8Array): UpstreamResult | null {
    this.pending += this.decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = this.pending.indexOf('\n')) >= 0) {
      const line = this.pending.slice(0, nl);
      this.pending = this.pending.slice(nl + 1);
      const done = this.line(line);
      if (done !== null) return done;
    }
    return null;
  }

  /** The stream ended: the last unterminated line, or "no result frame". */
  end(): UpstreamResult {
    const last = this.line(this.pending + this.decoder.decode());
    return last ?? { ...toolError('Tool Service stream is malformed: it ended without a result frame'), cause: 'malformed' };
  }

  private line(line: string): UpstreamResult | null {
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
