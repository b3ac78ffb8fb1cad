/**
 * The `tools/call` params both protocol eras read the same way (answer.ts for
 * 2025-11-25, answer-modern.ts for 2026-07-28): the argument bytes and their
 * nesting bound, and the per-request `_meta` context. Each writes into the
 * call being built, so a call costs no intermediate objects.
 */
import { Buffer } from 'node:buffer';
import type { CallRequest } from '../calls.js';
import { ArgumentsScan, nestsDeeperThan, scanArguments } from './arguments-span.js';
import { validBaggage, validTraceparent, validTracestate } from './context-headers.js';
import type { RequestId } from './jsonrpc.js';
import { isMcpLogLevel, LOG_LEVEL_META_KEY, MCP_LOG_LEVELS } from './mcp-logging.js';

/**
 * A checked `tools/call` for the owning shard. The acceptor keeps `idText`
 * (it alone writes the JSON-RPC envelope of the answer); the shard receives
 * only what it needs to resolve, validate and call the tool.
 */
export interface ForwardCall
  extends CallArguments,
    Pick<CallRequest, 'toolName' | 'progressTokenJson' | 'logLevel' | 'modern' | 'traceparent' | 'tracestate' | 'baggage' | 'clientCapabilitiesJson' | 'inputResponsesJson' | 'requestStateJson'> {
  kind: 'forward';
  method: 'tools/call';
  /** The request id as the JSON text the answer echoes. */
  idText: string;
  /** The id as parsed (notifications/cancelled names it). */
  id: RequestId;
}

/** Where a call's arguments go: the client's bytes (spliced as they are) or their JSON text. */
export interface CallArguments {
  argumentsBytes: Uint8Array | null;
  argumentsJson: string;
}

/** [start, end, nesting] of the arguments; one per thread, read right after each scan. */
const span = new Int32Array(3);

/**
 * Fills `into` from `params.arguments` (already checked to be an object or
 * absent; `args` is its parsed value, `{}` when absent). The client's bytes
 * are spliced as they are — serialising the parsed object costs more than
 * finding them. Returns the `-32602` message when the arguments cannot be
 * forwarded, else null.
 */
export function readCallArguments(into: CallArguments, params: Record<string, unknown>, args: object, body: Uint8Array, maxDepth: number): string | null {
  into.argumentsBytes = null;
  into.argumentsJson = '{}';
  if (params['arguments'] === undefined) return null;
  let tooDeep: boolean;
  if (scanArguments(body, span) === ArgumentsScan.Found) {
    into.argumentsBytes = body.subarray(span[0], span[1]);
    tooDeep = (span[2] as number) > maxDepth;
  } else {
    try {
      into.argumentsJson = JSON.stringify(args);
    } catch {
      // JSON.parse is iterative, JSON.stringify recursive: only pathological nesting gets here.
      return 'Invalid params: params.arguments nests too deeply';
    }
    tooDeep = nestsDeeperThan(Buffer.from(into.argumentsJson), maxDepth);
  }
  // Tool Services are spared documents nested deeper than the configured bound (many parsers recurse).
  if (tooDeep) return `Invalid params: params.arguments nests deeper than ${maxDepth} levels (tools.maxArgumentsDepth)`;
  return null;
}

/** The request context a call carries from `params._meta`. */
export type CallMeta = Pick<CallRequest, 'progressTokenJson' | 'logLevel' | 'traceparent' | 'tracestate' | 'baggage'>;

/**
 * Fills `into` from `params._meta` (null/absent: every field empty). The
 * progress token must be a string or a finite number; the log level one of
 * MCP's; SEP-414 trace context travels in `_meta` in every revision, and
 * malformed values are dropped like the HTTP headers (`tracestate` only with
 * a valid `traceparent`).
 */
export function readCallMeta(into: CallMeta, meta: Record<string, unknown> | null): void {
  into.progressTokenJson = '';
  into.logLevel = -1;
  into.traceparent = '';
  into.tracestate = '';
  into.baggage = '';
  if (meta === null) return;
  const token = meta['progressToken'];
  if (typeof token === 'string' || (typeof token === 'number' && Number.isFinite(token))) into.progressTokenJson = JSON.stringify(token);
  const level = meta[LOG_LEVEL_META_KEY];
  if (isMcpLogLevel(level)) into.logLevel = MCP_LOG_LEVELS.indexOf(level);
  const tp = meta['traceparent'];
  if (typeof tp === 'string') into.traceparent = validTraceparent(tp) ?? '';
  const ts = meta['tracestate'];
  if (into.traceparent !== '' && typeof ts === 'string') into.tracestate = validTracestate(ts) ?? '';
  const bg = meta['baggage'];
  if (typeof bg === 'string') into.baggage = validBaggage(bg) ?? '';
}

/** A call with every field present and empty (one object shape for both eras); the readers above fill it. */
export function forwardCall(id: RequestId, idText: string, toolName: string, modern: boolean): ForwardCall {
  return {
    kind: 'forward',
    method: 'tools/call',
    id,
    idText,
    toolName,
    argumentsBytes: null,
    argumentsJson: '{}',
    progressTokenJson: '',
    logLevel: -1,
    modern,
    traceparent: '',
    tracestate: '',
    baggage: '',
    clientCapabilitiesJson: '',
    inputResponsesJson: '',
    requestStateJson: '',
  };
}
