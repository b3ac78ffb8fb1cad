/**
 * Loads the configuration once at boot: embedded DEFAULTS ← config file
 * (YAML or JSON) ← environment. Validates with the compiled schema, reports
 * every problem in one error naming each key, then deep-freezes (fastify's
 * `initial-config-validation.js` way).
 *
 * ~320 lines: file reading, env mapping and the cross-key checks share the
 * one problem list that start-up reports; split, each would re-derive it.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Compile } from '../vendor/typebox.js';
import { parse as parseYaml } from '../vendor/yaml.js';
import { authConfigProblems } from '../auth/config-schema.js';
import { GatewayError, GatewayErrorCode } from '../errors.js';
import { cpuBudget } from './cpu-budget.js';
import { DEFAULTS } from './defaults.js';
import { normaliseOrigin } from './origin.js';
import { ConfigSchema, ROUTE_KEY_PATTERN, type GatewayConfig } from './schema.js';
import { isServiceLinkVariable } from './service-links.js';

const validator = Compile(ConfigSchema);
const routeKeyRe = new RegExp(ROUTE_KEY_PATTERN);

/** Keys whose value replaces the default wholesale instead of being merged into it. */
const REPLACED_WHOLE = new Set(['catalog.static.routes']);

/** How an environment variable's text becomes a value. */
type EnvKind = 'integer' | 'nullable-integer' | 'number' | 'boolean' | 'string' | 'nullable-string' | 'list' | 'json';

/** One settable leaf of the configuration and its environment variable. */
export interface ConfigKey {
  path: string;
  env: string;
  kind: EnvKind;
}

/** Variables that are not a config leaf but are read by the loader. */
export const ENV_CONFIG_FILE = 'MCP_GATEWAY_CONFIG';
const ENV_ALIASES: Record<string, string> = { MCP_GATEWAY_PORT: 'server.port', MCP_GATEWAY_HOST: 'server.host' };

/** Every leaf key of the schema with its environment variable, for docs and the loader. */
export const CONFIG_KEYS: readonly ConfigKey[] = Object.freeze(collectKeys(ConfigSchema as unknown as SchemaNode, []));

interface SchemaNode {
  type?: string;
  properties?: Record<string, SchemaNode>;
  anyOf?: SchemaNode[];
  patternProperties?: Record<string, SchemaNode>;
}

function collectKeys(node: SchemaNode, path: string[]): ConfigKey[] {
  const dotted = path.join('.');
  if (node.type === 'object' && node.properties && !REPLACED_WHOLE.has(dotted)) {
    return Object.entries(node.properties).flatMap(([k, child]) => collectKeys(child, [...path, k]));
  }
  return [{ path: dotted, env: envNameFor(path), kind: kindOf(node) }];
}

function kindOf(node: SchemaNode): EnvKind {
  if (node.type === 'integer') return 'integer';
  if (node.type === 'number') return 'number';
  if (node.type === 'boolean') return 'boolean';
  if (node.type === 'array' || node.anyOf?.some((n) => n.type === 'array')) return 'list';
  if (node.type === 'object') return 'json';
  if (node.anyOf?.some((n) => n.type === 'null') && node.anyOf.some((n) => n.type === 'integer')) return 'nullable-integer';
  if (node.anyOf?.some((n) => n.type === 'null')) return 'nullable-string';
  return 'string';
}

function envNameFor(path: string[]): string {
  return 'MCP_GATEWAY_' + path.map((p) => p.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()).join('_');
}

/** Inputs to {@link loadConfig}: the process's argv (without node and script) and environment. */
export interface LoadConfigInput {
  argv: readonly string[];
  /** Config file already taken from the command line (the CLI parses argv itself); wins over `--config` in argv and `MCP_GATEWAY_CONFIG`. */
  configFile?: string;
  env: Readonly<Record<string, string | undefined>>;
  /** Told about each `MCP_GATEWAY_*` variable skipped as a Kubernetes service link (ADR-0009). */
  onIgnoredEnv?: (name: string, reason: string) => void;
  /** CPUs to size `workers.shards: 0` for; default: {@link cpuBudget} (cores, affinity and cgroup quota). */
  cpus?: number;
}

/**
 * Builds the frozen configuration or throws one `GatewayError(CONFIG_INVALID)`
 * whose `details` name every offending key.
 */
export function loadConfig(input: LoadConfigInput): GatewayConfig {
  const problems: string[] = [];
  const file = configFilePath(input, problems);
  let merged: unknown = structuredClone(DEFAULTS);
  if (file !== undefined) {
    const fromFile = readConfigFile(file, problems);
    if (fromFile !== undefined) merged = mergeInto(merged, fromFile, []);
  }
  merged = mergeInto(merged, envOverrides(input, problems), []);
  return finish(merged, problems, input.cpus);
}

