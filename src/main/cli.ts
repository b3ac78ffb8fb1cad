#!/usr/bin/env node
/**
 * `mcp-route-gateway`: parses the command line strictly (cli-args.ts), loads
 * and validates the configuration (a bad one stops the start with every
 * offending key named), then either prints it (`--check-config`) or starts
 * the gateway and drains on SIGTERM/SIGINT.
 *
 * Exit status: 0 ok (and after a drain), 1 failed to start (e.g. the port is
 * in use), 2 bad command line or configuration. Errors are one message naming
 * the key and the cause, never a stack trace, unless they are not ours.
 */
import { stringify as toYaml } from 'yaml';
import { loadConfig } from '../shared/config/load.js';
import { redactConfig } from '../shared/config/redact.js';
import type { GatewayConfig } from '../shared/config/schema.js';
import { GatewayError } from '../shared/errors.js';
import { SERVER_INFO } from '../shared/protocol/mcp.js';
import { CliUsageError, parseCliArgs, USAGE, type CliCommand } from './cli-args.js';
import { startGateway } from './gateway.js';

const NAME = 'mcp-route-gateway';

/** Beyond the longest call: time to write the last answers. */
const DRAIN_MARGIN_MS = 5_000;

async function main(): Promise<void> {
  let command: CliCommand;
  try {
    command = parseCliArgs(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof CliUsageError)) throw err;
    process.stderr.write(`${NAME}: ${err.message}\n\n${USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  if (command.kind === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (command.kind === 'version') {
    // The same version `initialize` reports as serverInfo.version.
    process.stdout.write(`${SERVER_INFO.version}\n`);
    return;
  }

  const ignored: string[] = [];
  let config: GatewayConfig;
  try {
    config = loadConfig({ argv: [], configFile: command.configFile, env: process.env, onIgnoredEnv: (name) => ignored.push(name) });
  } catch (err) {
    if (!GatewayError.is(err)) throw err;
    process.stderr.write(`${NAME}: ${err.message}\n`);
    process.exitCode = 2;
    return;
  }

  if (command.kind === 'check-config') {
    const safe = redactConfig(config);
    process.stdout.write(command.format === 'json' ? `${JSON.stringify(safe, null, 2)}\n` : toYaml(safe));
    if (ignored.length > 0) process.stderr.write(`${NAME}: ignored Kubernetes service-link variables: ${ignored.sort().join(', ')}\n`);
    process.stderr.write(`${NAME}: configuration is valid\n`);
    return;
  }

  let gateway;
  try {
    gateway = await startGateway(config);
  } catch (err) {
    if (!GatewayError.is(err)) throw err;
    process.stderr.write(`${NAME}: failed to start: ${err.code}: ${err.message}\n`);
    process.exit(1);
  }
  let stopping = false;
  const stop = (signal: string): void => {
    // A second signal is ignored for now; forcing the exit on it belongs to the drain sequence (issue 13).
    if (stopping) return;
    stopping = true;
    process.stderr.write(`${NAME}: ${signal} received, draining\n`);
    // Every call ends by tools.maxTimeoutMs (the shard answers isError then), so waiting that long (plus time to
    // write the answers) lets each accepted call finish while the shards still run; the old fixed 5 s closed
    // shards under calls still in flight. The platform's kill deadline (terminationGracePeriodSeconds) still applies.
    void gateway.close(config.tools.maxTimeoutMs + DRAIN_MARGIN_MS).then(() => process.exit(0));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`${NAME}: failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
