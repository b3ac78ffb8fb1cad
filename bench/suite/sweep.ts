/**
 * Sweep (`--sweep`): the same tools/list (50 tools) and tools/call
 * comparison for several `workers.acceptors` × `workers.shards` combos, one
 * gateway process at a time, against bare uWS and the echo Tool Service.
 */
import { median } from '../harness.js';
import { fmt, ratioText } from './format.js';
import { measureTarget, probeTargets, type Run, type RunState, type Target } from './measure.js';
import type { Options } from './options.js';
import { checkDirectCall, checkGatewayCall, checkList, probeOne } from './probes.js';
import { gatewayConfig, startGateway, startNodeServer, type StartedGateway } from './servers.js';
import { echoCallBodies, listBody, MCP_HEADERS, toolNames } from './workloads.js';

/** Runs the sweep; every server it starts is stopped before it returns. */
export async function sweep(o: Options, state: RunState): Promise<void> {
  const runtime = state.runtimes[0];
  if (runtime === undefined) throw new Error('no runtime');
  console.log(`\nsweep over ${o.combos.map((c) => `${c.acceptors}x${c.shards}`).join(', ')} (acceptors x shards)…`);
  const [echo, bare50] = await Promise.all([
    startNodeServer('echo-tool-service', 'echo-tool-service.js', ['--tools', '50'], runtime),
    startNodeServer('bare-uws-50', 'bare-uws.js', ['--tools', '50'], runtime),
  ]);
  const echoUrl = `http://127.0.0.1:${echo.port}`;
  const routes = { bench: [{ id: 'echo', baseUrl: echoUrl, manifestPath: '/manifest?tools=50' }] };
  const names = toolNames(50);
  const call = echoCallBodies();
  const base = { method: 'POST' as const, headers: MCP_HEADERS, connections: o.connections, durationSec: o.durationSec };
  const common = { runtime, probe: async (): Promise<string | undefined> => undefined };
  const listLoad = { ...base, url: `http://127.0.0.1:${bare50.port}/mcp/bench`, body: listBody };
  const callLoad = { ...base, url: `${echoUrl}${call.path}`, body: call.direct };
  const baselines: Target[] = [
    {
      ...common,
      workload: 'list50',
      role: 'baseline',
      kind: 'bare',
      key: 'bare-50',
      serverName: 'bare uWS',
      server: bare50.server,
      load: listLoad,
      probe: () => probeOne(listLoad.url, listLoad, checkList(names)),
    },
    {
      ...common,
      workload: 'call',
      role: 'baseline',
      kind: 'echo',
      key: 'echo',
      serverName: 'echo Tool Service direct',
      server: echo.server,
      load: callLoad,
      probe: () => probeOne(callLoad.url, callLoad, checkDirectCall),
    },
  ];
  try {
    await probeTargets(baselines, state);
    for (let repeat = 1; repeat <= o.repeats; repeat++) {
      for (const b of baselines) state.runs.push(await measureTarget(b, o, repeat));
      const combos = repeat % 2 === 1 ? o.combos : [...o.combos].reverse();
      for (const c of combos) {
        const tag = `a${c.acceptors} s${c.shards}`;
        if (state.skipped.has(tag)) continue;
        let gateway: StartedGateway | undefined;
        try {
          gateway = await startGateway(`gateway-${c.acceptors}x${c.shards}`, runtime, (port) => gatewayConfig(port, routes, c));
          const url = `http://127.0.0.1:${gateway.port}/mcp/bench`;
          const gw = { ...common, role: 'gateway' as const, kind: 'gateway' as const, key: `gateway ${tag}`, serverName: `gateway ${tag}`, server: gateway.server };
          const list = { ...base, url, body: listBody };
          const callGw = { ...base, url, body: call.mcp };
          const targets: Target[] = [
            { ...gw, workload: `list50 ${tag}`, load: list, probe: () => probeOne(url, list, checkList(names)) },
            { ...gw, workload: `call ${tag}`, upstream: echo.server, load: callGw, probe: () => probeOne(url, callGw, checkGatewayCall) },
          ];
          const ok = repeat === 1 ? await probeTargets(targets, state) : targets;
          for (const t of ok) state.runs.push(await measureTarget(t, o, repeat));
        } catch (err) {
          const msg = (err as Error).message.split('\n')[0] ?? '';
          state.skipped.set(tag, msg);
          console.log(`  ${tag}: skipped — ${msg}`);
        } finally {
          await gateway?.server.kill();
        }
      }
    }
  } finally {
    await Promise.all([echo.server.kill(), bare50.server.kill()]);
  }
}

