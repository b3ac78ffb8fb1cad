/**
 * What a client learns from a refused route (issue 11 #11): the 503 of a
 * route without a usable catalog carries a stable reason code
 * (`error.data.reason`) and a generic message — never the manifest's address,
 * port or the connection error, which stay in readiness and the logs — unless
 * `server.exposeErrorDetails` is set for development.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpRequest, mcpPost, rpc, startTestGateway, type Gateway } from '../../helpers/gateway.js';
import { rpcError } from '../../helpers/mcp.js';
import { closedOrigin } from '../../helpers/ports.js';

const MANIFEST_PATH = '/internal/manifest';

describe('client-facing refusals disclose no internal detail (issue 11 #11)', () => {
  let dead: string;
  let gw: Gateway;
  let dev: Gateway | undefined;

  beforeAll(async () => {
    dead = await closedOrigin();
    gw = await startTestGateway({ catalog: { static: { routes: { hidden: [{ id: 'internal-svc', baseUrl: dead, manifestPath: MANIFEST_PATH }] } } } });
  });
  afterAll(async () => {
    await gw?.close();
    await dev?.close();
  });

  it('a route whose manifest is unreachable answers 503 with MANIFEST_UNREACHABLE and no address, port or cause', async () => {
    const port = new URL(dead).port;
    for (const request of [
      rpc('tools/list', undefined, 1),
      rpc('tools/call', { name: 'x', arguments: {} }, 2),
      rpc('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } }, 3),
    ]) {
      const answer = await mcpPost(gw, 'hidden', request);
      expect(answer.status).toBe(503);
      expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
      const error = rpcError(answer);
      expect(error.code).toBe(-32000);
      expect(error.data).toEqual({ reason: 'MANIFEST_UNREACHABLE' });
      // Nothing of the internal topology, anywhere in the answer (headers included).
      const everything = `${answer.text}\n${[...answer.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}`;
      for (const secret of ['127.0.0.1', `:${port}`, MANIFEST_PATH, 'internal-svc', 'ECONNREFUSED', 'http://']) {
        expect(everything, `the 503 names ${secret}`).not.toContain(secret);
      }
    }
    // The detail is where an operator looks: readiness.
    const ready = (await httpRequest(gw, '/health/ready')).json as { routes: Record<string, { lastError: { code: string; message: string } | null }> };
    expect(ready.routes['hidden']?.lastError?.code).toBe('MANIFEST_UNREACHABLE');
    expect(ready.routes['hidden']?.lastError?.message).toMatch(/internal-svc.*ECONNREFUSED/);
  });

  it('server.exposeErrorDetails (development) puts the detail into the message, the reason code stays', async () => {
    dev = await startTestGateway({
      server: { exposeErrorDetails: true },
      catalog: { static: { routes: { hidden: [{ id: 'internal-svc', baseUrl: dead, manifestPath: MANIFEST_PATH }] } } },
    });
    const answer = await mcpPost(dev, 'hidden', rpc('tools/list'));
    expect(answer.status).toBe(503);
    const error = rpcError(answer);
    expect(error.data).toEqual({ reason: 'MANIFEST_UNREACHABLE' });
    expect(error.message).toMatch(/internal-svc.*ECONNREFUSED/);
  });
});
