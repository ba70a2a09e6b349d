#!/bin/sh
# The installer's init container (installer.yaml): put the image's /cachepin tree on the node
# under /opt/cachepin (mounted at /host/opt/cachepin) and the host config from the ConfigMap
# (mounted at /config) at /etc/cachepin/config.json (mounted at /host/etc/cachepin). Each file
# is written next to its place and renamed over it: a hook starting meanwhile runs the old
# binary or the new one, never half of one. It does not touch the container runtime's
# configuration (docs/kubernetes.md says what to add and why it is left to you).
set -eu
SRC=${CACHEPIN_SRC:-/cachepin}
PREFIX=${CACHEPIN_HOST_PREFIX:-/host/opt/cachepin}
ETC=${CACHEPIN_HOST_ETC:-/host/etc/cachepin}
CONFIG=${CACHEPIN_CONFIG:-/config/config.json}

# put SRC DST MODE: copy SRC to DST atomically.
put () {
  mkdir -p "$(dirname "$2")"
  cp "$1" "$2.tmp.$$"
  chmod "$3" "$2.tmp.$$"
  mv -f "$2.tmp.$$" "$2"
  echo "cachepin-install: $2"
}

# The libraries the binary runs with (deploy/kubernetes/bundle.sh; its interpreter among
# them, which the kernel maps only if executable) before the binary that needs them.
for f in "$SRC"/lib/*; do
  if [ -e "$f" ]; then put "$f" "$PREFIX/lib/${f##*/}" 0755; fi
done
put "$SRC/bin/cachepin" "$PREFIX/bin/cachepin" 0755
for f in "$SRC"/share/containers/oci/hooks.d/*.json "$SRC"/share/containerd/*; do
  put "$f" "$PREFIX/${f#"$SRC"/}" 0644
done
if [ -f "$CONFIG" ]; then
  put "$CONFIG" "$ETC/config.json" 0644
fi
