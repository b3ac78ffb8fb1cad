/**
 * Turns a Tool Service's NDJSON progress and log frames into MCP
 * notifications for an SSE answer (contract v0.3): `notifications/progress`
 * only when the request carried `_meta.progressToken` and only with strictly
 * increasing progress; `notifications/message` only at or above the
 * request's log level. Log data passes through as data; nothing else of the
 * Tool Service (headers, credentials) is ever echoed.
 */
import { logLevelAtLeast, normaliseLogLevel, type McpLogLevel } from '../../shared/protocol/mcp-logging.js';

/** A progress or log frame as read from the NDJSON stream (already shape-checked). */
export type StreamFrame =
  | { type: 'progress'; progress: number; total?: number; message?: string }
  | { type: 'log'; level: string; data: unknown; logger?: string };

/** Forwards the frames of one call. */
export class NotificationForwarder {
  private lastProgress = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly progressToken: string | number | null,
    private readonly minLevel: McpLogLevel,
    private readonly send: (notificationJson: string) => void,
  ) {}

  /** Forwards one frame, or drops it by the rules above. */
  onFrame = (frame: StreamFrame): void => {
    if (frame.type === 'progress') {
      if (this.progressToken === null || !(frame.progress > this.lastProgress)) return;
      this.lastProgress = frame.progress;
      const params: Record<string, unknown> = { progressToken: this.progressToken, progress: frame.progress };
      if (frame.total !== undefined) params['total'] = frame.total;
      if (frame.message !== undefined) params['message'] = frame.message;
      this.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params }));
      return;
    }
    const level = normaliseLogLevel(frame.level);
    if (!logLevelAtLeast(level, this.minLevel)) return;
    const params: Record<string, unknown> = { level, data: frame.data };
    if (frame.logger !== undefined) params['logger'] = frame.logger;
    this.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params }));
  };
}
