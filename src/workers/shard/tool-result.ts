/**
 * Maps what a Tool Service answered into an MCP `CallToolResult` (docs/contracts/tool-execution-v1.md
 * "Tool execution"). A Tool Service failure is never a protocol error: it is
 * `isError: true` with a text block that names the cause, so the calling
 * model can read it.
 *
 * The mapping is era-neutral: `json` is the contract-v1 (2025-11-25) answer,
 * and `value` keeps the Tool Service's own result object so that
 * `call-result.ts` can validate `structuredContent` against the tool's
 * `outputSchema` and shape the answer for the request's protocol era without
 * parsing it again.
 */
import { Type, Compile } from '../../shared/vendor/typebox.js';

const Meta = Type.Optional(Type.Record(Type.String(), Type.Unknown()));
const Annotations = Type.Optional(Type.Record(Type.String(), Type.Unknown()));

/** MCP 2025-11-25 content blocks; unknown extra fields are allowed, as the spec's schemas allow. */
const ContentBlockSchema = Type.Union([
  Type.Object({ type: Type.Literal('text'), text: Type.String(), annotations: Annotations, _meta: Meta }),
  Type.Object({ type: Type.Literal('image'), data: Type.String(), mimeType: Type.String(), annotations: Annotations, _meta: Meta }),
  Type.Object({ type: Type.Literal('audio'), data: Type.String(), mimeType: Type.String(), annotations: Annotations, _meta: Meta }),
  Type.Object({ type: Type.Literal('resource_link'), uri: Type.String(), name: Type.String(), annotations: Annotations, _meta: Meta }),
  Type.Object({
    type: Type.Literal('resource'),
    resource: Type.Union([
      Type.Object({ uri: Type.String(), text: Type.String(), mimeType: Type.Optional(Type.String()) }),
      Type.Object({ uri: Type.String(), blob: Type.String(), mimeType: Type.Optional(Type.String()) }),
    ]),
    annotations: Annotations,
    _meta: Meta,
  }),
]);

/**
 * `CallToolResult` as a Tool Service may return it. `structuredContent` may
 * be any JSON value (2026-07-28, SEP-2106); a legacy answer adapts one that is
 * not an object (call-result.ts).
 */
export const CallToolResultSchema = Type.Object({
  content: Type.Array(ContentBlockSchema),
  structuredContent: Type.Optional(Type.Unknown()),
  isError: Type.Optional(Type.Boolean()),
  _meta: Meta,
});

const callToolResultValidator = Compile(CallToolResultSchema);
const contentBlockValidator = Compile(ContentBlockSchema);

/** A result ready to be placed in a JSON-RPC response: either serialised text or a value. */
export interface MappedResult {
  /** The `result` member as JSON text (contract v1: what a 2025-11-25 client receives unless call-result.ts adapts it). */
  json: string;
  isError: boolean;
  /**
   * The Tool Service's result object (a valid CallToolResult, an
   * `input_required` result, or the wrapper of plain JSON with the value as
   * `structuredContent` whatever its type); absent for results the gateway
   * made (failures) and for `unparsed` ones.
   */
  value?: Record<string, unknown>;
  /**
   * A text-block `CallToolResult` checked without parsing it (text-result-scan.ts): no `value`, and by
   * construction no `structuredContent`, `_meta` or `resultType`; `json` is the Tool Service's bytes.
   */
  unparsed?: boolean;
  /** `value` wraps a plain JSON answer (its `structuredContent` may be any JSON value; `json` keeps only an object). */
  wrapped?: boolean;
  /** A `422` refusal of the client's MRTR input (`requestState`, `inputResponses`): its message (contract v1.1). */
  inputRejected?: string;
}

/** `isError: true` with one text block saying what happened. */
export function toolError(message: string): MappedResult {
  return { json: JSON.stringify({ content: [{ type: 'text', text: message }], isError: true }), isError: true };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A parsed `200 application/json` answer. `rawText` is the body as received:
 * a valid CallToolResult is passed through as those bytes (no re-serialisation);
 * so is an `input_required` result (MRTR, contract v1.1; checked by call-result.ts).
 */
export function mapJsonAnswer(value: unknown, rawText: string): MappedResult {
  if (isObject(value)) {
    if (value['resultType'] === 'input_required') return { json: rawText, isError: false, value };
    if (Array.isArray(value['content'])) return mapCallToolResult(value, rawText);
  }
  const content = [{ type: 'text', text: rawText }];
  // Contract v1 keeps only object values as structuredContent; a 2026-07-28 answer takes any JSON value (call-result.ts).
  const json = JSON.stringify(isObject(value) ? { content, structuredContent: value } : { content });
  return { json, isError: false, value: { content, structuredContent: value }, wrapped: true };
}

/** Validates a CallToolResult-shaped value; a broken one becomes a tool error naming the first bad block. */
export function mapCallToolResult(value: object, rawText?: string): MappedResult {
  if ((value as { resultType?: unknown }).resultType === 'input_required') {
    return { json: rawText ?? JSON.stringify(value), isError: false, value: value as Record<string, unknown> };
  }
  if (callToolResultValidator.Check(value)) {
    return { json: rawText ?? JSON.stringify(value), isError: value.isError === true, value: value as Record<string, unknown> };
  }
  const content = (value as { content?: unknown }).content;
  if (!Array.isArray(content)) return toolError('Tool Service answer is malformed: "content" must be an array of content blocks');
  const bad = content.findIndex((block) => !contentBlockValidator.Check(block));
  if (bad >= 0) {
    const type = (content[bad] as { type?: unknown } | null)?.type;
    return toolError(`Tool Service answer is malformed: content block ${bad} (type ${JSON.stringify(type ?? null)}) is not a valid MCP content block`);
  }
  return toolError('Tool Service answer is malformed: "isError" must be a boolean and "_meta" an object');
}

/** The `code` values of a 422 that refuse the client's MRTR input (contract v1.1 §6). */
const INPUT_REJECTIONS = new Set(['invalid_request_state', 'invalid_input_responses']);

/**
 * The message for a non-2xx status (401/403 say "permission denied"). A
 * `422` whose body is `{"code":"invalid_request_state"|"invalid_input_responses","message"}`
 * also carries `inputRejected`: the Tool Service refuses the client's
 * `requestState` / `inputResponses`, which call-result.ts answers as a
 * JSON-RPC `-32602` when the call carried such input.
 */
export function statusError(status: number, bodySnippet: string): MappedResult {
  const snippet = bodySnippet.trim() === '' ? '' : `: ${bodySnippet.trim().slice(0, 200)}`;
  if (status === 401 || status === 403) return toolError(`Tool Service refused the call: permission denied (HTTP ${status})${snippet}`);
  const failed = toolError(`Tool Service failed with HTTP ${status}${snippet}`);
  if (status === 422) {
    let body: unknown;
    try {
      body = JSON.parse(bodySnippet);
    } catch {
      return failed;
    }
    if (isObject(body) && typeof body['code'] === 'string' && INPUT_REJECTIONS.has(body['code'])) {
      const message = typeof body['message'] === 'string' ? body['message'].slice(0, 500) : body['code'];
      return { ...failed, inputRejected: message };
    }
  }
  return failed;
}
