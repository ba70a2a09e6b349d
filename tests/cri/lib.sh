# tests/cri/lib.sh: what containerd.sh and nri.sh share, sourced by both (review D2): the
# prerequisites, containerd and the CRI stubs from Debian, the CRI client, the image, the
# private containerd's version 3 config, its stop and what it leaves behind, the checks.
#
# The sourcing script sets HERE (tests/cri), SRC (the tree) and STUBS first, and after
# cri_scratch: D (its scratch directory), SOCK, PARENT, IMAGE, CTRD_PID and CLIENT_PID.
# shellcheck shell=bash

skip () { echo "SKIPPED: $*"; exit 77; }

# cri_args NAME ARGS...: BIN (realpath) and STUBS from --cachepin BIN --stubs DIR, the one
# command line of the NRI tests (nri.sh, routes.sh, nri-promises.sh); exit 2 with a usage
# line naming NAME.sh otherwise.
cri_args () {
  local name=$1
  shift
  BIN="" STUBS=""
  while [ $# -gt 0 ]; do
    case $1 in
      --cachepin) BIN=$(realpath "$2"); shift 2 ;;
      --stubs) STUBS=$2; shift 2 ;;
      *) echo "usage: $name.sh --cachepin BIN --stubs DIR" >&2; exit 2 ;;
    esac
  done
  [ -x "$BIN" ] && [ -n "$STUBS" ] || { echo "$name.sh: --cachepin and --stubs are needed" >&2; exit 2; }
}

# cri_prereqs: root, runc, busybox-static, jq, python3-grpcio and a cpuset controller, or
# skipped; sets PY (Debian's python3, with grpcio: not one earlier in PATH), RUNC, BUSYBOX
# and CPUSET (the cpuset hierarchy's mount).
cri_prereqs () {
  [ "$(id -u)" = 0 ] || skip "needs root"
  PY=/usr/bin/python3
  RUNC=$(command -v runc) || skip "runc not installed"
  BUSYBOX=$(command -v busybox) || skip "busybox-static not installed"
  command -v jq >/dev/null || skip "jq not installed"
  "$PY" -c 'import grpc, grpc_tools' 2>/dev/null || skip "python3-grpcio and python3-grpc-tools not installed"
  # shellcheck source=../cli/lib/cpuset.sh
  . "$SRC/tests/cli/lib/cpuset.sh"
  CPUSET=$(find_cpuset_mount)
  [ -n "$CPUSET" ] || skip "no cpuset cgroup controller"
}

# cri_fetch SUITE PACKAGE: containerd (CTRD, its unpacked tree) and the CRI protocol's
# stubs in $STUBS, from Debian (fetch-debs.sh: never installed), or skipped.
cri_fetch () {
  CTRD=$(bash "$HERE/fetch-debs.sh" --suite "$1" "$2") \
    || skip "containerd from $1: the Debian archive is unreachable and nothing is cached"
  local rc=0
  cri_stubs || rc=$?
  case $rc in
    1) skip "golang-github-kubernetes-cri-api-dev from sid: the Debian archive is unreachable and nothing is cached" ;;
    2) exit 1 ;;
  esac
  export CRI_STUBS=$STUBS
}

