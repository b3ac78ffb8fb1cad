/**
 * Golden authentication examples as test input: every
 * `docs/contracts/examples/auth/*.json` is sent over real HTTP to one real
 * gateway whose route `core` is protected by the policy described in
 * docs/contracts/authentication.md §7 (API keys, so the examples do not
 * depend on the clock), in front of a fixture Tool Service. Status, listed
 * headers and body must match (placeholders as in the examples README).
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestFor, startFixtureToolService, type FixtureToolService } from '../fixtures/tool-service.js';
import { startTestGateway, type Gateway } from '../helpers/gateway.js';
import { exchange } from '../helpers/mcp-client.js';
import { loadExamples, parseJson, resolvePlaceholders } from './support.js';

interface AuthExample {
  description: string;
  toolServiceRequests?: number;
  request: { method: string; path: string; headers?: Record<string, string>; body?: unknown };
  response: { status: number; headers?: Record<string, string | null>; body: unknown };
}

const examples = loadExamples<AuthExample>('auth');
const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

let svc: FixtureToolService;
let gw: Gateway;

beforeAll(async () => {
  svc = await startFixtureToolService();
  svc.setManifest(manifestFor([{ name: 'echo' }, { name: 'admin_reset' }]));
  svc.setBehavior('/tools/admin_reset', { kind: 'json', body: { content: [{ type: 'text', text: 'done' }] } });
  gw = await startTestGateway({
    catalog: { static: { routes: { core: [{ id: 'svc', baseUrl: svc.url }] } } },
    auth: {
      resourceBaseUrl: 'https://mcp.example.com',
      providers: {
        // Never contacted by these examples (no JWT is sent); it gives the metadata its authorization server.
        sso: { type: 'jwt', issuer: 'https://sso.example.com', jwksUrl: 'https://sso.example.com/jwks', algorithms: ['RS256'] },
        keys: { type: 'apiKeys', header: 'authorization', keyHashes: { reader: sha256('reader-key'), admin: sha256('admin-key'), outsider: sha256('outsider-key') } },
      },
      policies: {
        team: {
          providers: ['sso', 'keys'],
          scopesSupported: ['tools.read'],
          rules: [
            { when: { apiKeys: ['reader'] }, tools: ['echo'] },
            { when: { apiKeys: ['admin'] }, tools: ['*'] },
          ],
        },
      },
      routes: { core: 'team' },
    },
  });
});

afterAll(async () => {
  await gw?.close();
  await svc?.close();
});

describe('docs/contracts/examples/auth', () => {
  it('has the examples authentication.md refers to', () => {
    expect(examples.length).toBeGreaterThanOrEqual(7);
  });

  it.each(examples.map((e) => [e.file, e.example] as const))('%s', async (_file, ex) => {
    const before = svc.requests.length;
    const answer = await exchange(gw, {
      method: ex.request.method,
      path: ex.request.path,
      headers: ex.request.headers ?? {},
      ...(ex.request.body !== undefined ? { body: JSON.stringify(ex.request.body) } : {}),
    });
    expect(answer.status, answer.text).toBe(ex.response.status);
    for (const [name, value] of Object.entries(ex.response.headers ?? {})) {
      expect(answer.headers[name] ?? null, `header ${name}`).toBe(value);
    }
    const body = parseJson(answer.text);
    expect(body).toEqual(resolvePlaceholders(ex.response.body, body));
    if (ex.toolServiceRequests !== undefined) expect(svc.requests.length - before).toBe(ex.toolServiceRequests);
  });
});
