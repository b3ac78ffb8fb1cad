/**
 * Start-up warnings about routes anyone can call. Authentication is off by
 * default (the embedded demo on 127.0.0.1); on any other listener an open
 * route is usually a mistake, so the gateway says so loudly at start.
 */
import type { GatewayConfig } from '../config/schema.js';
import { isLoopbackHost } from '../protocol/http-policy.js';

/** The warnings to log at start (empty on a loopback listener or when every route has a policy). */
export function exposureWarnings(config: GatewayConfig): string[] {
  if (isLoopbackHost(config.server.host) || config.auth.defaultPolicy !== null) return [];
  const host = config.server.host;
  if (Object.keys(config.auth.routes).length === 0) {
    return [
      `AUTHENTICATION IS OFF: the gateway listens on ${host} (not loopback) and every route lets anyone list and call its tools. ` +
        'Set auth.defaultPolicy (and auth.providers/auth.policies) unless a proxy in front authenticates every request (docs/contracts/authentication.md).',
    ];
  }
  return [`auth.defaultPolicy is null: on ${host} every route not named in auth.routes (including routes the Portal adds later) is open to anyone.`];
}
