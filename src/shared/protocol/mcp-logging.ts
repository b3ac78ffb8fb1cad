/**
 * MCP log levels (RFC 5424 names, lowest first) and the `_meta` key a
 * stateless request uses to choose its own level: `logging/setLevel` cannot
 * be remembered between requests, so a request's log frames are filtered by
 * `_meta["io.modelcontextprotocol/logLevel"]`, else `streaming.defaultLogLevel`.
 */

export const MCP_LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const;
export type McpLogLevel = (typeof MCP_LOG_LEVELS)[number];

/** The per-request level key in `params._meta` (the 2026-07-28 revision's name). */
export const LOG_LEVEL_META_KEY = 'io.modelcontextprotocol/logLevel';

const rank = new Map<string, number>(MCP_LOG_LEVELS.map((l, i) => [l, i]));
/** Common spellings Tool Services use that are not MCP level names. */
const ALIASES: Readonly<Record<string, McpLogLevel>> = { warn: 'warning', err: 'error', fatal: 'critical', trace: 'debug' };

/** True when `level` is an MCP level name. */
export function isMcpLogLevel(level: unknown): level is McpLogLevel {
  return typeof level === 'string' && rank.has(level);
}

/** A Tool Service's level name as an MCP level (`warn` → `warning`; unknown → `info`). */
export function normaliseLogLevel(level: unknown): McpLogLevel {
  if (isMcpLogLevel(level)) return level;
  if (typeof level === 'string') return ALIASES[level.toLowerCase()] ?? (isMcpLogLevel(level.toLowerCase()) ? (level.toLowerCase() as McpLogLevel) : 'info');
  return 'info';
}

/** True when a frame at `level` passes a threshold of `min`. */
export function logLevelAtLeast(level: McpLogLevel, min: McpLogLevel): boolean {
  return (rank.get(level) ?? 1) >= (rank.get(min) ?? 1);
}