/** Validates an already-assembled object (tests, embedding); same checks as {@link loadConfig}. */
export function validateConfig(value: unknown): GatewayConfig {
  return finish(mergeInto(structuredClone(DEFAULTS), value, []), []);
}

/** Schema and cross-key checks, one error naming every problem, derived defaults, then freeze. */
function finish(merged: unknown, problems: string[], cpus?: number): GatewayConfig {
  if (problems.length === 0) problems.push(...schemaProblems(merged));
  if (problems.length === 0) problems.push(...semanticProblems(merged as GatewayConfig));
  if (problems.length > 0) {
    throw new GatewayError(GatewayErrorCode.ConfigInvalid, `invalid configuration:\n  - ${problems.join('\n  - ')}`, problems);
  }
  const config = merged as GatewayConfig;
  // Each acceptor thread (acceptor 0 is the main thread) needs a CPU of its own; shards get the rest.
  if (config.workers.shards === 0) config.workers.shards = Math.max(1, (cpus ?? cpuBudget().cpus) - config.workers.acceptors);
  return deepFreeze(config);
}

function configFilePath(input: LoadConfigInput, problems: string[]): string | undefined {
  if (input.configFile !== undefined) return input.configFile;
  const i = input.argv.indexOf('--config');
  if (i >= 0) {
    const value = input.argv[i + 1];
    if (value === undefined || value.startsWith('--')) problems.push('--config: a file path is required');
    return value;
  }
  const eq = input.argv.find((a) => a.startsWith('--config='));
  if (eq !== undefined) return eq.slice('--config='.length);
  return input.env[ENV_CONFIG_FILE] || undefined;
}

function readConfigFile(file: string, problems: string[]): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? `not found (${resolve(file)} does not exist)`
        : code === 'EACCES'
          ? 'no permission to read it (EACCES)'
          : code === 'EISDIR'
            ? 'is a directory, not a file'
            : `cannot be read (${code ?? String(err)})`;
    problems.push(`config file ${file}: ${why}`);
    return undefined;
  }
  try {
    // YAML 1.2 is a superset of JSON, so one parser serves both formats.
    const value: unknown = parseYaml(text, { maxAliasCount: 100 });
    if (value === null || value === undefined) return {};
    if (typeof value !== 'object' || Array.isArray(value)) {
      problems.push(`config file ${file}: the top level must be a mapping`);
      return undefined;
    }
    return value;
  } catch (err) {
    problems.push(`config file ${file}: not valid YAML/JSON (${(err as Error).message.split('\n')[0]})`);
    return undefined;
  }
}

function envOverrides(input: LoadConfigInput, problems: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const byEnv = new Map(CONFIG_KEYS.map((k) => [k.env, k]));
  for (const [name, raw] of Object.entries(input.env)) {
    if (!name.startsWith('MCP_GATEWAY_') || raw === undefined || name === ENV_CONFIG_FILE) continue;
    // A Service named mcp-gateway (or mcp-gateway-server, …) injects these; they are never settings.
    if (isServiceLinkVariable(name, raw)) {
      input.onIgnoredEnv?.(name, 'Kubernetes service link');
      continue;
    }
    const aliasPath = ENV_ALIASES[name];
    const key = aliasPath !== undefined ? CONFIG_KEYS.find((k) => k.path === aliasPath) : byEnv.get(name);
    if (key === undefined) {
      problems.push(`${name}: unknown environment variable (no such config key)`);
      continue;
    }
    const value = parseEnvValue(name, key.kind, raw, problems);
    if (value !== undefined) setPath(out, key.path.split('.'), value);
  }
  return out;
}

function parseEnvValue(name: string, kind: EnvKind, raw: string, problems: string[]): unknown {
  switch (kind) {
    case 'nullable-integer':
      if (raw.trim() === '') return null;
      return parseEnvValue(name, 'integer', raw, problems);
    case 'integer': {
      if (!/^-?\d+$/.test(raw.trim())) {
        problems.push(`${name}: must be an integer, got ${JSON.stringify(raw)}`);
        return undefined;
      }
      return Number(raw.trim());
    }
    case 'number': {
      const n = Number(raw.trim());
      if (raw.trim() === '' || !Number.isFinite(n)) {
        problems.push(`${name}: must be a number, got ${JSON.stringify(raw)}`);
        return undefined;
      }
      return n;
    }
    case 'boolean': {
      const v = raw.trim().toLowerCase();
      if (v === 'true' || v === '1') return true;
      if (v === 'false' || v === '0') return false;
      problems.push(`${name}: must be true or false, got ${JSON.stringify(raw)}`);
      return undefined;
    }
    case 'nullable-string':
      return raw.trim() === '' ? null : raw;
    case 'list':
      return raw.trim() === ''
        ? []
        : raw
            .split(',')
            .map((s) => s.trim())
            .filter((s) => s !== '');
    case 'json':
      try {
        return JSON.parse(raw) as unknown;
      } catch {
        problems.push(`${name}: must be JSON`);
        return undefined;
      }
    case 'string':
      return raw;
  }
}

