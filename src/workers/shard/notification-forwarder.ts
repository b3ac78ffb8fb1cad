/**
 * Turns a Tool Service's NDJSON progress and log frames into MCP
 * notifications for an SSE answer (docs/contracts/streaming-v0.3.md):
 * `notifications/progress` only when the request carried
 * `_meta.progressToken` and only with strictly increasing progress (the
 * caller keeps the last value per call); `notifications/message` only at or
 * above the request's log level. Log data passes through as data; nothing
 * else of the Tool Service (headers, credentials) is ever echoed.
 */
import { logLevelAtLeast, normaliseLogLevel, type McpLogLevel } from '../../shared/protocol/mcp-logging.js';

/** A progress or log frame as read from the NDJSON stream (already shape-checked). */
export type StreamFrame = { type: 'progress'; progress: number; total?: number; message?: string } | { type: 'log'; level: string; data: unknown; logger?: string };

/** The `notifications/progress` JSON for a progress frame; `progressTokenJson` is the token's JSON text. */
export function progressNotification(progressTokenJson: string, frame: Extract<StreamFrame, { type: 'progress' }>): string {
  let params = `{"progressToken":${progressTokenJson},"progress":${JSON.stringify(frame.progress)}`;
  if (frame.total !== undefined) params += `,"total":${JSON.stringify(frame.total)}`;
  if (frame.message !== undefined) params += `,"message":${JSON.stringify(frame.message)}`;
  return `{"jsonrpc":"2.0","method":"notifications/progress","params":${params}}}`;
}

/** The `notifications/message` JSON for a log frame, or null when it is below `minLevel`. */
export function logNotification(frame: Extract<StreamFrame, { type: 'log' }>, minLevel: McpLogLevel): string | null {
  const level = normaliseLogLevel(frame.level);
  if (!logLevelAtLeast(level, minLevel)) return null;
  const params: Record<string, unknown> = { level, data: frame.data };
  if (frame.logger !== undefined) params['logger'] = frame.logger;
  return JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params });
}
