# syntax=docker/dockerfile:1
#
# mcp-route-gateway container image. How to run it: docs/operations.md.
#
# Base: the official Node.js 24 LTS image on Debian 13 "trixie", slim variant,
# pinned by its full version tag. uWebSockets.js 20.57 (ADR-0001) needs
# glibc >= 2.38: trixie has 2.41, bookworm's 2.36 is too old, and Alpine's musl
# has no uWS build. The same base in every stage keeps the Node ABI of the
# installed native addon equal to the one that runs it. Builds that must be
# reproducible pin the digest as well: --build-arg NODE_IMAGE=node:24.22.3-trixie-slim@sha256:…
ARG NODE_IMAGE=node:24.22.3-trixie-slim

# ── build: all dependencies, compile TypeScript, bundle vendor modules ──────────────────────────────
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: nothing needs an install step (uWS ships its binaries in the
# package), so no code from the registry runs during the build.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY scripts/bundle-vendor.ts ./scripts/
# tsc, then each src/shared/vendor module replaced by one bundled file: a thread
# loads one module instead of a package's hundreds (ADR-0016).
RUN npx tsc -p tsconfig.json && node dist/scripts/bundle-vendor.js

# ── prod-deps: production dependencies only ──────────────────────────────────
FROM ${NODE_IMAGE} AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# ── runtime ──────────────────────────────────────────────────────────────────
FROM ${NODE_IMAGE} AS runtime
# The gateway does not need npm, npx or corepack at run time: fewer files, fewer CVEs to triage.
RUN rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack \
      /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack
# glibc malloc thresholds fixed at 128 KiB: freed memory goes back to the
# system instead of staying in the threads' arenas (ADR-0017; the same values
# as IMAGE_ENV in test/deploy/deployment-constants.ts, which the tests check).
ENV NODE_ENV=production \
    MALLOC_TRIM_THRESHOLD_=131072 \
    MALLOC_MMAP_THRESHOLD_=131072
WORKDIR /app
# Files stay owned by root and world-readable, writable by nobody: the gateway
# writes nothing (logs go to stdout), so the root filesystem can be read-only,
# and any UID — OpenShift's arbitrary one in group 0 included — can read them.
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /src/dist/src ./dist/src
COPY package.json ./
# Numeric, non-root, group 0 (OpenShift convention); Kubernetes runAsNonRoot can verify a numeric UID.
USER 10001:0
# 8080: MCP traffic (server.port). 9090: operating endpoints on the admin
# listener (health, metrics), once server.admin.port is set to it.
EXPOSE 8080 9090
# The gateway drains on SIGTERM; node runs as PID 1 with its own handlers and starts no child processes.
STOPSIGNAL SIGTERM
# No HEALTHCHECK: Kubernetes ignores it and probes /health/live and /health/ready
# itself (deploy/kubernetes), the image has no curl, and the OCI format drops it.
# 1 MB semi-spaces for the main thread's young generation (the workers get
# workers.maxYoungGenerationSizeMb): ~25 MB less RSS under load (ADR-0018; the
# same flags as IMAGE_NODE_FLAGS in test/deploy/deployment-constants.ts).
ENTRYPOINT ["node", "--max-semi-space-size=1", "dist/src/main/cli.js"]
# The config file is mounted here (a ConfigMap); MCP_GATEWAY_* variables override it.
CMD ["--config", "/etc/mcp-route-gateway/gateway.yaml"]
