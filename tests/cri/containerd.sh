#!/usr/bin/env bash
# cachepin under containerd's CRI, driven as the kubelet drives it.
#
#   tests/cri/containerd.sh --suite sid|bookworm --cachepin BIN --stubs DIR
#
# containerd comes from Debian (sid: 2.x, config version 3; bookworm: 1.6, version 2), fetched
# with apt-get download into /var/cache/cachepin/debs by fetch-debs.sh and never installed; it
# runs on a private socket, root and state directory. The cachepin handler is put into its
# config by the installer (deploy/kubernetes/install.sh, with the shipped deploy/containerd
# snippets and base spec, the base spec's hooks given a host config of the test's own, the
# node's prefix a directory of the test's). The CRI client is cri_client.py, its stubs
# generated into DIR from k8s.io/cri-api's runtime/v1 api.proto (Debian's
# golang-github-kubernetes-cri-api-dev, from sid). The image is busybox-static, built here
# and imported, also as the sandbox image: nothing is pulled.
#
# Checked: the installer keeps a main config's settings (SystemdCgroup = true, a sandbox
# image) in each config version this containerd reads, and Debian's own config its runc
# handler, as `containerd config dump` shows them, and uninstall takes its handler out; a pod annotation, a per-container key in the
# pod's annotations, and a container annotation each place the container (its cpuset is the
# CPUs the ledger holds for it); the sandbox (pause) container, which carries the pod's
# annotations too, is left alone; a pod without annotations is left alone; a cachepin
# container's open-file limit is a runc-handler container's; an UpdateContainerResources
# without a cpuset (a resize) keeps the placement, one with a cpuset overwrites it unseen by
# the hook (the ledger keeps the CPU, status says drifted); once the containers and pods are
# stopped and removed the ledger holds nothing; a base spec missing when containerd starts
# fails the whole CRI plugin, and after uninstall (config first, then the spec) containerd
# starts with its CRI and without the handler.
#
# Not checked: running a container with SystemdCgroup = true (it needs systemd as PID 1 on
# the test machine); the config dump is checked instead.
#
# Debugging: CACHEPIN_CRI_KEEP=1 keeps the scratch directory (containerd's log, configs);
# CACHEPIN_CRI_PAUSE=SECONDS waits that long before cleaning up, containerd still running.
#
# Exit: 0 passed, 1 failed, 77 skipped (not root, no runc/python3-grpcio/busybox-static, or
# the Debian archive unreachable with nothing cached).
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
SUITE="" BIN="" STUBS=""
while [ $# -gt 0 ]; do
  case $1 in
    --suite) SUITE=$2; shift 2 ;;
    --cachepin) BIN=$(realpath "$2"); shift 2 ;;
    --stubs) STUBS=$2; shift 2 ;;
    *) echo "usage: containerd.sh --suite sid|bookworm --cachepin BIN --stubs DIR" >&2; exit 2 ;;
  esac
done
case $SUITE in
  sid) CONFIG_VERSION=3 ;;
  bookworm) CONFIG_VERSION=2 ;;
  *) echo "containerd.sh: --suite sid or bookworm" >&2; exit 2 ;;
esac
[ -x "$BIN" ] && [ -n "$STUBS" ] || { echo "containerd.sh: --cachepin and --stubs are needed" >&2; exit 2; }

# shellcheck source=lib.sh
. "$HERE/lib.sh"
cri_prereqs

# ---- containerd and the CRI protocol, from Debian ------------------------------------------
# Pinned where the suite allows: bookworm's containerd is a stable release; sid moves on, and
# fetch-debs.sh then takes sid's current version (and says so) unless the pinned one is cached.
case $SUITE in
  sid) CTRD_PKG=containerd=2.1.9+ds1-5 ;;
  bookworm) CTRD_PKG=containerd=1.6.20~ds1-1+deb12u3 ;;
esac
cri_fetch "$SUITE" "$CTRD_PKG"

