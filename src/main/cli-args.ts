/**
 * The command line of `mcp-route-gateway`, parsed strictly with
 * `node:util` `parseArgs`: an unknown option (`--conifg`), a stray word or a
 * missing value is a usage error (exit 2), never silently ignored — the old
 * parser started the embedded demo config on 127.0.0.1:8080 instead.
 */
import { parseArgs } from 'node:util';

/** What the command line asks for. */
export type CliCommand = { kind: 'help' } | { kind: 'version' } | { kind: 'run'; configFile: string | undefined } | { kind: 'check-config'; configFile: string | undefined; format: CheckConfigFormat };

/** Output format of `--check-config`. */
export type CheckConfigFormat = 'yaml' | 'json';

/** A command line the gateway does not accept; the message says what is wrong. */
export class CliUsageError extends Error {
  override readonly name = 'CliUsageError';
}

/** `--help` text. */
export const USAGE = `usage: mcp-route-gateway [--config <file>] [--check-config [--format yaml|json]]
       mcp-route-gateway --help | --version

  -c, --config <file>   configuration file, YAML or JSON (default: $MCP_GATEWAY_CONFIG,
                        else the embedded demo config: route "demo" from the demo
                        Tool Service on http://127.0.0.1:3001, listening on 127.0.0.1:8080)
      --check-config    validate the configuration (file + MCP_GATEWAY_* environment),
                        print the effective configuration with secrets redacted, and exit
      --format <fmt>    output of --check-config: yaml (default) or json
  -h, --help            show this help
  -v, --version         print the version

Every key can be overridden by an MCP_GATEWAY_* environment variable; see
docs/configuration.md. Exit status: 0 ok, 1 failed to start, 2 bad command
line or configuration.`;

const OPTIONS = {
  config: { type: 'string', short: 'c' },
  'check-config': { type: 'boolean' },
  format: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const;

/** Parses `argv` (without node and the script); throws {@link CliUsageError}. */
export function parseCliArgs(argv: readonly string[]): CliCommand {
  let values: { config?: string; 'check-config'?: boolean; format?: string; help?: boolean; version?: boolean };
  try {
    ({ values } = parseArgs({ args: [...argv], options: OPTIONS, strict: true, allowPositionals: false }));
  } catch (err) {
    // parseArgs' messages name the option or the stray word; keep them, drop the stack.
    throw new CliUsageError(err instanceof Error ? err.message : String(err));
  }
  if (values.help === true) return { kind: 'help' };
  if (values.version === true) return { kind: 'version' };
  if (values.config !== undefined && values.config.trim() === '') throw new CliUsageError('--config: a file path is required');
  const configFile = values.config;
  if (values['check-config'] === true) {
    const format = values.format ?? 'yaml';
    if (format !== 'yaml' && format !== 'json') throw new CliUsageError(`--format: must be yaml or json, got ${JSON.stringify(format)}`);
    return { kind: 'check-config', configFile, format };
  }
  if (values.format !== undefined) throw new CliUsageError('--format: only valid with --check-config');
  return { kind: 'run', configFile };
}
