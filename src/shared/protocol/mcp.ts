/**
 * MCP protocol constants: the revisions this gateway speaks and what it
 * declares in `initialize`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Newest first. `initialize` answers the client's revision when listed here, else the first. */
export const SUPPORTED_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'] as const;
export const LATEST_PROTOCOL_VERSION = SUPPORTED_PROTOCOL_VERSIONS[0];

const supported = new Set<string>(SUPPORTED_PROTOCOL_VERSIONS);

/** True when `version` is a revision this gateway speaks. */
export function isSupportedProtocolVersion(version: string): boolean {
  return supported.has(version);
}

/** The package's own package.json, found upward from this file (it sits at different depths in src/ and dist/). */
function readOwnPackage(): { name: string; version: string } {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate)) {
      const pkg = JSON.parse(readFileSync(candidate, 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'mcp-route-gateway' && typeof pkg.version === 'string') return { name: pkg.name, version: pkg.version };
    }
    const parent = dirname(dir);
    if (parent === dir) return { name: 'mcp-route-gateway', version: '0.0.0' };
    dir = parent;
  }
}

const pkg = readOwnPackage();

/** `serverInfo` in `initialize`. */
export const SERVER_INFO = Object.freeze({ name: pkg.name, version: pkg.version });

/**
 * Capabilities declared in `initialize`. `listChanged` is false because the
 * single-response HTTP transport cannot push `notifications/tools/list_changed`
 * (docs/decisions/0004-stateless-protocol-choices.md); it turns true only when
 * a GET SSE stream exists. docs/contracts/mcp-endpoint.md and a contract test
 * say the same.
 */
export const SERVER_CAPABILITIES = Object.freeze({
  tools: Object.freeze({ listChanged: false }),
  logging: Object.freeze({}),
});

/** Instructions sent in `initialize`. */
export const SERVER_INSTRUCTIONS =
  'Stateless MCP gateway: each route is its own MCP server; tools/list is served from the route catalog snapshot.';