# ---- a private containerd -------------------------------------------------------------------
cri_scratch cri
CTRD_CONFIG=""
NODE=$D/node # the node's /opt/cachepin
PODS=()
PASS=0 FAIL=0 SAID_SANDBOX_HOOKS="" POD_KEY=""


cleanup () {
  local p
  for p in "${PODS[@]}"; do
    for c in $(cri pod-containers "$p" 2>/dev/null); do cri stop "$c" >/dev/null 2>&1; cri rm "$c" >/dev/null 2>&1; done
    cri stop-pod "$p" >/dev/null 2>&1
    cri rm-pod "$p" >/dev/null 2>&1
  done
  stop_containerd
  cri_leftovers
  if [ -n "${CACHEPIN_CRI_KEEP:-}" ]; then echo "kept $D"; else rm -rf "$D"; fi
}
trap cleanup EXIT
[ -z "${CACHEPIN_CRI_PAUSE:-}" ] || trap 'echo "paused: $D"; sleep "$CACHEPIN_CRI_PAUSE"; cleanup' EXIT
trap 'exit 1' INT TERM



# install_node ARGS...: deploy/kubernetes/install.sh run as the installer image runs it, on
# a node whose /opt/cachepin is $NODE and whose containerd config is $CTRD_CONFIG.
install_node () {
  CACHEPIN_SRC=$D/image CACHEPIN_HOST_PREFIX=$NODE CACHEPIN_NODE_PREFIX=$NODE CACHEPIN_HOST_ETC=$D/node-etc \
    CACHEPIN_CONFIG=$D/no-config CACHEPIN_CONTAINERD_CONFIG=$CTRD_CONFIG sh "$SRC/deploy/kubernetes/install.sh" "$@"
}

