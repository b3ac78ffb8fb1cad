/**
 * Refresh under load: tools/list on a gateway whose 40 catalogs are rebuilt
 * and swapped continuously (the echo service started with `--churn`),
 * against the same gateway with the churn paused. Started after the main
 * phase's servers are gone, so its refresh work never disturbs them.
 */
import type { LoadOptions } from '../harness.js';
import { measureTarget, probeTargets, recordIdleRss, type Role, type RunState, type Target } from './measure.js';
import type { Options } from './options.js';
import { checkList, probeOne, send } from './probes.js';
import { gatewayConfig, scrapeCounter, startGateway, startNodeServer, type ServiceEntry, type StartedGateway } from './servers.js';
import { listBody, MCP_HEADERS, REFRESH_INTERVAL_MS, REFRESH_ROUTES, ROUTE_SIZES, routeName, routeSize, toolNames } from './workloads.js';

/** Longest wait for the swap counter to stand still after a pause. */
const SETTLE_MS = 5000;
const SETTLE_POLL_MS = 400;
const SWAPS = 'mcp_gateway_list_changed_total';

/** After a pause, the cycle in flight still swaps: waits (≤ 5 s) until the swap counter stands still. */
async function settle(port: number): Promise<void> {
  const deadline = Date.now() + SETTLE_MS;
  let last = await scrapeCounter(port, SWAPS);
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, SETTLE_POLL_MS));
    const now = await scrapeCounter(port, SWAPS);
    if (now === last) break;
    last = now;
  }
}

/** Runs the refresh phase when the `refresh` workload is wanted; stops its servers before returning. */
export async function refreshPhase(o: Options, state: RunState): Promise<void> {
  if (!o.workloads.includes('refresh')) return;
  const runtime = state.runtimes[0];
  if (runtime === undefined) throw new Error('no runtime');
  console.log(`\nrefresh under load: starting a churning echo service and a gateway with ${REFRESH_ROUTES} routes refreshed every ${REFRESH_INTERVAL_MS} ms…`);
  const echo = await startNodeServer('echo-churn', 'echo-tool-service.js', ['--tools', '50', '--churn'], runtime);
  const echoUrl = `http://127.0.0.1:${echo.port}`;
  // Paused while the gateway loads, so the initial load sees stable manifests.
  await send(`${echoUrl}/churn/pause`, { method: 'POST' });
  const routes: Record<string, ServiceEntry[]> = {};
  for (let i = 0; i < REFRESH_ROUTES; i++) routes[routeName('c', i)] = [{ id: 'echo', baseUrl: echoUrl, manifestPath: `/manifest?tools=${routeSize(i)}&route=${routeName('c', i)}` }];
  let gw: StartedGateway;
  try {
    gw = await startGateway('gateway-refresh', runtime, (port) => gatewayConfig(port, routes, o, REFRESH_INTERVAL_MS));
  } catch (err) {
    const msg = (err as Error).message;
    console.log(`refresh gateway did not start: ${msg}`);
    state.skipped.set('refresh/gateway', msg.split('\n')[0] ?? msg);
    await echo.server.kill();
    return;
  }
  recordIdleRss(state, 'refresh-idle', gw.server.pid);
  recordIdleRss(state, 'refresh-churn', gw.server.pid);
  const load: LoadOptions = { method: 'POST', headers: MCP_HEADERS, connections: o.connections, durationSec: o.durationSec, url: `http://127.0.0.1:${gw.port}/mcp/c00`, body: listBody };
  const counters = async (): Promise<Record<string, number>> => {
    const [stats, swaps] = await Promise.all([send(`${echoUrl}/churn/stats`, {}), scrapeCounter(gw.port, SWAPS)]);
    return { manifests: (stats.json as { manifests?: number } | undefined)?.manifests ?? Number.NaN, swaps };
  };
  const mk = (role: Role, churn: boolean): Target => ({
    workload: 'refresh',
    role,
    kind: 'gateway',
    key: churn ? 'refresh-churn' : 'refresh-idle',
    serverName: `${churn ? 'gateway, 40 catalogs churning' : 'gateway, refresh idle'}${runtime.tag}`,
    runtime,
    server: gw.server,
    load,
    ...(gw.threadDir !== undefined ? { threadDir: gw.threadDir } : {}),
    probe: () => probeOne(load.url, load, checkList(toolNames(50))),
    prepare: async () => {
      await send(`${echoUrl}/churn/${churn ? 'resume' : 'pause'}`, { method: 'POST' });
      if (!churn) await settle(gw.port);
    },
    counters,
  });
  const idle = mk('baseline', false);
  const churn = mk('gateway', true);
  try {
    const ok = await probeTargets([idle, churn], state);
    if (ok.length === 2) {
      // ABBA / BAAB per repeat: two runs of each condition, neither always first.
      for (let repeat = 1; repeat <= o.repeats; repeat++) {
        const order = repeat % 2 === 1 ? [idle, churn, churn, idle] : [churn, idle, idle, churn];
        for (const t of order) state.runs.push(await measureTarget(t, o, repeat));
      }
      state.notes.push(
        `refresh under load: ${REFRESH_ROUTES} routes of ${ROUTE_SIZES.join('/')} tools, catalog.refreshIntervalMs ${REFRESH_INTERVAL_MS}; "churning": the echo service embeds a new revision in every tool description of every manifest answer, so every refresh rebuilds and swaps all catalogs; "idle": same gateway and config, manifests unchanged (each refresh cycle still polls all 40 manifests; the Tool Service answers 304 to a matching If-None-Match, or the same bytes, and nothing is swapped). manifestsPerSec / swapsPerSec: manifests served by the echo service and mcp_gateway_list_changed_total increase per second during the measured run. CPU µs/req of these rows includes the refresh worker.`,
      );
    }
    await send(`${echoUrl}/churn/pause`, { method: 'POST' }).catch(() => undefined);
  } finally {
    await Promise.all([gw.server.kill(), echo.server.kill()]);
  }
}
