/**
 * Typed thread messages (discriminated unions, piscina `src/types.ts` style).
 * Errors cross threads as {@link WireError}, never as Error objects.
 */
import type { MessagePort } from 'node:worker_threads';
import type { GatewayConfig } from '../config/schema.js';
import type { WireError } from '../errors.js';
import type { MetricObjectJson } from '../metrics-types.js';

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

/** Main → shard (parentPort). */
export type MainToShard =
  | { type: 'install'; routeKey: string; snapshot: SharedArrayBuffer }
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
export type AcceptorToShard = { type: 'calls'; buffer: ArrayBuffer; length: number };

/** One row of the route directory pushed to every acceptor. */
export interface DirectoryEntry {
  routeKey: string;
  shard: number;
  /** Why the route has no usable snapshot, when it has none (shown in the 503). */
  unavailableReason: string | null;
}

/** Main → acceptor worker. */
export type MainToAcceptor =
  | { type: 'directory'; entries: DirectoryEntry[] }
  | { type: 'readiness'; status: number; body: string }
  | { type: 'metrics-result'; requestId: number; text: string }
  | { type: 'metrics-collect'; requestId: number }
  | { type: 'close'; graceMs: number };

/** Acceptor worker → main. */
export type AcceptorToMain =
  | { type: 'listening'; acceptorIndex: number }
  | { type: 'listen-failed'; acceptorIndex: number; message: string }
  | { type: 'metrics-request'; requestId: number }
  | { type: 'metrics'; requestId: number; metrics: MetricObjectJson[] }
  | { type: 'closed' };