# The installer image's tree (as deploy/kubernetes/Containerfile lays it out), made the
# test's own: the hook is this build's binary with a host config (state directory, debug
# log) of the test's.
image_tree () {
  local img=$D/image f
  mkdir -p "$img/bin" "$img/share/containers/oci/hooks.d" "$img/share/containerd"
  mkdir -p -m 0700 "$D/hookstate" # cachepin refuses a state directory open to others
  cp "$BIN" "$img/bin/cachepin"
  for f in "$SRC"/deploy/hooks.d/*.json.in; do
    sed 's|@CACHEPIN_INSTALLED_BIN@|/opt/cachepin/bin/cachepin|' "$f" >"$img/share/containers/oci/hooks.d/$(basename "$f" .in)"
  done
  cp "$SRC/deploy/containerd/config-v2.toml" "$SRC/deploy/containerd/config-v3.toml" "$img/share/containerd/"
  printf '{"state_dir": "%s", "log_level": "debug"}\n' "$D/hookstate" >"$D/cachepin.json"
  jq --arg cfg "$D/cachepin.json" '
      .hooks |= with_entries(.value |= map(
        if .path == "/opt/cachepin/bin/cachepin" then .args = ["cachepin", "hook", "--config", $cfg] + .args[2:]
        else error("unexpected hook path \(.path)") end))' \
     "$SRC/deploy/containerd/cachepin-base-spec.json" >"$img/share/containerd/cachepin-base-spec.json"
}

# The test's containerd config, the installer's handler added. restrict_oom_score_adj: the
# sandbox's -998 needs CAP_SYS_RESOURCE, which a test machine (itself a container) may lack.
configure () {
  mkdir -p "$D/root" "$D/state" "$D/opt" "$D/cni/bin" "$D/cni/net.d"
  image_tree || return 1
  CTRD_CONFIG=$D/config.toml
  if [ "$CONFIG_VERSION" = 3 ]; then
    config_v3 "  disable = true" >"$CTRD_CONFIG"
  else
    cat >"$CTRD_CONFIG" <<EOF
version = 2
root = "$D/root"
state = "$D/state"
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$D/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$IMAGE"
  restrict_oom_score_adj = true
[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "$D/cni/bin"
  conf_dir = "$D/cni/net.d"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  BinaryName = "$RUNC"
EOF
  fi
  install_node >"$D/install.log" 2>&1 || { cat "$D/install.log"; return 1; }
  grep -q "$NODE/share/containerd/cachepin-base-spec.json" "$CTRD_CONFIG" \
    || { cat "$D/install.log"; echo "the installed config names no base_runtime_spec"; return 1; }
}

# dumped FILE: what `containerd config dump` makes of FILE, one line: the sandbox image,
# runc's SystemdCgroup, cachepin's base_runtime_spec and SystemdCgroup (- where missing),
# the runtime handlers (sorted, comma-separated).
dumped () {
  "$CTRD/usr/bin/containerd" --config "$1" config dump 2>/dev/null | "$PY" -c '
import sys, tomllib
c = tomllib.load(sys.stdin.buffer)
p = c.get("plugins", {})
if c.get("version") == 3:
    sandbox = p.get("io.containerd.cri.v1.images", {}).get("pinned_images", {}).get("sandbox")
    rt = p.get("io.containerd.cri.v1.runtime", {})
else:
    sandbox = p.get("io.containerd.grpc.v1.cri", {}).get("sandbox_image")
    rt = p.get("io.containerd.grpc.v1.cri", {})
rts = rt.get("containerd", {}).get("runtimes", {})
def systemd(h):
    v = rts.get(h, {}).get("options", {}).get("SystemdCgroup")
    return "-" if v is None else str(v).lower()
print(sandbox or "-", systemd("runc"), rts.get("cachepin", {}).get("base_runtime_spec") or "-", systemd("cachepin"),
      ",".join(sorted(rts)) or "-")'
}

# keeps_settings VERSION: a main config of that version with SystemdCgroup = true and a
# sandbox image of its own, the installer's handler added, keeps both as this containerd
# reads it (config dump), the handler following SystemdCgroup; uninstall takes the handler
# out and keeps them too.
keeps_settings () {
  local v=$1 CTRD_CONFIG=$D/keep-v$1.toml NODE=$D/keep-node got
  local spec=$NODE/share/containerd/cachepin-base-spec.json
  local sandbox=registry.example/pause:cachepin-test
  if [ "$v" = 3 ]; then
    printf "version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = '%s'\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]\n  SystemdCgroup = true\n" "$sandbox"
  else
    printf 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "%s"\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n  SystemdCgroup = true\n' "$sandbox"
  fi >"$CTRD_CONFIG"
  install_node >"$D/install-keep.log" 2>&1 || { cat "$D/install-keep.log"; bad "config version $v: the installer refused"; return; }
  got=$(dumped "$CTRD_CONFIG")
  check "config version $v, installed: config dump keeps the sandbox image and runc's SystemdCgroup = true, cachepin's handler follows ($got)" \
    [ "$got" = "$sandbox true $spec true cachepin,runc" ]
  install_node uninstall >>"$D/install-keep.log" 2>&1
  got=$(dumped "$CTRD_CONFIG")
  check "config version $v, uninstalled: no cachepin handler, the settings kept ($got)" [ "$got" = "$sandbox true - - runc" ]
}

# keeps_runc: Debian's own /etc/containerd/config.toml (version 2, no handler of its own)
# keeps the runc handler with cachepin's added (containerd 1.x replaces its default
# runtimes table with a config's own), and gets it back as it was after uninstall.
keeps_runc () {
  local CTRD_CONFIG=$D/debian.toml NODE=$D/keep-node got
  cp "$CTRD/etc/containerd/config.toml" "$CTRD_CONFIG" || { bad "no /etc/containerd/config.toml in the package"; return; }
  install_node >"$D/install-debian.log" 2>&1 || { cat "$D/install-debian.log"; bad "Debian's config: the installer refused"; return; }
  got=$(dumped "$CTRD_CONFIG")
  check "Debian's config, installed: config dump has the runc and cachepin handlers ($got)" [ "${got##* }" = cachepin,runc ]
  install_node uninstall >>"$D/install-debian.log" 2>&1
  check "Debian's config, uninstalled: the file as it was" cmp -s "$CTRD_CONFIG" "$CTRD/etc/containerd/config.toml"
}

# start_containerd [ctr]: containerd started, its CRI answering (ctr: its own API only).
# Its open-file limit is not 1024 (what a base spec's rlimits would impose), so that a
# container's shows where it came from.
start_containerd () {
  local nofile
  nofile=$(ulimit -Hn)
  case $nofile in unlimited) nofile=65536 ;; 1024) nofile=1000 ;; esac
  [ "$nofile" -le 65536 ] || nofile=65536
  # The shim (containerd-shim-runc-v2) is found on PATH, next to this containerd.
  (ulimit -Sn "$nofile" && PATH=$CTRD/usr/bin:$PATH exec "$CTRD/usr/bin/containerd" --config "$CTRD_CONFIG") >>"$D/containerd.log" 2>&1 &
  CTRD_PID=$!
  start_client
  for _ in $(seq 100); do
    if [ "${1:-}" = ctr ]; then ctr version >/dev/null 2>&1 && return 0; else cri version >/dev/null 2>&1 && return 0; fi
    kill -0 "$CTRD_PID" 2>/dev/null || break
    sleep 0.2
  done
  tail -20 "$D/containerd.log"
  return 1
}


# ---- checks -------------------------------------------------------------------------------
ledger () { cat "$D/hookstate/ledger.json" 2>/dev/null || echo '{"entries":[]}'; }
held () { ledger | jq -r --arg id "$1" '[.entries[] | select(.id == $id) | .held] | join(",")'; }
entries () { ledger | jq '.entries | length'; }

# run_pod NAME [KEY=VALUE...]: a pod on the cachepin handler (or $HANDLER's); $POD (also
# kept for cleanup).
run_pod () {
  local name=$1
  shift
  POD=$(cri run-pod "$name" "$PARENT" "${HANDLER:-cachepin}" "$@") || { bad "$name: RunPodSandbox"; POD=""; return 1; }
  PODS+=("$POD")
}

# placed WHAT POD CONTAINER: CONTAINER holds 1 CPU in the ledger, that is its cpuset (from
# inside and in its cgroup), and the pod's sandbox container holds nothing and kept the
# CPUs its parent gave it.
placed () {
  local what=$1 pod=$2 c=$3 h
  h=$(held "$c")
  check "$what: the ledger holds 1 CPU for the container ($h)" [ "$(ncpus "$h")" = 1 ]
  check "$what: its Cpus_allowed_list is that CPU" same "$(allowed "$c")" "$h"
  check "$what: its cgroup's effective cpuset is that CPU" same "$(cgroup_cpus "$c")" "$h"
  sandbox_untouched "$what" "$pod"
}

# sandbox_untouched WHAT POD: the sandbox holds nothing and kept its parent's CPUs. Its spec
# carries the pod's annotations (what the hook would see: $POD_KEY, when set, checked); containerd 1.6 and 2.1 build it
# without base_runtime_spec, so it has no hooks and the hook's own skip (the container-type
# annotation) is not what keeps it alone here: said once, from the spec itself.
sandbox_untouched () {
  local what=$1 pod=$2 spec
  spec=$(ctr containers info "$pod" 2>/dev/null | jq -c '.Spec')
  check "$what: the sandbox's spec says container-type sandbox" \
    [ "$(jq -r '.annotations["io.kubernetes.cri.container-type"]' <<<"$spec")" = sandbox ]
  if [ -n "$POD_KEY" ]; then
    check "$what: the sandbox's spec carries the pod's $POD_KEY" \
      [ "$(jq -r --arg k "$POD_KEY" '.annotations[$k] // empty' <<<"$spec")" = 1 ]
  fi
  if [ -z "$SAID_SANDBOX_HOOKS" ]; then
    SAID_SANDBOX_HOOKS=1
    if [ "$(jq '.hooks.createRuntime // [] | length' <<<"$spec")" = 0 ]; then
      echo "note: this containerd runs the sandbox without the base spec's hooks"
    else
      echo "note: this containerd runs the sandbox with the hooks: the hook's own sandbox skip is exercised"
    fi
  fi
  check "$what: the sandbox (pause) container holds nothing" [ -z "$(held "$pod")" ]
  check "$what: the sandbox keeps its parent's CPUs" same "$(cgroup_cpus "$pod")" "$(cgroup_cpus)"
}

# teardown POD CONTAINER...: stop and remove as the kubelet does; the ledger then holds none of them.
teardown () {
  local pod=$1 c
  shift
  for c in "$@"; do cri stop "$c" && cri rm "$c" || bad "stop/remove $c"; done
  if cri stop-pod "$pod" && cri rm-pod "$pod"; then
    local kept=() p
    for p in "${PODS[@]}"; do [ "$p" = "$pod" ] || kept+=("$p"); done
    PODS=(${kept[@]+"${kept[@]}"})
  else
    bad "stop/remove pod $pod"
  fi
  for c in "$@"; do check "removed: the ledger no longer holds $c" [ -z "$(held "$c")" ]; done
}

# create_start POD NAME POD_NAME [KEY=VALUE...]: a started container of POD; $C.
create_start () {
  local pod=$1 name=$2 podname=$3
  shift 3
  C=$(cri create "$pod" "$name" "$IMAGE" "$PARENT" "$podname" "$@") || { bad "$name: CreateContainer"; C=""; return 1; }
  cri start "$C" || { bad "$name: StartContainer"; sed -n '/level=error/p' "$D/containerd.log" | tail -3; return 1; }
  check "$name: running" [ "$(cri state "$C")" = CONTAINER_RUNNING ]
}

# nofile ID: `ulimit -n` in container ID, as `kubectl exec` would show it (an exec'd process:
# Debian 12's runc 1.1 lets a container's first process keep its parent's NOFILE limit
# whatever the spec says, but applies the spec's to an exec).
nofile () { cri exec "$1" sh -c 'ulimit -n' 2>/dev/null; }
drifted () {
  "$BIN" status --json --config "$D/cachepin.json" 2>/dev/null \
    | jq -r --arg id "$1" '.ledger.entries[] | select(.id == $id) | .drifted'
}

# updates POD C: UpdateContainerResources on a placed container C, as a resize sends it (a
# quota, no cpuset) and as the static CPU manager does (a cpuset): neither reaches the hook.
updates () {
  local c=$1 h all
  h=$(held "$c")
  cri update "$c" 200000 || { bad "update without a cpuset: UpdateContainerResources"; return; }
  check "update without a cpuset (a resize): the container keeps its placement, not placed again" \
    same "$(cgroup_cpus "$c")" "$h"
  check "update without a cpuset: the ledger still holds $h" same "$(held "$c")" "$h"
  all=$(cgroup_cpus)
  if [ "$all" = "$h" ]; then echo "note: the pods' parent has one CPU: an update with a cpuset changes nothing here"; return; fi
  cri update "$c" 200000 "$all" || { bad "update with a cpuset: UpdateContainerResources"; return; }
  check "update with cpuset $all: it overwrites the placement (the hook does not see it)" same "$(cgroup_cpus "$c")" "$all"
  check "update with a cpuset: the ledger still holds $h, status says drifted" \
    [ "$(held "$c")/$(drifted "$c")" = "$h/true" ]
}

# same_limits C: container C (cachepin handler) has a runc-handler container's open-file limit.
same_limits () {
  local c=$1 runc_pod POD C # its own: the caller's pod and container are kept
  HANDLER=runc run_pod "$TAG-runc" || return
  runc_pod=$POD
  if create_start "$runc_pod" plain "$TAG-runc"; then
    check "open files: the cachepin container's limit is the runc container's ($(nofile "$c") and $(nofile "$C"))" \
      same "$(nofile "$c")" "$(nofile "$C")"
  fi
  teardown "$runc_pod" ${C:+"$C"}
}

# missing_spec: containerd restarted with the base spec gone fails its whole CRI (the
# documented failure mode: install and uninstall keep that order); after uninstall, which
# takes the handler out of the config before the spec, it starts with its CRI, and only
# the cachepin handler is gone.
missing_spec () {
  local spec=$NODE/share/containerd/cachepin-base-spec.json POD
  stop_containerd
  mv "$spec" "$spec.away"
  if start_containerd ctr; then
    check "base spec missing: the CRI answers nothing" fails cri version
    local errs
    errs=$(ctr plugins ls 2>/dev/null | awk '$NF == "error" { printf "%s%s.%s", sep, $1, $2; sep = " " }')
    check "base spec missing: ctr plugins ls shows the CRI plugin in error ($errs)" grep -q 'cri' <<<"$errs"
  else
    bad "base spec missing: containerd did not start at all"
  fi
  stop_containerd
  mv "$spec.away" "$spec"
  install_node uninstall >"$D/uninstall.log" 2>&1 || { cat "$D/uninstall.log"; bad "uninstall"; }
  check "uninstalled: the base spec is gone" [ ! -e "$spec" ]
  if start_containerd; then
    pass "uninstalled: containerd starts with its CRI"
    check "uninstalled: no cachepin handler" fails cri run-pod "$TAG-gone" "$PARENT" cachepin
    HANDLER=runc run_pod "$TAG-after" && { pass "uninstalled: a runc pod runs"; teardown "$POD"; }
  else
    bad "uninstalled: containerd's CRI did not start"
  fi
}

# ---- the test -------------------------------------------------------------------------------
build_image || { echo "FAIL: building the image"; exit 1; }
configure || { echo "FAIL: configuring containerd"; exit 1; }
start_containerd || { echo "FAIL: containerd did not start (log above)"; exit 1; }
echo "containerd: $(cri version) ($SUITE, config version $CONFIG_VERSION)"
import_image

# 0. The installer and the config versions this containerd reads (1.x: 2; 2.x: 2 and 3).
keeps_settings 2
[ "$CONFIG_VERSION" = 2 ] || keeps_settings 3
keeps_runc

# 1. A pod annotation: every container of the pod asks; the sandbox carries it too.
POD_KEY=cachepin.io/cpus
if run_pod "$TAG-pod" cachepin.io/cpus=1; then
  if create_start "$POD" app "$TAG-pod" pod:cachepin.io/cpus=1; then placed "pod annotation" "$POD" "$C"; fi
  teardown "$POD" ${C:+"$C"}
fi
check "pod annotation: nothing left in the ledger" [ "$(entries)" = 0 ]

# 2. A per-container key among the pod's annotations.
POD_KEY=cachepin.io/cpus.container.app
if run_pod "$TAG-named" cachepin.io/cpus.container.app=1; then
  if create_start "$POD" app "$TAG-named" pod:cachepin.io/cpus.container.app=1; then placed "per-container pod annotation" "$POD" "$C"; fi
  teardown "$POD" ${C:+"$C"}
fi

# 3. A container annotation, in a pod that has none.
POD_KEY=""
if run_pod "$TAG-ctr"; then
  sandbox_untouched "pod without annotations" "$POD"
  if create_start "$POD" app "$TAG-ctr" cachepin.io/cpus=1; then
    placed "container annotation" "$POD" "$C"
    same_limits "$C"
    updates "$C"
  fi
  C1=$C
  # A container that does not ask, next to it: left alone.
  if create_start "$POD" plain "$TAG-ctr"; then
    check "no annotation: the ledger holds nothing for it" [ -z "$(held "$C")" ]
    check "no annotation: its cgroup keeps the parent's CPUs" same "$(cgroup_cpus "$C")" "$(cgroup_cpus)"
  fi
  teardown "$POD" ${C1:+"$C1"} ${C:+"$C"}
fi
check "all removed: the ledger is empty" [ "$(entries)" = 0 ]

# 4. A missing base spec, and uninstall.
missing_spec

echo "$PASS passed, $FAIL failed"
if [ "$FAIL" != 0 ]; then
  echo "--- containerd log (errors) ---"
  grep -E 'level=(error|warning)' "$D/containerd.log" | tail -20
  exit 1
fi
exit 0
