/**
 * Structured logs (pino). Every thread makes its own logger writing straight
 * to fd 1, so worker logs do not hop through the main thread. The hot path
 * logs failures and sampled access lines only: one line each, with request
 * id and route.
 *
 * Lines are JSON with the level as a name (`"level":"info"`, not `30`) and
 * the time as ISO 8601; an `err` field is serialised from the Error object
 * (`type`, `message`, `stack`, `code`, `cause`) — pass the Error, never its
 * message. Writes are asynchronous (sonic-boom on the libuv thread pool), so
 * logging never blocks the thread on a slow stdout, and buffered: lines
 * collect until {@link BUFFER_BYTES} or {@link FLUSH_INTERVAL_MS}, whichever
 * comes first. One write per line costs a thread-pool round trip each when
 * lines come one per event-loop turn, as access lines do (17–37 vs 7 µs CPU
 * per line measured; docs/decisions/0013-drain-admin-observability.md).
 * Every destination of the thread is flushed synchronously when the thread
 * exits (normal exit, `process.exit`, or an uncaught exception), and
 * {@link flushLogs} does it on demand (before the CLI calls `process.exit`);
 * only a SIGKILL can lose the last {@link FLUSH_INTERVAL_MS} of lines.
 */
import { destination, pino, stdSerializers, stdTimeFunctions, type Logger } from 'pino';
import type { LogLevel } from './config/schema.js';

export type { Logger };

type Destination = ReturnType<typeof destination>;

/** Lines are written once this much is buffered… */
const BUFFER_BYTES = 4096;
/** …or this long after they were logged. */
const FLUSH_INTERVAL_MS = 250;

/** This thread's destinations (one per logger; a thread usually has one). */
const destinations: Destination[] = [];
let exitHookInstalled = false;

/** A logger for one thread; `bindings` name the thread (e.g. `{thread: 'shard-1'}`). */
export function createLogger(level: LogLevel, bindings: Record<string, string | number>): Logger {
  const dest = destination({ fd: 1, sync: false, minLength: BUFFER_BYTES });
  destinations.push(dest);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // 'exit' runs on process.exit, on a natural end and after an uncaught exception (main thread and workers alike).
    process.once('exit', flushLogs);
    // Unref'd: it never keeps a thread alive; flush() does nothing while a write is in flight or the buffer is empty.
    setInterval(() => {
      for (const d of destinations) d.flush();
    }, FLUSH_INTERVAL_MS).unref();
  }
  return pino(
    {
      level,
      base: { pid: process.pid, ...bindings },
      timestamp: stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: stdSerializers.err },
    },
    dest,
  );
}

/** Writes out whatever this thread's loggers still buffer (synchronously). Never throws. */
export function flushLogs(): void {
  for (const dest of destinations) {
    try {
      dest.flushSync();
    } catch {
      // Not open yet or already closed: nothing of ours to write.
    }
  }
}