function setPath(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node = target;
  for (const segment of path.slice(0, -1)) {
    const next = node[segment];
    if (typeof next === 'object' && next !== null) node = next as Record<string, unknown>;
    else node = node[segment] = {};
  }
  node[path[path.length - 1] as string] = value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function mergeInto(base: unknown, override: unknown, path: string[]): unknown {
  if (!isPlainObject(base) || !isPlainObject(override) || REPLACED_WHOLE.has(path.join('.'))) return override;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(override)) {
    // Own-property copy only: a `__proto__` key in a file must not reach the prototype.
    Object.defineProperty(out, k, { value: mergeInto(base[k], v, [...path, k]), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function schemaProblems(value: unknown): string[] {
  if (validator.Check(value)) return [];
  const seen = new Map<string, string>();
  for (const e of validator.Errors(value)) {
    const key = e.instancePath.split('/').filter(Boolean).join('.') || '(root)';
    const extra = (e.params as { additionalProperties?: string[] }).additionalProperties;
    if (e.keyword === 'additionalProperties' && extra) {
      for (const name of extra) seen.set(key === '(root)' ? name : `${key}.${name}`, 'unknown key');
      continue;
    }
    if (e.keyword === 'boolean') continue; // the additionalProperties error above names the key better
    if (!seen.has(key)) seen.set(key, e.message);
  }
  return [...seen].map(([k, m]) => `${k}: ${m}`);
}

function semanticProblems(config: GatewayConfig): string[] {
  const problems: string[] = [];
  const ring = config.workers.channelRingBytes;
  if ((ring & (ring - 1)) !== 0) problems.push(`workers.channelRingBytes: must be a power of two, got ${ring}`);
  if (config.tools.defaultTimeoutMs > config.tools.maxTimeoutMs) {
    problems.push('tools.defaultTimeoutMs: must not exceed tools.maxTimeoutMs');
  }
  for (const origin of config.tools.allowedExecutionOrigins) {
    if (normaliseOrigin(origin) === null) problems.push(`tools.allowedExecutionOrigins: ${JSON.stringify(origin)} is not an http(s) origin`);
  }
  if (config.catalog.source === 'portal') {
    if (config.catalog.portal.url === null) problems.push('catalog.portal.url: required when catalog.source is "portal"');
    else if (normaliseOrigin(config.catalog.portal.url) === null) problems.push('catalog.portal.url: must be an absolute http(s) URL');
  }
  if (config.redis.url !== null && !/^rediss?:\/\//.test(config.redis.url)) problems.push('redis.url: must start with redis:// or rediss://');
  const admin = config.server.admin;
  if (admin.port !== null && admin.port !== 0 && admin.port === config.server.port) {
    problems.push('server.admin.port: must differ from server.port (unset it to serve health and metrics on the traffic port)');
  }
  const otlp = config.tracing.otlp.endpoint;
  if (otlp !== null && normaliseOrigin(otlp) === null) problems.push('tracing.otlp.endpoint: must be an absolute http(s) URL');
  for (const [routeKey, entries] of Object.entries(config.catalog.static.routes)) {
    const at = `catalog.static.routes.${routeKey}`;
    if (!routeKeyRe.test(routeKey)) problems.push(`${at}: route key must be a lowercase DNS label (${ROUTE_KEY_PATTERN})`);
    if (entries.length === 0) problems.push(`${at}: at least one Tool Service is required`);
    const ids = new Set<string>();
    entries.forEach((entry, i) => {
      if (ids.has(entry.id)) problems.push(`${at}[${i}].id: duplicate Tool Service id ${JSON.stringify(entry.id)}`);
      ids.add(entry.id);
      if (normaliseOrigin(entry.baseUrl) === null) problems.push(`${at}[${i}].baseUrl: must be an absolute http(s) URL`);
    });
  }
  problems.push(...authConfigProblems(config.auth, routeKeyRe));
  return problems;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