/** The sweep's table (markdown) and its rows (JSON). */
export function sweepTable(o: Options, runs: Run[]): { text: string; rows: Array<Record<string, unknown>> } {
  const med = (w: string, f: (r: Run) => number): number => median(runs.filter((r) => r.workload === w).map(f));
  const perRepeatRatio = (w: string, b: string, f: (r: Run) => number): number => {
    const ratios: number[] = [];
    for (const g of runs.filter((r) => r.workload === w)) {
      const base = runs.find((r) => r.workload === b && r.role === 'baseline' && r.repeat === g.repeat);
      if (base !== undefined) ratios.push(f(g) / f(base));
    }
    return median(ratios);
  };
  const header = ['acceptors × shards', 'list50 req/s', 'list50 CPU µs/req', 'list50 req/s ÷ bare', 'list50 CPU ÷ bare', 'call req/s', 'call CPU µs/req', 'call req/s ÷ direct', 'call CPU ÷ echo'];
  const lines = [
    `| ${header.join(' | ')} |`,
    `|---|${header
      .slice(1)
      .map(() => '---:')
      .join('|')}|`,
  ];
  lines.push(
    `| bare uWS / echo direct | ${fmt(
      med('list50', (r) => r.reqPerSec),
      0,
    )} | ${fmt(
      med('list50', (r) => r.cpuMicrosPerReq),
      1,
    )} | base | base | ${fmt(
      med('call', (r) => r.reqPerSec),
      0,
    )} | ${fmt(
      med('call', (r) => r.cpuMicrosPerReq),
      1,
    )} | base | base |`,
  );
  const rows: Array<Record<string, unknown>> = [];
  for (const c of o.combos) {
    const tag = `a${c.acceptors} s${c.shards}`;
    const row = {
      acceptors: c.acceptors,
      shards: c.shards,
      listReqPerSec: med(`list50 ${tag}`, (r) => r.reqPerSec),
      listCpuMicrosPerReq: med(`list50 ${tag}`, (r) => r.cpuMicrosPerReq),
      listReqPerSecRatio: perRepeatRatio(`list50 ${tag}`, 'list50', (r) => r.reqPerSec),
      listCpuRatio: perRepeatRatio(`list50 ${tag}`, 'list50', (r) => r.cpuMicrosPerReq),
      callReqPerSec: med(`call ${tag}`, (r) => r.reqPerSec),
      callCpuMicrosPerReq: med(`call ${tag}`, (r) => r.cpuMicrosPerReq),
      callReqPerSecRatio: perRepeatRatio(`call ${tag}`, 'call', (r) => r.reqPerSec),
      callCpuRatio: perRepeatRatio(`call ${tag}`, 'call', (r) => r.cpuMicrosPerReq),
    };
    rows.push(row);
    lines.push(
      `| ${c.acceptors} × ${c.shards} | ${fmt(row.listReqPerSec, 0)} | ${fmt(row.listCpuMicrosPerReq, 1)} | ${ratioText(row.listReqPerSecRatio)} | ${ratioText(row.listCpuRatio)} | ${fmt(row.callReqPerSec, 0)} | ${fmt(row.callCpuMicrosPerReq, 1)} | ${ratioText(row.callReqPerSecRatio)} | ${ratioText(row.callCpuRatio)} |`,
    );
  }
  return { text: lines.join('\n'), rows };
}
