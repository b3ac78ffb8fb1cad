/**
 * What the client receives for a Tool Service's answer, per protocol era
 * (docs/decisions/0014-protocol-eras.md, tool-execution-v1.md §2, §6): the
 * last step of a call on the shard, after `tool-result.ts` mapped the HTTP
 * answer. The acceptor wraps the returned payload in the JSON-RPC envelope.
 *
 * - `structuredContent` is validated against the tool's `outputSchema`
 *   (compiled once per schema, regexes on the linear-time engine), unless the
 *   result is `isError`; missing or non-conforming → `isError` naming the
 *   violation (server/tools.mdx: servers MUST conform; the MCP SDK clients
 *   reject such answers, so the gateway says it first).
 * - `input_required` (MRTR, basic/patterns/mrtr.mdx) passes back unchanged to
 *   a 2026-07-28 client — after a check that the client declared every
 *   capability its input requests need (else `-32021`, HTTP 400); a legacy
 *   client cannot receive one (an `isError` says so).
 * - A Tool Service's `422` refusing the client's `requestState` /
 *   `inputResponses` becomes `-32602` (the spec: reject tampered state with
 *   an error).
 * - Modern complete results carry `resultType: "complete"` and
 *   `_meta["io.modelcontextprotocol/serverInfo"]` (spliced after the opening
 *   brace when the Tool Service sent no `_meta`: no re-serialisation).
 * - Legacy results are the bytes contract v1 always produced, except a
 *   `structuredContent` that 2025-11-25 cannot carry (not an object): it is
 *   dropped, and its JSON text is added as a text block when no text block
 *   carries it (adapted, nothing lost).
 */
import { CallOutcome } from '../../shared/calls.js';
import { JsonRpcErrorCode } from '../../shared/errors.js';
import { COMPLETE_RESULT_HEAD, completeResultJson, META } from '../../shared/protocol/modern.js';
import { SERVER_INFO } from '../../shared/protocol/mcp.js';
import { ResultKind } from '../../shared/threads/call-frames.js';
import type { ArgumentValidator } from './validator-cache.js';
import { toolError, type MappedResult } from './tool-result.js';

/** What the executor writes as the call's final frame. */
export interface FinalAnswer {
  kind: typeof ResultKind.Result | typeof ResultKind.Error;
  outcome: CallOutcome;
  status: number;
  /** The `result` member (Result) or the `error` member (Error), as JSON text. */
  payload: string;
}

/** What shaping needs of the call. */
export interface CallShape {
  readonly modern: boolean;
  readonly clientCapabilitiesJson: string;
  readonly inputResponsesJson: string;
  readonly requestStateJson: string;
}

/** The tool's compiled output validator, or null when it declares no `outputSchema`. */
export type OutputCheck = ArgumentValidator | null;

const MAX_VIOLATIONS = 20;
const STRUCTURED_MISSING = 'Tool Service answer breaks the tool\'s outputSchema: "structuredContent" is missing';
const INPUT_METHODS = new Set(['elicitation/create', 'sampling/createMessage', 'roots/list']);

function result(payload: string, isError: boolean): FinalAnswer {
  return { kind: ResultKind.Result, outcome: isError ? CallOutcome.ToolError : CallOutcome.Ok, status: 200, payload };
}

function rpcError(code: number, message: string, status: number, data?: unknown): FinalAnswer {
  return { kind: ResultKind.Error, outcome: CallOutcome.RpcError, status, payload: JSON.stringify(data === undefined ? { code, message } : { code, message, data }) };
}

/** A gateway-made result (a failure, a refusal) in the request's era. */
export function gatewayResult(mapped: MappedResult, modern: boolean): FinalAnswer {
  return result(modern ? withCompleteHead(mapped.json) : mapped.json, mapped.isError);
}

