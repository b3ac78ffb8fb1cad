/**
 * JSON-RPC 2.0 envelope handling: the compiled envelope validator (compiled
 * once at module load, `Check` per request, `Errors` never on the hot path)
 * and the error-response builders with the one failure → HTTP status table.
 */
import { Type, type Static, Compile } from '../vendor/typebox.js';
import { JsonRpcErrorCode } from '../errors.js';
import { JSON_CONTENT_TYPE, type Reply } from './reply.js';

/** A JSON-RPC request id: MCP forbids null for requests. */
export type RequestId = string | number;

const RequestIdSchema = Type.Union([Type.String({ maxLength: 1024 }), Type.Number()]);

/** A request or notification as it arrives. `params` is checked per method. */
export const EnvelopeSchema = Type.Object({
  jsonrpc: Type.Literal('2.0'),
  id: Type.Optional(RequestIdSchema),
  method: Type.String({ minLength: 1, maxLength: 256 }),
  params: Type.Optional(Type.Unknown()),
});
export type Envelope = Static<typeof EnvelopeSchema>;

/** A client's answer to a server request (the gateway sends none; acknowledged with 202). */
export const ClientResponseSchema = Type.Object({
  jsonrpc: Type.Literal('2.0'),
  id: Type.Union([RequestIdSchema, Type.Null()]),
});

/** Compiled once at module load: `Check` per request, `Errors` only after a failure. */
export const envelopeValidator = Compile(EnvelopeSchema);
export const clientResponseValidator = Compile(ClientResponseSchema);

/** HTTP status for each JSON-RPC error code (docs/contracts/errors.md). */
export function httpStatusForRpcError(code: number): number {
  return code === JsonRpcErrorCode.ParseError || code === JsonRpcErrorCode.InvalidRequest ? 400 : 200;
}

/** An id given by its exact JSON text from the request (see `exactId` in id-text.ts): a number JSON.parse rounded. */
export interface ExactId {
  readonly json: string;
}

/** Serialises an id for splicing into a pre-built response. */
export function encodeId(id: RequestId | ExactId | null): string {
  if (typeof id === 'object' && id !== null) return id.json;
  // 1e400 parses to Infinity, which is not JSON: such an id is answered as null (unless given as its exact text).
  if (typeof id === 'number') return Number.isFinite(id) ? String(id) : 'null';
  return JSON.stringify(id);
}

/** The JSON text of a JSON-RPC error response. */
export function errorResponseText(id: RequestId | ExactId | null, code: number, message: string, data?: unknown): string {
  return errorResponseForIdText(encodeId(id), code, message, data);
}

/** The JSON text of a JSON-RPC error response for an id already in its JSON text form. */
export function errorResponseForIdText(idText: string, code: number, message: string, data?: unknown): string {
  const error = data === undefined ? { code, message } : { code, message, data };
  return `{"jsonrpc":"2.0","id":${idText},"error":${JSON.stringify(error)}}`;
}

/** A complete error reply; the HTTP status follows the code unless given. */
export function rpcErrorReply(id: RequestId | ExactId | null, code: number, message: string, options: { status?: number; headers?: Reply['headers']; data?: unknown } = {}): Reply {
  return {
    status: options.status ?? httpStatusForRpcError(code),
    contentType: JSON_CONTENT_TYPE,
    body: errorResponseText(id, code, message, options.data),
    ...(options.headers ? { headers: options.headers } : {}),
  };
}

/** A complete success reply around an already-serialised `result`. */
export function resultReply(id: RequestId | ExactId, resultJson: string): Reply {
  return { status: 200, contentType: JSON_CONTENT_TYPE, body: `{"jsonrpc":"2.0","id":${encodeId(id)},"result":${resultJson}}` };
}
