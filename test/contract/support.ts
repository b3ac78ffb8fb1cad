/**
 * Shared machinery of the contract tests: loading the golden examples under
 * `docs/contracts/examples/`, the placeholder matcher their README defines,
 * and the gateways that serve them. Requests go through
 * `test/helpers/mcp-client.ts` (any Host header, any body byte for byte,
 * which `fetch` does not allow).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestGateway, type Gateway } from '../helpers/gateway.js';

/** `docs/contracts/examples/` of this checkout. */
export const EXAMPLES_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'contracts', 'examples');

/** One example file: its name and parsed content. */
export interface ExampleFile<T> {
  file: string;
  example: T;
}

/** Reads every `*.json` of `docs/contracts/examples/<folder>/`, sorted by name. */
export function loadExamples<T>(folder: string): ExampleFile<T>[] {
  const dir = join(EXAMPLES_DIR, folder);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => {
      const text = readFileSync(join(dir, file), 'utf8');
      try {
        return { file, example: JSON.parse(text) as T };
      } catch (err) {
        throw new Error(`${folder}/${file}: not valid JSON (${(err as Error).message})`);
      }
    });
}

const ANY = '$any';
const ANY_STRING = '$any-string';
const ANY_NUMBER = '$any-number';
const REGEX_PREFIX = '$regex:';

/**
 * Returns `expected` with every placeholder the `actual` value satisfies
 * replaced by that actual value, so that `expect(actual).toEqual(result)`
 * compares everything else exactly and prints a readable diff. A placeholder
 * that is not satisfied is left as is (and the comparison then fails on it).
 *
 * Placeholders (strings, anywhere a JSON value may stand):
 * - `"$any"`: any value, but the member must be present;
 * - `"$any-string"` / `"$any-number"`: any string / any finite number;
 * - `"$regex:<pattern>"`: a string matching the JavaScript regular expression `<pattern>`.
 */
export function resolvePlaceholders(expected: unknown, actual: unknown): unknown {
  if (typeof expected === 'string') {
    if (expected === ANY) return actual === undefined ? expected : actual;
    if (expected === ANY_STRING) return typeof actual === 'string' ? actual : expected;
    if (expected === ANY_NUMBER) return typeof actual === 'number' && Number.isFinite(actual) ? actual : expected;
    if (expected.startsWith(REGEX_PREFIX)) {
      return typeof actual === 'string' && new RegExp(expected.slice(REGEX_PREFIX.length)).test(actual) ? actual : expected;
    }
    return expected;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return expected;
    return expected.map((e, i) => resolvePlaceholders(e, actual[i]));
  }
  if (typeof expected === 'object' && expected !== null) {
    if (typeof actual !== 'object' || actual === null || Array.isArray(actual)) return expected;
    const a = actual as Record<string, unknown>;
    return Object.fromEntries(Object.entries(expected).map(([k, v]) => [k, resolvePlaceholders(v, a[k])]));
  }
  return expected;
}

/** Parses JSON text, or returns `undefined` when it is not JSON. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Real gateways for a folder of examples: routes whose examples ask for the
 * same gateway overrides share one gateway, so a folder costs as few
 * gateway starts as it has distinct configurations.
 */
export class ExampleGateways {
  private readonly groups = new Map<string, { overrides: Record<string, unknown>; routes: Record<string, unknown[]> }>();
  private readonly gateways: Gateway[] = [];
  private readonly byRoute = new Map<string, Gateway>();

  /** Registers `route` served by the Tool Service at `baseUrl`, on a gateway with `overrides`. */
  add(route: string, baseUrl: string, overrides: Record<string, unknown> = {}): void {
    const key = JSON.stringify(overrides);
    let group = this.groups.get(key);
    if (group === undefined) {
      group = { overrides, routes: {} };
      this.groups.set(key, group);
    }
    group.routes[route] = [{ id: `${route}-service`, baseUrl }];
  }

  /** Starts one gateway per distinct overrides. */
  async start(): Promise<void> {
    for (const group of this.groups.values()) {
      const gw = await startTestGateway({ ...group.overrides, catalog: { static: { routes: group.routes } } });
      this.gateways.push(gw);
      for (const route of Object.keys(group.routes)) this.byRoute.set(route, gw);
    }
  }

  /** The gateway serving `route`. */
  of(route: string): Gateway {
    const gw = this.byRoute.get(route);
    if (gw === undefined) throw new Error(`no gateway serves route "${route}"`);
    return gw;
  }

  async close(): Promise<void> {
    await Promise.all(this.gateways.map((g) => g.close()));
  }
}
