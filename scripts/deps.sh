#!/usr/bin/env bash
# Install what cachepin needs to build and test, on Debian 12 as root.
# Idempotent: skips apt when everything is already there.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config python3
  libhwloc-dev hwloc libjson-c-dev libseccomp-dev libcgroup-dev libcmocka-dev
  runc busybox-static jq util-linux procps
  bzip2                        # the captured sysfs dumps are .tar.bz2 (tests/cli/topocache.sh, bench/)
  dpkg-dev groff-base man-db   # the install tests: cpack's shlibdeps, man pages (tests/install)
  lintian                      # the .deb passes it (tests/install/lintian.sh)
  python3-grpcio python3-grpc-tools python3-yaml # tests/cri: the CRI client, the manifest checks
  python3-protobuf             # tests/nri: the NRI runtime emulator (its messages, compiled by grpc-tools)
  libsystemd-dev
  graphviz                     # docs/kubernetes-routes.svg drawn again from its .dot and compared (tests/docs/kubernetes.py)
  protobuf-c-compiler libprotobuf-c-dev  # hook/nri: the NRI plugin's protobuf, generated at build time
  curl openssl                 # tests/dra: the API server's certificates, requests to it
  libmicrohttpd-dev            # hook/agent: the NRI agent's metrics and health listener (nri_http.c)
  libnghttp2-dev               # hook/grpc: the kubelet plugin's gRPC services, HTTP/2 over unix sockets
  python3-h2                   # tests/grpc: the malformed HTTP/2 and gRPC cases sent to the kubelet plugin's sockets
  libcurl4-openssl-dev         # hook/kube: the Kubernetes API client (kube_http.c, dlopen'ed libcurl.so.4)
)
# podman as Debian recommends it (netavark, catatonit, fuse-overlayfs): the setup its tests ran on.
WITH_RECOMMENDS=(podman)
if [ "${CACHEPIN_WITH_VM:-1}" = 1 ]; then
  # mmdebstrap, zstd: the systemd guest's root file system (tests/vm/systemd-rootfs.sh).
  PACKAGES+=(qemu-system-x86 cpio gzip crun mmdebstrap zstd)
fi
if [ "${CACHEPIN_WITH_CHECKS:-1}" = 1 ]; then
  PACKAGES+=(clang libclang-rt-14-dev llvm valgrind strace)
fi

updated=0
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && updated=1
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
for p in "${WITH_RECOMMENDS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    echo "deps: installing $p"
    [ "$updated" = 1 ] || { apt-get update -qq && updated=1; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p" >/dev/null
  fi
done
