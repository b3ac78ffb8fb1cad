/**
 * Fault and abuse suite, protocol core (issue 11): generated request bodies
 * through `answerRequest` and generated request heads through
 * `gateMcpRequest`. Zero exceptions; every answer is well-formed: JSON-RPC
 * 2.0 JSON when it has a body, the HTTP status the error code maps to
 * (docs/contracts/errors.md), the request's own id when it had a usable one.
 * Seed: FUZZ_SEED (printed by fast-check on failure); counts: FUZZ_RUNS_SCALE.
 *
 * Checks inside the properties are plain `check()` calls, not `expect`:
 * 150,000 runs × ~10 assertions would otherwise cost more than the code under test.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CatalogTool } from '../../src/shared/catalog/types.js';
import { validateConfig } from '../../src/shared/config/load.js';
import { JsonRpcErrorCode } from '../../src/shared/errors.js';
import { answerRequest } from '../../src/shared/protocol/answer.js';
import { answerModernRequest } from '../../src/shared/protocol/answer-modern.js';
import { gateMcpRequest, refusalReply, type RouteEntry } from '../../src/shared/protocol/gate.js';
import { buildHttpPolicy } from '../../src/shared/protocol/http-policy.js';
import { idTextInBytes } from '../../src/shared/protocol/id-text.js';
import { httpStatusForRpcError } from '../../src/shared/protocol/jsonrpc.js';
import { replyText, type Reply } from '../../src/shared/protocol/reply.js';
import { decodeSnapshot, encodeSnapshot, type SnapshotView } from '../../src/shared/snapshot/layout.js';
import { check, fuzzRuns, fuzzSeed, requestHead, rpcBody } from './arbitraries.js';

const tool: CatalogTool = { name: 'employee_search', version: '1', active: true, serviceId: 's', inputSchema: { type: 'object' }, timeoutMs: 1000, executionUrl: 'http://127.0.0.1:1/t' };
const route = decodeSnapshot(encodeSnapshot({ routeKey: 'core', revision: 'sha256:00', source: 'static', builtAt: 0, tools: [tool] }));
const modernRoute = { modernListTemplate: route.modernListTemplate, builtAt: 0, headerParams: null };
const freshness = { refreshIntervalMs: 30_000, refreshJitterRatio: 0.1, now: () => 12_345 };
const RPC_CODES = new Set<number>(Object.values(JsonRpcErrorCode));
const decoder = new TextDecoder();

interface Wire {
  jsonrpc: string;
  id: unknown;
  result?: unknown;
  error?: { code: number; message: string };
}

function isJson(bytes: Uint8Array): boolean {
  try {
    JSON.parse(decoder.decode(bytes));
    return true;
  } catch {
    return false;
  }
}

/** Checks the shape every JSON answer must have; returns it parsed. */
function wellFormed(reply: Reply): Wire {
  const text = replyText(reply);
  let wire: Wire;
  try {
    wire = JSON.parse(text) as Wire;
  } catch {
    throw new Error(`answer is not JSON: ${text.slice(0, 200)}`);
  }
  check(typeof wire === 'object' && wire !== null && wire.jsonrpc === '2.0', 'jsonrpc must be "2.0"', text);
  check('id' in wire && (wire.id === null || typeof wire.id === 'string' || typeof wire.id === 'number'), 'id must be present and null, a string or a number', text);
  check('result' in wire !== 'error' in wire, 'exactly one of result and error', text);
  if (wire.error !== undefined) check(RPC_CODES.has(wire.error.code) && typeof wire.error.message === 'string', 'a known error code and a message', text);
  return wire;
}

