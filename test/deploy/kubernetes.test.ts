/**
 * Renders every kustomization under deploy/kubernetes with `kubectl kustomize`
 * (offline) and checks the manifests against the gateway itself: the rendered
 * ConfigMap plus the container's environment pass the real config loader,
 * container ports and probes agree with the ports that config listens on, the
 * probe paths exist on a running gateway, the grace period covers the drain,
 * the security context is locked down, and the OpenShift Route does not
 * rewrite the path.
 *
 * Without kubectl the suite is skipped with a reason on a developer machine
 * and fails under CI (CI=true), so CI can never pass without rendering.
 * (Longer than ~300 lines: the object shapes and the kubelet's env resolution
 * are shared by every check, so they stay in one file.)
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { CONFIG_KEYS, loadConfig } from '../../src/shared/config/load.js';
import type { GatewayConfig } from '../../src/shared/config/schema.js';
import { httpRequest, startTestGateway } from '../helpers/gateway.js';
import { CONFIG_MOUNT_PATH, DESIGNED_DRAIN_DELAY_MS, DESIGNED_DRAIN_TIMEOUT_MS, EXIT_MARGIN_MS } from './deployment-constants.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const KUSTOMIZATIONS = ['deploy/kubernetes/base', 'deploy/kubernetes/overlays/openshift', 'deploy/kubernetes/overlays/portal-redis'];
const scratch = mkdtempSync(join(tmpdir(), 'mcp-gw-k8s-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function kubectlVersion(): string | null {
  try {
    return execFileSync('kubectl', ['version', '--client'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return null;
  }
}
const haveKubectl = kubectlVersion() !== null;
if (!haveKubectl && process.env['CI']) throw new Error('kubectl is required under CI: test/deploy/kubernetes.test.ts renders deploy/kubernetes with `kubectl kustomize`');
if (!haveKubectl) console.warn('kubectl not found: the Kubernetes manifest tests are skipped (they run in CI)');

/* Minimal shapes of the rendered objects this test reads. */
interface Meta {
  name: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: Meta;
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}
interface Probe {
  httpGet?: { path: string; port: string | number };
}
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string }; configMapKeyRef?: { name: string; key: string } };
}
interface SecurityContext {
  runAsNonRoot?: boolean;
  runAsUser?: number;
  runAsGroup?: number;
  allowPrivilegeEscalation?: boolean;
  readOnlyRootFilesystem?: boolean;
  capabilities?: { drop?: string[]; add?: string[] };
  seccompProfile?: { type: string };
}
interface Container {
  name: string;
  image: string;
  args?: string[];
  command?: string[];
  ports?: Array<{ name?: string; containerPort: number; protocol?: string }>;
  env?: EnvVar[];
  envFrom?: unknown[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: SecurityContext;
  volumeMounts?: Array<{ name: string; mountPath: string; readOnly?: boolean; subPath?: string }>;
  lifecycle?: { preStop?: unknown };
}
interface PodSpec {
  containers: Container[];
  enableServiceLinks?: boolean;
  automountServiceAccountToken?: boolean;
  terminationGracePeriodSeconds?: number;
  securityContext?: SecurityContext & { fsGroup?: number };
  volumes?: Array<{ name: string; configMap?: { name: string } }>;
  topologySpreadConstraints?: Array<{ topologyKey: string; labelSelector: { matchLabels: Record<string, string> } }>;
}
interface Deployment extends K8sObject {
  spec: { replicas?: number; selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } };
}

interface Rendered {
  objects: K8sObject[];
  deployment: Deployment;
  pod: PodSpec;
  gateway: Container;
  config: GatewayConfig;
  configText: string;
  env: Record<string, string>;
}

function render(dir: string): Rendered {
  const text = execFileSync('kubectl', ['kustomize', join(ROOT, dir)], { encoding: 'utf8' });
  const objects = parseAllDocuments(text).map((d) => d.toJS() as K8sObject);
  const deployments = objects.filter((o): o is Deployment => o.kind === 'Deployment');
  expect(deployments.length).toBe(1);
  const deployment = deployments[0] as Deployment;
  const pod = deployment.spec.template.spec;
  const gateway = pod.containers.find((c) => c.name === 'gateway');
  if (gateway === undefined) throw new Error(`${dir}: no container named gateway`);

  // The config file the container reads: the ConfigMap mounted at the --config path.
  const mount = gateway.volumeMounts?.find((m) => CONFIG_MOUNT_PATH.startsWith(`${m.mountPath}/`));
  if (mount === undefined) throw new Error(`${dir}: nothing mounted at ${dirname(CONFIG_MOUNT_PATH)}`);
  const volume = pod.volumes?.find((v) => v.name === mount.name);
  const configMap = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === volume?.configMap?.name);
  const configText = configMap?.data?.[basename(CONFIG_MOUNT_PATH)];
  if (configText === undefined) throw new Error(`${dir}: the mounted ConfigMap has no ${basename(CONFIG_MOUNT_PATH)}`);
  const file = join(scratch, `${dir.replaceAll('/', '_')}.yaml`);
  writeFileSync(file, configText);

  const env = { ...serviceLinksFor(objects), ...containerEnv(objects, gateway) };
  // The container's CPU limit sizes workers.shards: 0, as cpu-budget.ts would read it from the cgroup.
  const cpus = Math.ceil(cpuQuantity(gateway.resources?.limits?.['cpu'] ?? '1'));
  const config = loadConfig({ argv: [], configFile: file, env, cpus });
  return { objects, deployment, pod, gateway, config, configText, env };
}

