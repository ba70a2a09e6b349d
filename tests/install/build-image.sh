#!/usr/bin/env bash
# deploy/kubernetes/Containerfile built FROM the Debian base made here (base-image.sh: no
# registry is needed), tagged TAG; its log in LOG. Shared by install.image (the installer)
# and cri.nri.image (the NRI route's DaemonSet run from it under containerd).
#
#   tests/install/build-image.sh SOURCE_DIR TAG LOG
#
# runc and small rlimits, as tests/install/deb.sh runs podman: crun refuses this host's hybrid
# cgroup layout, podman's default rlimits exceed what this sandbox grants.
# Run it under flock /tmp/cachepin-global.lock (podman's store is shared).
# Exit status: 0 built; 1 the build failed (the log's tail on stdout); 77 no base image.
set -u
SRC=$1 TAG=$2 LOG=$3
BASE=$(bash "$(dirname "$0")/base-image.sh") || { echo "no Debian base image (base-image.sh above)"; exit 77; }
if ! podman build --runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --pull=never --network none \
       --build-arg BASE="$BASE" --build-arg RUNTIME_BASE="$BASE" -f "$SRC/deploy/kubernetes/Containerfile" \
       -t "$TAG" "$SRC" >"$LOG" 2>&1; then
  tail -30 "$LOG"
  exit 1
fi
