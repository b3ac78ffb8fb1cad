/**
 * Optional Redis copy of the last good registry and of every route snapshot
 * (docs/contracts/redis-v1.md). Keys: `{ns}:portal-registry` (JSON with a format
 * version) and `{ns}:route:{routeKey}` (the snapshot bytes, which carry their
 * own format version and CRC). Redis being down or slow never delays serving
 * or refresh beyond `redis.commandTimeoutMs`: no offline queue, no retries;
 * every method reports failure instead of throwing.
 */
import { Buffer } from 'node:buffer';
import { Redis } from 'ioredis';
import { Type, Compile } from '../../shared/vendor/typebox.js';
import { GatewayError } from '../../shared/errors.js';
import { decodeSnapshot, type SnapshotView } from '../../shared/snapshot/layout.js';

export const REGISTRY_COPY_FORMAT = 1;

const RegistryCopySchema = Type.Object({
  format: Type.Literal(REGISTRY_COPY_FORMAT),
  storedAt: Type.String(),
  document: Type.Unknown(),
});
const registryCopyValidator = Compile(RegistryCopySchema);

/** Why a Redis read gave nothing usable. */
export type RedisMiss = { kind: 'missing' } | { kind: 'unavailable'; message: string } | { kind: 'corrupt'; message: string };

/** Redis-backed store; `close()` is idempotent. */
export class RedisStore {
  private readonly redis: Redis;
  /** Incremented on every (re)connection: a Redis that came back may have lost what was stored. */
  generation = 0;

  constructor(
    url: string,
    private readonly namespace: string,
    private readonly commandTimeoutMs: number,
  ) {
    this.redis = new Redis(url, {
      lazyConnect: false,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: commandTimeoutMs,
      connectTimeout: Math.max(commandTimeoutMs, 1_000),
      // Keep reconnecting in the background, at most every 2 s.
      retryStrategy: (times) => Math.min(times * 200, 2_000),
    });
    // Errors surface as failed commands; without a listener ioredis would print them.
    this.redis.on('error', () => undefined);
    this.redis.on('ready', () => {
      this.generation++;
    });
  }

  /** True when the connection is up right now. */
  get connected(): boolean {
    return this.redis.status === 'ready';
  }

  registryKey(): string {
    return `${this.namespace}:portal-registry`;
  }

  routeKey(routeKey: string): string {
    return `${this.namespace}:route:${routeKey}`;
  }

  /** Stores the last good registry document. Resolves false when Redis did not take it. */
  async saveRegistry(document: unknown): Promise<boolean> {
    const value = JSON.stringify({ format: REGISTRY_COPY_FORMAT, storedAt: new Date().toISOString(), document });
    return this.run(() => this.redis.set(this.registryKey(), value)).then((r) => r !== null);
  }

  /** Reads the registry copy; a foreign or broken value is reported as corrupt, never returned. */
  async loadRegistry(): Promise<{ document: unknown } | RedisMiss> {
    const raw = await this.run(() => this.redis.get(this.registryKey()));
    if (raw === null) return { kind: 'unavailable', message: 'redis did not answer' };
    if (raw.value === null) return { kind: 'missing' };
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw.value);
    } catch {
      return { kind: 'corrupt', message: `${this.registryKey()} is not JSON` };
    }
    if (!registryCopyValidator.Check(parsed)) return { kind: 'corrupt', message: `${this.registryKey()} is not a format-${REGISTRY_COPY_FORMAT} registry copy` };
    return { document: parsed.document };
  }

  /** Stores a route snapshot's bytes. */
  async saveSnapshot(routeKey: string, snapshot: SharedArrayBuffer): Promise<boolean> {
    const bytes = Buffer.from(new Uint8Array(snapshot).slice());
    return this.run(() => this.redis.set(this.routeKey(routeKey), bytes)).then((r) => r !== null);
  }

  /** Reads a route snapshot, verifying format, checksum and route key; corrupt entries are reported, never returned. */
  async loadSnapshot(routeKey: string): Promise<{ view: SnapshotView } | RedisMiss> {
    const raw = await this.run(() => this.redis.getBuffer(this.routeKey(routeKey)));
    if (raw === null) return { kind: 'unavailable', message: 'redis did not answer' };
    if (raw.value === null) return { kind: 'missing' };
    const sab = new SharedArrayBuffer(raw.value.length);
    new Uint8Array(sab).set(raw.value);
    try {
      const view = decodeSnapshot(sab, { verifyChecksum: true });
      view.catalogTools(); // validates the catalog section too
      if (view.meta.routeKey !== routeKey) return { kind: 'corrupt', message: `${this.routeKey(routeKey)} holds route "${view.meta.routeKey}"` };
      return { view };
    } catch (err) {
      return { kind: 'corrupt', message: `${this.routeKey(routeKey)}: ${GatewayError.is(err) ? err.message : String(err)}` };
    }
  }

  async close(): Promise<void> {
    if (this.redis.status === 'end') return;
    this.redis.disconnect();
  }

  /**
   * Runs a command; `null` when Redis failed or timed out (the caller decides
   * what that means). A connection still being set up is waited for, within
   * the same `redis.commandTimeoutMs` budget: without an offline queue the
   * first command of a fresh store would otherwise fail at once.
   */
  private async run<T>(command: () => Promise<T>): Promise<{ value: T } | null> {
    if (this.redis.status === 'connecting' || this.redis.status === 'connect' || this.redis.status === 'reconnecting') {
      if (!(await this.readyWithin(this.commandTimeoutMs))) return null;
    }
    try {
      return { value: await command() };
    } catch {
      return null;
    }
  }

  private readyWithin(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const done = (ok: boolean): void => {
        clearTimeout(timer);
        this.redis.off('ready', onReady);
        resolve(ok);
      };
      const onReady = (): void => done(true);
      const timer = setTimeout(() => done(false), ms);
      this.redis.once('ready', onReady);
    });
  }
}
