/**
 * Stable error codes. Callers branch on `code`, never on message text
 * (modelled on undici `lib/core/errors.js`). `docs/contracts/errors.md` lists
 * every code; a contract test fails when one is missing there.
 */

/** JSON-RPC 2.0 / MCP error codes used on the wire. */
export const JsonRpcErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** Transport-level refusal decided before parsing (403/404/405/406/413/415/503 and header 400s), as the MCP SDK does. */
  TransportError: -32000,
  /** 2026-07-28: the MCP headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`) disagree with the body or are missing/malformed (HTTP 400). */
  HeaderMismatch: -32020,
  /** 2026-07-28: answering needs a client capability the request's `_meta` did not declare (HTTP 400, `data.requiredCapabilities`). */
  MissingRequiredClientCapability: -32021,
  /** 2026-07-28: the requested protocol version is not served (HTTP 400, `data.supported`, `data.requested`). */
  UnsupportedProtocolVersion: -32022,
} as const;
export type JsonRpcErrorCode = (typeof JsonRpcErrorCode)[keyof typeof JsonRpcErrorCode];

/** Gateway-internal failure codes (config, catalog, transport). */
export const GatewayErrorCode = {
  ConfigInvalid: 'CONFIG_INVALID',
  ManifestUnreachable: 'MANIFEST_UNREACHABLE',
  ManifestInvalid: 'MANIFEST_INVALID',
  RouteEntryInvalid: 'ROUTE_ENTRY_INVALID',
  ToolNameConflict: 'TOOL_NAME_CONFLICT',
  ToolCapExceeded: 'TOOL_CAP_EXCEEDED',
  SnapshotCorrupt: 'SNAPSHOT_CORRUPT',
  PortalUnreachable: 'PORTAL_UNREACHABLE',
  PortalInvalid: 'PORTAL_INVALID',
  RegistrySuspect: 'REGISTRY_SUSPECT',
  RedisUnavailable: 'REDIS_UNAVAILABLE',
  /** Readiness only: the route serves, but from a last good manifest or a warm-start copy. */
  Degraded: 'DEGRADED',
  /** A route's first catalog (or the registry itself) is still loading: 503 until it is there. */
  CatalogPending: 'CATALOG_PENDING',
  ShardQueueFull: 'SHARD_QUEUE_FULL',
  ShardUnavailable: 'SHARD_UNAVAILABLE',
  /** An SSE answer's client does not read: more than `server.maxBufferedBytesPerConnection` bytes unsent; the call is cancelled upstream. */
  ClientTooSlow: 'CLIENT_TOO_SLOW',
  /** A bug: an unexpected exception, never an expected upstream or input failure (those have their own codes). */
  Internal: 'INTERNAL',
  /** A listener's port cannot be bound (in use by any process, no permission, address not local). */
  ListenFailed: 'LISTEN_FAILED',
  /** The gateway is draining and the drain deadline passed (a call still running, a body still arriving). */
  ShuttingDown: 'SHUTTING_DOWN',
  /** A protected route got no credential, or one no provider of its policy accepts (401). */
  Unauthenticated: 'UNAUTHENTICATED',
  /** The caller is authenticated but no rule of the route's policy lets it use the route (403). */
  Forbidden: 'FORBIDDEN',
  /** A per-caller or per-route rate or concurrency limit is reached (429 + Retry-After). */
  RateLimited: 'RATE_LIMITED',
  /** A credential cannot be checked right now: JWKS unreachable, or too many first-sight checks in flight (503). */
  AuthUnavailable: 'AUTH_UNAVAILABLE',
  /** No native uWebSockets.js build loads for this Node ABI and libc (never run on the JavaScript polyfill). */
  RuntimeUnsupported: 'RUNTIME_UNSUPPORTED',
  /** An acceptor thread already holds `subscriptions.maxPerAcceptor` open `subscriptions/listen` streams. */
  SubscriptionLimit: 'SUBSCRIPTION_LIMIT',
} as const;
export type GatewayErrorCode = (typeof GatewayErrorCode)[keyof typeof GatewayErrorCode];

const BRAND = Symbol.for('mcp-route-gateway.GatewayError');

/** Error with a stable `code`; survives duplicated module copies via a `Symbol.for` brand. */
export class GatewayError extends Error {
  readonly code: GatewayErrorCode;
  readonly details: readonly string[];
  readonly [BRAND] = true;

  constructor(code: GatewayErrorCode, message: string, details: readonly string[] = []) {
    super(message);
    this.name = 'GatewayError';
    this.code = code;
    this.details = details;
  }

  /** Brand check that works across copies of this module (unlike `instanceof`). */
  static is(value: unknown): value is GatewayError {
    return typeof value === 'object' && value !== null && (value as { [BRAND]?: boolean })[BRAND] === true;
  }

  /** Plain `{code, message, details}` for crossing a thread boundary (a structured-cloned Error loses its class). */
  toWire(): WireError {
    return { code: this.code, message: this.message, details: [...this.details] };
  }
}

/** The structured-clone-safe form of a {@link GatewayError}. */
export interface WireError {
  code: GatewayErrorCode;
  message: string;
  details: string[];
}
