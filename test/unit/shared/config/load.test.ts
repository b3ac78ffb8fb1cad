import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cpuBudget } from '../../../../src/shared/config/cpu-budget.js';
import { DEFAULTS, DEMO_TOOL_SERVICE_PORT } from '../../../../src/shared/config/defaults.js';
import { loadConfig, validateConfig } from '../../../../src/shared/config/load.js';
import { GatewayError } from '../../../../src/shared/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'mcp-gw-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let fileNo = 0;
function tempFile(text: string, ext = 'yaml'): string {
  const file = join(dir, `config-${++fileNo}.${ext}`);
  writeFileSync(file, text);
  return file;
}

/** Runs `fn`, asserts it throws a CONFIG_INVALID GatewayError, and returns its details. */
function configProblems(fn: () => unknown): readonly string[] {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(GatewayError.is(caught)).toBe(true);
  const err = caught as GatewayError;
  expect(err.code).toBe('CONFIG_INVALID');
  expect(err.details.length).toBeGreaterThan(0);
  for (const d of err.details) expect(err.message).toContain(d);
  return err.details;
}

const expectedShards = Math.max(1, cpuBudget().cpus - 1);
const coreRoutes = { core: [{ id: 'hr-tools', baseUrl: 'http://127.0.0.1:9001', manifestPath: '/manifest' }] };

describe('loadConfig defaults', () => {
  it('with no file and no environment is DEFAULTS with shards resolved (embedded demo route)', () => {
    const config = loadConfig({ argv: [], env: {} });
    expect(config).toEqual({ ...DEFAULTS, workers: { ...DEFAULTS.workers, shards: expectedShards } });
    expect(config.catalog.static.routes).toEqual({
      demo: [{ id: 'demo-tools', baseUrl: `http://127.0.0.1:${DEMO_TOOL_SERVICE_PORT}`, manifestPath: '/manifest' }],
    });
    expect(config.server.maxBodyBytes).toBe(1024 * 1024);
    expect(config.catalog.maxToolsPerRoute).toBe(50);
  });

  it('ignores environment variables without the MCP_GATEWAY_ prefix', () => {
    const config = loadConfig({ argv: [], env: { PATH: '/usr/bin', PORT: '1', HOME: '/root' } });
    expect(config.server.port).toBe(8080);
  });

  it('does not touch DEFAULTS when a file overrides values', () => {
    loadConfig({ argv: ['--config', tempFile('server:\n  port: 9999\n')], env: {} });
    expect(DEFAULTS.server.port).toBe(8080);
    expect(DEFAULTS.workers.shards).toBe(0);
  });
});