/** Shapes one mapped Tool Service answer for the client (see the module comment). */
export function finalAnswer(mapped: MappedResult, call: CallShape, output: OutputCheck): FinalAnswer {
  if (mapped.inputRejected !== undefined && (call.inputResponsesJson !== '' || call.requestStateJson !== '')) {
    return rpcError(JsonRpcErrorCode.InvalidParams, `Invalid params: the Tool Service refused the request's input: ${mapped.inputRejected}`, 200);
  }
  const value = mapped.value;
  if (value === undefined) {
    // An unparsed text-block result has no structuredContent: a tool with an outputSchema needs one.
    if (mapped.unparsed === true && output !== null && !mapped.isError) return gatewayResult(toolError(STRUCTURED_MISSING), call.modern);
    // Gateway-made and unparsed results alike: no _meta, resultType or structuredContent to shape.
    return gatewayResult(mapped, call.modern);
  }
  const resultType = value['resultType'];
  if (resultType === 'input_required') return inputRequired(mapped, value, call);
  if (resultType !== undefined && resultType !== 'complete') {
    return gatewayResult(toolError(`Tool Service answer is malformed: unknown resultType ${JSON.stringify(resultType)}`), call.modern);
  }
  if (output !== null && value['isError'] !== true) {
    const violation = outputViolation(value, output);
    if (violation !== null) return gatewayResult(toolError(violation), call.modern);
  }
  // Not an object: 2025-11-25 cannot carry it (legacy adapts it), 2026-07-28 can (SEP-2106).
  const nonObject = 'structuredContent' in value && !isObject(value['structuredContent']);
  if (!call.modern) {
    // The legacy fast path: the bytes contract v1 always produced (a wrapped plain answer already left out a non-object).
    return result(nonObject && mapped.wrapped !== true ? legacyAdapted(value) : mapped.json, mapped.isError);
  }
  if (!('_meta' in value) && resultType === undefined && !(nonObject && mapped.wrapped === true)) {
    return result(withCompleteHead(mapped.json), mapped.isError);
  }
  const meta = isObject(value['_meta']) ? value['_meta'] : {};
  const { resultType: _declared, _meta: _ignored, ...members } = value;
  return result(completeResultJson(JSON.stringify(members).slice(1, -1), { ...meta, [META.serverInfo]: SERVER_INFO }), mapped.isError);
}

/** `{"resultType":"complete","_meta":{serverInfo},…}` from a result object's JSON text, by splicing after `{`. */
function withCompleteHead(json: string): string {
  const text = json.trimStart();
  const rest = text.slice(1).trimStart();
  return rest.startsWith('}') ? completeResultJson('') : `{${COMPLETE_RESULT_HEAD}${text.slice(1)}`;
}

/** Legacy: the result without a non-object `structuredContent`; its JSON as a text block when no text block has it. */
function legacyAdapted(value: Record<string, unknown>): string {
  const { structuredContent, ...rest } = value;
  const text = JSON.stringify(structuredContent);
  const content = Array.isArray(rest['content']) ? (rest['content'] as unknown[]) : [];
  const carried = content.some((b) => isObject(b) && b['type'] === 'text' && b['text'] === text);
  return JSON.stringify({ ...rest, content: carried ? content : [...content, { type: 'text', text }] });
}

/** `null` when `structuredContent` conforms to the tool's `outputSchema`, else the message of the tool error. */
function outputViolation(value: Record<string, unknown>, output: ArgumentValidator): string | null {
  if (!('structuredContent' in value)) return STRUCTURED_MISSING;
  const structured = value['structuredContent'];
  let ok: boolean;
  try {
    ok = output.Check(structured);
  } catch (err) {
    if (err instanceof RangeError) return 'Tool Service answer breaks the tool\'s outputSchema: "structuredContent" nests too deeply to check';
    throw err;
  }
  if (ok) return null;
  const lines = output
    .Errors(structured)
    .filter((e) => e.keyword !== 'boolean')
    .slice(0, MAX_VIOLATIONS)
    .map((e) => `- ${e.instancePath === '' ? '/' : e.instancePath}: ${e.message}`);
  return `Tool Service answer breaks the tool's outputSchema:\n${lines.join('\n')}`;
}

