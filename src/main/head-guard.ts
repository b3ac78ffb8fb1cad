/**
 * The copy of a request's head out of uWS, and the HTTP-layer checks uWS
 * does not make, in one `req.forEach` pass over the header lines (ADR-0001
 * "Raw HTTP behaviours per build", issue 11 #4/#6):
 *
 * - two `Content-Length` lines (even equal): both builds use the first and
 *   serve the rest of the body as a hidden pipelined request (RFC 9112 §6.3:
 *   refuse);
 * - two `Host` lines (20.30 uses the first, so only it would be checked);
 * - `Transfer-Encoding` with `Content-Length` (both builds refuse it before
 *   the handler today; kept so that no build can let it through);
 * - a control character or DEL in a header value (both builds accept DEL;
 *   20.57 refuses the others itself, 20.30 stalls on them before the handler).
 *
 * `req` is valid only while the handler runs, so every value a later step
 * needs is copied here; there is no second pass (`getHeader` per field
 * would walk the header list again for each). One {@link RequestHeadCopy}
 * per acceptor thread is reused for every request: the handler runs
 * synchronously, and the fields are read before the next request.
 */
import type { HttpRequest } from 'uWebSockets.js';
import { MCP_PARAM_PREFIX } from '../shared/catalog/x-mcp-header.js';
import type { ParamHeader } from '../shared/protocol/header-values.js';

/** Why a request head is refused (400 and the connection closed), or null. */
export type HeadFault = 'duplicate Content-Length' | 'duplicate Host' | 'Transfer-Encoding with Content-Length' | 'control character in a header value';

/** C0 controls other than HTAB, and DEL (RFC 9110 §5.5: field values are VCHAR, SP, HTAB and obs-text). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is this expression's job
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;

/** The request head as the MCP endpoint needs it ('' = header absent). */
export class RequestHeadCopy {
  host = '';
  origin = '';
  contentType = '';
  accept = '';
  protocolVersion = '';
  contentLength = '';
  requestId = '';
  sessionId = '';
  traceparent = '';
  mcpMethod = '';
  mcpName = '';
  /** `Mcp-Param-*` lines in arrival order (a fresh array per request that has any). */
  paramHeaders: ParamHeader[] = [];
  private hosts = 0;
  private contentLengths = 0;
  private transferEncoding = false;
  private controlChar = false;

  /** Copies the head of `req` and returns what is wrong with it, if anything. */
  read(req: HttpRequest): HeadFault | null {
    this.host = '';
    this.origin = '';
    this.contentType = '';
    this.accept = '';
    this.protocolVersion = '';
    this.contentLength = '';
    this.requestId = '';
    this.sessionId = '';
    this.traceparent = '';
    this.mcpMethod = '';
    this.mcpName = '';
    if (this.paramHeaders.length > 0) this.paramHeaders = [];
    this.hosts = 0;
    this.contentLengths = 0;
    this.transferEncoding = false;
    this.controlChar = false;
    req.forEach(this.visit);
    if (this.contentLengths > 1) return 'duplicate Content-Length';
    if (this.hosts > 1) return 'duplicate Host';
    if (this.transferEncoding && this.contentLengths > 0) return 'Transfer-Encoding with Content-Length';
    if (this.controlChar) return 'control character in a header value';
    return null;
  }

  /** Bound once: `forEach` gets the same function for every request (uWS reports names in lowercase). */
  private readonly visit = (name: string, value: string): void => {
    if (CONTROL.test(value)) this.controlChar = true;
    switch (name) {
      case 'host':
        if (this.hosts++ === 0) this.host = value;
        return;
      case 'content-length':
        if (this.contentLengths++ === 0) this.contentLength = value;
        return;
      case 'transfer-encoding':
        this.transferEncoding = true;
        return;
      case 'origin':
        if (this.origin === '') this.origin = value; // the first line, as `getHeader` would
        return;
      case 'content-type':
        if (this.contentType === '') this.contentType = value;
        return;
      case 'accept':
        if (this.accept === '') this.accept = value;
        return;
      case 'mcp-protocol-version':
        if (this.protocolVersion === '') this.protocolVersion = value;
        return;
      case 'x-request-id':
        if (this.requestId === '') this.requestId = value;
        return;
      case 'mcp-session-id':
        if (this.sessionId === '') this.sessionId = value;
        return;
      case 'traceparent':
        if (this.traceparent === '') this.traceparent = value;
        return;
      case 'mcp-method':
        if (this.mcpMethod === '') this.mcpMethod = value;
        return;
      case 'mcp-name':
        if (this.mcpName === '') this.mcpName = value;
        return;
      default:
        if (name.startsWith(MCP_PARAM_PREFIX)) this.paramHeaders.push([name, value]);
    }
  };
}
