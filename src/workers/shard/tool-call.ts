/**
 * `tools/call` handling on the shard: parse the forwarded request, resolve the
 * tool in the route snapshot, validate the arguments with the tool's compiled
 * validator, call the Tool Service, and build the JSON-RPC response text.
 * Bytes in, text out: callable from a unit test with no thread and no HTTP.
 */
import { JsonRpcErrorCode } from '../../shared/errors.js';
import { envelopeValidator, errorResponseText, encodeId, httpStatusForRpcError, type RequestId } from '../../shared/protocol/jsonrpc.js';
import { CallOutcome, type CallContext } from '../../shared/threads/frames.js';
import { isMcpLogLevel, LOG_LEVEL_META_KEY, type McpLogLevel } from '../../shared/protocol/mcp-logging.js';
import type { CancelSignal } from './cancel.js';
import { NotificationForwarder } from './notification-forwarder.js';
import type { RouteRuntime } from './route-runtime.js';
import { toolError } from './tool-result.js';
import type { UpstreamResult } from './upstream.js';
import type { LegacyUpstreamCall as UpstreamCall } from './upstream-legacy.js';

/** What the shard sends back for one call. */
export interface CallAnswer {
  status: number;
  outcome: CallOutcome;
  body: string;
  /** Set when the Tool Service was called: its failure cause label (for metrics and logs). */
  upstream?: { serviceId: string; cause: UpstreamResult['cause'] };
}

/** Anything that can execute an upstream call (the real client, or a test double in unit tests). */
export interface ToolCaller {
  call(call: UpstreamCall): Promise<UpstreamResult>;
}

const MAX_VIOLATIONS = 20;

/** Streaming and cancellation hooks of one call (the shard worker provides them; unit tests may omit them). */
export interface CallOptions {
  /** Sends one SSE event for this call; given only when the client accepts `text/event-stream`. */
  sendEvent?: (notificationJson: string) => void;
  /** Level for log frames when the request's `_meta` names none. */
  defaultLogLevel?: McpLogLevel;
  cancel?: CancelSignal;
}

function rpcError(id: RequestId | null, code: number, message: string): CallAnswer {
  return { status: httpStatusForRpcError(code), outcome: CallOutcome.RpcError, body: errorResponseText(id, code, message) };
}

function result(id: RequestId, json: string, isError: boolean): CallAnswer {
  return { status: 200, outcome: isError ? CallOutcome.ToolError : CallOutcome.Ok, body: `{"jsonrpc":"2.0","id":${encodeId(id)},"result":${json}}` };
}

/** Handles one forwarded `tools/call` request body for `runtime`'s route. */
export async function handleToolCall(
  bodyText: string,
  routeKey: string,
  runtime: RouteRuntime | undefined,
  ctx: CallContext,
  caller: ToolCaller,
  options: CallOptions = {},
): Promise<CallAnswer> {
  let message: unknown;
  try {
    message = JSON.parse(bodyText);
  } catch {
    return rpcError(null, JsonRpcErrorCode.ParseError, 'Parse error: the body is not valid JSON');
  }
  if (!envelopeValidator.Check(message) || message.id === undefined) {
    return rpcError(null, JsonRpcErrorCode.InvalidRequest, 'Invalid Request: not a JSON-RPC 2.0 request');
  }
  const id = message.id;
  const params = message.params;
  if (typeof params !== 'object' || params === null || Array.isArray(params)) {
    return rpcError(id, JsonRpcErrorCode.InvalidParams, 'Invalid params: tools/call needs params {name, arguments}');
  }
  const { name, arguments: args = {} } = params as { name?: unknown; arguments?: unknown };
  if (typeof name !== 'string') return rpcError(id, JsonRpcErrorCode.InvalidParams, 'Invalid params: params.name must be a string');
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    return rpcError(id, JsonRpcErrorCode.InvalidParams, 'Invalid params: params.arguments must be an object');
  }
  if (runtime === undefined) {
    return { status: 503, outcome: CallOutcome.Rejected, body: errorResponseText(id, JsonRpcErrorCode.InternalError, `route "${routeKey}" has no usable catalog on this shard`) };
  }
  const resolved = runtime.resolve(name);
  if (resolved.kind === 'unknown') return rpcError(id, JsonRpcErrorCode.InvalidParams, `Unknown tool: ${JSON.stringify(name)}`);
  if (resolved.kind === 'ambiguous') {
    return rpcError(
      id,
      JsonRpcErrorCode.InvalidParams,
      `Tool ${JSON.stringify(name)} is ambiguous: ${resolved.versions.length} active versions (${resolved.versions.join(', ')}); the catalog must mark exactly one active`,
    );
  }
  let valid: boolean;
  try {
    valid = resolved.validator.Check(args);
  } catch {
    // Only pathological input (nesting deep enough to exhaust the stack) makes a compiled check throw.
    return rpcError(id, JsonRpcErrorCode.InvalidParams, 'Invalid params: params.arguments nests too deeply');
  }
  if (!valid) {
    // SEP-1303: a schema violation is a tool execution error the model can correct, not a protocol error.
    const lines = resolved.validator
      .Errors(args)
      .filter((e) => e.keyword !== 'boolean')
      .flatMap((e) => {
        const extra = (e.params as { additionalProperties?: unknown }).additionalProperties;
        // Name each unexpected property at its own path, so the model knows what to drop.
        if (e.keyword === 'additionalProperties' && Array.isArray(extra)) {
          return extra.map((name) => `- ${e.instancePath}/${String(name)}: is not an allowed property`);
        }
        return [`- ${e.instancePath === '' ? '/' : e.instancePath}: ${e.message}`];
      })
      .slice(0, MAX_VIOLATIONS);
    const mapped = toolError(`Invalid arguments for tool ${JSON.stringify(name)}:\n${lines.join('\n')}`);
    return result(id, mapped.json, true);
  }
  let argumentsJson: string;
  try {
    argumentsJson = JSON.stringify(args);
  } catch {
    return rpcError(id, JsonRpcErrorCode.InvalidParams, 'Invalid params: params.arguments nests too deeply');
  }
  const forwarder = options.sendEvent ? forwarderFor(params as Record<string, unknown>, options.sendEvent, options.defaultLogLevel ?? 'info') : null;
  const upstream = await caller.call({
    tool: resolved.tool,
    argumentsJson,
    routeKey,
    ctx,
    // An empty event starts the SSE answer (headers, heartbeats) before any frame qualifies for forwarding.
    ...(forwarder && options.sendEvent ? { onFrame: forwarder.onFrame, onStreamStart: () => options.sendEvent?.('') } : {}),
    ...(options.cancel ? { cancel: options.cancel } : {}),
  });
  return { ...result(id, upstream.json, upstream.isError), upstream: { serviceId: resolved.tool.serviceId, cause: upstream.cause } };
}

/** The forwarder for a request's `_meta`: its progress token and its own log level, if any. */
function forwarderFor(params: Record<string, unknown>, send: (json: string) => void, defaultLevel: McpLogLevel): NotificationForwarder {
  const meta = params['_meta'];
  const m = typeof meta === 'object' && meta !== null && !Array.isArray(meta) ? (meta as Record<string, unknown>) : {};
  const token = m['progressToken'];
  const level = m[LOG_LEVEL_META_KEY];
  return new NotificationForwarder(
    typeof token === 'string' || (typeof token === 'number' && Number.isFinite(token)) ? token : null,
    isMcpLogLevel(level) ? level : defaultLevel,
    send,
  );
}
