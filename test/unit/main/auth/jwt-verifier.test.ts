/**
 * A JWKS behind HTTPS with a private CA (`jwksCaFile`): the verifier trusts
 * that CA only when told to, and imports undici with its first fetch
 * (ADR-0020) — real HTTPS server on 127.0.0.1, real keys, real tokens.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JwtVerifier } from '../../../../src/main/auth/jwt-verifier.js';
import type { JwtProviderConfig } from '../../../../src/shared/auth/config-schema.js';
import { createTestPki, type TestPki } from '../../../helpers/pki.js';

let pki: TestPki;
let server: Server;
let jwksUrl: string;
let token: string;
let jwksRequests = 0;
const ISSUER = 'https://issuer.test';

beforeAll(async () => {
  pki = createTestPki();
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  server = createServer({ cert: readFileSync(pki.serverCertFile), key: readFileSync(pki.serverKeyFile) }, (_req, res) => {
    jwksRequests++;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  jwksUrl = `https://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
  token = await new SignJWT({}).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setIssuer(ISSUER).setSubject('alice').setExpirationTime('5m').sign(privateKey);
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  pki.remove();
});

function verifier(caFile: string | undefined, fetches: boolean[]): JwtVerifier {
  const config: JwtProviderConfig = { type: 'jwt', issuer: ISSUER, jwksUrl, algorithms: ['ES256'], ...(caFile !== undefined ? { jwksCaFile: caFile } : {}) };
  return new JwtVerifier(
    'corp',
    config,
    1000,
    () => undefined,
    (_provider, ok) => fetches.push(ok),
  );
}

describe('JwtVerifier with a JWKS behind a private CA', () => {
  it('verifies a token when jwksCaFile names the CA', async () => {
    const fetches: boolean[] = [];
    const v = verifier(pki.caFile, fetches);
    const result = await v.verify(token);
    expect(result.kind).toBe('ok');
    expect(result.kind === 'ok' ? result.principal.subject : '').toBe('alice');
    expect(fetches).toEqual([true]);
    v.close();
  });

  it('without jwksCaFile the server is not trusted: the keys are unavailable, the token not judged', async () => {
    const fetches: boolean[] = [];
    const before = jwksRequests;
    const v = verifier(undefined, fetches);
    const result = await v.verify(token);
    expect(result.kind).toBe('unavailable');
    expect(fetches).toEqual([false]);
    expect(jwksRequests).toBe(before); // refused in the TLS handshake: no request reached the server
    v.close();
  });
});
