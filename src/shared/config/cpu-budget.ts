/**
 * How many CPUs this process may really use: the lower of
 * `os.availableParallelism()` (cores and affinity mask) and the cgroup CPU
 * bandwidth limit (a Kubernetes `resources.limits.cpu`). Node 20's libuv
 * (1.46) ignores the cgroup quota, so a pod limited to 2 CPUs on a 64-core
 * node would otherwise size its thread pools for 64 (ADR-0009).
 *
 * ```
 *  /proc/self/cgroup                      /sys/fs/cgroup (cgroupRoot)
 *  0::/kubepods/pod1/ctr        (v2) ──►   <root>/kubepods/pod1/ctr/cpu.max   "150000 100000" | "max 100000"
 *                                          <root>/kubepods/pod1/cpu.max       … up to <root> (tightest wins)
 *  4:cpu,cpuacct:/kubepods/pod1 (v1) ──►   <root>/cpu,cpuacct/kubepods/pod1/cpu.cfs_quota_us  "150000" | "-1"
 *                                          <root>/cpu,cpuacct/kubepods/pod1/cpu.cfs_period_us "100000"
 * ```
 *
 * Every ancestor's limit applies, so the walk takes the smallest one found.
 * Inside a container with its own cgroup namespace the path is `/` and only
 * `<root>/cpu.max` exists. A fractional limit is rounded **up** (1.5 → 2):
 * the half CPU is real time a second thread can use, a limit below one CPU
 * still needs one thread, and the JVM, .NET and Go round the same way. The
 * file locations are parameters so tests feed fixture files.
 */
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, relative } from 'node:path';

/** Where the cgroup information is read from (injectable for tests). */
export interface CgroupFiles {
  /** `/proc/self/cgroup`: the cgroup path of this process per hierarchy. */
  procSelfCgroup: string;
  /** Mount point of the cgroup filesystems, `/sys/fs/cgroup`. */
  cgroupRoot: string;
}

/** The files of the running process. */
export const SYSTEM_CGROUP_FILES: CgroupFiles = Object.freeze({ procSelfCgroup: '/proc/self/cgroup', cgroupRoot: '/sys/fs/cgroup' });

/** A CPU bandwidth limit found on the process's cgroup path. */
export interface CgroupCpuLimit {
  /** quota ÷ period, fractional (1.5 = one and a half CPUs). */
  cpus: number;
  /** The file the tightest limit came from. */
  file: string;
}

/** The CPUs the process may use and where the number came from. */
export interface CpuBudget {
  /** Whole CPUs to size thread pools for: min(parallelism, ⌈cgroup limit⌉), at least 1. */
  cpus: number;
  /** `os.availableParallelism()` (or the injected value). */
  parallelism: number;
  /** The cgroup limit, or null when there is none (or it cannot be read). */
  cgroupLimit: CgroupCpuLimit | null;
}

/** The CPU budget of this process (see the module header). */
export function cpuBudget(files: CgroupFiles = SYSTEM_CGROUP_FILES, parallelism: number = availableParallelism()): CpuBudget {
  const cgroupLimit = readCgroupCpuLimit(files);
  const fromLimit = cgroupLimit === null ? Infinity : Math.ceil(cgroupLimit.cpus);
  return { cpus: Math.max(1, Math.min(parallelism, fromLimit)), parallelism, cgroupLimit };
}

/** The tightest cgroup v2 or v1 CPU limit on this process's cgroup path, or null. Never throws. */
export function readCgroupCpuLimit(files: CgroupFiles = SYSTEM_CGROUP_FILES): CgroupCpuLimit | null {
  const membership = readText(files.procSelfCgroup);
  if (membership === null) return null;
  let tightest: CgroupCpuLimit | null = null;
  const consider = (found: CgroupCpuLimit | null): void => {
    if (found !== null && (tightest === null || found.cpus < tightest.cpus)) tightest = found;
  };
  // Lines are `id:controllers:path`; a hybrid host lists v1 hierarchies and the v2 one (`0::path`).
  for (const line of membership.split('\n')) {
    const first = line.indexOf(':');
    const second = line.indexOf(':', first + 1);
    if (first < 0 || second < 0) continue;
    const controllers = line.slice(first + 1, second);
    const path = line.slice(second + 1).trim();
    if (controllers === '') {
      for (const dir of ancestry(files.cgroupRoot, path)) consider(readV2(join(dir, 'cpu.max')));
    } else if (controllers.split(',').includes('cpu')) {
      for (const mount of new Set([controllers, 'cpu,cpuacct', 'cpu'])) {
        const root = join(files.cgroupRoot, mount);
        for (const dir of ancestry(root, path)) consider(readV1(dir));
      }
    }
  }
  return tightest;
}

/**
 * `root/path` and each parent up to `root`. When `root/path` does not exist
 * (a container sees its own cgroup mounted at the root) only `root` is read.
 */
function ancestry(root: string, path: string): string[] {
  if (!existsSync(root)) return [];
  let dir = join(root, path);
  if (relative(root, dir).startsWith('..') || !existsSync(dir)) return [root];
  const dirs: string[] = [];
  // Bounded by the depth of `path`: each step removes one segment until `root`.
  while (dir !== root && relative(root, dir) !== '') {
    dirs.push(dir);
    dir = dirname(dir);
  }
  dirs.push(root);
  return dirs;
}

/** `cpu.max` is `"<quota> <period>"` or `"max <period>"` (no limit). */
function readV2(file: string): CgroupCpuLimit | null {
  const text = readText(file);
  if (text === null) return null;
  const [quota, period] = text.trim().split(/\s+/);
  if (quota === 'max') return null;
  return limitOf(quota, period, file);
}

/** `cpu.cfs_quota_us` is `-1` (no limit) or microseconds per `cpu.cfs_period_us`. */
function readV1(dir: string): CgroupCpuLimit | null {
  const quotaFile = join(dir, 'cpu.cfs_quota_us');
  const quota = readText(quotaFile);
  const period = readText(join(dir, 'cpu.cfs_period_us'));
  if (quota === null || period === null) return null;
  return limitOf(quota.trim(), period.trim(), quotaFile);
}

function limitOf(quota: string | undefined, period: string | undefined, file: string): CgroupCpuLimit | null {
  if (quota === undefined || period === undefined || !/^\d+$/.test(quota) || !/^\d+$/.test(period)) return null;
  const q = Number(quota);
  const p = Number(period);
  if (q <= 0 || p <= 0) return null;
  return { cpus: q / p, file };
}

function readText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}