describe('fuzz: answerRequest (≥ 100,000 generated bodies)', () => {
  it('never throws; answers are well-formed JSON-RPC with the status their code maps to and the request id', { timeout: 120_000 }, () => {
    const seen = { replies: 0, results: 0, forwards: 0, accepted: 0, errors: 0, deferredParseErrors: 0 };
    fc.assert(
      fc.property(rpcBody, (body) => {
        const decision = answerRequest(body, route);
        let request: unknown;
        try {
          request = JSON.parse(decoder.decode(body));
        } catch {
          request = undefined;
        }
        const requestId = typeof request === 'object' && request !== null && !Array.isArray(request) ? (request as { id?: unknown }).id : undefined;
        if (decision.kind === 'forward') {
          seen.forwards++;
          check(decision.method === 'tools/call', 'only tools/call is forwarded', decision);
          if (request === undefined) {
            // Not JSON only inside its arguments object, which the acceptor leaves to the shard (call-params.ts): the shard answers -32700.
            seen.deferredParseErrors++;
            check(decision.argumentsBytes !== null && !isJson(decision.argumentsBytes), 'a forwarded body that is not JSON has arguments that are not JSON', decision);
          } else check(decision.id === requestId, 'a forward carries the request id', decision);
          return;
        }
        seen.replies++;
        const reply = decision.reply;
        if (reply.status === 202) {
          seen.accepted++;
          check(replyText(reply) === '' && decision.outcome === 'accepted', '202 has no body', decision);
          return;
        }
        const wire = wellFormed(reply);
        if (wire.error !== undefined) {
          seen.errors++;
          check(reply.status === httpStatusForRpcError(wire.error.code), `HTTP ${reply.status} for code ${wire.error.code}`);
          if (wire.error.code === JsonRpcErrorCode.ParseError) check(wire.id === null, 'a parse error has id null');
        } else {
          seen.results++;
          check(reply.status === 200, `a result with HTTP ${reply.status}`);
        }
        if ((typeof requestId === 'string' && requestId.length <= 1024) || (typeof requestId === 'number' && Number.isFinite(requestId))) {
          // The same id (-0 is answered as 0: the same JSON number) …
          check(wire.id === requestId, `id ${String(wire.id)} for ${String(requestId)}`);
          // … and for a number JSON.parse rounded, the same text as sent.
          if (typeof requestId === 'number' && !Number.isSafeInteger(requestId)) {
            const sent = idTextInBytes(body);
            if (sent !== null && sent.length <= 1024) check(replyText(reply).includes(`"id":${sent}`), `id text ${sent}`, replyText(reply));
          }
        }
      }),
      { numRuns: fuzzRuns(100_000), seed: fuzzSeed() },
    );
    console.log(`answerRequest fuzz: ${JSON.stringify(seen)}`);
    // The generator reaches every branch: answers, errors, 202s and forwards.
    expect(seen.replies).toBeGreaterThan(fuzzRuns(100_000) / 4);
    expect(Math.min(seen.results, seen.accepted, seen.errors)).toBeGreaterThan(fuzzRuns(100_000) / 100);
    // Forwards are rarer: the acceptor refuses malformed tools/call params itself (no hop).
    expect(seen.forwards).toBeGreaterThan(fuzzRuns(100_000) / 250);
  });
});

