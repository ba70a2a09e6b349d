#!/usr/bin/env bash
# The NRI route as an admin installs it: the image built from deploy/kubernetes/Containerfile
# (tests/install/build-image.sh, FROM a Debian base made here), run as the rendered
# overlays/nri DaemonSet runs it (tests/cri/daemonset_podman.py: its command, privileges,
# mounts, memory limit and ConfigMap, and nothing more), against containerd 2.1.9 with NRI.
#
#   tests/cri/nri-image.sh --cachepin BIN --stubs DIR
#
# podman stands in for the kubelet: it runs the DaemonSet's init container and then its
# plugin container, with the node's paths the manifest mounts given as the test's private
# ones (containerd's NRI socket directory, the state directory) and /sys as the host's.
# Checked: the init container leaves the state directory 0700; the plugin in the image
# registers with containerd (its log and containerd's); the DaemonSet's readiness and liveness
# probes answer 200 (sent into the container's network namespace, as the kubelet sends them to
# the pod's IP), and with containerd stopped readiness says 503 until the plugin registered
# again; a pod asking for 1 CPU gets it
# (the ledger in the node's state directory, the container's cgroup and affinity), one
# without annotations is left alone; its removal frees the entry; the plugin's container
# stopped as the kubelet stops it (SIGTERM, the DaemonSet's grace period) exits, and started
# again it synchronizes and places the next pod.
#
# Exit: 0 passed, 1 failed, 77 skipped (not root, no podman, runc, python3-grpcio, kubectl
# or a base image, or the Debian archive unreachable with nothing cached).
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=nri-lib.sh
. "$HERE/nri-lib.sh"
cri_args nri-image "$@"
cri_prereqs
for tool in podman nsenter curl; do command -v "$tool" >/dev/null || skip "$tool not installed"; done
"$PY" -c 'import yaml' 2>/dev/null || skip "python3-yaml not installed"
KUBECTL=$(bash "$HERE/fetch-debs.sh" --suite sid kubectl=1.36.4+ds-1)/usr/bin/kubectl
[ -x "$KUBECTL" ] || skip "kubectl from sid: the Debian archive is unreachable and nothing is cached"
cri_fetch sid containerd=2.1.9+ds1-5

cri_scratch nri-image
NRISOCK=$D/nri/nri.sock
PLUGIN_IMAGE=localhost/cachepin-installer:nri-$$
PLUGIN_CTR=cachepin-nri-$$
PLUGIN_PID=""
PODS=()

cleanup () {
  podman rm -f -t 0 "$PLUGIN_CTR" "$PLUGIN_CTR-init" >/dev/null 2>&1
  podman rmi -f "$PLUGIN_IMAGE" >/dev/null 2>&1
  nri_cleanup
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- the image and the manifest -------------------------------------------------------------
start=$SECONDS
bash "$SRC/tests/install/build-image.sh" "$SRC" "$PLUGIN_IMAGE" "$D/build.log"
case $? in
  0) pass "podman build -f deploy/kubernetes/Containerfile ($((SECONDS - start)) s)" ;;
  77) skip "no Debian base image (tests/install/base-image.sh above)" ;;
  *) bad "podman build -f deploy/kubernetes/Containerfile"; exit 1 ;;
esac
"$KUBECTL" kustomize "$SRC/deploy/kubernetes/overlays/nri" >"$D/rendered.yaml" \
  || { bad "kubectl kustomize deploy/kubernetes/overlays/nri"; exit 1; }

# The node's paths the DaemonSet mounts, here: containerd's NRI socket directory and the
# state directory are the test's; /sys is the host's, as on a node.
mkdir -p "$D/nri" "$D/node-state" "$D/configmaps"
chmod 0755 "$D/node-state"
NODE_PATHS=("/var/run/nri=$D/nri" "/run/cachepin=$D/node-state" "/sys=/sys")
podman_args () {
  local -n out=$1
  mapfile -d '' out < <("$PY" "$HERE/daemonset_podman.py" "$D/rendered.yaml" "$2" "$PLUGIN_IMAGE" "$3" \
                          "$D/configmaps" "${NODE_PATHS[@]}")
  [ "${#out[@]}" -gt 0 ]
}
podman_args INIT state-dir "$PLUGIN_CTR-init" || { bad "the DaemonSet's init container as podman runs it"; exit 1; }
podman_args MAIN cachepin "$PLUGIN_CTR" || { bad "the DaemonSet's plugin container as podman runs it"; exit 1; }
echo "plugin: podman run ${MAIN[*]}"

# nri-lib.sh's names: the state directory is the node's, as the plugin in the image sees it.
ln -s node-state "$D/cpstate"
config_v3 "  disable = false
  socket_path = '$NRISOCK'
  plugin_path = '$D/nri-plugins'
  plugin_config_path = '$D/nri-conf'" >"$D/config.toml"
mkdir -p "$D/nri-plugins" "$D/nri-conf"

# start_image_plugin: the DaemonSet's plugin container, registered and synchronized (one more
# "synchronized" line in its log than before).
start_image_plugin () {
  local before
  before=$(grep -c 'nri: synchronized' "$D/nri.log" 2>/dev/null)
  podman rm -f -t 0 "$PLUGIN_CTR" >/dev/null 2>&1
  podman run --rm "${MAIN[@]}" >>"$D/nri.log" 2>&1 7>&- 8<&- &
  PODMAN_PID=$!
  logged "$D/nri.log" 'nri: synchronized' $((${before:-0} + 1)) && return 0
  cat "$D/nri.log"
  return 1
}

