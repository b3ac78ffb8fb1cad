/**
 * Typed thread messages (discriminated unions, piscina `src/types.ts` style).
 * Errors cross threads as {@link WireError}, never as Error objects.
 */
import type { MessagePort } from 'node:worker_threads';
import type { GatewayConfig } from '../config/schema.js';
import type { CatalogSource } from '../catalog/types.js';
import type { GatewayErrorCode, WireError } from '../errors.js';
import type { MetricObjectJson } from '../metrics-types.js';
import type { SnapshotMeta } from '../snapshot/layout.js';

/** workerData of a shard worker. */
export interface ShardWorkerData {
  kind: 'shard';
  shardIndex: number;
  config: GatewayConfig;
  /** One port per acceptor, index = acceptor index. */
  acceptorPorts: MessagePort[];
}

/** workerData of an extra acceptor thread (acceptor 0 runs on the main thread). */
export interface AcceptorWorkerData {
  kind: 'acceptor';
  acceptorIndex: number;
  config: GatewayConfig;
  /** One port per shard, index = shard index. */
  shardPorts: MessagePort[];
  /** Port the main thread listens on (already bound by acceptor 0). */
  port: number;
}

/** workerData of the refresh worker. */
export interface RefreshWorkerData {
  kind: 'refresh';
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
  | { type: 'metrics'; requestId: number }
  | { type: 'close' };

/** Shard → main (parentPort). */
export type ShardToMain =
  | { type: 'installed'; routeKey: string; revision: string }
  | { type: 'install-failed'; routeKey: string; error: WireError }
  | { type: 'metrics'; requestId: number; metrics: MetricObjectJson[] }
  | { type: 'closed' };

/** Shard → acceptor (per-pair port). */
export type ShardToAcceptor =
  | { type: 'publish'; routeKey: string; snapshot: SharedArrayBuffer }
  | { type: 'results'; buffer: ArrayBuffer; length: number };

/** Acceptor → shard (per-pair port). */
export type AcceptorToShard =
  | { type: 'calls'; buffer: ArrayBuffer; length: number }
  /** The clients of these calls disconnected or sent notifications/cancelled: abort upstream, send nothing more. */
  | { type: 'cancel'; callIds: number[] };

/** One row of the route directory pushed to every acceptor. */
export interface DirectoryEntry {
  routeKey: string;
  shard: number;
  /** Why the route has no usable snapshot, when it has none (shown in the 503). */
  unavailableReason: string | null;
}

/** Main → acceptor worker. */
export type MainToAcceptor =
  | { type: 'directory'; entries: DirectoryEntry[]; loaded: boolean; pendingReason: string }
  | { type: 'readiness'; status: number; body: string }
  | { type: 'metrics-result'; requestId: number; text: string }
  | { type: 'metrics-collect'; requestId: number }
  /** A cancel another acceptor thread could not match (see Acceptor.cancelFromPeer). */
  | { type: 'cancel'; cancelKey: string }
  | { type: 'shard-down'; shard: number }
  /** The restarted shard's end of a new channel (transferred). */
  | { type: 'shard-port'; shard: number; port: MessagePort }
  | { type: 'close'; graceMs: number };

/** Acceptor worker → main. */
export type AcceptorToMain =
  | { type: 'listening'; acceptorIndex: number }
  | { type: 'listen-failed'; acceptorIndex: number; message: string }
  | { type: 'metrics-request'; requestId: number }
  | { type: 'metrics'; requestId: number; metrics: MetricObjectJson[] }
  | { type: 'cancel'; cancelKey: string }
  | { type: 'closed' };
