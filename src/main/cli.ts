#!/usr/bin/env node
/**
 * `mcp-route-gateway --config <file.yaml|json>`: loads and validates the
 * configuration (a bad one stops the start with every offending key named),
 * starts the gateway, and drains gracefully on SIGTERM/SIGINT.
 */
import { GatewayError } from '../shared/errors.js';
import { loadConfig } from '../shared/config/load.js';
import { startGateway } from './gateway.js';

const USAGE = `usage: mcp-route-gateway [--config <file.yaml|file.json>]
Without --config (or MCP_GATEWAY_CONFIG) the embedded default serves route "demo"
from the demo Tool Service on http://127.0.0.1:3001. See docs/configuration.md.`;

/** Beyond the longest call: time to write the last answers. */
const DRAIN_MARGIN_MS = 5_000;

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(USAGE + '\n');
    return;
  }
  let config;
  let gateway;
  try {
    // Config first, then uWS (startGateway loads it before any thread starts): either failure ends the start here.
    config = loadConfig({ argv, env: process.env });
    gateway = await startGateway(config);
  } catch (err) {
    if (GatewayError.is(err)) {
      process.stderr.write(`mcp-route-gateway: ${err.code}: ${err.message}\n`);
      process.exitCode = 2;
      return;
    }
    throw err;
  }
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`mcp-route-gateway: ${signal} received, draining\n`);
    // Every call ends by tools.maxTimeoutMs (the shard answers isError then), so waiting that long (plus time to
    // write the answers) lets each accepted call finish while the shards still run; the old fixed 5 s closed
    // shards under calls still in flight. The platform's kill deadline (terminationGracePeriodSeconds) still applies.
    void gateway.close(config.tools.maxTimeoutMs + DRAIN_MARGIN_MS).then(() => process.exit(0));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`mcp-route-gateway: failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
