/**
 * The main phase: the gateway (on each runtime of the run) against the bare
 * uWS server, the echo Tool Service alone, the inline single-threaded
 * gateway and the MCP SDK's stateless server, all started before any load,
 * probed for correct answers, then measured interleaved. The variant rows
 * (2026-07-28 requests, routes behind an API key or a JWT) are measured right
 * after the legacy / open-route row they are divided by.
 */
import { toolsListResultBytes } from '../catalog.js';
import { scratch } from '../harness.js';
import { recordIdleRss, probeTargets, runInterleaved, type Role, type RunState, type ServerKind, type Target } from './measure.js';
import type { Options } from './options.js';
import { benchAuth, JWT_ROUTE, KEY_ROUTE, VARIANT_NOTE, type BenchAuth } from './auth.js';
import { checkAnyJson, checkDirectCall, checkGatewayCall, checkInitialize, checkList, checkModernCall, checkModernList, checkStatus, probeOne, send, type Check } from './probes.js';
import {
  COMPARATORS,
  comparatorArgs,
  gatewayConfig,
  startGateway,
  startNodeServer,
  startProbedNodeServer,
  upstreamArgs,
  type Comparator,
  type Runtime,
  type ServiceEntry,
  type Started,
  type StartedGateway,
} from './servers.js';
import { readThreadReports } from './threads.js';
import {
  echoCallBodies,
  initBody,
  listBody,
  MCP_HEADERS,
  MIXED_NOTE,
  MIXED_ROUTES,
  mixedRequests,
  modernHeaders,
  modernListBody,
  routeName,
  routeSize,
  toolNames,
  VARIANTS,
  type WorkloadId,
} from './workloads.js';

const GATEWAY_WORKLOADS: WorkloadId[] = ['list5', 'list50', 'list50-modern', 'list50-auth', 'list50-jwt', 'call', 'call-modern', 'call-auth', 'call-jwt', 'initialize', 'mixed'];
const AUTH_WORKLOADS: WorkloadId[] = ['list50-auth', 'list50-jwt', 'call-auth', 'call-jwt'];
/** Server key of the gateway the auth rows run on. */
const AUTH_KEY = 'gateway-auth';
/**
 * The floor of tools/call on this machine (bench/floor-gateway.ts): the issue's prototypes of the two shapes,
 * with nothing but the forwarding — what any gateway of each shape costs here before it validates anything.
 */
const FLOORS: Array<{ kind: ServerKind & Comparator; name: string }> = [
  { kind: 'floor-inline', name: 'floor: one thread, lean client' },
  { kind: 'floor-sharded', name: 'floor: acceptor + shard, rings, lean client' },
];

/** A server of this phase and how its rows are named. */
interface Entry<S extends Started = Started> {
  started: S;
  kind: ServerKind;
  key: string;
  name: string;
  runtime: Runtime;
}

/** Starts a server; on failure records the skip for every workload it serves and returns undefined. */
async function tryStart<S extends Started>(state: RunState, key: string, workloads: WorkloadId[], start: () => Promise<S>): Promise<S | undefined> {
  try {
    return await start();
  } catch (err) {
    const msg = (err as Error).message;
    console.log(`${key} did not start: ${msg}`);
    for (const w of workloads) state.skipped.set(`${w}/${key}`, msg.split('\n')[0] ?? msg);
    return undefined;
  }
}