/** The container's env as the kubelet resolves it (literal values, Secret and ConfigMap keys from the rendered objects). */
function containerEnv(objects: K8sObject[], container: Container): Record<string, string> {
  expect(container.envFrom ?? [], 'envFrom would hide which variables reach the gateway').toEqual([]);
  const env: Record<string, string> = {};
  for (const v of container.env ?? []) {
    if (v.value !== undefined) env[v.name] = v.value;
    const secretRef = v.valueFrom?.secretKeyRef;
    if (secretRef) {
      const secret = objects.find((o) => o.kind === 'Secret' && o.metadata.name === secretRef.name);
      const value = secret?.stringData?.[secretRef.key] ?? (secret?.data?.[secretRef.key] !== undefined ? Buffer.from(secret.data[secretRef.key] as string, 'base64').toString() : undefined);
      expect(value, `${v.name}: Secret ${secretRef.name} key ${secretRef.key} is not in the manifests`).toBeDefined();
      env[v.name] = value as string;
    }
    const cmRef = v.valueFrom?.configMapKeyRef;
    if (cmRef) {
      const value = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === cmRef.name)?.data?.[cmRef.key];
      expect(value, `${v.name}: ConfigMap ${cmRef.name} key ${cmRef.key} is not in the manifests`).toBeDefined();
      env[v.name] = value as string;
    }
  }
  return env;
}

/** The variables the kubelet would inject for the rendered Services if service links were on (pkg/kubelet/envvars). */
function serviceLinksFor(objects: K8sObject[]): Record<string, string> {
  const env: Record<string, string> = {};
  const ip = '10.96.0.12';
  for (const svc of objects.filter((o) => o.kind === 'Service')) {
    const prefix = svc.metadata.name.toUpperCase().replaceAll('-', '_');
    const ports = (svc.spec?.['ports'] ?? []) as Array<{ name?: string; port: number; protocol?: string }>;
    const first = ports[0];
    if (first === undefined) continue;
    env[`${prefix}_SERVICE_HOST`] = ip;
    env[`${prefix}_SERVICE_PORT`] = String(first.port);
    env[`${prefix}_PORT`] = `${(first.protocol ?? 'TCP').toLowerCase()}://${ip}:${first.port}`;
    for (const p of ports) {
      const proto = p.protocol ?? 'TCP';
      if (p.name) env[`${prefix}_SERVICE_PORT_${p.name.toUpperCase().replaceAll('-', '_')}`] = String(p.port);
      const base = `${prefix}_PORT_${p.port}_${proto}`;
      env[base] = `${proto.toLowerCase()}://${ip}:${p.port}`;
      env[`${base}_PROTO`] = proto.toLowerCase();
      env[`${base}_PORT`] = String(p.port);
      env[`${base}_ADDR`] = ip;
    }
  }
  return env;
}

/** `"2"`, `"1500m"`, `"0.5"` → CPUs. */
function cpuQuantity(q: string): number {
  return q.endsWith('m') ? Number(q.slice(0, -1)) / 1000 : Number(q);
}

/** A numeric config value the schema may not have yet (keys the drain / admin work adds). */
function optionalKey(config: GatewayConfig, path: string): unknown {
  if (!CONFIG_KEYS.some((k) => k.path === path)) return undefined;
  return path.split('.').reduce<unknown>((node, k) => (node as Record<string, unknown> | undefined)?.[k], config);
}

/** The port that serves /health/*: the admin listener when the config has one, else the traffic port. */
function healthPort(config: GatewayConfig): { name: string; port: number } {
  if (CONFIG_KEYS.some((k) => k.path === 'server.admin.port')) {
    const admin = optionalKey(config, 'server.admin.port');
    expect(typeof admin, 'the manifests must set server.admin.port (the admin listener exists)').toBe('number');
    return { name: 'admin', port: admin as number };
  }
  return { name: 'http', port: config.server.port };
}

