#!/bin/bash
# The hook route and the NRI plugin on one node (issue 22), under containerd 2.1.9's CRI.
#
#   tests/cri/routes.sh --cachepin BIN --stubs DIR
#
# A private containerd from Debian sid (fetched by fetch-debs.sh, never installed) with NRI on
# a private socket and `cachepin nri` running on it, AND the `cachepin` runtime handler whose
# base spec runs `cachepin hook` (deploy/containerd/'s, the hook made this build's binary):
# both with one host config, so one state directory and one ledger.
#
# Checked:
# (a) a pod on the hook's handler and a pod on the runc handler (the plugin's alone), each
#     asking for 1 CPU: both in the ledger, on different CPUs (each container's cgroup and
#     Cpus_allowed_list its own entry's CPU), never one CPU twice;
# (b) a pod on the hook's handler while the plugin runs (both see it): one ledger entry, its
#     cgroup, spec and Cpus_allowed_list agree with it, it has the hook's pid (the
#     container's) and the hook logged that it took the plugin's placement over
#     (cp_placer_take_over()); stop and remove leave the ledger empty;
# (c) the plugin's resync leaves the hook's entries alone (cp_ledger_entry_origin(): the plugin's
#     are those without a pid): a container run by runc alone (not in containerd, so not
#     running as the plugin sees it) with the hook, and the hook-handler pod of (b), keep
#     their entries across the plugin's restart and its Synchronize.
#
# Exit: 0 passed, 1 failed, 77 skipped (not root, no runc/python3-grpcio/busybox-static, the
# Debian archive unreachable with nothing cached, or fewer than 2 CPUs for the pods). Run it
# under `flock /tmp/cachepin-global.lock` (it uses runc and real cgroups).
# CACHEPIN_CRI_KEEP=1 keeps the scratch directory.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=nri-lib.sh
. "$HERE/nri-lib.sh"
cri_args routes "$@"
cri_prereqs
cri_fetch sid containerd=2.1.9+ds1-5

cri_scratch routes
NRISOCK=$D/nri.sock
PLUGIN_PID="" RUNC_ID=""
PODS=()

cleanup () {
  [ -z "$RUNC_ID" ] || "$RUNC" delete -f "$RUNC_ID" >/dev/null 2>&1
  nri_cleanup
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The containerd config: NRI on, and the cachepin handler as deploy/containerd/config-v3.toml
# has it, its base spec's hooks this build's binary with the test's host config (the plugin's).
configure () {
  mkdir -p "$D/nri-plugins" "$D/nri-conf"
  mkdir -p -m 0700 "$D/cpstate" # cachepin refuses a state directory open to others
  printf '{"state_dir": "%s", "log_level": "debug"}\n' "$D/cpstate" >"$D/cachepin.json"
  jq --arg bin "$BIN" --arg cfg "$D/cachepin.json" '
      .hooks |= with_entries(.value |= map(
        if .path == "/opt/cachepin/bin/cachepin" then .path = $bin | .args = ["cachepin", "hook", "--config", $cfg] + .args[2:]
        else error("unexpected hook path \(.path)") end))' \
     "$SRC/deploy/containerd/cachepin-base-spec.json" >"$D/cachepin-base-spec.json" || return 1
  config_v3 "  disable = false
  socket_path = '$NRISOCK'
  plugin_path = '$D/nri-plugins'
  plugin_config_path = '$D/nri-conf'" >"$D/config.toml"
  cat >>"$D/config.toml" <<TOML
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.cachepin]
  runtime_type = 'io.containerd.runc.v2'
  base_runtime_spec = '$D/cachepin-base-spec.json'
  pod_annotations = ['cachepin.io/*']
  container_annotations = ['cachepin.io/*']
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.cachepin.options]
  BinaryName = '$RUNC'
TOML
}

nentries () { ledger | jq --arg id "$1" '[.entries[] | select(.id == $id)] | length'; }
entry_pid () { ledger | jq -r --arg id "$1" '.entries[] | select(.id == $id) | .pid // 0'; }
entries () { ledger | jq '.entries | length'; }
spec_cpus () { ctr containers info "$1" 2>/dev/null | jq -r '.Spec.linux.resources.cpu.cpus // empty'; }
# task_pid ID: the container's init process as containerd knows it.
task_pid () { ctr tasks ls 2>/dev/null | awk -v id="$1" '$1 == id {print $2}'; }
# hook_took_over ID: the journal has the hook's placement of ID, its reason the take-over's
# (cp_placer_take_over()), not a choice of its own.
hook_took_over () {
  grep -F "\"id\":\"$1\"" "$D/cpstate/journal.json" 2>/dev/null | grep -F '"front":"hook"' | grep -qF '"reason":"taken over'
}

run_pod () {
  local name=$1 handler=$2
  shift 2
  POD=$(cri run-pod "$name" "$PARENT" "$handler" "$@") || { bad "$name: RunPodSandbox"; POD=""; return 1; }
  PODS+=("$POD")
}
create_start () {
  local pod=$1 name=$2 podname=$3
  shift 3
  C=$(cri create "$pod" "$name" "$IMAGE" "$PARENT" "$podname" "$@") || { bad "$name: CreateContainer"; C=""; return 1; }
  cri start "$C" || { bad "$name: StartContainer"; return 1; }
  check "$name: running" [ "$(cri state "$C")" = CONTAINER_RUNNING ]
}
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
}

