/**
 * Failures of the lean HTTP/1.1 client, each with a stable code (callers
 * branch on `code`, never on message text) and the one fact a caller needs to
 * decide what it may do next: whether any byte of the request may have
 * reached the server. A POST that may have reached it must never be sent
 * again (the tool may already have run).
 *
 * A failure is handed to `ResponseHandler.onError`, never thrown, so it is a
 * plain object rather than an `Error`: no stack is captured on a path that a
 * dead Tool Service can make hot (thousands of refused connects per second).
 */

/** Stable failure codes. */
export const Http1FailureCode = {
  /** The TCP connect was refused (nothing listens). Never reached the server. */
  ConnectRefused: 'CONNECT_REFUSED',
  /** No connection (TCP + TLS handshake) within `connectTimeoutMs`. Never reached the server. */
  ConnectTimeout: 'CONNECT_TIMEOUT',
  /** Any other failure before the connection was up: DNS, unreachable network, TLS handshake or certificate. */
  ConnectFailed: 'CONNECT_FAILED',
  /** The request was written but the final response head did not arrive within `headersTimeoutMs`. */
  HeadersTimeout: 'HEADERS_TIMEOUT',
  /** The response body stalled: no byte for `bodyTimeoutMs`. */
  BodyTimeout: 'BODY_TIMEOUT',
  /** The call's own deadline passed (queue wait, connect and response included). */
  Deadline: 'DEADLINE',
  /** The connection was reset or closed by the server before the response was complete. */
  Reset: 'RESET',
  /** The response breaks HTTP/1.1 syntax or framing (RFC 9112); the connection is destroyed. */
  BadResponse: 'BAD_RESPONSE',
  /** The response head (status line + fields, or a trailer section) is larger than `maxHeaderBytes`. */
  HeadersTooLarge: 'HEADERS_TOO_LARGE',
  /** Every connection of the origin is busy and `maxQueued` calls already wait. Never reached the server. */
  QueueFull: 'QUEUE_FULL',
  /** The client was closed or destroyed with the call pending. */
  Closed: 'CLOSED',
} as const;
export type Http1FailureCode = (typeof Http1FailureCode)[keyof typeof Http1FailureCode];

const BRAND = Symbol.for('mcp-route-gateway.Http1Failure');

/** Why one request failed. */
export class Http1Failure {
  readonly [BRAND] = true;

  constructor(
    readonly code: Http1FailureCode,
    /** Human-readable detail, safe to log (no payload bytes). */
    readonly message: string,
    /**
     * True once any byte of the request was handed to the socket: the server
     * may have received it, and may have acted on it, so it must not be
     * retried. False only when the failure is certain to precede the write.
     */
    readonly mayHaveReachedServer: boolean,
    /** The system error code behind the failure when there is one (`ECONNREFUSED`, `ECONNRESET`, a TLS code…), else `''`. */
    readonly errno: string = '',
  ) {}

  /** Brand check that works across copies of this module (unlike `instanceof`). */
  static is(value: unknown): value is Http1Failure {
    return typeof value === 'object' && value !== null && (value as { [BRAND]?: boolean })[BRAND] === true;
  }
}

/** What the response parser reports; the connection turns it into an {@link Http1Failure}. */
export interface ParseError {
  code: typeof Http1FailureCode.BadResponse | typeof Http1FailureCode.HeadersTooLarge;
  message: string;
}
