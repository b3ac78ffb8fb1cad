/**
 * The shard's overload protection per Tool Service: one {@link ServiceGuard}
 * (bulkhead + circuit breaker) per service id, lazily created, and the rule
 * that turns an upstream outcome into a breaker verdict. A service that is
 * down, or answers 5xx/429, opens its circuit; one that answers (even a tool
 * error or a 4xx refusal) is up.
 */
import { performance } from 'node:perf_hooks';
import { Gauge, type Registry } from '../../shared/vendor/prom-client.js';
import type { GatewayConfig } from '../../shared/config/schema.js';
import { ServiceGuard, serviceGuardOptions, type Admission, type CallVerdict, type CircuitState, type Handoff, type Permit, type ServiceGuardOptions } from './service-guard.js';
import type { UpstreamResult } from './upstream.js';

/** The breaker verdict of an upstream outcome. */
export function verdictOf(result: UpstreamResult): CallVerdict {
  switch (result.cause) {
    case 'ok':
    case 'tool_error':
      return 'success';
    case 'timeout':
    case 'unreachable':
    case 'malformed':
      return 'failure';
    case 'status': {
      const status = result.status ?? 500;
      return status >= 500 || status === 429 ? 'failure' : 'success';
    }
    // Cancelled by the client, our own queue full, an answer too large: nothing about the service's health.
    default:
      return 'neutral';
  }
}

/** Reports a circuit that opened or closed (to the main thread, for readiness). */
export type CircuitListener = (service: string, state: CircuitState, at: number) => void;

/** Every guard of one shard, keyed by Tool Service id. */
export class ServiceGuards<T> {
  private readonly guards = new Map<string, { guard: ServiceGuard<T>; reported: CircuitState }>();
  private readonly options: ServiceGuardOptions;

  constructor(
    tools: GatewayConfig['tools'],
    private readonly onCircuit: CircuitListener,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.options = serviceGuardOptions(tools);
  }

  /** Admits a call to `service` (see {@link ServiceGuard.admit}). */
  admit(service: string, waiter: T): Admission {
    const entry = this.entry(service);
    const admission = entry.guard.admit(waiter, this.now());
    this.report(service, entry);
    return admission;
  }

  /** Gives the permit back with the outcome's verdict; the waiters to start or refuse now. */
  release(service: string, permit: Permit, result: UpstreamResult): Handoff<T> {
    const entry = this.entry(service);
    const handoff = entry.guard.release(permit, verdictOf(result), this.now());
    this.report(service, entry);
    return handoff;
  }

  /** Withdraws a queued waiter (client gone, deadline); false when it is not queued. */
  cancel(service: string, waiter: T): boolean {
    return this.guards.get(service)?.guard.cancel(waiter) ?? false;
  }

  /** Circuit state and load of every service (metrics). */
  snapshot(): Array<{ service: string; state: CircuitState; running: number; queued: number; refused: ServiceGuard<T>['refused'] }> {
    const now = this.now();
    return [...this.guards].map(([service, { guard }]) => ({ service, state: guard.state(now), ...guard.load(), refused: guard.refused }));
  }

  private entry(service: string): { guard: ServiceGuard<T>; reported: CircuitState } {
    let entry = this.guards.get(service);
    if (entry === undefined) {
      entry = { guard: new ServiceGuard<T>(this.options), reported: 'closed' };
      this.guards.set(service, entry);
    }
    return entry;
  }

  /** Reports open/closed transitions (half-open is a matter of time, derived by whoever reads `at`). */
  private report(service: string, entry: { guard: ServiceGuard<T>; reported: CircuitState }): void {
    const state = entry.guard.state(this.now());
    const coarse: CircuitState = state === 'closed' ? 'closed' : 'open';
    if (coarse === entry.reported) return;
    entry.reported = coarse;
    this.onCircuit(service, coarse, Date.now());
  }
}

/**
 * Gauges read from the guards at scrape time (summed over shards by the
 * aggregation): shards per circuit state of each Tool Service, and calls
 * running / waiting in its bulkhead. Refusals are counted in
 * `mcp_gateway_tool_calls_total{cause="circuit_open"|"bulkhead_full"}`.
 */
export function registerGuardMetrics<T>(registry: Registry, guards: ServiceGuards<T>): void {
  new Gauge({
    name: 'mcp_gateway_tool_service_circuit',
    help: 'Shards whose circuit breaker for the Tool Service is in the state (closed, open, half_open).',
    labelNames: ['service', 'state'] as const,
    registers: [registry],
    collect(): void {
      this.reset();
      for (const g of guards.snapshot()) for (const state of ['closed', 'open', 'half_open'] as const) this.set({ service: g.service, state }, g.state === state ? 1 : 0);
    },
  });
  new Gauge({
    name: 'mcp_gateway_tool_service_calls',
    help: 'Calls to the Tool Service running, or waiting for a bulkhead slot (tools.bulkhead.*).',
    labelNames: ['service', 'phase'] as const,
    registers: [registry],
    collect(): void {
      this.reset();
      for (const g of guards.snapshot()) {
        this.set({ service: g.service, phase: 'running' }, g.running);
        this.set({ service: g.service, phase: 'queued' }, g.queued);
      }
    },
  });
}