/**
 * An `input_required` result (MRTR). Only a 2026-07-28 client can receive
 * it; its shape is checked (basic/patterns/mrtr.mdx: `inputRequests` values
 * are elicitation/create, sampling/createMessage or roots/list requests;
 * `requestState` a string; at least one of the two) and every input request
 * must be one the client declared it can answer.
 */
function inputRequired(mapped: MappedResult, value: Record<string, unknown>, call: CallShape): FinalAnswer {
  if (!call.modern) {
    return gatewayResult(toolError('The tool needs input from the client (an MRTR input_required result), which MCP 2025-11-25 cannot carry; call it with MCP 2026-07-28'), false);
  }
  const requests = value['inputRequests'];
  const state = value['requestState'];
  const malformed = (why: string): FinalAnswer => gatewayResult(toolError(`Tool Service answer is malformed: an input_required result ${why}`), true);
  if (requests === undefined && state === undefined) return malformed('needs inputRequests or requestState');
  if (state !== undefined && typeof state !== 'string') return malformed('has a requestState that is not a string');
  if (requests !== undefined && !isObject(requests)) return malformed('has inputRequests that is not an object');
  const missing: Record<string, Record<string, unknown>> = {};
  if (requests !== undefined) {
    const declared = parseCapabilities(call.clientCapabilitiesJson);
    for (const [key, request] of Object.entries(requests)) {
      if (!isObject(request) || typeof request['method'] !== 'string' || !INPUT_METHODS.has(request['method'])) {
        return malformed(`has input request ${JSON.stringify(key)} that is not an elicitation/create, sampling/createMessage or roots/list request`);
      }
      if (request['params'] !== undefined && !isObject(request['params'])) return malformed(`has input request ${JSON.stringify(key)} whose params is not an object`);
      const need = requiredCapability(request['method'], (request['params'] as Record<string, unknown> | undefined) ?? {}, declared);
      if (need !== null) mergeInto(missing, need);
    }
  }
  if (Object.keys(missing).length > 0) {
    // basic/index.mdx: a request that needs an undeclared client capability is MissingRequiredClientCapabilityError, HTTP 400.
    return rpcError(
      JsonRpcErrorCode.MissingRequiredClientCapability,
      `Missing required client capability: the tool needs ${Object.keys(missing).join(', ')}, which the request's clientCapabilities do not declare`,
      400,
      { requiredCapabilities: missing },
    );
  }
  // Passed back unchanged: the bytes the Tool Service sent.
  return result(mapped.json, false);
}

/** The capability an input request needs that `declared` lacks, as a ClientCapabilities fragment; null when declared. */
function requiredCapability(method: string, params: Record<string, unknown>, declared: Record<string, unknown>): Record<string, Record<string, unknown>> | null {
  if (method === 'roots/list') return isObject(declared['roots']) ? null : { roots: {} };
  if (method === 'sampling/createMessage') {
    const sampling = declared['sampling'];
    if (!isObject(sampling)) return { sampling: params['tools'] !== undefined ? { tools: {} } : {} };
    return params['tools'] !== undefined && !isObject(sampling['tools']) ? { sampling: { tools: {} } } : null;
  }
  // elicitation/create: url mode needs elicitation.url; form mode is implied by an empty elicitation object (schema ClientCapabilities).
  const elicitation = declared['elicitation'];
  if (params['mode'] === 'url') return isObject(elicitation) && isObject(elicitation['url']) ? null : { elicitation: { url: {} } };
  if (!isObject(elicitation)) return { elicitation: {} };
  return isObject(elicitation['form']) || !isObject(elicitation['url']) ? null : { elicitation: { form: {} } };
}

function mergeInto(into: Record<string, Record<string, unknown>>, need: Record<string, Record<string, unknown>>): void {
  for (const [k, v] of Object.entries(need)) into[k] = { ...(into[k] ?? {}), ...v };
}

function parseCapabilities(json: string): Record<string, unknown> {
  if (json === '') return {};
  const parsed = JSON.parse(json) as unknown;
  return isObject(parsed) ? parsed : {};
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
