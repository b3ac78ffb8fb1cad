/**
 * Kubernetes service links (issue 13, "service-link crash loop"): a Service
 * named `mcp-gateway` makes the kubelet inject variables that share the
 * gateway's `MCP_GATEWAY_` prefix. The gateway must start with them present
 * and still refuse a real typo.
 */
import { describe, expect, it } from 'vitest';
import { CONFIG_KEYS, loadConfig } from '../../../../src/shared/config/load.js';
import { isServiceLinkVariable } from '../../../../src/shared/config/service-links.js';
import { GatewayError } from '../../../../src/shared/errors.js';

/**
 * Exactly what the kubelet (pkg/kubelet/envvars/envvars.go, FromServices +
 * makeLinkVariables) injects for `Service mcp-gateway`, cluster IP
 * 10.96.0.12, ports `http` 8080/TCP and `admin` 9090/TCP.
 */
const MCP_GATEWAY_SERVICE_LINKS: Record<string, string> = {
  MCP_GATEWAY_SERVICE_HOST: '10.96.0.12',
  MCP_GATEWAY_SERVICE_PORT: '8080',
  MCP_GATEWAY_SERVICE_PORT_HTTP: '8080',
  MCP_GATEWAY_SERVICE_PORT_ADMIN: '9090',
  MCP_GATEWAY_PORT: 'tcp://10.96.0.12:8080',
  MCP_GATEWAY_PORT_8080_TCP: 'tcp://10.96.0.12:8080',
  MCP_GATEWAY_PORT_8080_TCP_PROTO: 'tcp',
  MCP_GATEWAY_PORT_8080_TCP_PORT: '8080',
  MCP_GATEWAY_PORT_8080_TCP_ADDR: '10.96.0.12',
  MCP_GATEWAY_PORT_9090_TCP: 'tcp://10.96.0.12:9090',
  MCP_GATEWAY_PORT_9090_TCP_PROTO: 'tcp',
  MCP_GATEWAY_PORT_9090_TCP_PORT: '9090',
  MCP_GATEWAY_PORT_9090_TCP_ADDR: '10.96.0.12',
};

function problemsOf(fn: () => unknown): readonly string[] {
  try {
    fn();
  } catch (err) {
    if (GatewayError.is(err)) return err.details;
    throw err;
  }
  return [];
}

describe('Kubernetes service-link variables', () => {
  it('do not stop the start: the variables injected for a Service named mcp-gateway are ignored', () => {
    const ignored: string[] = [];
    const config = loadConfig({ argv: [], env: { ...MCP_GATEWAY_SERVICE_LINKS }, onIgnoredEnv: (name) => ignored.push(name) });
    expect(config.server.port).toBe(8080);
    expect(ignored.sort()).toEqual(Object.keys(MCP_GATEWAY_SERVICE_LINKS).sort());
  });

  it('are ignored for a Service whose name collides with a config key (mcp-gateway-server → MCP_GATEWAY_SERVER_PORT)', () => {
    const config = loadConfig({
      argv: [],
      env: {
        MCP_GATEWAY_SERVER_SERVICE_HOST: '10.96.0.13',
        MCP_GATEWAY_SERVER_SERVICE_PORT: '80',
        MCP_GATEWAY_SERVER_PORT: 'tcp://10.96.0.13:80',
        MCP_GATEWAY_SERVER_PORT_80_TCP: 'tcp://10.96.0.13:80',
        MCP_GATEWAY_SERVER_PORT_80_TCP_PROTO: 'tcp',
        MCP_GATEWAY_SERVER_PORT_80_TCP_PORT: '80',
        MCP_GATEWAY_SERVER_PORT_80_TCP_ADDR: '10.96.0.13',
      },
    });
    expect(config.server.port).toBe(8080);
  });

  it('recognise IPv6 cluster IPs, UDP and SCTP ports', () => {
    expect(isServiceLinkVariable('MCP_GATEWAY_SERVICE_HOST', 'fd00:10:96::c')).toBe(true);
    expect(isServiceLinkVariable('MCP_GATEWAY_PORT', 'tcp://[fd00:10:96::c]:8080')).toBe(true);
    expect(isServiceLinkVariable('MCP_GATEWAY_PORT', 'tcp://fd00:10:96::c:8080')).toBe(true);
    expect(isServiceLinkVariable('MCP_GATEWAY_PORT_8080_TCP_ADDR', 'fd00:10:96::c')).toBe(true);
    expect(isServiceLinkVariable('MCP_GATEWAY_PORT_53_UDP', 'udp://10.96.0.12:53')).toBe(true);
    expect(isServiceLinkVariable('MCP_GATEWAY_PORT_53_UDP_PROTO', 'udp')).toBe(true);
    expect(isServiceLinkVariable('MCP_GATEWAY_PORT_3868_SCTP_PORT', '3868')).toBe(true);
  });

  it('need the exact Kubernetes value shape, not just the name', () => {
    // Same names with values Kubernetes never writes: not links, so the normal rules apply.
    expect(isServiceLinkVariable('MCP_GATEWAY_PORT', '9000')).toBe(false);
    expect(isServiceLinkVariable('MCP_GATEWAY_SERVICE_HOST', 'gateway.local')).toBe(false);
    expect(isServiceLinkVariable('MCP_GATEWAY_SERVICE_PORT', '99999')).toBe(false);
    expect(isServiceLinkVariable('MCP_GATEWAY_PORT_8080_TCP', 'tcp://10.96.0.12:9090')).toBe(false);
    expect(isServiceLinkVariable('MCP_GATEWAY_PORT_8080_TCP_PROTO', 'udp')).toBe(false);
    expect(isServiceLinkVariable('MCP_GATEWAY_PORT_8080_TCP_PORT', '9090')).toBe(false);
    expect(isServiceLinkVariable('MCP_GATEWAY_PORT_8080_HTTP', 'http://10.96.0.12:8080')).toBe(false);
    expect(isServiceLinkVariable('MCP_GATEWAY_PORT', 'http://10.96.0.12:8080')).toBe(false);
  });

  it('leave an explicit MCP_GATEWAY_PORT override working', () => {
    expect(loadConfig({ argv: [], env: { ...MCP_GATEWAY_SERVICE_LINKS, MCP_GATEWAY_PORT: '9400' } }).server.port).toBe(9400);
  });

  it('still refuse a real typo next to them', () => {
    expect(problemsOf(() => loadConfig({ argv: [], env: { ...MCP_GATEWAY_SERVICE_LINKS, MCP_GATEWAY_SERVER_PROT: '8081' } }))).toEqual([
      'MCP_GATEWAY_SERVER_PROT: unknown environment variable (no such config key)',
    ]);
    expect(problemsOf(() => loadConfig({ argv: [], env: { MCP_GATEWAY_SERVICE_HOST: 'not-an-ip' } }))).toEqual(['MCP_GATEWAY_SERVICE_HOST: unknown environment variable (no such config key)']);
  });

  it('can never shadow a config key: no key variable has a link name shape that takes a non-URL value', () => {
    // `{NAME}_PORT` links always hold a URL, which no integer key (nullable or not) accepts, so
    // ignoring them cannot drop a real setting. Every other link shape must
    // stay clear of the key variables, including keys added later.
    const linkOnly = /_SERVICE_HOST$|_SERVICE_PORT(_[A-Z0-9_]+)?$|_PORT_\d+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?$/;
    for (const key of CONFIG_KEYS) {
      expect(key.env, key.path).not.toMatch(linkOnly);
      if (key.env.endsWith('_PORT')) expect(['integer', 'nullable-integer'], key.path).toContain(key.kind);
    }
  });
});
