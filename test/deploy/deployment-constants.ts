/**
 * Values the Dockerfile, the Kubernetes manifests and their tests must agree
 * on. `ADMIN_PORT` is the manifests' `server.admin.port` (health and metrics)
 * and the image EXPOSEs it.
 */

/** Port of the admin listener (health, metrics) in the image and the manifests. */
export const ADMIN_PORT = 9090;

/** Where the image's CMD reads the config file and the Deployment mounts the ConfigMap. */
export const CONFIG_MOUNT_PATH = '/etc/mcp-route-gateway/gateway.yaml';

/**
 * The drain the manifests are sized for when the ConfigMap does not set
 * `server.drainDelayMs` / `server.drainTimeoutMs` (the defaults; the test
 * reads the ConfigMap's values when it does): readiness fails at once and
 * traffic is still served for the delay, then in-flight calls get the timeout.
 */
export const DESIGNED_DRAIN_DELAY_MS = 5_000;
export const DESIGNED_DRAIN_TIMEOUT_MS = 20_000;

/** Time the process needs after the drain to close its threads and exit, within the grace period. */
export const EXIT_MARGIN_MS = 5_000;

/**
 * The environment the image sets for the gateway (Dockerfile `ENV`), which the
 * container runner and the bench's gateway rows use too, so that what they
 * measure is the default deployment (ADR-0017). The two glibc settings fix
 * malloc's thresholds at 128 KiB instead of letting them grow with the
 * largest block freed: the threads' arenas then give freed memory back
 * instead of keeping it (6–8 MB less peak RSS under `tools/call` load).
 */
export const IMAGE_ENV = {
  NODE_ENV: 'production',
  MALLOC_TRIM_THRESHOLD_: '131072',
  MALLOC_MMAP_THRESHOLD_: '131072',
} as const;

/**
 * The node flags of the image's ENTRYPOINT (and `npm start`), which the
 * container runner and the bench's gateway rows use too. The main thread
 * (acceptor 0) is out of `resourceLimits`' reach, so its young generation is
 * V8's `--max-semi-space-size`: 1 MB semi-spaces instead of V8's 16 (Node 20)
 * or 32 (Node 24), which a main thread under load grows into and keeps. The
 * gateway unsets the flag before it creates each worker, so the workers get
 * `workers.maxYoungGenerationSizeMb` (src/main/worker-limits.ts, ADR-0018).
 */
export const IMAGE_NODE_FLAGS = ['--max-semi-space-size=1'] as const;
