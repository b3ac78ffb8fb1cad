/**
 * Incremental reader of a Tool Service's NDJSON answer (SPEC §7): progress
 * and log frames, then exactly one result or error frame. Progress and log
 * frames are dropped here; forwarding them as SSE belongs to the streaming
 * transport.
 */
import { mapCallToolResult, toolError } from './tool-result.js';
import type { UpstreamResult } from './upstream.js';

/** Feeds chunks; `push` returns the final result as soon as the terminal frame arrives. */
export class NdjsonReader {
  private readonly decoder = new TextDecoder();
  private pending = '';

  /** Consumes a chunk; the call's result once a result/error frame (or a broken line) is seen, else null. */
  push(chunk: Uint8Array): UpstreamResult | null {
    this.pending += this.decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = this.pending.indexOf('\n')) >= 0) {
      const line = this.pending.slice(0, nl);
      this.pending = this.pending.slice(nl + 1);
      const done = frameResult(line);
      if (done !== null) return done;
    }
    return null;
  }

  /** The stream ended: the last unterminated line, or "no result frame". */
  end(): UpstreamResult {
    const last = frameResult(this.pending + this.decoder.decode());
    return last ?? { ...toolError('Tool Service stream is malformed: it ended without a result frame'), cause: 'malformed' };
  }
}

function frameResult(line: string): UpstreamResult | null {
  if (line.trim() === '') return null;
  let frame: unknown;
  try {
    frame = JSON.parse(line);
  } catch {
    return { ...toolError('Tool Service stream is malformed: a line is not valid JSON'), cause: 'malformed' };
  }
  const type = typeof frame === 'object' && frame !== null ? (frame as { type?: unknown }).type : undefined;
  if (type === 'progress' || type === 'log') return null;
  if (type === 'result') {
    const result = (frame as { result?: unknown }).result;
    if (typeof result !== 'object' || result === null || Array.isArray(result)) {
      return { ...toolError('Tool Service stream is malformed: the result frame carries no result object'), cause: 'malformed' };
    }
    const mapped = mapCallToolResult(result);
    return { ...mapped, cause: mapped.isError ? 'tool_error' : 'ok' };
  }
  if (type === 'error') {
    const message = (frame as { message?: unknown }).message;
    return { ...toolError(`Tool Service reported an error: ${typeof message === 'string' ? message : 'no message'}`), cause: 'tool_error' };
  }
  return { ...toolError(`Tool Service stream is malformed: unknown frame type ${JSON.stringify(type ?? null)}`), cause: 'malformed' };
}