describe('loadConfig files', () => {
  it('reads YAML given with --config, merging into the defaults', () => {
    const file = tempFile('server:\n  port: 9000\n  allowedHosts: [gw.example.com]\nlog:\n  level: debug\n');
    const config = loadConfig({ argv: ['--config', file], env: {} });
    expect(config.server).toEqual({ ...DEFAULTS.server, port: 9000, allowedHosts: ['gw.example.com'] });
    expect(config.log.level).toBe('debug');
    expect(config.tools).toEqual(DEFAULTS.tools);
  });

  it('reads JSON given with --config=', () => {
    const file = tempFile(JSON.stringify({ workers: { shards: 3, acceptors: 2 } }), 'json');
    const config = loadConfig({ argv: [`--config=${file}`], env: {} });
    expect(config.workers).toEqual({ shards: 3, acceptors: 2, maxPendingCallsPerShard: 10_000, channelRingBytes: 262144, maxChannelBacklogBytes: 16777216, maxYoungGenerationSizeMb: 3 });
  });

  it('reads the file named by MCP_GATEWAY_CONFIG', () => {
    const file = tempFile('server:\n  port: 9100\n');
    expect(loadConfig({ argv: [], env: { MCP_GATEWAY_CONFIG: file } }).server.port).toBe(9100);
  });

  it('prefers --config over MCP_GATEWAY_CONFIG', () => {
    const fromArg = tempFile('server:\n  port: 9201\n');
    const fromEnv = tempFile('server:\n  port: 9202\n');
    expect(loadConfig({ argv: ['--config', fromArg], env: { MCP_GATEWAY_CONFIG: fromEnv } }).server.port).toBe(9201);
  });

  it('treats an empty file as no overrides', () => {
    expect(loadConfig({ argv: ['--config', tempFile('')], env: {} }).server.port).toBe(8080);
  });

  it('lets the environment win over the file', () => {
    const file = tempFile('server:\n  port: 9000\n  host: 0.0.0.0\n');
    const config = loadConfig({ argv: ['--config', file], env: { MCP_GATEWAY_PORT: '9300' } });
    expect(config.server.port).toBe(9300);
    expect(config.server.host).toBe('0.0.0.0');
  });

  it('replaces the default demo route wholesale with catalog.static.routes', () => {
    const file = tempFile(JSON.stringify({ catalog: { static: { routes: coreRoutes } } }), 'json');
    const config = loadConfig({ argv: ['--config', file], env: {} });
    expect(config.catalog.static.routes).toEqual(coreRoutes);
    expect(Object.keys(config.catalog.static.routes)).toEqual(['core']);
  });

  it('reports --config without a path', () => {
    expect(configProblems(() => loadConfig({ argv: ['--config'], env: {} }))).toEqual(['--config: a file path is required']);
  });

  it('reports a missing file naming it', () => {
    const missing = join(dir, 'nope.yaml');
    expect(configProblems(() => loadConfig({ argv: ['--config', missing], env: {} }))).toEqual([`config file ${missing}: not found (${missing} does not exist)`]);
  });

  it('reports a directory given as the config file', () => {
    expect(configProblems(() => loadConfig({ argv: [], configFile: dir, env: {} }))).toEqual([`config file ${dir}: is a directory, not a file`]);
  });

  it('takes configFile (parsed by the CLI) over --config in argv and MCP_GATEWAY_CONFIG', () => {
    const chosen = tempFile('server: { port: 9101 }');
    const other = tempFile('server: { port: 9102 }');
    expect(loadConfig({ argv: ['--config', other], configFile: chosen, env: { MCP_GATEWAY_CONFIG: other } }).server.port).toBe(9101);
  });

  it('reports a file that is not YAML/JSON, and one whose top level is not a mapping', () => {
    const broken = tempFile('server: [unclosed\n');
    const [bad] = configProblems(() => loadConfig({ argv: ['--config', broken], env: {} }));
    expect(bad).toMatch(new RegExp(`^config file ${broken}: not valid YAML/JSON`));
    const list = tempFile('- a\n- b\n');
    expect(configProblems(() => loadConfig({ argv: ['--config', list], env: {} }))).toEqual([`config file ${list}: the top level must be a mapping`]);
  });

  it('reports an unknown key in a file naming its dotted path', () => {
    const file = tempFile('server:\n  prot: 8080\ncatalgo: {}\n');
    expect([...configProblems(() => loadConfig({ argv: ['--config', file], env: {} }))].sort()).toEqual(['catalgo: unknown key', 'server.prot: unknown key']);
  });

  it('rejects __proto__ keys in YAML and JSON files without polluting Object.prototype', () => {
    const yamlFile = tempFile('__proto__:\n  polluted: yes\nserver:\n  __proto__:\n    polluted: yes\n');
    const yamlProblems = configProblems(() => loadConfig({ argv: ['--config', yamlFile], env: {} }));
    expect([...yamlProblems].sort()).toEqual(['__proto__: unknown key', 'server.__proto__: unknown key']);
    const jsonFile = tempFile('{"__proto__": {"polluted": true}, "server": {"port": 9000}}', 'json');
    expect(configProblems(() => loadConfig({ argv: ['--config', jsonFile], env: {} }))).toEqual(['__proto__: unknown key']);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(Object.hasOwn(Object.prototype, 'polluted')).toBe(false);
  });
});

