/**
 * MCP protocol constants: the revisions this gateway speaks, per era, and
 * what it declares about itself (docs/decisions/0014-protocol-eras.md).
 *
 * - **Legacy** (2025-11-25 and earlier): `initialize` handshake semantics,
 *   served statelessly; chosen when `MCP-Protocol-Version` is absent or names
 *   a legacy revision.
 * - **Modern** (2026-07-28): no handshake; every request carries its version
 *   and capabilities in `_meta`; chosen when the header names it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The stateless revision (schema/2026-07-28/schema.ts `LATEST_PROTOCOL_VERSION`). */
export const MODERN_PROTOCOL_VERSION = '2026-07-28';

/** Legacy revisions accepted in `MCP-Protocol-Version`, newest first. */
export const LEGACY_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'] as const;

/** The legacy revision `initialize` answers when the client asks for one this gateway does not speak. */
export const LATEST_LEGACY_PROTOCOL_VERSION = LEGACY_PROTOCOL_VERSIONS[0];

/**
 * Revisions `initialize` negotiates: the header revisions plus 2024-11-05,
 * which predates the `MCP-Protocol-Version` header (its clients send none).
 */
export const INITIALIZE_PROTOCOL_VERSIONS = [...LEGACY_PROTOCOL_VERSIONS, '2024-11-05'] as const;

/**
 * Every revision a request may name in `MCP-Protocol-Version`, newest first:
 * `server/discover`'s `supportedVersions` and the `data.supported` of an
 * `UnsupportedProtocolVersion` error (the two must agree).
 */
export const SUPPORTED_PROTOCOL_VERSIONS = [MODERN_PROTOCOL_VERSION, ...LEGACY_PROTOCOL_VERSIONS] as const;

const legacy = new Set<string>(LEGACY_PROTOCOL_VERSIONS);
const negotiable = new Set<string>(INITIALIZE_PROTOCOL_VERSIONS);

/** True when `version` is a legacy revision accepted in `MCP-Protocol-Version`. */
export function isLegacyProtocolVersion(version: string): boolean {
  return legacy.has(version);
}

/** True when `initialize` answers `version` as requested (else it offers {@link LATEST_LEGACY_PROTOCOL_VERSION}). */
export function isNegotiableProtocolVersion(version: string): boolean {
  return negotiable.has(version);
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
 * Capabilities declared to legacy clients in `initialize`. `listChanged` is
 * false: a legacy client could only receive `notifications/tools/list_changed`
 * on a GET SSE stream, which the gateway does not offer (ADR-0014 says why);
 * docs/contracts/mcp-endpoint.md and a contract test say the same.
 */
export const LEGACY_SERVER_CAPABILITIES = Object.freeze({
  tools: Object.freeze({ listChanged: false }),
  logging: Object.freeze({}),
});

/**
 * Capabilities declared to 2026-07-28 clients in `server/discover`.
 * `listChanged` is true: `subscriptions/listen` streams deliver
 * `notifications/tools/list_changed` whenever a route's `tools/list` bytes
 * change (src/main/subscriptions.ts). `logging` is declared because log frames
 * are forwarded to requests that name a level in `_meta` (a deprecated but
 * live feature in 2026-07-28).
 */
export const MODERN_SERVER_CAPABILITIES = Object.freeze({
  tools: Object.freeze({ listChanged: true }),
  logging: Object.freeze({}),
});

/** Instructions sent in `initialize`. */
export const SERVER_INSTRUCTIONS = 'Stateless MCP gateway: each route is its own MCP server; tools/list is served from the route catalog snapshot.';
