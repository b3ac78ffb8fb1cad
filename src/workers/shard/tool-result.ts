/**
 * Maps what a Tool Service answered into an MCP `CallToolResult` (docs/contracts/tool-execution-v1.md
 * "Tool execution"). A Tool Service failure is never a protocol error: it is
 * `isError: true` with a text block that names the cause, so the calling
 * model can read it.
 */
import Type from 'typebox';
import { Compile } from 'typebox/compile';

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

/** `CallToolResult` as a Tool Service may return it. */
export const CallToolResultSchema = Type.Object({
  content: Type.Array(ContentBlockSchema),
  structuredContent: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  isError: Type.Optional(Type.Boolean()),
  _meta: Meta,
});

const callToolResultValidator = Compile(CallToolResultSchema);
const contentBlockValidator = Compile(ContentBlockSchema);

/** A result ready to be placed in a JSON-RPC response: either serialised text or a value. */
export interface MappedResult {
  /** The `result` member as JSON text. */
  json: string;
  isError: boolean;
}

/** `isError: true` with one text block saying what happened. */
export function toolError(message: string): MappedResult {
  return { json: JSON.stringify({ content: [{ type: 'text', text: message }], isError: true }), isError: true };
}

/**
 * A parsed `200 application/json` answer. `rawText` is the body as received:
 * a valid CallToolResult is passed through as those bytes (no re-serialisation).
 */
export function mapJsonAnswer(value: unknown, rawText: string): MappedResult {
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && Array.isArray((value as { content?: unknown }).content)) {
    return mapCallToolResult(value, rawText);
  }
  const wrapped: Record<string, unknown> = { content: [{ type: 'text', text: rawText }] };
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) wrapped['structuredContent'] = value;
  return { json: JSON.stringify(wrapped), isError: false };
}

/** Validates a CallToolResult-shaped value; a broken one becomes a tool error naming the first bad block. */
export function mapCallToolResult(value: object, rawText?: string): MappedResult {
  if (callToolResultValidator.Check(value)) {
    return { json: rawText ?? JSON.stringify(value), isError: value.isError === true };
  }
  const content = (value as { content?: unknown }).content;
  if (!Array.isArray(content)) return toolError('Tool Service answer is malformed: "content" must be an array of content blocks');
  const bad = content.findIndex((block) => !contentBlockValidator.Check(block));
  if (bad >= 0) {
    const type = (content[bad] as { type?: unknown } | null)?.type;
    return toolError(`Tool Service answer is malformed: content block ${bad} (type ${JSON.stringify(type ?? null)}) is not a valid MCP content block`);
  }
  return toolError('Tool Service answer is malformed: "structuredContent" must be an object and "isError" a boolean');
}

/** The message for a non-2xx status (401/403 say "permission denied"). */
export function statusError(status: number, bodySnippet: string): MappedResult {
  const snippet = bodySnippet.trim() === '' ? '' : `: ${bodySnippet.trim().slice(0, 200)}`;
  if (status === 401 || status === 403) return toolError(`Tool Service refused the call: permission denied (HTTP ${status})${snippet}`);
  return toolError(`Tool Service failed with HTTP ${status}${snippet}`);
}
