/**
 * A private PKI for one test run, made with the openssl CLI in a temporary
 * directory (deleted by `remove()`): a CA, a server certificate for
 * 127.0.0.1 and a client certificate (mTLS). Nothing secret is committed.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** File paths of the generated material. */
export interface TestPki {
  dir: string;
  caFile: string;
  serverCertFile: string;
  serverKeyFile: string;
  clientCertFile: string;
  clientKeyFile: string;
  remove(): void;
}

/** Generates the CA and both certificates (EC P-256, valid one day). */
export function createTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-gw-pki-'));
  const openssl = (...args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  };
  const issue = (name: string, cn: string, ext: string): void => {
    openssl('req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`);
    writeFileSync(join(dir, `${name}.ext`), ext);
    openssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '1', '-out', `${name}.crt`, '-extfile', `${name}.ext`);
  };
  openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=mcp-gateway test CA');
  issue('server', '127.0.0.1', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  issue('client', 'gateway-client', 'extendedKeyUsage=clientAuth\n');
  return {
    dir,
    caFile: join(dir, 'ca.crt'),
    serverCertFile: join(dir, 'server.crt'),
    serverKeyFile: join(dir, 'server.key'),
    clientCertFile: join(dir, 'client.crt'),
    clientKeyFile: join(dir, 'client.key'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
