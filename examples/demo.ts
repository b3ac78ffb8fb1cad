/**
 * `npm start`: the demo Tool Service plus a gateway in front of it, with the
 * curl lines to try it. The one argument is the gateway's `--config`
 * (`npm start -- --config gateway.yaml`, parsed as strictly as the CLI does);
 * without it the gateway's embedded default config serves route `demo` from
 * `http://127.0.0.1:3001`. The `start` script execs node, so the SIGTERM or
 * SIGINT npm forwards arrives here and stops both servers.
 */
import { CliUsageError, parseCliArgs } from '../src/main/cli-args.js';
import { startGateway, type Gateway } from '../src/main/gateway.js';
import { DEMO_TOOL_SERVICE_PORT } from '../src/shared/config/defaults.js';
import { loadConfig } from '../src/shared/config/load.js';
import { startDemoToolService } from './demo-tool-service.js';

const EMBEDDED_DEMO_PORT = DEMO_TOOL_SERVICE_PORT;

function readDemoPort(env: NodeJS.ProcessEnv): number {
  const raw = env['DEMO_TOOL_SERVICE_PORT'];
  if (raw === undefined || raw === '') return EMBEDDED_DEMO_PORT;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`DEMO_TOOL_SERVICE_PORT must be an integer between 0 and 65535, got "${raw}"`);
  }
  return port;
}

function clientHost(host: string): string {
  // A wildcard bind is reachable on loopback, and loopback is what the default Host/Origin checks allow.
  if (host === '' || host === '0.0.0.0' || host === '::' || host === '127.0.0.1' || host === 'localhost') {
    return '127.0.0.1';
  }
  return host.includes(':') ? `[${host}]` : host;
}

function curlLine(url: string, body: unknown): string {
  return `curl -sS ${url} -H 'content-type: application/json' ` + `-H 'accept: application/json, text/event-stream' -d '${JSON.stringify(body)}'`;
}

/** The gateway config file named on the command line (`npm start -- --config f`); other arguments are refused. */
function configFileArgument(argv: readonly string[]): string | undefined {
  const command = parseCliArgs(argv);
  if (command.kind !== 'run') throw new CliUsageError('only --config <file> is accepted');
  return command.configFile;
}

async function main(): Promise<void> {
  let configFile: string | undefined;
  try {
    configFile = configFileArgument(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof CliUsageError)) throw error;
    console.error(`npm start: ${error.message} (usage: npm start [-- --config <file>])`);
    process.exit(2);
  }
  const toolService = await startDemoToolService({ host: '127.0.0.1', port: readDemoPort(process.env) });
  console.log(`demo tool service listening on ${toolService.url}`);
  const usesEmbeddedConfig = configFile === undefined && !process.env['MCP_GATEWAY_CONFIG'];
  if (usesEmbeddedConfig && toolService.port !== EMBEDDED_DEMO_PORT) {
    console.warn(`warning: the embedded config expects the demo tool service on port ${EMBEDDED_DEMO_PORT}; ` + `pass --config with a route pointing at ${toolService.url}`);
  }

  let gateway: Gateway;
  try {
    gateway = await startGateway(loadConfig({ argv: [], configFile, env: process.env }));
    await gateway.initialLoad();
  } catch (error) {
    await toolService.close();
    throw error;
  }

  const mcpUrl = `http://${clientHost(gateway.host)}:${gateway.port}/mcp/demo`;
  console.log(`MCP endpoint: ${mcpUrl}`);
  console.log('try:');
  console.log(`  ${curlLine(mcpUrl, { jsonrpc: '2.0', id: 1, method: 'tools/list' })}`);
  console.log(
    `  ${curlLine(mcpUrl, {
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'echo', arguments: { text: 'hello' } },
    })}`,
  );

  let stopping = false;
  const shutdown = (signal: NodeJS.Signals): void => {
    if (stopping) {
      // A second signal means the operator does not want to wait for the drain.
      process.exit(1);
    }
    stopping = true;
    console.log(`${signal}: shutting down`);
    // Gateway first, so in-flight calls can still reach the tool service while it drains.
    gateway
      .close()
      .finally(() => toolService.close())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          console.error(error);
          process.exit(1);
        },
      );
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