describe('validateConfig', () => {
  it('accepts a partial object and fills the defaults', () => {
    const config = validateConfig({ server: { port: 0 }, catalog: { static: { routes: coreRoutes } } });
    expect(config.server.port).toBe(0);
    expect(config.server.host).toBe('127.0.0.1');
    expect(config.catalog.static.routes).toEqual(coreRoutes);
  });

  it('names the key of a bad value', () => {
    expect(configProblems(() => validateConfig({ server: { port: -1 } }))).toEqual(['server.port: must be >= 0']);
    expect(configProblems(() => validateConfig({ server: { port: 65536 } }))).toEqual(['server.port: must be <= 65535']);
    expect(configProblems(() => validateConfig({ workers: { acceptors: 0 } }))).toEqual(['workers.acceptors: must be >= 1']);
    const [level] = configProblems(() => validateConfig({ log: { level: 'loud' } }));
    expect(level).toMatch(/^log\.level: /);
    const [readiness] = configProblems(() => validateConfig({ health: { readiness: 'sometimes' } }));
    expect(readiness).toMatch(/^health\.readiness: /);
  });

  it('names an unknown key', () => {
    expect(configProblems(() => validateConfig({ workers: { threads: 4 } }))).toEqual(['workers.threads: unknown key']);
  });

  it('reports several problems in one error', () => {
    const details = configProblems(() => validateConfig({ server: { port: -1, host: '' }, workers: { acceptors: 0 }, tools: { bogus: true } }));
    expect(details).toHaveLength(4);
    expect(details.map((d) => d.slice(0, d.indexOf(':'))).sort()).toEqual(['server.host', 'server.port', 'tools.bogus', 'workers.acceptors']);
  });

  it('refuses a route key that is not a lowercase DNS label', () => {
    for (const key of ['Core', 'bad_key', '-core', 'a'.repeat(64)]) {
      const details = configProblems(() => validateConfig({ catalog: { static: { routes: { [key]: coreRoutes.core } } } }));
      expect(details).toEqual([`catalog.static.routes.${key}: route key must be a lowercase DNS label (^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$)`]);
    }
    expect(() => validateConfig({ catalog: { static: { routes: { ['a'.repeat(63)]: coreRoutes.core } } } })).not.toThrow();
  });

  it('refuses a duplicate service id, a non-http baseUrl and an empty route, all at once', () => {
    const details = configProblems(() =>
      validateConfig({
        catalog: {
          static: {
            routes: {
              core: [
                { id: 'a', baseUrl: 'http://127.0.0.1:1' },
                { id: 'a', baseUrl: 'http://127.0.0.1:2' },
              ],
              files: [{ id: 'f', baseUrl: 'ftp://files.example.com' }],
              empty: [],
            },
          },
        },
      }),
    );
    expect([...details].sort()).toEqual([
      'catalog.static.routes.core[1].id: duplicate Tool Service id "a"',
      'catalog.static.routes.empty: at least one Tool Service is required',
      'catalog.static.routes.files[0].baseUrl: must be an absolute http(s) URL',
    ]);
  });

  it('refuses a service entry with an unknown field or a relative manifestPath', () => {
    const details = configProblems(() => validateConfig({ catalog: { static: { routes: { core: [{ id: 'a', baseUrl: 'http://x', manifestPath: 'manifest', extra: 1 }] } } } }));
    expect(details.some((d) => d.startsWith('catalog.static.routes.core.0.manifestPath: '))).toBe(true);
    expect(details).toContain('catalog.static.routes.core.0.extra: unknown key');
  });

  it('refuses tools.defaultTimeoutMs above tools.maxTimeoutMs (equal is fine)', () => {
    expect(configProblems(() => validateConfig({ tools: { defaultTimeoutMs: 5000, maxTimeoutMs: 4999 } }))).toEqual(['tools.defaultTimeoutMs: must not exceed tools.maxTimeoutMs']);
    expect(validateConfig({ tools: { defaultTimeoutMs: 5000, maxTimeoutMs: 5000 } }).tools.maxTimeoutMs).toBe(5000);
  });

  it('refuses a call ring capacity that is not a power of two (the ring indexes with a mask)', () => {
    expect(configProblems(() => validateConfig({ workers: { channelRingBytes: 100_000 } }))).toEqual(['workers.channelRingBytes: must be a power of two, got 100000']);
    expect(validateConfig({ workers: { channelRingBytes: 4096 } }).workers.channelRingBytes).toBe(4096);
    expect(configProblems(() => validateConfig({ workers: { channelRingBytes: 2048 } }))).toEqual(['workers.channelRingBytes: must be >= 4096']);
  });

  it('refuses an allowed execution origin that is not http(s)', () => {
    expect(configProblems(() => validateConfig({ tools: { allowedExecutionOrigins: ['file:///etc'] } }))).toEqual(['tools.allowedExecutionOrigins: "file:///etc" is not an http(s) origin']);
  });

  it('resolves workers.shards 0 to max(1, CPU budget - acceptors) and keeps an explicit count', () => {
    expect(validateConfig({ workers: { shards: 0 } }).workers.shards).toBe(expectedShards);
    expect(validateConfig({ workers: { shards: 0 } }).workers.shards).toBeGreaterThanOrEqual(1);
    expect(validateConfig({ workers: { shards: 7 } }).workers.shards).toBe(7);
  });

  it('returns a deep-frozen object', () => {
    const config = validateConfig({ catalog: { static: { routes: coreRoutes } } });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.server)).toBe(true);
    expect(Object.isFrozen(config.catalog.static.routes)).toBe(true);
    expect(Object.isFrozen(config.catalog.static.routes['core'])).toBe(true);
    expect(Object.isFrozen(config.catalog.static.routes['core']?.[0])).toBe(true);
    expect(Object.isFrozen(config.tools.allowedExecutionOrigins)).toBe(true);
    // ESM is strict mode: writing to a frozen object throws.
    expect(() => {
      (config.server as { port: number }).port = 1;
    }).toThrow(TypeError);
    expect(config.server.port).toBe(8080);
    const loaded = loadConfig({ argv: [], env: {} });
    expect(Object.isFrozen(loaded.catalog.static.routes['demo']?.[0])).toBe(true);
  });

  it('ignores an own __proto__ key only by refusing it, never by following it', () => {
    const value = JSON.parse('{"__proto__": {"polluted": 1}, "workers": {"__proto__": {"shards": 9}}}') as unknown;
    expect([...configProblems(() => validateConfig(value))].sort()).toEqual(['__proto__: unknown key', 'workers.__proto__: unknown key']);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    expect(({} as Record<string, unknown>)['shards']).toBeUndefined();
  });
});