# cri_stubs: the CRI protocol's Python stubs (api_pb2.py, api_pb2_grpc.py) in $STUBS, made
# by $PY's grpc_tools from the api.proto of Debian's golang-github-kubernetes-cri-api-dev
# (fetch-debs.sh: never installed); kept while the proto is older. Also what the systemd
# guest's CRI client runs with (tests/vm/run-systemd-suite.sh). Status: 0 made or current;
# 1 the package cannot be had; 2 the proto is missing or does not compile (said why).
cri_stubs () {
  local criapi proto
  criapi=$(bash "$HERE/fetch-debs.sh" --suite sid golang-github-kubernetes-cri-api-dev=0.32.3-1) || return 1
  proto=$criapi/usr/share/gocode/src/k8s.io/cri-api/pkg/apis/runtime/v1/api.proto
  [ -f "$proto" ] || { echo "FAIL: $proto missing from the package"; return 2; }
  # gogoproto's options only steer Go code generation (the wire format is the same
  # without them), and gogo.proto is not in the package: they are dropped.
  mkdir -p "$STUBS"
  if [ ! -f "$STUBS/api_pb2_grpc.py" ] || [ "$proto" -nt "$STUBS/api_pb2_grpc.py" ]; then
    grep -v 'gogoproto' "$proto" >"$STUBS/api.proto"
    "$PY" -m grpc_tools.protoc -I"$STUBS" --python_out="$STUBS" --grpc_python_out="$STUBS" "$STUBS/api.proto" \
      || { echo "FAIL: protoc could not compile $proto"; return 2; }
  fi
}

# cri_scratch NAME: a private containerd's names: D (a short directory: unix socket paths
# are limited to 108 bytes), SOCK, TAG, PARENT (every pod's cgroup parent, cgroupfs,
# removed at the end), IMAGE.
cri_scratch () {
  D=$(mktemp -d "/tmp/cp-$1.XXXXXX")
  SOCK=$D/c.sock
  TAG=cachepin-$1-$$
  PARENT=/$TAG
  IMAGE=localhost/cachepin-test/busybox:$TAG
  CTRD_PID="" CLIENT_PID=""
}

# cri COMMAND [ARGS]: one command to the CRI client (cri_client.py --serve, started once);
# its output on stdout, its status returned.
cri () {
  local line
  printf '%q ' "$@" >&7 && echo >&7 || return 1
  while IFS= read -r line <&8; do
    case $line in .END\ *) return "${line#.END }" ;; esac
    printf '%s\n' "$line"
  done
  return 1 # the client is gone
}
start_client () {
  mkfifo "$D/cri.in" "$D/cri.out"
  "$PY" "$HERE/cri_client.py" --socket "$SOCK" --serve <"$D/cri.in" >"$D/cri.out" &
  CLIENT_PID=$!
  exec 7>"$D/cri.in" 8<"$D/cri.out"
}
ctr () { "$CTRD/usr/bin/ctr" --address "$SOCK" -n k8s.io "$@"; }

# stop_containerd: containerd and the CRI client gone (the shims it started are not).
stop_containerd () {
  if [ -n "$CLIENT_PID" ]; then exec 7>&- 8<&-; wait "$CLIENT_PID"; CLIENT_PID=""; rm -f "$D/cri.in" "$D/cri.out"; fi
  if [ -n "$CTRD_PID" ]; then
    kill "$CTRD_PID" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$CTRD_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$CTRD_PID" 2>/dev/null
    wait "$CTRD_PID" 2>/dev/null
    CTRD_PID=""
  fi
}

# cri_leftovers: what a stopped containerd leaves: shims (their command line names our
# socket), mounts under $D (rootfs overlays, sandbox shm; deepest first), a container's
# process that outlived its shim (containerd killed under it: killed, or it runs on and
# its cgroups stay behind), the cgroups under $PARENT.
cri_leftovers () {
  local pid m killed=0
  for pid in $(grep -l -s -F -- "$SOCK" /proc/[0-9]*/cmdline | cut -d/ -f3); do kill -KILL "$pid" 2>/dev/null; done
  awk -v d="$D/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r | while read -r m; do umount -l "$m"; done
  for m in $(awk '$3 == "cgroup" || $3 == "cgroup2" {print $2}' /proc/mounts); do
    [ -d "$m$PARENT" ] || continue
    for pid in $(find "$m$PARENT" -name cgroup.procs -exec cat {} + 2>/dev/null); do
      kill -KILL "$pid" 2>/dev/null && killed=1
    done
  done
  [ "$killed" = 0 ] || sleep 0.5
  for m in $(awk '$3 == "cgroup" || $3 == "cgroup2" {print $2}' /proc/mounts); do
    [ -d "$m$PARENT" ] && find "$m$PARENT" -depth -type d -exec rmdir {} + 2>/dev/null
  done
}