function portNumber(container: Container, port: string | number): number | undefined {
  if (typeof port === 'number') return port;
  return container.ports?.find((p) => p.name === port)?.containerPort;
}

describe.skipIf(!haveKubectl).each(KUSTOMIZATIONS)('%s', (dir) => {
  const r = haveKubectl ? render(dir) : (undefined as unknown as Rendered);

  it('passes the real config loader: ConfigMap file + container env + the service links Kubernetes could inject', () => {
    // render() already loaded it (it throws naming every refused key); check it is the deployment's, not the demo's.
    expect(r.config.server.host).toBe('0.0.0.0');
    if (r.config.catalog.source === 'static') expect(Object.keys(r.config.catalog.static.routes)).not.toContain('demo');
    expect(r.gateway.args).toEqual(['--config', CONFIG_MOUNT_PATH]);
    expect(r.gateway.command).toBeUndefined();
  });

  it('declares container ports that match server.port (and the admin port), and the Service targets them by name', () => {
    const http = r.gateway.ports?.find((p) => p.name === 'http');
    expect(http?.containerPort).toBe(r.config.server.port);
    const health = healthPort(r.config);
    expect(portNumber(r.gateway, health.name)).toBe(health.port);
    const service = r.objects.find((o) => o.kind === 'Service');
    const servicePorts = (service?.spec?.['ports'] ?? []) as Array<{ targetPort: string | number }>;
    expect(servicePorts.length).toBeGreaterThan(0);
    for (const p of servicePorts) expect(portNumber(r.gateway, p.targetPort), `Service targetPort ${p.targetPort}`).toBe(r.config.server.port);
    expect(service?.spec?.['selector']).toEqual(r.deployment.spec.template.metadata.labels);
  });

  it('probes /health/live and /health/ready on the port that serves them', () => {
    const health = healthPort(r.config);
    const probes = { liveness: r.gateway.livenessProbe, readiness: r.gateway.readinessProbe, startup: r.gateway.startupProbe };
    expect(probes.liveness?.httpGet?.path).toBe('/health/live');
    expect(probes.readiness?.httpGet?.path).toBe('/health/ready');
    expect(probes.startup?.httpGet?.path).toBe('/health/live');
    for (const [kind, probe] of Object.entries(probes)) {
      expect(portNumber(r.gateway, probe?.httpGet?.port ?? -1), `${kind} probe port`).toBe(health.port);
    }
  });

  it('has CPU and memory requests and limits; the CPU limit sizes the shards', () => {
    const res = r.gateway.resources;
    for (const key of ['cpu', 'memory']) {
      expect(res?.limits?.[key], `limits.${key}`).toBeDefined();
      expect(res?.requests?.[key], `requests.${key}`).toBeDefined();
    }
    const budget = Math.ceil(cpuQuantity(res?.limits?.['cpu'] ?? '0'));
    if (r.configText.includes('shards: 0')) expect(r.config.workers.shards).toBe(Math.max(1, budget - r.config.workers.acceptors));
  });

  it('gives the drain room: grace period ≥ drain delay + drain timeout + exit margin', () => {
    const delay = (optionalKey(r.config, 'server.drainDelayMs') as number | undefined) ?? DESIGNED_DRAIN_DELAY_MS;
    const timeout = (optionalKey(r.config, 'server.drainTimeoutMs') as number | undefined) ?? DESIGNED_DRAIN_TIMEOUT_MS;
    expect((r.pod.terminationGracePeriodSeconds ?? 30) * 1000).toBeGreaterThanOrEqual(delay + timeout + EXIT_MARGIN_MS);
    // The gateway delays its own listener close; a preStop sleep would only lengthen the drain.
    expect(r.gateway.lifecycle?.preStop).toBeUndefined();
  });

  it('runs non-root, read-only, without capabilities or privilege escalation, seccomp RuntimeDefault', () => {
    expect(r.pod.securityContext?.runAsNonRoot).toBe(true);
    expect(r.pod.securityContext?.seccompProfile?.type).toBe('RuntimeDefault');
    const sc = r.gateway.securityContext;
    expect(sc?.allowPrivilegeEscalation).toBe(false);
    expect(sc?.readOnlyRootFilesystem).toBe(true);
    expect(sc?.capabilities?.drop).toContain('ALL');
    expect(sc?.capabilities?.add ?? []).toEqual([]);
    expect(sc?.runAsUser ?? r.pod.securityContext?.runAsUser ?? 10001).not.toBe(0);
    for (const m of r.gateway.volumeMounts ?? []) expect(m.readOnly, `${m.mountPath} is mounted writable`).toBe(true);
  });

  it('turns service links off, spreads replicas, and has a PodDisruptionBudget and an autoscaler for its pods', () => {
    expect(r.pod.enableServiceLinks).toBe(false);
    expect(r.pod.automountServiceAccountToken).toBe(false);
    expect(r.deployment.spec.replicas, 'the HorizontalPodAutoscaler owns replicas').toBeUndefined();
    const labels = r.deployment.spec.template.metadata.labels;
    const spread = r.pod.topologySpreadConstraints ?? [];
    expect(spread.map((t) => t.topologyKey).sort()).toEqual(['kubernetes.io/hostname', 'topology.kubernetes.io/zone']);
    for (const t of spread) expect(t.labelSelector.matchLabels).toEqual(labels);
    const pdb = r.objects.find((o) => o.kind === 'PodDisruptionBudget');
    expect((pdb?.spec?.['selector'] as { matchLabels: unknown } | undefined)?.matchLabels).toEqual(labels);
    const hpa = r.objects.find((o) => o.kind === 'HorizontalPodAutoscaler');
    expect(hpa?.spec?.['scaleTargetRef']).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: r.deployment.metadata.name });
    expect(hpa?.spec?.['minReplicas'] as number).toBeGreaterThanOrEqual(2);
  });

  it('pins the image tag (never latest)', () => {
    expect(r.gateway.image).toMatch(/^[^:@]+(:[\w.-]+|@sha256:[0-9a-f]{64})$/);
    expect(r.gateway.image).not.toMatch(/:latest$/);
  });
});

