#!/usr/bin/env bash
# Pod sandbox (pause/infra) containers are never placed, under every engine's spelling
# (docs/annotations.md): Kubernetes puts the pod's annotations on the sandbox too, so a
# pod asking for CPUs would otherwise have its pause container take them. The real binary
# runs `cachepin hook createRuntime` on a state whose pid is a real process in a real
# cpuset cgroup: a sandbox exits 0 and writes nothing (no ledger, the cgroup's cpuset.cpus
# unchanged); the same state as an application container is placed (the control, so that
# "nothing written" is for the sandbox's sake) and given back at poststop.
#
#   bash tests/cli/sandbox.sh build/cachepin
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: sandbox.sh PATH-TO-cachepin}")
need_cpuset sandbox

sleeper_frame cachepin-sandbox
BEFORE=$(cat "$CG/cpuset.cpus")
mkdir "$D/bundle"
echo '{"ociVersion": "1.0.2", "annotations": {"cachepin.io/cpus": "1"}}' >"$D/bundle/config.json"
echo "{\"state_dir\": \"$D/state\"}" >"$D/cfg.json"

# hook STAGE KEY VALUE: the hook on a state asking for 1 CPU, with KEY: VALUE among its annotations.
hook () {
  printf '{"ociVersion": "1.0.2", "id": "sandbox-test", "status": "%s", "pid": %d, "bundle": "%s",
    "annotations": {"cachepin.io/cpus": "1", "%s": "%s"}}' \
    "$([ "$1" = poststop ] && echo stopped || echo creating)" "$SLEEPER" "$D/bundle" "$2" "$3" \
    | "$BIN" hook --config "$D/cfg.json" "$1" 2>"$D/err"
}

# sandbox ENGINE KEY VALUE: a sandbox container in ENGINE's spelling is left alone.
sandbox () {
  hook createRuntime "$2" "$3"
  local rc=$?
  if [ "$rc" = 0 ] && [ ! -s "$D/err" ] && [ ! -e "$D/state/ledger.json" ] && [ "$(cat "$CG/cpuset.cpus")" = "$BEFORE" ]; then
    ok "$1 sandbox ($2: $3): exit 0, no ledger, cpuset.cpus unchanged"
  else
    bad "$1 sandbox ($2: $3): exit $rc, stderr '$(cat "$D/err")', ledger $([ -e "$D/state/ledger.json" ] && echo written || echo absent), cpuset.cpus $(cat "$CG/cpuset.cpus") (was $BEFORE)"
  fi
  hook poststop "$2" "$3" # give back whatever a failure took
  rm -rf "$D/state"
  [ "$MNT" = /sys/fs/cgroup ] || echo "$BEFORE" >"$CG/cpuset.cpus"
}

# control ENGINE KEY VALUE: the engine's application container is placed, then released.
control () {
  hook createRuntime "$2" "$3"
  local rc=$? held
  held=$(jq -r '.entries[] | select(.id == "sandbox-test") | .held' "$D/state/ledger.json" 2>/dev/null)
  if [ "$rc" = 0 ] && [ -n "$held" ] && [ "$(cat "$CG/cpuset.cpus")" = "$held" ]; then
    ok "$1 container ($2: $3): placed on $held"
  else
    bad "$1 container ($2: $3): exit $rc, stderr '$(cat "$D/err")', held '$held', cpuset.cpus $(cat "$CG/cpuset.cpus")"
  fi
  hook poststop "$2" "$3"
  if [ -z "$(jq -r '.entries[] | select(.id == "sandbox-test") | .id' "$D/state/ledger.json" 2>/dev/null)" ]; then
    ok "$1 container: released at poststop"
  else
    bad "$1 container: still in the ledger after poststop"
  fi
  rm -rf "$D/state"
  [ "$MNT" = /sys/fs/cgroup ] || echo "$BEFORE" >"$CG/cpuset.cpus"
}

control containerd io.kubernetes.cri.container-type container
sandbox containerd io.kubernetes.cri.container-type sandbox
control CRI-O io.kubernetes.cri-o.ContainerType container
sandbox CRI-O io.kubernetes.cri-o.ContainerType sandbox
control cri-dockerd io.kubernetes.docker.type container
sandbox cri-dockerd io.kubernetes.docker.type podsandbox

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
