/**
 * Credentials the gateway presents upstream (auth.upstream.profiles),
 * against a real HTTPS server on 127.0.0.1 that requires a client
 * certificate from its own CA (generated for this run) and plays Portal,
 * manifest endpoint and Tool Service: the registry, the manifest and the
 * tool call all arrive over mTLS with the profile's headers (one from a
 * file, re-read when it changes; one from the environment), and the
 * client's own token is never passed through.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../helpers/eventually.js';
import { mcpPost, rpc, startTestGateway, type Gateway } from '../helpers/gateway.js';
import { rpcBody } from '../helpers/mcp.js';
import { createTestPki, type TestPki } from '../helpers/pki.js';

interface Seen {
  path: string;
  authorization: string | undefined;
  tenant: string | undefined;
  clientCn: string | undefined;
  authorized: boolean;
  subject: string | undefined;
}

let pki: TestPki;
let server: Server;
let origin: string;
let gw: Gateway;
let tokenFile: string;
const seen: Seen[] = [];

beforeAll(async () => {
  pki = createTestPki();
  tokenFile = join(pki.dir, 'upstream-token');
  writeFileSync(tokenFile, 'Bearer upstream-1\n');
  server = createServer({ key: readFileSync(pki.serverKeyFile), cert: readFileSync(pki.serverCertFile), ca: readFileSync(pki.caFile), requestCert: true, rejectUnauthorized: true }, (req, res) => {
    const socket = req.socket as TLSSocket;
    const record: Seen = {
      path: req.url ?? '',
      authorization: req.headers.authorization as string | undefined,
      tenant: req.headers['x-tenant'] as string | undefined,
      clientCn: socket.getPeerCertificate().subject?.CN as string | undefined,
      authorized: socket.authorized,
      subject: req.headers['x-mcp-subject'] as string | undefined,
    };
    seen.push(record);
    req.resume();
    req.on('end', () => {
      let body: unknown;
      if (req.url === '/registry') body = { revision: 'r1', routes: { secure: [{ id: 'svc', baseUrl: origin }] } };
      else if (req.url === '/manifest') {
        body = { service: 'svc', tools: [{ name: 'whoami', version: '1.0.0', active: true, description: 'Who called.', inputSchema: { type: 'object' }, execution: { path: '/tools/whoami' } }] };
      } else body = { content: [{ type: 'text', text: JSON.stringify(record) }] };
      const text = JSON.stringify(body);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('unexpected address');
  origin = `https://127.0.0.1:${address.port}`;
  process.env['MCP_GW_TEST_TENANT'] = 'tenant-7';
  gw = await startTestGateway({
    catalog: { source: 'portal', portal: { url: `${origin}/registry` }, static: { routes: {} } },
    auth: {
      secretFileCheckMs: 100,
      resourceBaseUrl: 'https://mcp.example.com',
      providers: { keys: { type: 'apiKeys', header: 'x-api-key', keyHashes: { agent: createHash('sha256').update('agent-key').digest('hex') } } },
      policies: { p: { providers: ['keys'], rules: [{ when: {}, tools: ['*'] }] } },
      routes: { secure: 'p' },
      upstream: {
        profiles: {
          secure: {
            origins: [origin],
            caFile: pki.caFile,
            certFile: pki.clientCertFile,
            keyFile: pki.clientKeyFile,
            headers: { authorization: { file: tokenFile }, 'x-tenant': { env: 'MCP_GW_TEST_TENANT' } },
            forwardIdentity: { claims: ['groups'] },
          },
        },
      },
    },
  });
});

afterAll(async () => {
  await gw?.close();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  pki?.remove();
  delete process.env['MCP_GW_TEST_TENANT'];
});

async function whoami(headers: Record<string, string> = {}): Promise<Seen> {
  const answer = await mcpPost(gw, 'secure', rpc('tools/call', { name: 'whoami', arguments: {} }), { 'x-api-key': 'agent-key', ...headers });
  expect(answer.status, answer.text).toBe(200);
  const result = rpcBody(answer).result as { content: Array<{ text: string }>; isError?: boolean };
  expect(result.isError, answer.text).not.toBe(true);
  return JSON.parse((result.content[0] as { text: string }).text) as Seen;
}

describe('credentials to the Portal and the Tool Services', () => {
  it('fetched the registry and the manifest over mTLS with the profile headers', () => {
    for (const path of ['/registry', '/manifest']) {
      const r = seen.find((s) => s.path === path);
      expect(r, path).toMatchObject({ authorized: true, clientCn: 'gateway-client', authorization: 'Bearer upstream-1', tenant: 'tenant-7' });
    }
  });

  it('calls the Tool Service over mTLS with the profile headers, never the client token', async () => {
    const r = await whoami({ authorization: 'Bearer client-token-must-not-pass' });
    expect(r).toMatchObject({ path: '/tools/whoami', authorized: true, clientCn: 'gateway-client', authorization: 'Bearer upstream-1', tenant: 'tenant-7' });
    // forwardIdentity: who called, never the credential.
    expect(r.subject).toBe('apikey:agent');
    expect(JSON.stringify(seen)).not.toContain('agent-key');
    expect(JSON.stringify(seen)).not.toContain('client-token-must-not-pass');
  });

  it('sends the new value after the header file changes', async () => {
    writeFileSync(tokenFile, 'Bearer upstream-2\n');
    await waitUntil(async () => (await whoami()).authorization === 'Bearer upstream-2', 'the rotated upstream token to be sent');
  });
});