# ---- the test -------------------------------------------------------------------------------
build_image || { echo "FAIL: building the busybox image"; exit 1; }
start_containerd || { echo "FAIL: containerd did not start (log above)"; exit 1; }
echo "containerd: $(cri version)"
import_image

if podman run --rm "${INIT[@]}" >"$D/init.log" 2>&1; then
  check "the init container left the state directory 0700 ($(stat -c %a "$D/node-state"))" \
    [ "$(stat -c %a "$D/node-state")" = 700 ]
else
  cat "$D/init.log"; bad "the DaemonSet's init container failed"
fi
if start_image_plugin; then
  pass "the plugin in the image registered, was configured and synchronized"
else
  bad "the plugin in the image did not start"; exit 1
fi
check "containerd saw the plugin 50-cachepin register" \
  logged "$D/containerd.log" 'plugin "50-cachepin".*registered\|registered.*50-cachepin\|50-cachepin.*registered' 1

# The DaemonSet's HTTP probes, sent into the plugin container's network namespace as the
# kubelet sends them to the pod's IP: PROBE KIND prints the answer's status code.
mapfile -t PROBES < <("$PY" "$HERE/daemonset_podman.py" --probes "$D/rendered.yaml" cachepin)
probe () {
  local kind port path pid
  read -r kind port path < <(printf '%s\n' "${PROBES[@]}" | grep "^$1 ")
  [ -n "$port" ] || { echo none; return; }
  pid=$(podman inspect -f '{{.State.Pid}}' "$PLUGIN_CTR" 2>/dev/null)
  nsenter -t "$pid" -n curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port$path"
}
# probe_becomes KIND CODE: the probe answers CODE within 20 s.
probe_becomes () {
  for _ in $(seq 100); do [ "$(probe "$1")" = "$2" ] && return 0; sleep 0.2; done
  return 1
}
check "the DaemonSet has a readiness and a liveness probe (${PROBES[*]})" \
  [ "$(printf '%s\n' "${PROBES[@]}" | grep -c '^\(readiness\|liveness\)Probe [0-9]* /')" = 2 ]
check "readinessProbe: 200, registered ($(probe readinessProbe))" probe_becomes readinessProbe 200
check "livenessProbe: 200 ($(probe livenessProbe))" probe_becomes livenessProbe 200

placed_pod () {
  local name=$1 C
  run_pod_named "$name" cachepin.io/cpus=1 || return 1
  C=$(cri create "$POD" app "$IMAGE" "$PARENT" "$name" pod:cachepin.io/cpus=1) || { bad "$name: CreateContainer"; return 1; }
  cri start "$C" || { bad "$name: StartContainer"; return 1; }
  local h
  h=$(held "$C")
  check "$name: the ledger in the node's state directory holds 1 CPU for it ($h)" [ "$(ncpus "$h")" = 1 ]
  check "$name: its cgroup's effective cpuset is that CPU" same "$(cgroup_cpus "$C")" "$h"
  check "$name: its Cpus_allowed_list is that CPU" same "$(allowed "$C")" "$h"
  PLACED=$C
}
run_pod_named () {
  POD=$(cri run-pod "$1" "$PARENT" runc "${@:2}") || { bad "$1: RunPodSandbox"; POD=""; return 1; }
  PODS+=("$POD")
}

if placed_pod "$TAG-a"; then
  A_POD=$POD A=$PLACED
  if run_pod_named "$TAG-plain"; then
    P=$(cri create "$POD" app "$IMAGE" "$PARENT" "$TAG-plain") && cri start "$P" \
      && check "a pod without annotations: nothing held for it" [ -z "$(held "$P")" ]
  fi
  cri stop "$A" && cri rm "$A" && cri stop-pod "$A_POD" && cri rm-pod "$A_POD" || bad "removing $A"
  check "removed: the ledger no longer holds $A" [ -z "$(held "$A")" ]
fi

# containerd restarted: not ready while it is away, ready again once registered again.
stop_containerd
check "containerd stopped: readinessProbe 503 ($(probe readinessProbe))" probe_becomes readinessProbe 503
check "containerd stopped: livenessProbe still 200 (the loop turns)" probe_becomes livenessProbe 200
start_containerd || { bad "containerd did not start again"; exit 1; }
check "containerd back: readinessProbe 200 once the plugin registered again" probe_becomes readinessProbe 200

# The kubelet stops the DaemonSet's pod with SIGTERM and its grace period (a rolling update).
grace=$("$PY" -c 'import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"] == "DaemonSet":
        print(d["spec"]["template"]["spec"].get("terminationGracePeriodSeconds", 30))' "$D/rendered.yaml")
podman stop -t "$grace" "$PLUGIN_CTR" >/dev/null 2>&1
wait "$PODMAN_PID"
rc=$?
check "the plugin's container stopped with SIGTERM within its grace period ${grace} s: exit $rc" [ "$rc" = 0 ]
if start_image_plugin; then
  pass "the plugin's container started again: registered and synchronized"
  placed_pod "$TAG-b"
else
  bad "the plugin's container did not start again"
fi
echo "$PASS passed, $FAIL failed"
if [ "$FAIL" != 0 ]; then
  echo "--- the plugin's log ---"; tail -30 "$D/nri.log"
  echo "--- containerd log (errors) ---"; grep -E 'level=(error|warning)' "$D/containerd.log" | tail -20
  exit 1
fi
exit 0
