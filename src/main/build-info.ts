/**
 * What `mcp_gateway_build_info` says about the uWebSockets.js build: the
 * package's own `name@version`, read from its package.json next to the
 * module Node resolves (the native addon has no version call).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** `name@version` of the resolved uWebSockets.js package, or `unknown`. */
export function uwsPackage(): string {
  try {
    let dir = dirname(createRequire(import.meta.url).resolve('uWebSockets.js'));
    // Bounded walk up from the entry file to the package root (a few levels at most).
    for (let i = 0; i < 4; i++, dir = dirname(dir)) {
      let text: string;
      try {
        text = readFileSync(join(dir, 'package.json'), 'utf8');
      } catch {
        continue;
      }
      const pkg = JSON.parse(text) as { name?: unknown; version?: unknown };
      if (typeof pkg.name === 'string' && typeof pkg.version === 'string') return `${pkg.name}@${pkg.version}`;
    }
  } catch {
    // not resolvable: say so in the metric rather than fail the start
  }
  return 'unknown';
}
