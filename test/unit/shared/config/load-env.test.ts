import { describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../../../src/shared/config/defaults.js';
import { CONFIG_KEYS, ENV_CONFIG_FILE, loadConfig } from '../../../../src/shared/config/load.js';
import { ConfigSchema } from '../../../../src/shared/config/schema.js';
import { GatewayError } from '../../../../src/shared/errors.js';

function configProblems(fn: () => unknown): readonly string[] {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(GatewayError.is(caught)).toBe(true);
  expect((caught as GatewayError).code).toBe('CONFIG_INVALID');
  return (caught as GatewayError).details;
}

const fromEnv = (env: Record<string, string>) => loadConfig({ argv: [], env });

/** Every leaf path of a config object; `catalog.static.routes` is one leaf (it is replaced whole). */
/** Keys whose value is a map of names (one JSON leaf each), not a fixed object. */
const RECORD_KEYS = new Set(['catalog.static.routes', 'auth.providers', 'auth.policies', 'auth.routes', 'auth.upstream.profiles']);

function leafPaths(value: unknown, path: string[] = []): string[] {
  const dotted = path.join('.');
  if (typeof value !== 'object' || value === null || Array.isArray(value) || RECORD_KEYS.has(dotted)) return [dotted];
  return Object.entries(value).flatMap(([k, v]) => leafPaths(v, [...path, k]));
}

function getPath(obj: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((node, k) => (node as Record<string, unknown>)[k], obj);
}

describe('environment overrides', () => {
  it('parses integers, trimming blanks', () => {
    const config = fromEnv({ MCP_GATEWAY_SERVER_PORT: ' 9000 ', MCP_GATEWAY_WORKERS_SHARDS: '3', MCP_GATEWAY_TOOLS_MAX_TIMEOUT_MS: '60000' });
    expect(config.server.port).toBe(9000);
    expect(config.workers.shards).toBe(3);
    expect(config.tools.maxTimeoutMs).toBe(60_000);
  });

  it('refuses a non-integer naming the variable', () => {
    expect(configProblems(() => fromEnv({ MCP_GATEWAY_SERVER_PORT: '80.5' }))).toEqual(['MCP_GATEWAY_SERVER_PORT: must be an integer, got "80.5"']);
    expect(configProblems(() => fromEnv({ MCP_GATEWAY_WORKERS_ACCEPTORS: 'two' }))).toEqual(['MCP_GATEWAY_WORKERS_ACCEPTORS: must be an integer, got "two"']);
  });

  it('reads booleans as true/false/1/0 and refuses anything else naming the variable', () => {
    expect(fromEnv({ MCP_GATEWAY_SERVER_EXPOSE_ERROR_DETAILS: 'TRUE' }).server.exposeErrorDetails).toBe(true);
    expect(fromEnv({ MCP_GATEWAY_SERVER_EXPOSE_ERROR_DETAILS: '0' }).server.exposeErrorDetails).toBe(false);
    expect(configProblems(() => fromEnv({ MCP_GATEWAY_SERVER_EXPOSE_ERROR_DETAILS: 'yes' }))).toEqual(['MCP_GATEWAY_SERVER_EXPOSE_ERROR_DETAILS: must be true or false, got "yes"']);
  });

  it('reads a nullable integer (server.admin.port): a number, empty for null, anything else refused naming the variable', () => {
    expect(fromEnv({ MCP_GATEWAY_SERVER_ADMIN_PORT: '9090' }).server.admin.port).toBe(9090);
    expect(fromEnv({ MCP_GATEWAY_SERVER_ADMIN_PORT: '' }).server.admin.port).toBeNull();
    expect(configProblems(() => fromEnv({ MCP_GATEWAY_SERVER_ADMIN_PORT: 'tcp://10.0.0.1' }))).toEqual(['MCP_GATEWAY_SERVER_ADMIN_PORT: must be an integer, got "tcp://10.0.0.1"']);
  });

  it('refuses an admin port equal to the traffic port, and a tracing endpoint that is not an http(s) URL', () => {
    expect(configProblems(() => fromEnv({ MCP_GATEWAY_SERVER_PORT: '9000', MCP_GATEWAY_SERVER_ADMIN_PORT: '9000' }))).toEqual([
      'server.admin.port: must differ from server.port (unset it to serve health and metrics on the traffic port)',
    ]);
    expect(configProblems(() => fromEnv({ MCP_GATEWAY_TRACING_OTLP_ENDPOINT: 'grpc://collector:4317' }))).toEqual(['tracing.otlp.endpoint: must be an absolute http(s) URL']);
  });

  it('checks the range of an integer from the environment against the key', () => {
    expect(configProblems(() => fromEnv({ MCP_GATEWAY_SERVER_PORT: '-1' }))).toEqual(['server.port: must be >= 0']);
    expect(configProblems(() => fromEnv({ MCP_GATEWAY_WORKERS_ACCEPTORS: '0' }))).toEqual(['workers.acceptors: must be >= 1']);
  });

  it('splits lists on commas, trimming and dropping empty items; an empty value is an empty list', () => {
    const config = fromEnv({
      MCP_GATEWAY_SERVER_ALLOWED_ORIGINS: ' https://a.example.com , https://b.example.com,,',
      MCP_GATEWAY_SERVER_ALLOWED_HOSTS: '',
      MCP_GATEWAY_TOOLS_ALLOWED_EXECUTION_ORIGINS: 'http://10.0.0.1:9000',
    });
    expect(config.server.allowedOrigins).toEqual(['https://a.example.com', 'https://b.example.com']);
    expect(config.server.allowedHosts).toEqual([]);
    expect(config.tools.allowedExecutionOrigins).toEqual(['http://10.0.0.1:9000']);
  });

  it('parses JSON for catalog.static.routes, replacing the demo route', () => {
    const routes = { core: [{ id: 'hr', baseUrl: 'http://127.0.0.1:9001' }], process: [{ id: 'erp', baseUrl: 'http://127.0.0.1:9002' }] };
    const config = fromEnv({ MCP_GATEWAY_CATALOG_STATIC_ROUTES: JSON.stringify(routes) });
    expect(config.catalog.static.routes).toEqual(routes);
  });

  it('refuses broken JSON and a JSON value of the wrong shape, naming the key', () => {
    expect(configProblems(() => fromEnv({ MCP_GATEWAY_CATALOG_STATIC_ROUTES: '{core:' }))).toEqual(['MCP_GATEWAY_CATALOG_STATIC_ROUTES: must be JSON']);
    const [shape] = configProblems(() => fromEnv({ MCP_GATEWAY_CATALOG_STATIC_ROUTES: '{"core": "http://x"}' }));
    expect(shape).toMatch(/^catalog\.static\.routes\.core: /);
  });

  it('takes strings verbatim and validates them against the key', () => {
    expect(fromEnv({ MCP_GATEWAY_LOG_LEVEL: 'debug', MCP_GATEWAY_HEALTH_READINESS: 'all-routes' }).log.level).toBe('debug');
    expect(fromEnv({ MCP_GATEWAY_HEALTH_READINESS: 'all-routes' }).health.readiness).toBe('all-routes');
    const [bad] = configProblems(() => fromEnv({ MCP_GATEWAY_LOG_LEVEL: 'loud' }));
    expect(bad).toMatch(/^log\.level: /);
  });

  it('parses decimal numbers and refuses non-numbers', () => {
    const numeric = CONFIG_KEYS.find((k) => k.kind === 'number');
    expect(numeric).toBeDefined();
    if (numeric === undefined) return;
    expect(getPath(fromEnv({ [numeric.env]: ' 0.25 ' }), numeric.path)).toBe(0.25);
    expect(configProblems(() => fromEnv({ [numeric.env]: 'half' }))).toEqual([`${numeric.env}: must be a number, got "half"`]);
    expect(configProblems(() => fromEnv({ [numeric.env]: '' }))).toEqual([`${numeric.env}: must be a number, got ""`]);
  });

  it('reads an empty nullable string as null', () => {
    const nullable = CONFIG_KEYS.find((k) => k.kind === 'nullable-string');
    expect(nullable).toBeDefined();
    if (nullable === undefined) return;
    expect(getPath(fromEnv({ [nullable.env]: '' }), nullable.path)).toBeNull();
  });

  it('accepts the MCP_GATEWAY_PORT and MCP_GATEWAY_HOST aliases', () => {
    const config = fromEnv({ MCP_GATEWAY_PORT: '9400', MCP_GATEWAY_HOST: '0.0.0.0' });
    expect(config.server.port).toBe(9400);
    expect(config.server.host).toBe('0.0.0.0');
    expect(configProblems(() => fromEnv({ MCP_GATEWAY_PORT: 'http' }))).toEqual(['MCP_GATEWAY_PORT: must be an integer, got "http"']);
  });

  it('refuses an unknown MCP_GATEWAY_* variable naming it', () => {
    expect(configProblems(() => fromEnv({ MCP_GATEWAY_SERVER_PROT: '1' }))).toEqual(['MCP_GATEWAY_SERVER_PROT: unknown environment variable (no such config key)']);
  });

  it('reports every environment problem at once', () => {
    const details = configProblems(() => fromEnv({ MCP_GATEWAY_BOGUS: 'x', MCP_GATEWAY_SERVER_PORT: 'x', MCP_GATEWAY_CATALOG_STATIC_ROUTES: '[' }));
    expect([...details].sort()).toEqual([
      'MCP_GATEWAY_BOGUS: unknown environment variable (no such config key)',
      'MCP_GATEWAY_CATALOG_STATIC_ROUTES: must be JSON',
      'MCP_GATEWAY_SERVER_PORT: must be an integer, got "x"',
    ]);
  });

  it('does not pollute Object.prototype through a JSON value', () => {
    const details = configProblems(() => fromEnv({ MCP_GATEWAY_CATALOG_STATIC_ROUTES: '{"__proto__": [{"id": "x", "baseUrl": "http://x"}]}' }));
    expect(details).toHaveLength(1);
    expect(details[0]).toMatch(/^catalog\.static\.routes\.__proto__: route key must be a lowercase DNS label/);
    expect(({} as Record<string, unknown>)['0']).toBeUndefined();
  });
});

describe('CONFIG_KEYS', () => {
  it('lists every leaf of the configuration exactly once', () => {
    expect(CONFIG_KEYS.map((k) => k.path).sort()).toEqual(leafPaths(DEFAULTS).sort());
  });

  it('gives every key a unique MCP_GATEWAY_* name that is neither the file variable nor an alias', () => {
    const names = CONFIG_KEYS.map((k) => k.env);
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) {
      expect(name).toMatch(/^MCP_GATEWAY_[A-Z0-9_]+$/);
      expect(['MCP_GATEWAY_PORT', 'MCP_GATEWAY_HOST', ENV_CONFIG_FILE]).not.toContain(name);
    }
    expect(CONFIG_KEYS.find((k) => k.path === 'workers.maxPendingCallsPerShard')?.env).toBe('MCP_GATEWAY_WORKERS_MAX_PENDING_CALLS_PER_SHARD');
    expect(CONFIG_KEYS.find((k) => k.path === 'catalog.static.routes')).toEqual({
      path: 'catalog.static.routes',
      env: 'MCP_GATEWAY_CATALOG_STATIC_ROUTES',
      kind: 'json',
    });
  });

  // Each documented variable must really be read: set it to a valid non-default value and see it arrive.
  it.each(CONFIG_KEYS.map((k) => [k.env, k] as const))('%s sets its key', (_name, key) => {
    const sample = sampleFor(key.path, key.kind);
    expect(sample, `no sample value for ${key.path}; add one to sampleFor()`).toBeDefined();
    const [raw, expected, companions] = sample as Sample;
    expect(expected).not.toEqual(getPath(DEFAULTS, key.path));
    expect(getPath(fromEnv({ ...companions, [key.env]: raw }), key.path)).toEqual(expected);
  });
});

