/**
 * The gateway's configuration schema (TypeBox), compiled once at boot.
 * Every key here is read by something; `docs/configuration.md` documents each
 * with its default and environment variable, and a contract test keeps the two in step.
 */
import { Type, type Static } from '../vendor/typebox.js';
import { AuthConfigSchema } from '../auth/config-schema.js';

/** Route keys are lowercase DNS labels (docs/contracts/mcp-endpoint.md). */
export const ROUTE_KEY_PATTERN = '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$';

/** One Tool Service behind a route, as in the Portal registry document v1. */
export const ServiceEntrySchema = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_.-]+$' }),
    baseUrl: Type.String({ minLength: 1, maxLength: 2048 }),
    manifestPath: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, pattern: '^/' })),
  },
  { additionalProperties: false },
);
export type ServiceEntry = Static<typeof ServiceEntrySchema>;

const Port = Type.Integer({ minimum: 0, maximum: 65535 });
const PositiveInt = (min: number, max: number): ReturnType<typeof Type.Integer> => Type.Integer({ minimum: min, maximum: max });
const StringList = Type.Array(Type.String({ minLength: 1, maxLength: 512 }), { maxItems: 1024 });

export const ConfigSchema = Type.Object(
  {
    server: Type.Object(
      {
        host: Type.String({ minLength: 1, maxLength: 255 }),
        port: Port,
        maxBodyBytes: PositiveInt(256, 64 * 1024 * 1024),
        /** Largest request header block (uWS 20.57's `UWS_HTTP_MAX_HEADERS_SIZE`, fixed once per process when uWS loads). */
        maxHeaderBytes: PositiveInt(1024, 1024 * 1024),
        /** An SSE answer whose bytes written since its client last caught up pass this is ended (`CLIENT_TOO_SLOW`), backpressure.ts. */
        maxBufferedBytesPerConnection: PositiveInt(16 * 1024, 256 * 1024 * 1024),
        /** `null` = derive from the bind address (loopback defaults), see http-policy.ts. */
        allowedOrigins: Type.Union([StringList, Type.Null()]),
        allowedHosts: Type.Union([StringList, Type.Null()]),
        retryAfterSeconds: PositiveInt(1, 3600),
        /** Client-facing refusals carry internal details (addresses, upstream errors); development only. */
        exposeErrorDetails: Type.Boolean(),
        /** After SIGTERM: readiness fails at once, traffic is still served this long, then the listeners close (docs/operations.md "Drain sequence"). */
        drainDelayMs: PositiveInt(0, 600_000),
        /** After the listeners closed: how long in-flight calls may still run before they are answered with an error. */
        drainTimeoutMs: PositiveInt(0, 3_600_000),
        /** The admin listener (health, metrics); `port: null` serves them on the traffic port. */
        admin: Type.Object(
          {
            /** `null` = `server.host`. */
            host: Type.Union([Type.String({ minLength: 1, maxLength: 255 }), Type.Null()]),
            port: Type.Union([Port, Type.Null()]),
          },
          { additionalProperties: false },
        ),
      },
      { additionalProperties: false },
    ),
    workers: Type.Object(
      {
        /** `0` = max(1, CPU budget − acceptors), resolved at load time (cpu-budget.ts: cores and cgroup quota). */
        shards: PositiveInt(0, 256),
        acceptors: PositiveInt(1, 64),
        maxPendingCallsPerShard: PositiveInt(1, 1_000_000),
        /** Capacity of each call ring (one per direction per acceptor × shard pair); a power of two. */
        channelRingBytes: PositiveInt(4096, 256 * 1024 * 1024),
        /** Call bytes an acceptor may queue for one shard beyond its ring before refusing calls (503). */
        maxChannelBacklogBytes: PositiveInt(0, 1024 * 1024 * 1024),
        /** V8 young generation of the shard and extra acceptor threads (`resourceLimits.maxYoungGenerationSizeMb`; the refresh worker: at most 8); `0` = V8's default. */
        maxYoungGenerationSizeMb: PositiveInt(0, 1024),
      },
      { additionalProperties: false },
    ),
    catalog: Type.Object(
      {
        source: Type.Union([Type.Literal('static'), Type.Literal('portal')]),
        static: Type.Object({ routes: Type.Record(Type.String(), Type.Array(ServiceEntrySchema, { maxItems: 256 })) }, { additionalProperties: false }),
        portal: Type.Object(
          {
            /** Full URL of the registry document; `null` unless `catalog.source` is `portal`. */
            url: Type.Union([Type.String({ minLength: 1, maxLength: 2048 }), Type.Null()]),
            timeoutMs: PositiveInt(1, 600_000),
            maxBytes: PositiveInt(256, 256 * 1024 * 1024),
          },
          { additionalProperties: false },
        ),
        refreshIntervalMs: PositiveInt(10, 86_400_000),
        /** Each wait is refreshIntervalMs × (1 ± refreshJitterRatio), so replicas do not poll in lockstep. */
        refreshJitterRatio: Type.Number({ minimum: 0, maximum: 1 }),
        maxRouteRemovalRatio: Type.Number({ minimum: 0, maximum: 1 }),
        maxToolsPerRoute: PositiveInt(1, 100_000),
        manifestTimeoutMs: PositiveInt(1, 600_000),
        maxManifestBytes: PositiveInt(256, 256 * 1024 * 1024),
        manifestConcurrency: PositiveInt(1, 1024),
        /** Upper bound of the exponential backoff before a failing Tool Service's manifest is fetched again. */
        manifestMaxBackoffMs: PositiveInt(0, 86_400_000),
        /** Same tool name from two Tool Services of a route: refuse the route's replacement, or expose both as `{serviceId}{separator}{name}`. */
        conflictPolicy: Type.Union([Type.Literal('refuse'), Type.Literal('prefix')]),
        /** Separator of prefixed names under `conflictPolicy: prefix` (tool-name characters only). */
        prefixSeparator: Type.String({ minLength: 1, maxLength: 8, pattern: '^[A-Za-z0-9_.-]+$' }),
        /** A tool name outside SEP-986 (1–128 of A-Z a-z 0-9 _ - .): refuse that tool only, or its whole manifest. */
        toolNamePolicy: Type.Union([Type.Literal('refuse-tool'), Type.Literal('refuse-manifest')]),
      },
      { additionalProperties: false },
    ),
    tools: Type.Object(
      {
        defaultTimeoutMs: PositiveInt(1, 3_600_000),
        maxTimeoutMs: PositiveInt(1, 3_600_000),
        maxResponseBytes: PositiveInt(256, 1024 * 1024 * 1024),
        /** Deepest nesting of objects/arrays in `tools/call` arguments; deeper is -32602 before any hop. */
        maxArgumentsDepth: PositiveInt(1, 10_000),
        connectionsPerService: PositiveInt(1, 4096),
        /** Calls waiting for a connection to one Tool Service (per shard) before a call is refused as busy. */
        maxQueuedCallsPerService: PositiveInt(0, 1_000_000),
        connectTimeoutMs: PositiveInt(1, 600_000),
        /** An idle keep-alive connection to a Tool Service is closed after this long (keep it below the services' own idle timeout). */
        keepAliveTimeoutMs: PositiveInt(1, 3_600_000),
        maxResponseHeaderBytes: PositiveInt(1024, 1024 * 1024),
        /** Origins (scheme://host:port) a manifest may point `execution.url` at besides its own. */
        allowedExecutionOrigins: StringList,
        /** Per Tool Service, per shard: calls running at once and calls waiting for a slot (workers/shard/service-guard.ts). */
        bulkhead: Type.Object(
          {
            maxConcurrentPerService: PositiveInt(1, 1_000_000),
            maxQueuedPerService: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
          },
          { additionalProperties: false },
        ),
        /** Per Tool Service, per shard: when to stop calling a failing service for a while. */
        circuitBreaker: Type.Object(
          {
            consecutiveFailures: PositiveInt(1, 1_000_000),
            failureRatio: Type.Number({ exclusiveMinimum: 0, maximum: 1 }),
            minimumCalls: PositiveInt(1, 1_000_000),
            windowMs: PositiveInt(10, 3_600_000),
            openMs: PositiveInt(1, 3_600_000),
            halfOpenProbes: PositiveInt(1, 1_000),
          },
          { additionalProperties: false },
        ),
      },
      { additionalProperties: false },
    ),
    redis: Type.Object(
      {
        /** `redis://host:port/db`; `null` disables the Redis fallback. */
        url: Type.Union([Type.String({ minLength: 1, maxLength: 2048 }), Type.Null()]),
        namespace: Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_.:-]+$' }),
        commandTimeoutMs: PositiveInt(1, 60_000),
      },
      { additionalProperties: false },
    ),
    streaming: Type.Object(
      {
        /** SSE comment heartbeat interval on streamed tools/call answers (0 = none). */
        heartbeatMs: PositiveInt(0, 3_600_000),
        /** MCP log level for forwarded log frames when the request's `_meta` names none (logging/setLevel is not remembered). */
        defaultLogLevel: Type.Union([
          Type.Literal('debug'),
          Type.Literal('info'),
          Type.Literal('notice'),
          Type.Literal('warning'),
          Type.Literal('error'),
          Type.Literal('critical'),
          Type.Literal('alert'),
          Type.Literal('emergency'),
        ]),
      },
      { additionalProperties: false },
    ),
    subscriptions: Type.Object(
      {
        /** Open `subscriptions/listen` streams one acceptor thread holds; one more is refused with 503. */
        maxPerAcceptor: PositiveInt(0, 1_000_000),
        /** SSE comment keep-alive interval on `subscriptions/listen` streams (0 = none). */
        keepAliveMs: PositiveInt(0, 3_600_000),
      },
      { additionalProperties: false },
    ),
    health: Type.Object(
      {
        readiness: Type.Union([Type.Literal('initial-load'), Type.Literal('all-routes')]),
        /** Ready only with at least this many routes serving a catalog (ready or stale); 0 = no such floor. */
        minUsableRoutes: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
      },
      { additionalProperties: false },
    ),
    /** Inbound authentication, per-route policies and rate limits, upstream credentials (src/shared/auth/config-schema.ts). */
    auth: AuthConfigSchema,
    log: Type.Object(
      {
        level: Type.Union([Type.Literal('fatal'), Type.Literal('error'), Type.Literal('warn'), Type.Literal('info'), Type.Literal('debug'), Type.Literal('trace'), Type.Literal('silent')]),
        /** Share of `tools/call` that get an access log line (0 = none, 1 = every call). */
        accessSampleRatio: Type.Number({ minimum: 0, maximum: 1 }),
      },
      { additionalProperties: false },
    ),
    tracing: Type.Object(
      {
        otlp: Type.Object(
          {
            /** OTLP/HTTP traces URL (`…/v1/traces`); `null` = tracing off (no SDK loaded). */
            endpoint: Type.Union([Type.String({ minLength: 1, maxLength: 2048 }), Type.Null()]),
          },
          { additionalProperties: false },
        ),
        serviceName: Type.String({ minLength: 1, maxLength: 256 }),
        /** Share of new traces (requests without a sampled parent) that are recorded; a parent's decision is kept. */
        sampleRatio: Type.Number({ minimum: 0, maximum: 1 }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

/** The validated, frozen configuration every thread receives. */
export type GatewayConfig = Static<typeof ConfigSchema>;
export type LogLevel = GatewayConfig['log']['level'];