describe.skipIf(!haveKubectl)('deploy/kubernetes/overlays/openshift', () => {
  const r = haveKubectl ? render('deploy/kubernetes/overlays/openshift') : (undefined as unknown as Rendered);
  const route = haveKubectl ? r.objects.find((o) => o.kind === 'Route') : undefined;

  it('has a Route on /mcp to the Service port, without any path rewrite (seed ADR-0009)', () => {
    expect(route?.apiVersion).toBe('route.openshift.io/v1');
    expect(route?.spec?.['path']).toBe('/mcp');
    const service = r.objects.find((o) => o.kind === 'Service');
    expect(route?.spec?.['to']).toMatchObject({ kind: 'Service', name: service?.metadata.name });
    expect((route?.spec?.['port'] as { targetPort?: string } | undefined)?.targetPort).toBe('http');
    const annotations = Object.keys(route?.metadata.annotations ?? {});
    expect(annotations.filter((a) => /rewrite/i.test(a))).toEqual([]);
  });

  it('lets the router wait longer than the longest tool call', () => {
    const timeout = route?.metadata.annotations?.['haproxy.router.openshift.io/timeout'] ?? '30s';
    const ms = Number(/^(\d+)s$/.exec(timeout)?.[1] ?? 0) * 1000;
    expect(ms).toBeGreaterThan(r.config.tools.maxTimeoutMs);
  });

  it('leaves the UID and GID to OpenShift (arbitrary UID in group 0)', () => {
    expect(r.pod.securityContext?.runAsUser).toBeUndefined();
    expect(r.pod.securityContext?.runAsGroup).toBeUndefined();
    expect(r.pod.securityContext?.fsGroup).toBeUndefined();
    expect(r.gateway.securityContext?.runAsUser).toBeUndefined();
  });
});

describe.skipIf(!haveKubectl)('deploy/kubernetes/overlays/portal-redis', () => {
  const r = haveKubectl ? render('deploy/kubernetes/overlays/portal-redis') : (undefined as unknown as Rendered);

  it('reads routes from the Portal and the Redis URL from a Secret, never from the ConfigMap', () => {
    expect(r.config.catalog.source).toBe('portal');
    expect(r.config.catalog.portal.url).toMatch(/^https?:\/\//);
    expect(r.config.redis.url).toMatch(/^rediss?:\/\//);
    expect(r.configText).not.toMatch(/redis:\/\//);
    const redisEnv = r.gateway.env?.find((e) => e.name === 'MCP_GATEWAY_REDIS_URL');
    expect(redisEnv?.valueFrom?.secretKeyRef?.name).toBeDefined();
  });
});

describe.skipIf(!haveKubectl)('the probe paths exist on a running gateway', () => {
  it('/health/live is 200 and /health/ready answers (200 or 503), not 404', async () => {
    const gw = await startTestGateway({ catalog: { static: { routes: { core: [{ id: 'x', baseUrl: 'http://127.0.0.1:1' }] } } } });
    try {
      expect((await httpRequest(gw, '/health/live')).status).toBe(200);
      expect([200, 503]).toContain((await httpRequest(gw, '/health/ready')).status);
    } finally {
      await gw.close(0);
    }
  });
});