# The image: busybox-static and its applets, in the format `docker save` writes.
build_image () {
  local img=$D/img r=$D/img/rootfs
  mkdir -p "$r/bin" "$r/proc" "$r/sys" "$r/dev" "$r/tmp" "$r/etc"
  cp "$BUSYBOX" "$r/bin/busybox"
  for c in sh sleep cat grep; do ln -s busybox "$r/bin/$c"; done
  tar --sort=name --owner=0 --group=0 --numeric-owner -C "$r" -cf "$img/layer.tar" .
  local diff
  diff=sha256:$(sha256sum "$img/layer.tar" | cut -d' ' -f1)
  jq -n --arg diff "$diff" '{architecture: "amd64", os: "linux",
      config: {Cmd: ["sleep", "2147483647"], Env: ["PATH=/bin"]},
      rootfs: {type: "layers", diff_ids: [$diff]}}' >"$img/config.json"
  jq -n --arg tag "$IMAGE" '[{Config: "config.json", RepoTags: [$tag], Layers: ["layer.tar"]}]' >"$img/manifest.json"
  tar -C "$img" -cf "$D/image.tar" manifest.json config.json layer.tar
}

# import_image: the image into the running containerd's k8s.io namespace.
import_image () {
  ctr images import "$D/image.tar" >"$D/import.log" 2>&1 || { cat "$D/import.log"; echo "FAIL: image import"; exit 1; }
}

# config_v3 NRI: the private containerd's version 3 config on stdout, its NRI plugin's
# table's lines NRI (the keys under [plugins.'io.containerd.nri.v1.nri']).
# restrict_oom_score_adj: the sandbox's -998 needs CAP_SYS_RESOURCE, which a test machine
# (itself a container) may lack.
config_v3 () {
  mkdir -p "$D/root" "$D/state" "$D/opt" "$D/cni/bin" "$D/cni/net.d"
  cat <<EOF
version = 3
root = '$D/root'
state = '$D/state'
[grpc]
  address = '$SOCK'
[ttrpc]
  address = '$SOCK.ttrpc'
[plugins.'io.containerd.internal.v1.opt']
  path = '$D/opt'
[plugins.'io.containerd.nri.v1.nri']
$1
[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = '$IMAGE'
[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = ['$D/cni/bin']
  conf_dir = '$D/cni/net.d'
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  BinaryName = '$RUNC'
EOF
}

PASS=0 FAIL=0
pass () { PASS=$((PASS + 1)); echo "ok   $*"; }
bad () { FAIL=$((FAIL + 1)); echo "FAIL $*"; }
check () { local what=$1; shift; if "$@"; then pass "$what"; else bad "$what"; fi; }
fails () { ! "$@"; }
same () { [ -n "$1" ] && [ "$1" = "$2" ]; }
ncpus () { [ -n "$1" ] && awk -v l="$1" 'BEGIN { n = 0; k = split(l, a, ","); for (i = 1; i <= k; i++) { if (split(a[i], b, "-") == 2) n += b[2] - b[1] + 1; else n++ } print n }'; }
# cgroup_cpus [ID]: the effective CPUs of the pods' parent cgroup or of container ID's (v2
# leaves cpuset.cpus empty where nothing was written: the effective set is what counts).
cgroup_cpus () {
  local dir=$CPUSET$PARENT${1:+/$1}
  cat "$dir/cpuset.effective_cpus" 2>/dev/null || cat "$dir/cpuset.cpus.effective" 2>/dev/null
}
allowed () { cri exec "$1" grep '^Cpus_allowed_list:' /proc/self/status 2>/dev/null | awk '{print $2}'; }