describe('fuzz: gateMcpRequest (50,000 generated request heads)', () => {
  const policy = buildHttpPolicy(validateConfig({ server: { host: '127.0.0.1', port: 0, maxBodyBytes: 1024 * 1024 } }).server);
  const routes = new Map<string, RouteEntry<SnapshotView>>([
    ['core', { shard: 0, snapshot: route, unavailable: null }],
    ['cold', { shard: 1, snapshot: null, unavailable: { code: 'MANIFEST_INVALID', message: 'Tool Service "x" manifest is invalid' } }],
  ]);
  const GATE_STATUSES = new Set([400, 403, 404, 405, 406, 413, 415, 503]);

  it('never throws; every refusal is a -32000 (or -32022) JSON-RPC error with id null, a gate status and its required headers', { timeout: 60_000 }, () => {
    let accepted = 0;
    let deferred = 0;
    fc.assert(
      fc.property(requestHead, (head) => {
        const result = gateMcpRequest(head, policy, (key) => routes.get(key));
        if (result.kind === 'accept') {
          accepted++;
          check(result.routeKey === 'core' && head.method === 'post' && head.contentLength <= policy.maxBodyBytes, 'only a servable request is accepted', head);
          return;
        }
        // A refusal that waits for the body (to echo its id) is answered with id null when the body names none.
        const legacyHeader = ['', '2025-11-25', '2025-06-18', '2025-03-26'].includes(head.protocolVersion);
        if (result.kind === 'refuse-after-body') {
          deferred++;
          check(!legacyHeader && head.method === 'post', 'only a POST of a non-legacy era waits for its body', head);
        }
        const reply = result.kind === 'reply' ? result.reply : refusalReply(result.refusal, null);
        const label = result.kind === 'reply' ? result.label : result.refusal.label;
        check(GATE_STATUSES.has(reply.status), `status ${reply.status}`);
        const wire = wellFormed(reply);
        const codes: number[] = [JsonRpcErrorCode.TransportError, JsonRpcErrorCode.UnsupportedProtocolVersion];
        check(wire.id === null && codes.includes(wire.error?.code ?? 0), 'a gate refusal is -32000 (or -32022) with id null', wire);
        const headers = new Map(reply.headers ?? []);
        if (reply.status === 503) check(Number(headers.get('retry-after')) > 0, '503 carries Retry-After');
        if (reply.status === 405) check(headers.get('allow') === 'POST', '405 carries Allow: POST');
        // A refused route key is never echoed (it may carry markup or control characters).
        const key = head.path.slice('/mcp/'.length);
        if (label === 'bad_route_key' && key.length >= 4) check(!replyText(reply).includes(key), 'a bad route key is not echoed', key);
      }),
      { numRuns: fuzzRuns(50_000), seed: fuzzSeed() },
    );
    expect(accepted).toBeGreaterThan(0);
    expect(deferred).toBeGreaterThan(0);
  });
});

describe('fuzz: answerModernRequest (≥ 50,000 generated bodies and mirrored headers)', () => {
  /** 2026-07-28 statuses: -32601 is 404, header and envelope errors 400, in-band -32602 200 (or 400 for _meta). */
  const STATUS: Record<number, readonly number[]> = {
    [JsonRpcErrorCode.ParseError]: [400],
    [JsonRpcErrorCode.InvalidRequest]: [400],
    [JsonRpcErrorCode.MethodNotFound]: [404],
    [JsonRpcErrorCode.InvalidParams]: [200, 400],
    [JsonRpcErrorCode.HeaderMismatch]: [400],
  };
  const mirrored = fc.record({
    mcpMethod: fc.constantFrom('', 'tools/list', 'tools/call', 'server/discover', ' tools/call ', 'TOOLS/LIST', 'initialize'),
    mcpName: fc.constantFrom('', 'employee_search', '  employee_search ', '=?base64?ZW1wbG95ZWVfc2VhcmNo?=', '=?base64?bad?=', 'other'),
    paramHeaders: fc.constant([] as Array<readonly [string, string]>),
  });

  it('never throws; answers are well-formed with the request id and the status their code maps to', { timeout: 120_000 }, () => {
    const seen = { replies: 0, forwards: 0, listens: 0 };
    fc.assert(
      fc.property(rpcBody, mirrored, (body, head) => {
        const decision = answerModernRequest(body, modernRoute, head, freshness);
        if (decision.kind === 'forward') {
          seen.forwards++;
          check(decision.modern && decision.method === 'tools/call', 'a modern forward is marked modern', decision);
          return;
        }
        if (decision.kind === 'listen') {
          seen.listens++;
          return;
        }
        seen.replies++;
        const reply = decision.reply;
        if (reply.status === 202) return;
        const wire = wellFormed(reply);
        if (wire.error !== undefined) {
          const allowed = STATUS[wire.error.code] ?? [];
          check(allowed.includes(reply.status), `HTTP ${reply.status} for code ${wire.error.code}`);
        } else {
          check(reply.status === 200 && (wire.result as { resultType?: unknown }).resultType === 'complete', 'a modern result is complete', wire);
        }
      }),
      { numRuns: fuzzRuns(50_000), seed: fuzzSeed() },
    );
    console.log(`answerModernRequest fuzz: ${JSON.stringify(seen)}`);
    expect(seen.replies).toBeGreaterThan(0);
  });
});
