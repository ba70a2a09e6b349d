#!/bin/sh
# The hook route's init container (overlays/hook): put the image's /cachepin tree on the node
# under /opt/cachepin (mounted at /host/opt/cachepin), the host config from the ConfigMap
# (mounted at /config) at /etc/cachepin/config.json (mounted at /host/etc/cachepin) and, when
# CACHEPIN_CONTAINERD_CONFIG names the node's containerd config (overlays/hook mounts
# /etc/containerd), the `cachepin` runtime handler into it. `uninstall` takes all of it away,
# and the directories it made below /opt/cachepin (overlays/hook-uninstall).
# `clean-state` is the NRI route's uninstall (overlays/nri-uninstall): the state directory's
# files removed when its ledger holds no entry, kept and said when it holds any.
#
#   cachepin-install [install|uninstall|clean-state]
#
# Each file is written next to its place and renamed over it: a hook starting meanwhile runs
# the old binary or the new one, never half of one. Order matters for containerd, which
# loads the base spec a handler names when its CRI plugin starts, and fails the whole plugin
# (every pod of the node) when the file is missing: install writes the base spec before the
# config that names it, uninstall takes the handler out of the config before the spec.
# containerd reads its config at start only: restarting it is left to the administrator.
#
# The handler goes into the main config itself, between `# BEGIN cachepin` and
# `# END cachepin`, in the main config's own version (2: config-v2.toml, 3: config-v3.toml):
# containerd merges an `imports` file by overriding, so a snippet of another version replaces
# the main file's `version` and skips its migration (2.x), and 1.x replaces a plugin's whole
# table with an imported one; either drops the main file's CRI settings. A config of another
# version (1, or none) is refused before anything is written.
set -eu
SRC=${CACHEPIN_SRC:-/cachepin}
PREFIX=${CACHEPIN_HOST_PREFIX:-/host/opt/cachepin}
ETC=${CACHEPIN_HOST_ETC:-/host/etc/cachepin}
CONFIG=${CACHEPIN_CONFIG:-/config/config.json}
# The node's containerd config as mounted here (empty: containerd's configuration is left
# alone), and the prefix as the node sees it, which the handler and base spec name.
CTRD_CONFIG=${CACHEPIN_CONTAINERD_CONFIG:-}
NODE_PREFIX=${CACHEPIN_NODE_PREFIX:-/opt/cachepin}
# clean-state: the state directory as mounted here (the node's /run/cachepin, the default
# state_dir), the binary that reads its ledger, and the config it reads it with (empty: the
# default path, where overlays/nri-uninstall mounts the ConfigMap, as the plugin had it).
STATE=${CACHEPIN_STATE:-/run/cachepin}
BIN=${CACHEPIN_BIN:-$SRC/bin/cachepin}
STATUS_CONFIG=${CACHEPIN_STATUS_CONFIG:-}
BEGIN='# BEGIN cachepin'
END='# END cachepin'

die () { echo "cachepin-install: $*" >&2; exit 1; }

# put DST MODE COMMAND...: COMMAND's output at DST, atomically.
put () {
  dst=$1 mode=$2
  shift 2
  mkdir -p "$(dirname "$dst")"
  "$@" >"$dst.tmp.$$"
  chmod "$mode" "$dst.tmp.$$"
  mv -f "$dst.tmp.$$" "$dst"
  echo "cachepin-install: $dst"
}

# node_paths FILE: FILE with /opt/cachepin/ replaced by the node's prefix.
node_paths () {
  sed "s|/opt/cachepin/|$NODE_PREFIX/|g" "$1"
}

# remove FILE: gone, and said.
remove () {
  if [ -e "$1" ]; then rm -f "$1" && echo "cachepin-install: removed $1"; fi
}

# config_version FILE: the top-level `version` of a containerd config (1 when it has none,
# as containerd reads it).
config_version () {
  awk '/^[ \t]*\[/ { exit } /^[ \t]*version[ \t]*=/ { sub(/^[^=]*=[ \t]*/, ""); sub(/[ \t]*(#.*)?$/, ""); v = $0 }
       END { print (v == "" ? 1 : v) }' "$1"
}

