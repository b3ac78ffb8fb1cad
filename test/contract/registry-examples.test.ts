/**
 * Portal registry document v1 golden examples (SPEC §4, §7): every
 * `docs/contracts/examples/registry/*.json` goes through `parseRegistry`
 * (or, for a body that is not JSON, through a real Portal fixture and
 * `PortalClient`). A readable document must yield exactly the listed routes
 * and reject exactly the listed routes with the stated reason; an unreadable
 * one must fail as a whole with the stated code and problem.
 * Format: `docs/contracts/portal-registry-v1.md` §8.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRegistry, type Registry } from '../../src/shared/catalog/registry.js';
import { GatewayError } from '../../src/shared/errors.js';
import { PortalClient } from '../../src/workers/refresh/portal-client.js';
import { startFixturePortal, type FixturePortal } from '../fixtures/portal.js';
import { loadExamples } from './support.js';

/** A registry example file. */
type RegistryExample = { description: string } & ({ document: unknown } | { documentText: string }) &
  ({ readable: true; revision: string; routes: Record<string, Array<Record<string, unknown>>>; rejected: Record<string, string> } | { readable: false; code: string; problem: string });

const MIN_EXAMPLES = 8;
const examples = loadExamples<RegistryExample>('registry');

let portal: FixturePortal;
beforeAll(async () => {
  portal = await startFixturePortal();
});
afterAll(async () => {
  await portal.close();
});

/** What the gateway makes of the example: the parsed registry, or the error that made the document unreadable. */
async function read(example: RegistryExample): Promise<Registry | GatewayError> {
  try {
    if ('documentText' in example) {
      // A body that is not JSON can only be met on the wire: serve it from a real Portal.
      portal.setMode({ kind: 'raw', body: example.documentText });
      const client = new PortalClient({ url: portal.url, timeoutMs: 5_000, maxBytes: 1024 * 1024 });
      const poll = await client.poll();
      if (poll.kind !== 'document') throw new Error('first poll answered unchanged');
      return parseRegistry(poll.document);
    }
    return parseRegistry(structuredClone(example.document));
  } catch (err) {
    if (GatewayError.is(err)) return err;
    throw err;
  }
}

describe('Portal registry v1 golden examples (docs/contracts/examples/registry)', () => {
  it(`has at least ${MIN_EXAMPLES} examples: readable ones, rejected routes and unreadable documents`, () => {
    expect(examples.length).toBeGreaterThanOrEqual(MIN_EXAMPLES);
    expect(examples.some((e) => e.example.readable && Object.keys(e.example.rejected).length === 0)).toBe(true);
    expect(examples.some((e) => e.example.readable && Object.keys(e.example.rejected).length > 0)).toBe(true);
    expect(examples.some((e) => !e.example.readable)).toBe(true);
  });

  it.each(examples.map((e) => [e.file, e.example] as const))('%s', async (file, example) => {
    expect(typeof example.description, `${file}: description`).toBe('string');
    expect('document' in example || 'documentText' in example, `${file}: needs document or documentText`).toBe(true);
    const result = await read(example);
    if (example.readable) {
      expect(GatewayError.is(result) ? `${result.code}: ${result.message}` : 'parsed', `${file}: a readable document failed`).toBe('parsed');
      if (GatewayError.is(result)) return;
      expect(result.revision, `${file}: revision`).toBe(example.revision);
      expect(Object.keys(result.routes).sort(), `${file}: accepted routes`).toEqual(Object.keys(example.routes).sort());
      for (const [routeKey, entries] of Object.entries(example.routes)) {
        const got = result.routes[routeKey] ?? [];
        expect(got.length, `${file}: entries of route "${routeKey}"`).toBe(entries.length);
        entries.forEach((want, i) => {
          // Every listed field must match (fields the example does not list are not checked).
          const picked = Object.fromEntries(Object.keys(want).map((k) => [k, (got[i] as Record<string, unknown> | undefined)?.[k]]));
          expect(picked, `${file}: route "${routeKey}" entry ${i}`).toEqual(want);
        });
      }
      expect(Object.keys(result.rejected).sort(), `${file}: rejected routes`).toEqual(Object.keys(example.rejected).sort());
      for (const [routeKey, reason] of Object.entries(example.rejected)) {
        expect(result.rejected[routeKey], `${file}: reason for rejecting "${routeKey}"`).toContain(reason);
      }
    } else {
      expect(GatewayError.is(result), `${file}: an unreadable document was accepted`).toBe(true);
      if (!GatewayError.is(result)) return;
      expect(result.code, `${file}: code`).toBe(example.code);
      expect(result.message, `${file}: problem`).toContain(example.problem);
    }
  });

  // That these examples are tracked, not ignored by git (SPEC §9 defect 6), is checked for every folder in docs-drift.test.ts.
});
