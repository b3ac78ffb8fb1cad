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
import { stripOws } from './modern.js';

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
/** What the last {@link parseRequestBody} found of `params.arguments` (one per thread, read by the same request's checks); null: not scanned. */
let scan: ArgumentsScan | null = null;
/** True when the last body's arguments object was left out of the acceptor's parse (the shard parses it). */
let deferred = false;

const decoder = new TextDecoder();
/** For the text after the arguments: a U+FEFF there is a character JSON.parse must see, not a byte-order mark to drop. */
const tailDecoder = new TextDecoder('utf-8', { ignoreBOM: true });

/**
 * Parses a request body for the acceptor, leaving a `tools/call`'s
 * arguments object out: its bytes are forwarded as they are, and the shard
 * parses them once to validate them (tool-call.ts), so parsing them here too
 * cost a second parse of the largest part of the body (~11k of the ~17k
 * instructions `JSON.parse` took per call on the acceptor). The body is
 * parsed with `{}` where the last `params.arguments` object was.
 *
 * That is the whole body's verdict: the scan delimits the arguments by the
 * same grammar (strings by their escapes, brackets by depth), so when this
 * text parses and the arguments' bytes parse on their own, the body was
 * valid JSON with exactly those arguments. Bytes the scan delimits wrongly
 * are bytes that are not JSON, and one of the two parses refuses them: here
 * (`-32700`, id null) or on the shard (`-32700` with the request's id, which
 * was read). The split points are ASCII brackets, so decoding the two sides
 * apart gives the characters decoding the whole gives; when every character
 * of the whole came from one byte (an ASCII body, the usual case), the two
 * sides are cut from one decode instead (each `TextDecoder.decode` call costs
 * more than the bytes it decodes here; a body with other characters pays one
 * wasted decode). Throws what `JSON.parse` throws.
 *
 * `mayDefer` false parses the body whole and scans nothing: for a request
 * that cannot be a `tools/call` worth splitting (see {@link mayDeferArguments}).
 */
export function parseRequestBody(body: Uint8Array, mayDefer: boolean): unknown {
  if (!mayDefer) {
    scan = null;
    deferred = false;
    return JSON.parse(decoder.decode(body));
  }
  scan = scanArguments(body, span);
  deferred = scan === ArgumentsScan.Found && body[span[0] as number] === 0x7b;
  const text = decoder.decode(body);
  if (!deferred) return JSON.parse(text);
  // Every character from one byte (ASCII, or one invalid byte that became U+FFFD): byte offsets are character offsets.
  if (text.length === body.length) return JSON.parse(`${text.slice(0, span[0])}{}${text.slice(span[1] as number)}`);
  return JSON.parse(`${decoder.decode(body.subarray(0, span[0]))}{}${tailDecoder.decode(body.subarray(span[1]))}`);
}

/**
 * Bodies shorter than this are parsed whole: below ~140 bytes the arguments
 * are so small that the scan and the second decode cost more than parsing
 * them twice (a microbenchmark of the parse step: 0.1 µs more at 105 bytes,
 * 0.1 µs less at 143), and a `tools/list` body (~50 bytes) skips the scan.
 */
const DEFER_MIN_BYTES = 128;

/**
 * Whether a body may hold a `tools/call` whose arguments are worth leaving
 * to the shard: `methodHeader` is the 2026-07-28 `Mcp-Method` header (the
 * body must agree with it, or the request is refused), null for a legacy
 * request, which names its method only in the body.
 */
export function mayDeferArguments(body: Uint8Array, methodHeader: string | null): boolean {
  if (body.length < DEFER_MIN_BYTES) return false;
  return methodHeader === null || stripOws(methodHeader) === 'tools/call';
}

/**
 * The arguments as the client sent them, parsed: for the checks that need
 * their values on the acceptor (the 2026-07-28 `Mcp-Param-*` headers). Throws
 * a `SyntaxError` when deferred bytes are not JSON.
 */
export function callArgumentsValue(params: Record<string, unknown>, body: Uint8Array): unknown {
  return deferred ? JSON.parse(tailDecoder.decode(body.subarray(span[0], span[1]))) : params['arguments'];
}

/**
 * Fills `into` from `params.arguments` of the body {@link parseRequestBody}
 * parsed last (its arguments checked to be an object or absent; `args` is
 * that value, `{}` when absent or deferred). The client's bytes are spliced
 * as they are — serialising the parsed object costs more than finding them.
 * Returns the `-32602` message when the arguments cannot be forwarded, else
 * null.
 */
export function readCallArguments(into: CallArguments, params: Record<string, unknown>, args: object, body: Uint8Array, maxDepth: number): string | null {
  into.argumentsBytes = null;
  into.argumentsJson = '{}';
  if (params['arguments'] === undefined) return null;
  let tooDeep: boolean;
  // A body parsed whole was not scanned: it is JSON, so the scan can run now.
  if (scan === null) scan = scanArguments(body, span);
  if (scan === ArgumentsScan.Found) {
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
