#!/usr/bin/env node
/**
 * `mcp-route-gateway`: parses the command line strictly (cli-args.ts), loads
 * and validates the configuration (a bad one stops the start with every
 * offending key named), then either prints it (`--check-config`) or starts
 * the gateway and drains on SIGTERM/SIGINT (`Gateway.drain`: readiness 503,
 * `server.drainDelayMs` of service, listeners closed, `server.drainTimeoutMs`
 * for open requests). A second signal exits at once; a drain that overruns
 * its own bound by {@link EXIT_MARGIN_MS} (a stuck thread) exits too, so the
 * platform's SIGKILL never has to.
 *
 * Exit status: 0 ok (and after a drain), 1 failed to start (e.g. the port is
 * in use) or a forced exit (second signal, overrun drain), 2 bad command line
 * or configuration. Errors are one message naming the key and the cause,
 * never a stack trace, unless they are not ours.
 */
import { stringify as toYaml } from '../shared/vendor/yaml.js';
import { loadConfig } from '../shared/config/load.js';
import { redactConfig } from '../shared/config/redact.js';
import type { GatewayConfig } from '../shared/config/schema.js';
import { GatewayError } from '../shared/errors.js';
import { flushLogs } from '../shared/log.js';
import { SERVER_INFO } from '../shared/protocol/mcp.js';
import { CliUsageError, parseCliArgs, USAGE, type CliCommand } from './cli-args.js';
import { startGateway, type Gateway } from './gateway.js';

const NAME = 'mcp-route-gateway';
/** After the drain's own bound (delay + timeout): time to stop the threads and exit. The manifests' grace period includes it. */
const EXIT_MARGIN_MS = 5_000;

/** Ends the process with `code` once the logs are written. */
function exit(code: number): never {
  flushLogs();
  process.exit(code);
}

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

  let gateway: Gateway;
  try {
    gateway = await startGateway(config);
  } catch (err) {
    if (!GatewayError.is(err)) throw err;
    process.stderr.write(`${NAME}: failed to start: ${err.code}: ${err.message}\n`);
    process.exit(1);
  }
  const { drainDelayMs, drainTimeoutMs } = config.server;
  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) {
      process.stderr.write(`${NAME}: ${signal} received again: exiting without waiting for the drain\n`);
      // Sockets closed first: ending a thread that holds uWS sockets would abort the process instead.
      void gateway.abort().finally(() => exit(1));
      return;
    }
    stopping = true;
    process.stderr.write(
      `${NAME}: ${signal} received, draining (readiness fails now; listeners close in ${drainDelayMs} ms; ` + `open requests get ${drainTimeoutMs} ms more; a second signal exits at once)\n`,
    );
    const overrun = setTimeout(
      () => {
        process.stderr.write(`${NAME}: the drain did not finish within ${drainDelayMs + drainTimeoutMs + EXIT_MARGIN_MS} ms: exiting\n`);
        void gateway.abort().finally(() => exit(1));
      },
      drainDelayMs + drainTimeoutMs + EXIT_MARGIN_MS,
    );
    overrun.unref();
    gateway.drain().then(
      () => exit(0),
      (err: unknown) => {
        process.stderr.write(`${NAME}: drain failed: ${err instanceof Error ? err.stack : String(err)}\n`);
        exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`${NAME}: failed to start: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
