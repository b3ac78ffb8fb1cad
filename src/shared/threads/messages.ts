/**
 * Typed control messages between threads (discriminated unions, piscina
 * `src/types.ts` style). `tools/call` traffic does not use them: it travels
 * as frames (`call-frames.ts`) on the call channels. Errors cross threads as
 * {@link WireError}, never as Error objects.
 *
 * Who talks to whom:
 * ```
 *   refresh worker ──RefreshToMain──► main ──MainToShard──► shard s ──ShardToMain──► main
 *                                      │                      ▲ frames
 *                                      └──MainToAcceptor──► acceptor a (acceptor 0: direct calls on main)
 * ```
 * Route state reaches acceptors on one channel only, from main, and only
 * after the owning shard acknowledged the install (`route-table.ts` on the
 * main side enforces it).
 */
import type { CatalogSource } from '../catalog/types.js';
import type { GatewayConfig } from '../config/schema.js';
import type { GatewayErrorCode, WireError } from '../errors.js';
import type { MetricObjectJson } from '../metrics-types.js';
import type { SnapshotMeta } from '../snapshot/layout.js';
import type { RingMemory } from './ring.js';

/**
 * One side of the call channel of an (acceptor, shard) pair: two
 * single-producer/single-consumer rings, one per direction
 * (`ring.ts`; the memory is shared, not transferred).
 */
export interface CallChannelEnd {
  /** The ring this side writes. */
  send: RingMemory;
  /** The ring this side reads. */
  receive: RingMemory;
}

/** workerData of a shard worker. */
export interface ShardWorkerData {
  shardIndex: number;
  config: GatewayConfig;
  /** Index = acceptor index. */
  channels: CallChannelEnd[];
}

/** workerData of an extra acceptor thread (acceptor 0 runs on the main thread). */
export interface AcceptorWorkerData {
  acceptorIndex: number;
  config: GatewayConfig;
  /** Index = shard index. */
  channels: CallChannelEnd[];
  /** Port acceptor 0 already bound (SO_REUSEPORT shares it). */
  port: number;
}

/** workerData of the refresh worker. */
export interface RefreshWorkerData {
  config: GatewayConfig;
  /** Revisions already served (non-empty after a restart of the refresh worker). */
  published: Record<string, string>;
}

/** What the catalog refresher reports (refresh worker → main). */
export type RefreshEvent =
  /** The registry's route set; `removed` routes stop being served (404). */
  | { type: 'routes'; routeKeys: string[]; removed: string[] }
  /**
   * `listChanged`: it replaces a different catalog (the main thread announces it once installed).
   * `meta`: the snapshot's own meta section (revision, toolCount, builtAt…), so no reader decodes the buffer for it;
   * `source` is where this publication came from (`redis` for a warm start, whatever `meta.source` says).
   */
  | { type: 'route-snapshot'; routeKey: string; snapshot: SharedArrayBuffer; meta: SnapshotMeta; source: CatalogSource; warning: string | null; listChanged: boolean }
  | { type: 'route-unchanged'; routeKey: string; source: CatalogSource; warning: string | null }
  | { type: 'route-failed'; routeKey: string; code: GatewayErrorCode; message: string; conflicts: string[] }
  | {
      type: 'registry-status';
      portalUp: boolean;
      portalError: string | null;
      redisUp: boolean | null;
      suspect: string | null;
      revision: string | null;
      source: CatalogSource | null;
    }
  /** `subject`: a route key, or `registry`; a later success for the same subject clears it. */
  | { type: 'redis-problem'; subject: string; message: string | null }
  | { type: 'initial-load-complete' };

/** Refresh worker → main. */
export type RefreshToMain = RefreshEvent | { type: 'metrics'; requestId: number; metrics: MetricObjectJson[] } | { type: 'closed' };

/** Main → refresh worker. */
export type MainToRefresh = { type: 'metrics'; requestId: number } | { type: 'close' };

/** Main → shard (parentPort). */
export type MainToShard =
  | { type: 'install'; routeKey: string; snapshot: SharedArrayBuffer }
  | { type: 'remove'; routeKey: string }
  /** Acceptor `acceptor` was restarted: its calls in flight here are abandoned, new ones arrive on `channel`. */
  | { type: 'acceptor-channel'; acceptor: number; channel: CallChannelEnd }
  | { type: 'metrics'; requestId: number }
  | { type: 'close' };

/** Shard → main (parentPort). */
export type ShardToMain =
  | { type: 'installed'; routeKey: string }
  | { type: 'install-failed'; routeKey: string; error: WireError }
  /** A Tool Service's circuit opened or closed on this shard (`at`: epoch ms; an open one turns half-open after `tools.circuitBreaker.openMs`). */
  | { type: 'circuit'; service: string; state: 'open' | 'closed' | 'half_open'; at: number }
  | { type: 'metrics'; requestId: number; metrics: MetricObjectJson[] }
  | { type: 'closed' };

/** Why a route has no usable snapshot: a stable code for clients, the detail for readiness and logs. */
export interface RouteUnavailable {
  code: GatewayErrorCode;
  message: string;
}

/** A change of one route as an acceptor must apply it. */
export type RouteUpdate =
  /** The route exists; `snapshot` is what its shard installed (null: none yet, or refused — then `unavailable` says why). */
  { routeKey: string; shard: number; snapshot: SharedArrayBuffer | null; unavailable: RouteUnavailable | null } | { routeKey: string; removed: true };

/** Main → acceptor worker. */
export type MainToAcceptor =
  /** Route changes since the last message, in order; `loaded` false: the registry is not known yet (every key answers 503). */
  | { type: 'routes'; updates: RouteUpdate[]; loaded: boolean; pending: RouteUnavailable }
  | { type: 'readiness'; status: number; body: string }
  /** These routes' tools/list changed; sent after the `routes` message that carries their new snapshots. */
  | { type: 'list-changed'; routeKeys: string[] }
  | { type: 'metrics-result'; requestId: number; text: string }
  | { type: 'metrics-collect'; requestId: number }
  /** A `notifications/cancelled` another acceptor thread could not match. */
  | { type: 'cancel'; routeKey: string; sessionId: string; idText: string }
  | { type: 'shard-down'; shard: number }
  /** The restarted shard's end of a new call channel. */
  | { type: 'shard-channel'; shard: number; channel: CallChannelEnd }
  /** The drain began: answers carry `Connection: close` from now on. */
  | { type: 'drain' }
  /** Close the listener; answer open requests until `deadline` (epoch ms), then `SHUTTING_DOWN`; exit. */
  | { type: 'close'; deadline: number }
  /** A forced exit: close every socket now and exit. */
  | { type: 'abort' }
  /** Crash as a bug would (an uncaught exception): drills and tests of the restart path. */
  | { type: 'crash' };

/** Acceptor worker → main. */
export type AcceptorToMain =
  | { type: 'listening'; acceptorIndex: number }
  | { type: 'listen-failed'; acceptorIndex: number; message: string }
  | { type: 'metrics-request'; requestId: number }
  | { type: 'metrics'; requestId: number; metrics: MetricObjectJson[] }
  | { type: 'cancel'; routeKey: string; sessionId: string; idText: string }
  | { type: 'closed' };