type Sample = [raw: string, expected: unknown, companions?: Record<string, string>];

interface SchemaNode {
  type?: string;
  minimum?: number;
  maximum?: number;
  properties?: Record<string, SchemaNode>;
  anyOf?: SchemaNode[];
  const?: unknown;
}

/** Hand-picked values for strings, whose valid forms the schema alone does not say. */
/** A provider, a policy and the resource base URL: what a route → policy mapping needs beside it. */
const AUTH_POLICY_ENV: Record<string, string> = {
  MCP_GATEWAY_AUTH_RESOURCE_BASE_URL: 'https://mcp.example.com',
  MCP_GATEWAY_AUTH_PROVIDERS: '{"k":{"type":"apiKeys","header":"x-api-key","keyHashesFile":"/k"}}',
  MCP_GATEWAY_AUTH_POLICIES: '{"p":{"providers":["k"],"rules":[{"when":{},"tools":["*"]}]}}',
};
const STRING_SAMPLES: Record<string, Sample> = {
  'server.host': ['0.0.0.0', '0.0.0.0'],
  'catalog.static.routes': ['{"x":[{"id":"s","baseUrl":"http://127.0.0.1:1"}]}', { x: [{ id: 's', baseUrl: 'http://127.0.0.1:1' }] }],
  'catalog.portal.url': ['http://127.0.0.1:1/registry', 'http://127.0.0.1:1/registry'],
  'redis.url': ['redis://127.0.0.1:6379/0', 'redis://127.0.0.1:6379/0'],
  'redis.namespace': ['tenant-a:prod', 'tenant-a:prod'],
  'workers.channelRingBytes': ['131072', 131072],
  'server.admin.host': ['0.0.0.0', '0.0.0.0'],
  'server.admin.port': [' 9090 ', 9090],
  'tracing.otlp.endpoint': ['http://127.0.0.1:4318/v1/traces', 'http://127.0.0.1:4318/v1/traces'],
  'tracing.serviceName': ['gateway-eu', 'gateway-eu'],
  'auth.resourceBaseUrl': ['https://mcp.example.com', 'https://mcp.example.com'],
  'auth.providers': ['{"k":{"type":"apiKeys","header":"x-api-key","keyHashesFile":"/k"}}', { k: { type: 'apiKeys', header: 'x-api-key', keyHashesFile: '/k' } }],
  'auth.policies': [
    '{"p":{"providers":["k"],"rules":[{"when":{},"tools":["*"]}]}}',
    { p: { providers: ['k'], rules: [{ when: {}, tools: ['*'] }] } },
    { MCP_GATEWAY_AUTH_PROVIDERS: '{"k":{"type":"apiKeys","header":"x-api-key","keyHashesFile":"/k"}}' },
  ],
  'auth.routes': ['{"core":"p"}', { core: 'p' }, AUTH_POLICY_ENV],
  'auth.defaultPolicy': ['p', 'p', AUTH_POLICY_ENV],
  'auth.upstream.profiles': ['{"u":{"origins":["https://tools.example.com"],"caFile":"/ca.pem"}}', { u: { origins: ['https://tools.example.com'], caFile: '/ca.pem' } }],
  'catalog.prefixSeparator': ['--', '--'],
};
/** Variables a value needs beside it to be valid. */
const COMPANIONS: Record<string, Record<string, string>> = {
  'catalog.source': { MCP_GATEWAY_CATALOG_PORTAL_URL: 'http://127.0.0.1:1/registry' },
};

function sampleFor(path: string, kind: string): Sample | undefined {
  const node = path.split('.').reduce<SchemaNode | undefined>((n, k) => n?.properties?.[k], ConfigSchema as unknown as SchemaNode);
  const current = getPath(DEFAULTS, path);
  const companions = COMPANIONS[path];
  const known = STRING_SAMPLES[path];
  if (known) return known;
  if ((kind === 'integer' || kind === 'number') && node && typeof current === 'number') {
    const step = kind === 'integer' ? 1 : 0.125;
    const value = current + step <= (node.maximum ?? Infinity) ? current + step : current - step;
    return [String(value), value];
  }
  if (kind === 'list') return ['http://10.1.2.3:80, https://a.example.com', ['http://10.1.2.3:80', 'https://a.example.com']];
  if (kind === 'boolean' && typeof current === 'boolean') return [String(!current), !current];
  const literals = node?.anyOf?.map((n) => n.const).filter((c): c is string => typeof c === 'string') ?? [];
  const other = literals.find((l) => l !== current);
  if (other !== undefined) return [other, other, companions];
  return undefined;
}
