/**
 * Recognises the Docker-links-compatible variables the kubelet injects for
 * every Service in the pod's namespace (unless `enableServiceLinks: false`),
 * so that a Service named `mcp-gateway` — or `mcp-gateway-server`, … — does
 * not stop the gateway: its variables share our `MCP_GATEWAY_` prefix.
 *
 * The shapes, from the kubelet (`pkg/kubelet/envvars/envvars.go`, FromServices
 * and makeLinkVariables); `{SVC}` is the Service name upper-cased with `-`
 * turned into `_`, `{PORTNAME}` a named port the same way:
 *
 * ```
 *   {SVC}_SERVICE_HOST=10.96.0.12                   cluster IP
 *   {SVC}_SERVICE_PORT=8080                         first port
 *   {SVC}_SERVICE_PORT_{PORTNAME}=8080              every named port
 *   {SVC}_PORT=tcp://10.96.0.12:8080                first port, as a URL
 *   {SVC}_PORT_{N}_{PROTO}=tcp://10.96.0.12:{N}     every port; PROTO is TCP, UDP or SCTP
 *   {SVC}_PORT_{N}_{PROTO}_PROTO=tcp
 *   {SVC}_PORT_{N}_{PROTO}_PORT={N}
 *   {SVC}_PORT_{N}_{PROTO}_ADDR=10.96.0.12
 * ```
 *
 * A variable counts as a link only when its name has one of these shapes
 * *and* its value has exactly the matching shape (an IP address, a port, the
 * URL with the same port and protocol), so a typo such as
 * `MCP_GATEWAY_SERVER_PROT` and an override such as `MCP_GATEWAY_PORT=9000`
 * are still treated as configuration (ADR-0009).
 */
import { isIP } from 'node:net';

const SVC = '[A-Z_][A-Z0-9_]*';
const PROTOS = 'TCP|UDP|SCTP';

const SERVICE_HOST = new RegExp(`^${SVC}_SERVICE_HOST$`);
const SERVICE_PORT = new RegExp(`^${SVC}_SERVICE_PORT(?:_[A-Z0-9_]+)?$`);
const FIRST_PORT_URL = new RegExp(`^${SVC}_PORT$`);
const PORT_FAMILY = new RegExp(`^${SVC}_PORT_(\\d{1,5})_(${PROTOS})(?:_(PROTO|PORT|ADDR))?$`);
const LINK_URL = /^(tcp|udp|sctp):\/\/(\[[0-9A-Fa-f:.]+\]|[0-9A-Fa-f:.]+):(\d{1,5})$/;

/** True when `name=value` is a variable the kubelet injects for a Service (see the module header). */
export function isServiceLinkVariable(name: string, value: string): boolean {
  // Shapes overlap (`X_PORT_8080_TCP_PORT` is also `{SVC}_PORT` with SVC = `X_PORT_8080_TCP`), so every one is tried.
  if (SERVICE_HOST.test(name) && isIP(value) !== 0) return true;
  if (SERVICE_PORT.test(name) && isPort(value)) return true;
  if (FIRST_PORT_URL.test(name) && linkUrl(value) !== null) return true;
  const family = PORT_FAMILY.exec(name);
  if (family === null) return false;
  const [, port = '', proto = '', field] = family;
  switch (field) {
    case undefined: {
      const url = linkUrl(value);
      return url !== null && url.proto === proto.toLowerCase() && url.port === port;
    }
    case 'PROTO':
      return value === proto.toLowerCase();
    case 'PORT':
      return value === port;
    case 'ADDR':
      return isIP(value) !== 0;
    default:
      return false;
  }
}

function isPort(value: string): boolean {
  return /^\d{1,5}$/.test(value) && Number(value) <= 65535;
}

/** `proto://ip:port` as the kubelet writes it (IPv6 bare or in brackets), or null. */
function linkUrl(value: string): { proto: string; port: string } | null {
  const m = LINK_URL.exec(value);
  if (m === null) return null;
  const [, proto = '', rawHost = '', port = ''] = m;
  const host = rawHost.startsWith('[') ? rawHost.slice(1, -1) : rawHost;
  if (isIP(host) === 0 || !isPort(port)) return null;
  return { proto, port };
}