# runc_start ID: a container of runc alone (not containerd's) with the hook and 1 CPU asked.
runc_start () {
  local b=$D/bundle
  mkdir -p "$b" && (cd "$b" && "$RUNC" spec) || return 1
  jq --arg bin "$BIN" --arg cfg "$D/cachepin.json" --arg rootfs "$D/img/rootfs" --arg cg "$PARENT/$1" '
      .process.terminal = false | .process.args = ["sleep", "600"] | .root.path = $rootfs
    | .linux.cgroupsPath = $cg
    | .annotations = {"cachepin.io/cpus": "1"}
    | .hooks = {
        "createRuntime": [{"path": $bin, "args": ["cachepin", "hook", "--config", $cfg, "createRuntime"], "timeout": 30}],
        "poststop":      [{"path": $bin, "args": ["cachepin", "hook", "--config", $cfg, "poststop"], "timeout": 30}]
      }' "$b/config.json" >"$b/config.json.new" && mv "$b/config.json.new" "$b/config.json"
  RUNC_ID=$1
  "$RUNC" run -d --bundle "$b" "$1" >"$D/runc.log" 2>&1 </dev/null
}

# ---- the test -------------------------------------------------------------------------------
build_image || { echo "FAIL: building the image"; exit 1; }
configure || { echo "FAIL: the configuration"; exit 1; }
start_containerd || { echo "FAIL: containerd did not start (log above)"; exit 1; }
echo "containerd: $(cri version)"
import_image
if start_plugin; then pass "the plugin registered and synchronized"; else bad "the plugin did not start"; exit 1; fi

# (a) one pod per route, 1 CPU each: two CPUs, never one twice.
if run_pod "$TAG-hook" cachepin cachepin.io/cpus=1; then
  POD_H=$POD
  ALL=$(cgroup_cpus)
  [ "$(ncpus "$ALL")" -ge 2 ] || skip "the pods' parent has $(ncpus "$ALL") CPU ($ALL): two pods of 1 CPU need 2"
  if create_start "$POD_H" app "$TAG-hook" pod:cachepin.io/cpus=1; then
    CH=$C hh=$(held "$C")
    if run_pod "$TAG-plug" runc cachepin.io/cpus=1 && create_start "$POD" app "$TAG-plug" pod:cachepin.io/cpus=1; then
      POD_P=$POD CP=$C hp=$(held "$C")
      check "(a) the hook's pod holds 1 CPU in the ledger ($hh)" [ "$(ncpus "$hh")" = 1 ]
      check "(a) the plugin's pod holds 1 CPU in the ledger ($hp)" [ "$(ncpus "$hp")" = 1 ]
      check "(a) different CPUs ($hh, $hp)" [ "$hh" != "$hp" ]
      check "(a) the hook's pod: cgroup and Cpus_allowed_list are its CPU" \
        same "$(cgroup_cpus "$CH"),$(allowed "$CH")" "$hh,$hh"
      check "(a) the plugin's pod: cgroup and Cpus_allowed_list are its CPU" \
        same "$(cgroup_cpus "$CP"),$(allowed "$CP")" "$hp,$hp"
      check "(a) one entry per container, two in all" [ "$(nentries "$CH"),$(nentries "$CP"),$(entries)" = 1,1,2 ]
      teardown "$POD_P" "$CP"
    fi
    # (b) the hook's pod, seen by both: one entry, the hook's, where containerd put it.
    check "(b) one entry for the hook's container" [ "$(nentries "$CH")" = 1 ]
    check "(b) its spec's cpuset is the entry's CPU ($(spec_cpus "$CH"))" same "$(spec_cpus "$CH")" "$hh"
    check "(b) its cgroup is the entry's CPU" same "$(cgroup_cpus "$CH")" "$hh"
    check "(b) its Cpus_allowed_list is the entry's CPU" same "$(allowed "$CH")" "$hh"
    check "(b) the entry has the hook's pid, the container's ($(entry_pid "$CH"))" \
      same "$(entry_pid "$CH")" "$(task_pid "$CH")"
    check "(b) the plugin placed it first (its log names it)" grep -q "placed $CH " "$D/nri.log"
    check "(b) the hook took the plugin's placement over (its journal line)" hook_took_over "$CH"
    # (c) a container of runc alone, with the hook: not in containerd, so not running as the
    # plugin sees it; a resync that took the hook's entries for its own would release it.
    if [ "$(ncpus "$ALL")" -ge 2 ] && runc_start "$TAG-runc"; then
      hr=$(held "$TAG-runc")
      check "(c) runc's container placed by the hook on the free CPU ($hr, not $hh)" \
        [ "$(ncpus "$hr")" = 1 ] && [ "$hr" != "$hh" ]
      stop_plugin
      if start_plugin; then
        check "(c) after the plugin's resync: runc's container keeps its entry ($(held "$TAG-runc"))" \
          same "$(held "$TAG-runc")" "$hr"
        check "(c) after the plugin's resync: the hook's pod keeps its entry and pid" \
          same "$(held "$CH"),$(entry_pid "$CH")" "$hh,$(task_pid "$CH")"
      else
        bad "(c) the plugin did not start again"
      fi
      "$RUNC" kill "$TAG-runc" KILL >/dev/null 2>&1
      for _ in $(seq 50); do [ "$("$RUNC" state "$TAG-runc" 2>/dev/null | jq -r .status)" = stopped ] && break; sleep 0.1; done
      "$RUNC" delete "$TAG-runc" >/dev/null 2>&1 && RUNC_ID=""
      check "(c) runc's container deleted: its entry released (poststop)" [ -z "$(held "$TAG-runc")" ]
    else
      bad "(c) runc run with the hook ($(cat "$D/runc.log" 2>/dev/null))"
    fi
  fi
  teardown "$POD_H" ${CH:+"$CH"}
  check "(b) stop and remove: the ledger is empty" [ "$(entries)" = 0 ]
fi

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
