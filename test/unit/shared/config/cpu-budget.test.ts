/**
 * CPU budget from the cgroup quota (issue 13, "CPU limits ignored"): a pod
 * limited to 2 CPUs on a 64-core node must size for 2, not 63 shards.
 * Each case writes the cgroup files a kernel would show into a scratch tree.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cpuBudget, readCgroupCpuLimit, type CgroupFiles } from '../../../../src/shared/config/cpu-budget.js';
import { loadConfig } from '../../../../src/shared/config/load.js';

const base = mkdtempSync(join(tmpdir(), 'mcp-gw-cgroup-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

let caseNo = 0;
/** A fake `/proc/self/cgroup` plus files under a fake `/sys/fs/cgroup`. */
function fixture(procSelfCgroup: string | null, files: Record<string, string>): CgroupFiles {
  const dir = join(base, `case-${++caseNo}`);
  const cgroupRoot = join(dir, 'sys-fs-cgroup');
  mkdirSync(cgroupRoot, { recursive: true });
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(cgroupRoot, path)), { recursive: true });
    writeFileSync(join(cgroupRoot, path), text);
  }
  const proc = join(dir, 'proc-self-cgroup');
  if (procSelfCgroup !== null) writeFileSync(proc, procSelfCgroup);
  return { procSelfCgroup: proc, cgroupRoot };
}

const v2 = (cpuMax: string): CgroupFiles => fixture('0::/\n', { 'cpu.max': `${cpuMax}\n` });

describe('cgroup v2 cpu.max', () => {
  it('"max 100000" is no limit: the core count decides', () => {
    expect(cpuBudget(v2('max 100000'), 64)).toEqual({ cpus: 64, parallelism: 64, cgroupLimit: null });
  });

  it('"200000 100000" is 2 CPUs on a 64-core node', () => {
    const budget = cpuBudget(v2('200000 100000'), 64);
    expect(budget.cpus).toBe(2);
    expect(budget.cgroupLimit?.cpus).toBe(2);
    expect(budget.cgroupLimit?.file).toMatch(/cpu\.max$/);
  });

  it('"150000 100000" (1.5 CPUs) rounds up to 2', () => {
    expect(cpuBudget(v2('150000 100000'), 64).cpus).toBe(2);
  });

  it('a limit below one CPU still gives 1', () => {
    expect(cpuBudget(v2('50000 100000'), 64).cpus).toBe(1);
  });

  it('a limit above the core count leaves the core count', () => {
    expect(cpuBudget(v2('800000 100000'), 4).cpus).toBe(4);
  });

  it('takes the tightest limit on the path from the process cgroup up to the root', () => {
    const files = fixture('0::/kubepods/pod-a/ctr\n', {
      'kubepods/cpu.max': 'max 100000\n',
      'kubepods/pod-a/cpu.max': '300000 100000\n',
      'kubepods/pod-a/ctr/cpu.max': '400000 100000\n',
    });
    expect(readCgroupCpuLimit(files)).toEqual({ cpus: 3, file: join(files.cgroupRoot, 'kubepods/pod-a/cpu.max') });
  });

  it('reads the namespace root when the process path is not visible there (container cgroup namespace)', () => {
    expect(readCgroupCpuLimit(fixture('0::/kubepods/pod-b/ctr\n', { 'cpu.max': '200000 100000\n' }))?.cpus).toBe(2);
  });

  it('ignores a malformed cpu.max instead of failing the start', () => {
    expect(cpuBudget(v2('lots 100000'), 8).cpus).toBe(8);
    expect(cpuBudget(v2('100000 0'), 8).cpus).toBe(8);
    expect(cpuBudget(v2(''), 8).cpus).toBe(8);
  });
});

describe('cgroup v1 cpu.cfs_quota_us / cpu.cfs_period_us', () => {
  it('quota 150000 / period 100000 under cpu,cpuacct is 2 CPUs', () => {
    const files = fixture('4:cpu,cpuacct:/kubepods/pod-c\n3:memory:/kubepods/pod-c\n', {
      'cpu,cpuacct/kubepods/pod-c/cpu.cfs_quota_us': '150000\n',
      'cpu,cpuacct/kubepods/pod-c/cpu.cfs_period_us': '100000\n',
    });
    expect(cpuBudget(files, 64).cpus).toBe(2);
    expect(readCgroupCpuLimit(files)?.cpus).toBe(1.5);
  });

  it('quota -1 is no limit', () => {
    const files = fixture('2:cpu:/\n', { 'cpu/cpu.cfs_quota_us': '-1\n', 'cpu/cpu.cfs_period_us': '100000\n' });
    expect(cpuBudget(files, 16)).toEqual({ cpus: 16, parallelism: 16, cgroupLimit: null });
  });

  it('a hybrid host (v1 cpu controller, empty v2 hierarchy) reads the v1 limit', () => {
    const files = fixture('1:cpu:/\n0::/\n', { 'cpu/cpu.cfs_quota_us': '400000\n', 'cpu/cpu.cfs_period_us': '100000\n' });
    expect(cpuBudget(files, 64).cpus).toBe(4);
  });
});

describe('missing files', () => {
  it('no /proc/self/cgroup: the core count decides', () => {
    expect(cpuBudget(fixture(null, {}), 12)).toEqual({ cpus: 12, parallelism: 12, cgroupLimit: null });
  });

  it('no cgroup files: the core count decides', () => {
    expect(cpuBudget(fixture('0::/\n', {}), 12).cpus).toBe(12);
    expect(cpuBudget({ procSelfCgroup: join(base, 'nope'), cgroupRoot: join(base, 'nope') }, 3).cpus).toBe(3);
  });
});

describe('workers.shards: 0 follows the CPU budget', () => {
  it('sizes shards as CPUs minus acceptors (2 CPUs → 1 shard, 8 → 7, 8 with 3 acceptors → 5), never below 1', () => {
    expect(loadConfig({ argv: [], env: {}, cpus: cpuBudget(v2('200000 100000'), 64).cpus }).workers.shards).toBe(1);
    expect(loadConfig({ argv: [], env: {}, cpus: 8 }).workers.shards).toBe(7);
    expect(loadConfig({ argv: [], env: { MCP_GATEWAY_WORKERS_ACCEPTORS: '3' }, cpus: 8 }).workers.shards).toBe(5);
    expect(loadConfig({ argv: [], env: { MCP_GATEWAY_WORKERS_ACCEPTORS: '3' }, cpus: 2 }).workers.shards).toBe(1);
    expect(loadConfig({ argv: [], env: { MCP_GATEWAY_WORKERS_SHARDS: '12' }, cpus: 2 }).workers.shards).toBe(12);
  });

  it('reads this machine by default: never more shards than the budget allows', () => {
    const budget = cpuBudget();
    expect(budget.cpus).toBeLessThanOrEqual(budget.parallelism);
    expect(loadConfig({ argv: [], env: {} }).workers.shards).toBe(Math.max(1, budget.cpus - 1));
  });
});
