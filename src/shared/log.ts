/**
 * Structured logs (pino). Every thread makes its own logger writing straight
 * to fd 1, so worker logs do not hop through the main thread. The hot path
 * logs failures only: one line each, with request id and route.
 */
import { pino, destination, type Logger } from 'pino';
import type { LogLevel } from './config/schema.js';

export type { Logger };

/** A logger for one thread; `bindings` name the thread (e.g. `{thread: 'shard-1'}`). */
export function createLogger(level: LogLevel, bindings: Record<string, string | number>): Logger {
  return pino({ level, base: { pid: process.pid, ...bindings } }, destination({ fd: 1, sync: true }));
}
