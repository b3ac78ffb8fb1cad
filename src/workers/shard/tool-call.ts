/**
 * The shard's decision for one checked `tools/call`: resolve the tool in the
 * route's runtime (exactly one active version, else unknown / ambiguous) and
 * check the arguments with the tool's compiled validator. The envelope and
 * `params` were already checked by the acceptor, which also writes the
 * JSON-RPC envelope of the answer: this module produces only the `result`
 * or `error` member. Pure: callable from a unit test with no thread and no HTTP.
 */
import { ARGUMENTS_NOT_JSON, CallOutcome, type CallRequest } from '../../shared/calls.js';
import { UnsafePatternError } from '../../shared/catalog/linear-regexp.js';
import { JsonRpcErrorCode } from '../../shared/errors.js';
import { ResultKind } from '../../shared/threads/call-frames.js';
import { gatewayResult } from './call-result.js';
import type { ResolvedTool, RouteRuntime } from './route-runtime.js';
import { toolError } from './tool-result.js';

/** An answer decided without calling the Tool Service. */
export interface Refusal {
  kind: typeof ResultKind.Result | typeof ResultKind.Error;
  outcome: CallOutcome;
  status: number;
  /** The `result` member (Result) or the `error` member (Error), as JSON text. */
  payload: string;
}

const MAX_VIOLATIONS = 20;

function rpcError(code: number, message: string, outcome: CallOutcome = CallOutcome.RpcError, status = 200): Refusal {
  return { kind: ResultKind.Error, outcome, status, payload: JSON.stringify({ code, message }) };
}

/** The tool to call, or the answer that replaces the call. */
export function prepareCall(runtime: RouteRuntime | undefined, req: CallRequest): ResolvedTool | Refusal {
  // The acceptor parsed the body without the arguments object (call-params.ts parseRequestBody): its bytes are first
  // parsed here, and bytes that are not JSON make the body not JSON — the acceptor's answer to that, with the id it read.
  let args: unknown;
  try {
    args = JSON.parse(req.argumentsJson);
  } catch {
    return rpcError(JsonRpcErrorCode.ParseError, ARGUMENTS_NOT_JSON, CallOutcome.RpcError, 400);
  }
  if (runtime === undefined) {
    // The route was removed (or its runtime lost) between the acceptor's lookup and now.
    return rpcError(JsonRpcErrorCode.InternalError, `route "${req.routeKey}" has no usable catalog on this shard`, CallOutcome.Rejected, 503);
  }
  const resolved = runtime.resolve(req.toolName);
  if (resolved.kind === 'unknown') return rpcError(JsonRpcErrorCode.InvalidParams, `Unknown tool: ${JSON.stringify(req.toolName)}`);
  if (resolved.kind === 'ambiguous') {
    return rpcError(
      JsonRpcErrorCode.InvalidParams,
      `Tool ${JSON.stringify(req.toolName)} is ambiguous: ${resolved.versions.length} active versions (${resolved.versions.join(', ')}); the catalog must mark exactly one active`,
    );
  }
  let valid: boolean;
  try {
    valid = resolved.validator.Check(args);
  } catch (err) {
    return checkFailure(req.toolName, err, req.modern);
  }
  if (valid) return resolved;
  // SEP-1303: a schema violation is a tool execution error the model can correct, not a protocol error.
  let errors: ReturnType<ResolvedTool['validator']['Errors']>;
  try {
    errors = resolved.validator.Errors(args);
  } catch (err) {
    return checkFailure(req.toolName, err, req.modern);
  }
  const lines = errors
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
  return toolFailure(`Invalid arguments for tool ${JSON.stringify(req.toolName)}:\n${lines.join('\n')}`, req.modern);
}

/** A tool execution error in the request's era (a 2026-07-28 result carries resultType and serverInfo). */
function toolFailure(message: string, modern: boolean): Refusal {
  return { kind: ResultKind.Result, outcome: CallOutcome.ToolError, status: 200, payload: gatewayResult(toolError(message), modern).payload };
}

/**
 * A validator that throws: the tool's schema has a pattern the linear-time engine cannot run (only a snapshot
 * built before that rule can carry one), or the arguments nest deep enough to exhaust the stack. Anything
 * else is a bug and propagates (the executor answers it as an internal error).
 */
function checkFailure(name: string, err: unknown, modern: boolean): Refusal {
  if (err instanceof UnsafePatternError) {
    return toolFailure(`Tool ${JSON.stringify(name)} cannot be called: its inputSchema ${err.message}; the gateway runs argument patterns only on a linear-time engine`, modern);
  }
  if (err instanceof RangeError) return rpcError(JsonRpcErrorCode.InvalidParams, 'Invalid params: params.arguments nests too deeply');
  throw err;
}