# runc_systemd FILE VERSION: the runc handler's SystemdCgroup in FILE (true, false, or
# nothing when unset): the cachepin handler must use the same cgroup driver.
runc_systemd () {
  case $2 in
    2) table='plugins.io.containerd.grpc.v1.cri.containerd.runtimes.runc.options' ;;
    3) table='plugins.io.containerd.cri.v1.runtime.containerd.runtimes.runc.options' ;;
  esac
  awk -v want="$table" '
    /^[ \t]*\[/ { h = $0; gsub(/[][ \t"\047]/, "", h); in_t = (h == want); next }
    in_t && /^[ \t]*SystemdCgroup[ \t]*=/ { v = $0; sub(/^[^=]*=[ \t]*/, "", v); sub(/[ \t]*(#.*)?$/, "", v); print v; exit }' "$1"
}

# without_block FILE: FILE without the lines from BEGIN to END.
without_block () {
  awk -v b="$BEGIN" -v e="$END" 'index($0, b) == 1 { skip = 1 } !skip { print } $0 == e { skip = 0 }' "$1"
}

# replace_config CONTENT_FILE: CONTENT_FILE renamed over the containerd config, its mode kept.
replace_config () {
  chmod "$(stat -c %a "$CTRD_CONFIG")" "$1"
  mv -f "$1" "$CTRD_CONFIG"
}

# check_containerd: the containerd config can take the handler; prints its version. Refuses
# (one line, nothing written) a version other than 2 or 3, or a cachepin handler of its own.
check_containerd () {
  [ -f "$CTRD_CONFIG" ] || return 0
  v=$(config_version "$CTRD_CONFIG")
  case $v in
    2|3) ;;
    *) die "$CTRD_CONFIG is containerd config version $v; migrate it first: \`containerd config migrate > config.toml.new\`, move that over it, restart containerd, then run the installer again" ;;
  esac
  if without_block "$CTRD_CONFIG" | grep -q 'runtimes\.["'\'']\{0,1\}cachepin["'\'']\{0,1\}\]'; then
    die "$CTRD_CONFIG defines a cachepin runtime handler outside the '$BEGIN' block: remove it, then run the installer again"
  fi
  echo "$v"
}

# default_runc: containerd 1.x's default runc handler. In 1.x a config's runtimes table
# replaces the default one, which holds runc: a version-2 config that defines no handler
# (Debian's own) would lose runc, every other pod's handler, to ours. 2.x merges: the same.
default_runc () {
  echo
  echo '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]'
  echo '  # The default runc handler, which containerd 1.x drops once any handler is configured.'
  echo '  runtime_type = "io.containerd.runc.v2"'
}

# install_containerd VERSION: the handler (the snippet of that version, naming the node's
# prefix, with the runc handler's SystemdCgroup) between BEGIN and END at the config's end.
install_containerd () {
  sd=$(runc_systemd "$CTRD_CONFIG" "$1")
  tmp=$CTRD_CONFIG.tmp.$$
  {
    without_block "$CTRD_CONFIG"
    echo "$BEGIN (written by cachepin-install; \`cachepin-install uninstall\` removes it)"
    node_paths "$SRC/share/containerd/config-v$1.toml" \
      | sed -e '1,/^version/d' -e "s|SystemdCgroup = false|SystemdCgroup = ${sd:-false}|"
    if [ "$1" = 2 ] && ! without_block "$CTRD_CONFIG" | grep -q 'containerd\.runtimes\.'; then
      default_runc
    fi
    echo "$END"
  } >"$tmp"
  replace_config "$tmp"
  echo "cachepin-install: $CTRD_CONFIG (runtime handler cachepin, config version $1; restart containerd to use it)"
}

uninstall_containerd () {
  [ -f "$CTRD_CONFIG" ] && grep -q "^$BEGIN" "$CTRD_CONFIG" || return 0
  tmp=$CTRD_CONFIG.tmp.$$
  without_block "$CTRD_CONFIG" >"$tmp"
  replace_config "$tmp"
  echo "cachepin-install: $CTRD_CONFIG (runtime handler cachepin removed; restart containerd)"
}

do_install () {
  version=""
  if [ -n "$CTRD_CONFIG" ]; then
    version=$(check_containerd)
    [ -n "$version" ] || echo "cachepin-install: no $CTRD_CONFIG: containerd's configuration left alone"
  fi
  # The libraries the binary runs with (deploy/kubernetes/bundle.sh; its interpreter among
  # them, which the kernel maps only if executable) before the binary that needs them.
  for f in "$SRC"/lib/*; do
    if [ -e "$f" ]; then put "$PREFIX/lib/${f##*/}" 0755 cat "$f"; fi
  done
  put "$PREFIX/bin/cachepin" 0755 cat "$SRC/bin/cachepin"
  for f in "$SRC"/share/containers/oci/hooks.d/*.json; do
    put "$PREFIX/${f#"$SRC"/}" 0644 cat "$f"
  done
  # The snippets and the base spec, its hooks naming the node's binary: before any config
  # names it.
  for f in "$SRC"/share/containerd/*; do
    put "$PREFIX/${f#"$SRC"/}" 0644 node_paths "$f"
  done
  if [ -f "$CONFIG" ]; then
    put "$ETC/config.json" 0644 cat "$CONFIG"
  fi
  if [ -n "$version" ]; then install_containerd "$version"; fi
}

do_uninstall () {
  if [ -n "$CTRD_CONFIG" ]; then uninstall_containerd; fi
  remove "$PREFIX/share/containerd/cachepin-base-spec.json"
  for f in "$PREFIX"/share/containerd/* "$PREFIX"/share/containers/oci/hooks.d/cachepin-*.json \
           "$PREFIX/bin/cachepin" "$PREFIX"/lib/* "$ETC/config.json"; do
    remove "$f"
  done
  # The directories install made, deepest first, each only when empty. $PREFIX and $ETC
  # themselves are the pod's mount points (the kubelet made them): left, empty.
  for d in share/containerd share/containers/oci/hooks.d share/containers/oci share/containers share bin lib; do
    if [ -d "$PREFIX/$d" ] && rmdir "$PREFIX/$d" 2>/dev/null; then echo "cachepin-install: removed $PREFIX/$d/"; fi
  done
}

# ledger_of: "PATH ENTRIES" of the ledger `cachepin status --json` reads with the node's
# config (ENTRIES: how many it holds; "?" when it could not be read).
ledger_of () {
  "$BIN" status --json ${STATUS_CONFIG:+--config "$STATUS_CONFIG"} 2>/dev/null | awk '
    /^  "ledger":[{]/ { in_l = 1; next }
    in_l && /^  [}]/ { in_l = 0 }
    in_l && /^    "path":/ { p = $0; sub(/^[^:]*:"/, "", p); sub(/",?$/, "", p) }
    in_l && /^    "entries":[[]$/ { counting = 1; n = 0; next }
    counting && /^    []]/ { counting = 0; done = 1 }
    counting && /^      [{]/ { n++ }
    END { print (p == "" ? "?" : p), (done ? n : "?") }'
}

# do_clean_state: the NRI route leaves nothing on the node but its state directory. Its files
# go when the ledger holds no entry (the plugin releases a container's at its stop: delete
# the pods it placed first); with entries (pods still placed, or the hook's and `cachepin
# apply`'s on this node) it stays as it is, said in one line. The directory itself is the
# pod's mount point: left, empty (tmpfs, gone at the next boot).
do_clean_state () {
  [ -d "$STATE" ] || { echo "cachepin-install: no $STATE: nothing to clean"; return 0; }
  set -- $(ledger_of)
  [ "$1" = "$STATE/ledger.json" ] ||
    die "the node's config names the ledger $1, not $STATE/ledger.json: mount its state_dir at $STATE"
  case $2 in
    0) ;;
    \?) die "$1 could not be read (\`cachepin status\` on the node says why): $STATE left as it is" ;;
    *) echo "cachepin-install: $1 holds $2 entries (placed containers still running, or the hook's): $STATE left as it is"
       return 0 ;;
  esac
  for f in "$STATE"/* "$STATE"/.[!.]*; do
    if [ -e "$f" ]; then rm -rf "$f" && echo "cachepin-install: removed $f"; fi
  done
}

case ${1:-install} in
  install) do_install ;;
  uninstall) do_uninstall ;;
  clean-state) do_clean_state ;;
  *) die "usage: cachepin-install [install|uninstall|clean-state]" ;;
esac