/** Runs the main phase; every server it starts is stopped before it returns. */
export async function mainPhase(o: Options, state: RunState): Promise<void> {
  const wanted = new Set(o.workloads);
  if (!GATEWAY_WORKLOADS.some((w) => wanted.has(w))) return;
  const runtimes = state.runtimes;
  const primary = runtimes[0];
  if (primary === undefined) throw new Error('no runtime');
  const wantCall = wanted.has('call');
  console.log(
    `\nstarting servers (echo Tool Service, bare uWS ×3${wantCall ? ', inline gateway, floor gateways ×2, SDK server' : ''}, gateway) on ${runtimes.map((r) => `node ${r.version}`).join(' and ')}…`,
  );
  const [echo, bare0, bare5, bare50] = await Promise.all([
    startNodeServer('echo-tool-service', 'echo-tool-service.js', ['--tools', '50'], primary),
    startNodeServer('bare-uws-0', 'bare-uws.js', ['--tools', '0'], primary),
    startNodeServer('bare-uws-5', 'bare-uws.js', ['--tools', '5'], primary),
    startNodeServer('bare-uws-50', 'bare-uws.js', ['--tools', '50'], primary),
  ]);
  const all: Started[] = [echo, bare0, bare5, bare50];
  const echoUrl = `http://127.0.0.1:${echo.port}`;
  const routes: Record<string, ServiceEntry[]> = {
    bench: [{ id: 'echo', baseUrl: echoUrl, manifestPath: '/manifest?tools=50' }],
    list5: [{ id: 'echo', baseUrl: echoUrl, manifestPath: '/manifest?tools=5' }],
  };
  for (let i = 0; i < MIXED_ROUTES; i++) routes[routeName('r', i)] = [{ id: 'echo', baseUrl: echoUrl, manifestPath: `/manifest?tools=${routeSize(i)}&route=${routeName('r', i)}` }];
  // Auth rows run on a second gateway of the primary runtime that has auth configured: with any route
  // protected, every request pays the "is this route protected" step, and the other rows measure the default.
  const auth: BenchAuth | undefined = AUTH_WORKLOADS.some((w) => wanted.has(w)) ? await benchAuth(scratch()) : undefined;
  const authRoutes: Record<string, ServiceEntry[]> = { ...routes, [KEY_ROUTE]: routes['bench'] ?? [], [JWT_ROUTE]: routes['bench'] ?? [] };

  const gateways: Array<Entry<StartedGateway>> = [];
  let authGateway: Entry<StartedGateway> | undefined;
  const comparators: Entry[] = [];
  for (const [i, runtime] of runtimes.entries()) {
    const suffix = i === 0 ? '' : `-${i + 1}`;
    const key = `gateway${suffix}`;
    const gw = await tryStart(state, key, GATEWAY_WORKLOADS, () => startGateway(key, runtime, (port) => gatewayConfig(port, routes, o)));
    if (gw !== undefined) gateways.push({ started: gw, kind: 'gateway', key, name: `gateway${runtime.tag}`, runtime });
    if (i === 0 && auth !== undefined) {
      const ga = await tryStart(state, AUTH_KEY, AUTH_WORKLOADS, () => startGateway(AUTH_KEY, runtime, (port) => gatewayConfig(port, authRoutes, o, undefined, auth.config)));
      if (ga !== undefined) authGateway = { started: ga, kind: 'gateway', key: AUTH_KEY, name: `gateway, auth configured${runtime.tag}`, runtime };
    }
    if (!wantCall) continue;
    const inline = await tryStart(state, `inline${suffix}`, ['call'], () => startNodeServer(`inline-gateway${suffix}`, COMPARATORS.inline.script, comparatorArgs('inline', echoUrl), runtime));
    if (inline !== undefined) comparators.push({ started: inline, kind: 'inline', key: `inline${suffix}`, name: `inline gateway${runtime.tag}`, runtime });
    for (const f of FLOORS) {
      const key = `${f.kind}${suffix}`;
      const started = await tryStart(state, key, ['call'], () => startProbedNodeServer(key, COMPARATORS[f.kind].script, comparatorArgs(f.kind, echoUrl), runtime));
      if (started !== undefined) comparators.push({ started, kind: f.kind, key, name: `${f.name}${runtime.tag}`, runtime });
    }
    // The memory reference runs on every runtime, as the inline gateway does: a runtime's own heap defaults
    // (Node 24's 32 MB semi-spaces, its larger binary) move every server's RSS, and "peak RSS ÷ SDK" compares
    // designs on one runtime. The one tool the row calls: its per-request cost is the SDK's per-server set-up
    // (a new Ajv per McpServer, by profile), not tool registration: 1 and 50 tools measured within 10 %.
    const sdk = await tryStart(state, `sdk${suffix}`, ['call'], () => startNodeServer(`sdk-server${suffix}`, 'sdk-server.js', upstreamArgs(echoUrl, 1), runtime));
    if (sdk !== undefined) comparators.push({ started: sdk, kind: 'sdk', key: `sdk${suffix}`, name: `MCP SDK stateless server${runtime.tag}`, runtime });
  }
  if (authGateway !== undefined) gateways.push(authGateway);
  all.push(...gateways.map((g) => g.started), ...comparators.map((c) => c.started));
  const bases: Array<[string, Started]> = [
    ['echo', echo],
    ['bare-0', bare0],
    ['bare-5', bare5],
    ['bare-50', bare50],
  ];
  for (const [key, s] of bases) recordIdleRss(state, key, s.server.pid);
  for (const e of [...gateways, ...comparators]) recordIdleRss(state, e.key, e.started.server.pid);
  for (const g of gateways) state.threadMemory.set(g.key, { server: g.name, idle: [...readThreadReports(g.started.threadDir).values()], end: [] });

  const base = { method: 'POST' as const, headers: MCP_HEADERS, connections: o.connections, durationSec: o.durationSec };
  const targets: Target[] = [];
  const add = (t: {
    workload: WorkloadId;
    role: Role;
    entry: Entry;
    url: string;
    body: string;
    check: Check;
    headers?: Record<string, string>;
    credential?: Record<string, string>;
    upstream?: boolean;
    threadDir?: string;
    refKey?: string;
  }): void => {
    const headers = { ...(t.headers ?? MCP_HEADERS), ...t.credential };
    const load = { ...base, url: t.url, body: t.body, headers };
    // A protected route's row must measure the credential check: without the credential the same request is 401.
    const refusal = t.credential !== undefined ? { ...load, headers: t.headers ?? MCP_HEADERS } : undefined;
    targets.push({
      workload: t.workload,
      role: t.role,
      kind: t.entry.kind,
      key: t.entry.key,
      ...(t.refKey !== undefined ? { refKey: t.refKey } : {}),
      serverName: t.entry.name,
      runtime: t.entry.runtime,
      server: t.entry.started.server,
      load,
      ...(t.upstream === true ? { upstream: echo.server } : {}),
      ...(t.threadDir !== undefined ? { threadDir: t.threadDir } : {}),
      probe: async () => (await probeOne(t.url, load, t.check)) ?? (refusal !== undefined ? await probeOne(t.url, refusal, checkStatus(401)) : undefined),
    });
  };
  const baseEntry = (s: Started, kind: ServerKind, key: string, name: string): Entry => ({ started: s, kind, key, name, runtime: primary });
  const call = echoCallBodies();
  const local = (s: Started, path: string): string => `http://127.0.0.1:${s.port}${path}`;

  if (wanted.has('list5'))
    add({ workload: 'list5', role: 'baseline', entry: baseEntry(bare5, 'bare', 'bare-5', 'bare uWS'), url: local(bare5, '/mcp/list5'), body: listBody, check: checkList(toolNames(5)) });
  if (wanted.has('list50'))
    add({ workload: 'list50', role: 'baseline', entry: baseEntry(bare50, 'bare', 'bare-50', 'bare uWS'), url: local(bare50, '/mcp/bench'), body: listBody, check: checkList(toolNames(50)) });
  if (wantCall) {
    add({ workload: 'call', role: 'baseline', entry: baseEntry(echo, 'echo', 'echo', 'echo Tool Service direct'), url: local(echo, call.path), body: call.direct, check: checkDirectCall });
    for (const c of comparators) {
      // The floors run with the thread probe: their CPU is split by thread (acceptor, shard) like the gateway's.
      const threadDir = 'threadDir' in c.started && typeof c.started.threadDir === 'string' ? c.started.threadDir : undefined;
      add({ workload: 'call', role: 'reference', entry: c, url: local(c.started, '/mcp'), body: call.mcp, check: checkGatewayCall, upstream: true, ...(threadDir !== undefined ? { threadDir } : {}) });
    }
  }
  if (wanted.has('initialize'))
    add({ workload: 'initialize', role: 'baseline', entry: baseEntry(bare0, 'bare', 'bare-0', 'bare uWS'), url: local(bare0, '/mcp/init'), body: initBody, check: checkAnyJson });
  const primaryKey = gateways[0]?.key;
  for (const g of gateways) {
    const gw = { entry: g, role: 'gateway' as const, threadDir: g.started.threadDir };
    const list50 = { ...gw, url: local(g.started, '/mcp/bench'), body: listBody, check: checkList(toolNames(50)) };
    const echoCall = { ...gw, url: local(g.started, '/mcp/bench'), body: call.mcp, check: checkGatewayCall, upstream: true };
    if (g === authGateway) {
      // Divided by the primary gateway's (no auth configured) list50 / call rows.
      const ref = primaryKey !== undefined && primaryKey !== g.key ? { refKey: primaryKey } : {};
      if (auth === undefined) continue;
      if (wanted.has('list50-auth')) add({ ...list50, ...ref, workload: 'list50-auth', url: local(g.started, `/mcp/${KEY_ROUTE}`), credential: auth.keyHeaders });
      if (wanted.has('list50-jwt')) add({ ...list50, ...ref, workload: 'list50-jwt', url: local(g.started, `/mcp/${JWT_ROUTE}`), credential: auth.jwtHeaders });
      if (wanted.has('call-auth')) add({ ...echoCall, ...ref, workload: 'call-auth', url: local(g.started, `/mcp/${KEY_ROUTE}`), credential: auth.keyHeaders });
      if (wanted.has('call-jwt')) add({ ...echoCall, ...ref, workload: 'call-jwt', url: local(g.started, `/mcp/${JWT_ROUTE}`), credential: auth.jwtHeaders });
      continue;
    }
    if (wanted.has('list5')) add({ ...gw, workload: 'list5', url: local(g.started, '/mcp/list5'), body: listBody, check: checkList(toolNames(5)) });
    if (wanted.has('list50')) add({ ...list50, workload: 'list50' });
    if (wanted.has('list50-modern')) add({ ...list50, workload: 'list50-modern', body: modernListBody, headers: modernHeaders('tools/list'), check: checkModernList(toolNames(50)) });
    if (wantCall) add({ ...echoCall, workload: 'call' });
    if (wanted.has('call-modern')) add({ ...echoCall, workload: 'call-modern', body: call.modern, headers: modernHeaders('tools/call', call.name), check: checkModernCall });
    if (wanted.has('initialize')) add({ ...gw, workload: 'initialize', url: local(g.started, '/mcp/bench'), body: initBody, check: checkInitialize });
    if (wanted.has('mixed')) targets.push(mixedTarget(g, echo, base, gw.threadDir));
  }
  if (wanted.has('mixed') && gateways.length > 0) state.notes.push(MIXED_NOTE);
  if (o.workloads.some((w) => VARIANTS[w] !== undefined) && gateways.length > 0) state.notes.push(VARIANT_NOTE);
  if (authGateway !== undefined) {
    state.notes.push(
      `The auth rows run on a second gateway (${AUTH_KEY}) with auth configured (routes ${KEY_ROUTE}, ${JWT_ROUTE}); their "÷ ref" divides by the first gateway's row, which has no auth configured.`,
    );
  }

  const first = gateways[0];
  if (first !== undefined) {
    const size = Buffer.byteLength((await send(local(first.started, '/mcp/bench'), { method: 'POST', headers: MCP_HEADERS, body: listBody })).text);
    const modern = wanted.has('list50-modern')
      ? `, ${Buffer.byteLength((await send(local(first.started, '/mcp/bench'), { method: 'POST', headers: modernHeaders('tools/list'), body: modernListBody })).text)} bytes as 2026-07-28`
      : '';
    state.notes.push(
      `tools/list · 50 tools answer: ${size} bytes from the gateway${modern}, ${toolsListResultBytes(50) + Buffer.byteLength('{"jsonrpc":"2.0","id":1,"result":}')} bytes from bare uWS.`,
    );
  }
  try {
    const ok = await probeTargets(targets, state);
    console.log(`measuring ${ok.length} targets × ${o.repeats} repeat(s)…`);
    await runInterleaved(ok, o, state);
    for (const g of gateways) {
      const m = state.threadMemory.get(g.key);
      if (m !== undefined) m.end = [...readThreadReports(g.started.threadDir).values()];
    }
  } finally {
    await Promise.all(all.map((s) => s.server.kill()));
  }
}

function mixedTarget(
  g: Entry<StartedGateway>,
  echo: Started,
  base: { method: 'POST'; headers: Record<string, string>; connections: number; durationSec: number },
  threadDir: string | undefined,
): Target {
  const reqs = mixedRequests();
  const origin = `http://127.0.0.1:${g.started.port}`;
  return {
    workload: 'mixed',
    role: 'gateway',
    kind: 'gateway',
    key: g.key,
    serverName: g.name,
    runtime: g.runtime,
    server: g.started.server,
    upstream: echo.server,
    ...(threadDir !== undefined ? { threadDir } : {}),
    expectedStatuses: [404],
    load: { ...base, url: origin, requests: reqs.map(({ check: _c, ...r }) => r) },
    probe: async () => {
      for (const r of reqs) {
        const p = await probeOne(`${origin}${r.path}`, r, r.check);
        if (p !== undefined) return p;
      }
      return undefined;
    },
  };
}
