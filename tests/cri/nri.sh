#!/usr/bin/env bash
# `cachepin nri`, the NRI plugin, under containerd 2.1.9's CRI, driven as the kubelet drives it.
#
#   tests/cri/nri.sh --cachepin BIN --stubs DIR
#
# containerd from Debian sid (fetched by fetch-debs.sh, never installed) on a private socket,
# root and state directory, NRI enabled on a private socket; the plugin started on it with a
# host config and a state directory of the test's; pods run on containerd's runc handler (no
# hook anywhere). The CRI client and its stubs are containerd.sh's (cri_client.py).
#
# Checked: the plugin registers and is configured, sandboxed and without capabilities; a pod asking for 1 CPU (a pod annotation)
# gets a container whose spec (linux.resources.cpu.cpus), cgroup and Cpus_allowed_list are
# the CPU the ledger holds for it under its container id; its sandbox and a container of a
# pod without annotations are left alone; UpdateContainerResources with a cpuset of every CPU
# leaves the placed cpuset (spec and cgroup) and one with only a quota passes through (the
# quota lands); with that CPU held, a strict request for every CPU fails CreateContainer
# with the plugin's line and the same request without strict starts unplaced; an invalid
# annotation (smt=pe1) fails it; a pod asking cachepin.io/sched-cache=on under
# `sched_cache: on-demand` turns the kernel's switch (a fake tree's, kernel_root) on, from inside
# the plugin's sandbox, and its removal gives it back; core-sched on this kernel (no
# CONFIG_SCHED_CORE): not strict placed without a cookie and said once, strict refused with the
# hook's line, StartContainer carrying the task's pid; isolate on a host without cgroup v2
# partitions (this one: cgroup v1): the plugin says so at start, not strict placed and said once,
# strict refused with the hook's line; stop and remove empty the ledger; with the ledger's lock held
# by another process, a container that asks starts unplaced (the plugin waits 1 s at most);
# the plugin killed, a placed pod removed and a pod that asks created (and started, unplaced)
# meanwhile, the plugin started again: its Synchronize releases the removed one's entry and
# places the new one (ledger, cgroup, spec through containerd's applying the update,
# Cpus_allowed_list, once containerd applied the update); containerd restarted under the plugin: it
# says its connection ended, registers again and places the next pod; the pre-launched form
# (containerd starts it from its plugin_path with a connected socket) registers, places, and
# exits when containerd stops.
#
# Exit: 0 passed, 1 failed, 77 skipped (not root, no runc/python3-grpcio/busybox-static, or
# the Debian archive unreachable with nothing cached). CACHEPIN_CRI_KEEP=1 keeps the scratch
# directory.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=nri-lib.sh
. "$HERE/nri-lib.sh"
cri_args nri "$@"
cri_prereqs
cri_fetch sid containerd=2.1.9+ds1-5

cri_scratch nri
NRISOCK=$D/nri.sock
SWITCH=$D/kernel/sys/kernel/debug/sched/llc_balancing/enabled
PLUGIN_PID=""
PODS=()


trap nri_cleanup EXIT
trap 'exit 1' INT TERM

apply_status () { local want=$1; shift; "$BIN" apply "$@" --config "$D/cachepin.json" >/dev/null 2>&1; [ $? = "$want" ]; }

configure () {
  mkdir -p "$D/nri-plugins" "$D/nri-conf"
  mkdir -p -m 0700 "$D/cpstate"
  # The kernel's cache-aware scheduling switch in a fake tree (kernel_root), held on demand.
  mkdir -p "$(dirname "$SWITCH")"
  echo 0 >"$SWITCH"
  jq -n --arg s "$D/cpstate" --arg k "$D/kernel" \
    '{"state_dir": $s, "kernel_root": $k, "sched_cache": "on-demand", "log_level": "debug"}' >"$D/cachepin.json"
  config_v3 "  disable = false
  socket_path = '$NRISOCK'
  plugin_path = '$D/nri-plugins'
  plugin_config_path = '$D/nri-conf'" >"$D/config.toml"
}

entries () { ledger | jq '.entries | length'; }
spec_cpus () { ctr containers info "$1" 2>/dev/null | jq -r '.Spec.linux.resources.cpu.cpus // empty'; }
spec_quota () { ctr containers info "$1" 2>/dev/null | jq -r '.Spec.linux.resources.cpu.quota // empty'; }

# remove_now POD CONTAINER: stopped and removed, nothing checked of the ledger.
remove_now () { cri stop "$2" && cri rm "$2" && cri stop-pod "$1" && cri rm-pod "$1"; }
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

# ---- the test -------------------------------------------------------------------------------
build_image || { echo "FAIL: building the image"; exit 1; }
configure
start_containerd || { echo "FAIL: containerd did not start (log above)"; exit 1; }
echo "containerd: $(cri version)"
import_image
if start_plugin; then pass "the plugin registered, was configured and synchronized"; else bad "the plugin did not start"; exit 1; fi
check "the plugin logged containerd's configuration (request timeout 2000 ms)" grep -q 'request timeout 2000 ms' "$D/nri.log"
check "the plugin is sandboxed: NoNewPrivs 1, Seccomp 2 (filter) in /proc/$PLUGIN_PID/status" \
  [ "$(awk '/^NoNewPrivs:/ {n = $2} /^Seccomp:/ {s = $2} END {print n "," s}' "/proc/$PLUGIN_PID/status")" = 1,2 ]
check "the plugin holds no capability: CapEff, CapPrm and CapBnd 0 in /proc/$PLUGIN_PID/status (started with root's)" \
  [ "$(awk '/^Cap(Eff|Prm|Bnd):/ {printf "%s,", $2}' "/proc/$PLUGIN_PID/status")" = 0000000000000000,0000000000000000,0000000000000000, ]

# 1. A pod annotation: placed at CreateContainer, in its spec, cgroup and affinity.
if run_pod "$TAG-pod" cachepin.io/cpus=1; then
  ALL=$(cgroup_cpus) # the pods' parent, made with the first pod
  if create_start "$POD" app "$TAG-pod" pod:cachepin.io/cpus=1; then
    C1=$C h=$(held "$C")
    check "placed: the ledger holds 1 CPU under the container's id ($h)" [ "$(ncpus "$h")" = 1 ]
    check "placed: its spec's linux.resources.cpu.cpus is that CPU ($(spec_cpus "$C"))" same "$(spec_cpus "$C")" "$h"
    check "placed: its cgroup's effective cpuset is that CPU" same "$(cgroup_cpus "$C")" "$h"
    check "placed: its Cpus_allowed_list is that CPU" same "$(allowed "$C")" "$h"
    check "placed: the plugin logged it" grep -q "placed $C " "$D/nri.log"
    check "placed: the sandbox (pause) container holds nothing" [ -z "$(held "$POD")" ]
    check "placed: the sandbox keeps its parent's CPUs" same "$(cgroup_cpus "$POD")" "$ALL"
    # 2. Updates: a cpuset of every CPU is overridden, a quota passes through.
    if [ "$ALL" = "$h" ]; then
      echo "note: the pods' parent has one CPU: an update with a cpuset changes nothing here"
    elif cri update "$C" 200000 "$ALL"; then
      check "update with cpuset $ALL: the cgroup keeps the placed $h" same "$(cgroup_cpus "$C")" "$h"
      check "update with cpuset $ALL: the spec keeps the placed $h" same "$(spec_cpus "$C")" "$h"
      check "update with cpuset $ALL: the plugin logged the override" grep -q "update of $C: cpuset $ALL asked" "$D/nri.log"
    else
      bad "update with a cpuset: UpdateContainerResources"
    fi
    if cri update "$C" 300000; then
      check "update with a quota only: the quota lands in the spec ($(spec_quota "$C"))" [ "$(spec_quota "$C")" = 300000 ]
      check "update with a quota only: the cpuset stays $h" same "$(cgroup_cpus "$C")" "$h"
    else
      bad "update with a quota: UpdateContainerResources"
    fi
    # One ledger for every route: `cachepin apply` on the same node sees the plugin's CPU held.
    n=$(ncpus "$ALL")
    APPLY_CG=$CPUSET$PARENT/apply
    if [ "$n" -ge 2 ] && mkdir -p "$APPLY_CG"; then
      check "apply --cpus $n --strict beside it: refused, the plugin's CPU is held (exit 3)" \
        apply_status 3 --cgroup "$APPLY_CG" --cpus "$n" --strict
      if "$BIN" apply --cgroup "$APPLY_CG" --cpus 1 --config "$D/cachepin.json" >/dev/null 2>&1; then
        a=$(cat "$APPLY_CG/cpuset.cpus")
        check "apply --cpus 1 beside it: another CPU than the plugin's ($a, not $h)" [ -n "$a" ] && [ "$a" != "$h" ]
        "$BIN" release --cgroup "$APPLY_CG" --config "$D/cachepin.json" >/dev/null 2>&1 || bad "release of the applied cgroup"
      else
        bad "apply --cpus 1 beside the plugin's container"
      fi
      rmdir "$APPLY_CG" 2>/dev/null
    fi
    # 3. With its CPU held, every CPU exclusively cannot be had: strict fails the
    # container with the plugin's line, without strict it starts unplaced.
    n=$(ncpus "$ALL")
    if [ "$n" -ge 2 ]; then
      if run_pod "$TAG-strict" cachepin.io/cpus="$n" cachepin.io/strict=true; then
        check "strict, $n CPUs with one held: CreateContainer fails" \
          fails cri create "$POD" app "$IMAGE" "$PARENT" "$TAG-strict" pod:cachepin.io/cpus="$n" pod:cachepin.io/strict=true
        line=$(grep -o 'desc = cachepin: [^"]*' "$D/containerd.log" | tail -1)
        check "strict: containerd's error is the plugin's line ($line)" [ -n "$line" ]
        check "strict: the ledger holds only the first container" [ "$(entries)" = 1 ]
        teardown "$POD"
      fi
      if run_pod "$TAG-spill" cachepin.io/cpus="$n"; then
        if create_start "$POD" app "$TAG-spill" pod:cachepin.io/cpus="$n"; then
          check "not strict, $n CPUs with one held: it starts unplaced (nothing in the ledger for it)" [ -z "$(held "$C")" ]
          check "not strict: its cgroup keeps the parent's CPUs" same "$(cgroup_cpus "$C")" "$ALL"
          check "not strict: the plugin said why" grep -q "$C" "$D/nri.log"
        fi
        teardown "$POD" ${C:+"$C"}
      fi
    else
      echo "note: one CPU: the strict and unplaced cases need two"
    fi
  fi
  teardown "$POD" ${C1:+"$C1"}
fi
check "pod removed: the ledger is empty" [ "$(entries)" = 0 ]

# 3b. cachepin.io/core-sched through the plugin.  The cookie needs the container's process,
# which containerd names at StartContainer (Container.pid); whether one can be made is
# probed at the plugin's start, and this host's kernel, as every kernel at hand, has no
# CONFIG_SCHED_CORE (the probe's EINVAL): not strict, the pod is placed and the plugin says
# once why it gets no cookie (the ledger's core_sched stays false); strict, CreateContainer
# fails with the hook's line.  No cookie is made here, none is claimed.
core=$("$BIN" status --json --config "$D/cachepin.json" 2>/dev/null | jq -r '.features.core_scheduling.state // empty')
check "core-sched: the plugin logged the probe ($core, as cachepin status says)" grep -q "nri: core scheduling: $core" "$D/nri.log"
if [ "$core" != unsupported ]; then
  echo "note: core scheduling is $core here, not unsupported: the no-cookie checks are for a kernel without it"
elif run_pod "$TAG-core" cachepin.io/cpus=1 cachepin.io/core-sched=true; then
  if create_start "$POD" app "$TAG-core" pod:cachepin.io/cpus=1 pod:cachepin.io/core-sched=true; then
    h=$(held "$C")
    check "core-sched, not strict: placed all the same, the ledger holds 1 CPU ($h)" [ "$(ncpus "$h")" = 1 ]
    check "core-sched, not strict: its cgroup's effective cpuset is that CPU" same "$(cgroup_cpus "$C")" "$h"
    check "core-sched, not strict: the plugin said why it has no cookie, once" \
      [ "$(grep -c "$C asks cachepin.io/core-sched, started without it: this kernel has no core scheduling (CONFIG_SCHED_CORE)" "$D/nri.log")" = 1 ]
    check "core-sched, not strict: its entry says core_sched false" \
      [ "$(ledger | jq -r --arg id "$C" '.entries[] | select(.id == $id) | .core_sched')" = false ]
    # StartContainer is subscribed to and carries the task's pid (the event the cookie
    # would be made at, before the task starts).
    tpid=$(ctr task ls 2>/dev/null | awk -v c="$C" '$1 == c {print $2}')
    check "core-sched: StartContainer gave the plugin the task's pid ($tpid)" \
      grep -q "nri: $C has process ${tpid:-none}\$" "$D/nri.log"
  fi
  teardown "$POD" ${C:+"$C"}
fi
if [ "$core" = unsupported ] && run_pod "$TAG-core-strict" cachepin.io/cpus=1 cachepin.io/core-sched=true cachepin.io/strict=true; then
  check "core-sched, strict: CreateContainer fails" \
    fails cri create "$POD" app "$IMAGE" "$PARENT" "$TAG-core-strict" pod:cachepin.io/cpus=1 \
    pod:cachepin.io/core-sched=true pod:cachepin.io/strict=true
  check "core-sched, strict: containerd's error is the hook's line" \
    grep -q 'desc = cachepin: cachepin.io/core-sched: this kernel has no core scheduling (CONFIG_SCHED_CORE)' "$D/containerd.log"
  check "core-sched, strict: nothing in the ledger" [ "$(entries)" = 0 ]
  teardown "$POD"
fi

# 3c. cachepin.io/isolate through the plugin.  Whether the host makes cgroup v2 partitions
# is judged at the plugin's start, from the cpuset hierarchy (here, from /sys/fs/cgroup as
# this script reads it): where it does not, the plugin says so once, a pod asking is placed
# without isolation with the hook's line, and a strict one fails CreateContainer.  Where it
# does, the partition itself is checked in the VM (vm.systemd, nri.isolate), not on this host.
if [ "$(stat -f -c %T /sys/fs/cgroup 2>/dev/null)" != cgroup2fs ]; then
  iso_why="cgroup v1"
elif [ ! -e /sys/fs/cgroup/cpuset.cpus.isolated ]; then
  iso_why="kernel has no cpuset.cpus.exclusive (Linux 6.7+)"
else
  iso_why=""
fi
if [ -z "$iso_why" ]; then
  echo "note: this host makes cgroup v2 partitions: the plugin's isolation is checked in vm.systemd (nri.isolate)"
else
  check "isolate: the plugin said at its start that this host makes no partition ($iso_why)" \
    grep -qF "nri: isolation (cachepin.io/isolate): unsupported here ($iso_why)" "$D/nri.log"
  if run_pod "$TAG-iso" cachepin.io/cpus=1 cachepin.io/isolate=true; then
    if create_start "$POD" app "$TAG-iso" pod:cachepin.io/cpus=1 pod:cachepin.io/isolate=true; then
      h=$(held "$C")
      check "isolate, not strict: placed all the same, the ledger holds 1 CPU ($h)" [ "$(ncpus "$h")" = 1 ]
      check "isolate, not strict: the plugin said why it is not isolated, once" \
        [ "$(grep -cF "$C: cachepin.io/isolate: unsupported here ($iso_why): placed without isolation" "$D/nri.log")" = 1 ]
      check "isolate, not strict: its entry is not isolated" \
        [ "$(ledger | jq -r --arg id "$C" '.entries[] | select(.id == $id) | .isolated // false')" = false ]
    fi
    teardown "$POD" ${C:+"$C"}
  fi
  if run_pod "$TAG-iso-strict" cachepin.io/cpus=1 cachepin.io/isolate=true cachepin.io/strict=true; then
    check "isolate, strict: CreateContainer fails" \
      fails cri create "$POD" app "$IMAGE" "$PARENT" "$TAG-iso-strict" pod:cachepin.io/cpus=1 \
      pod:cachepin.io/isolate=true pod:cachepin.io/strict=true
    check "isolate, strict: containerd's error is the hook's line" \
      grep -qF "desc = cachepin: cachepin.io/isolate: unsupported here ($iso_why)" "$D/containerd.log"
    check "isolate, strict: nothing in the ledger" [ "$(entries)" = 0 ]
    teardown "$POD"
  fi
fi

# 4. A pod without annotations: untouched.
if run_pod "$TAG-plain"; then
  if create_start "$POD" plain "$TAG-plain"; then
    check "no annotation: the ledger holds nothing for it" [ -z "$(held "$C")" ]
    check "no annotation: its cgroup keeps the parent's CPUs" same "$(cgroup_cpus "$C")" "$ALL"
    check "no annotation: its spec names no cpuset" [ -z "$(spec_cpus "$C")" ]
  fi
  teardown "$POD" ${C:+"$C"}
fi

# 4b. cachepin.io/sched-cache=on under `sched_cache: on-demand`: the plugin turns the kernel's
# switch on at CreateContainer and gives it back at removal, from inside its sandbox (the
# switch is the one file below the kernel root it may write).
if run_pod "$TAG-cas" cachepin.io/cpus=1 cachepin.io/sched-cache=on; then
  if create_start "$POD" app "$TAG-cas" pod:cachepin.io/cpus=1 pod:cachepin.io/sched-cache=on; then
    check "sched-cache=on: placed ($(held "$C"))" [ -n "$(held "$C")" ]
    check "sched-cache=on: the switch reads 1 ($(cat "$SWITCH"))" [ "$(cat "$SWITCH")" = 1 ]
    check "sched-cache=on: the plugin logged its write" grep -q 'cache-aware scheduling (.*): off -> on' "$D/nri.log"
    check "sched-cache=on: the ledger keeps off to give back" [ "$(ledger | jq -r '.sched_cache_restore')" = off ]
  fi
  teardown "$POD" ${C:+"$C"}
  check "sched-cache=on, removed: the switch is given back (0: $(cat "$SWITCH"))" [ "$(cat "$SWITCH")" = 0 ]
  # (the isolation section's pods were placed without isolation, said with their own line)
  check "sched-cache=on: the plugin logged no warning about the switch" \
    [ -z "$(grep 'left as it is\|placed without' "$D/nri.log" | grep -v 'cachepin.io/isolate')" ]
fi

# 5. An invalid annotation fails the container whatever else it asks (the hook's rule).
if run_pod "$TAG-invalid" cachepin.io/cpus=1 cachepin.io/smt=pe1; then
  check "smt=pe1: CreateContainer fails" \
    fails cri create "$POD" app "$IMAGE" "$PARENT" "$TAG-invalid" pod:cachepin.io/cpus=1 pod:cachepin.io/smt=pe1
  check "smt=pe1: containerd's error is the plugin's line naming the annotation" \
    grep -q 'desc = cachepin: .*cachepin.io/smt' "$D/containerd.log"
  check "smt=pe1: nothing in the ledger" [ "$(entries)" = 0 ]
  teardown "$POD"
fi

# 6. The ledger's lock held by another cachepin (a stuck hook): the plugin waits at most 1 s
# (half containerd's 2 s request timeout), then the container starts unplaced, never failed.
( exec 8<"$D/cpstate" 9>"$D/cpstate/ledger.lock"; flock 8; flock 9; exec sleep 30 ) </dev/null >/dev/null 2>&1 &
LOCKER=$!
sleep 0.5
if run_pod "$TAG-locked" cachepin.io/cpus=1; then
  if create_start "$POD" app "$TAG-locked" pod:cachepin.io/cpus=1; then
    check "ledger locked: the container starts unplaced" [ -z "$(held "$C")" ]
    check "ledger locked: the plugin said why (the lock's wait timed out)" \
      grep -q "container $C starts unplaced: .*timed out after" "$D/nri.log"
  fi
  kill "$LOCKER" 2>/dev/null; wait "$LOCKER" 2>/dev/null
  teardown "$POD" ${C:+"$C"}
fi
kill "$LOCKER" 2>/dev/null; wait "$LOCKER" 2>/dev/null

# 7. The plugin killed (it never fails a pod): a placed pod removed and a pod that asks
# created while it is away; started again, its Synchronize rebuilds what is placed: the
# removed container's entry (kept meanwhile: pending, CP_LEDGER_PENDING_SECONDS) released,
# the new container placed, in its cgroup and, through the answer's update that containerd
# applies, in its spec and affinity.
if run_pod "$TAG-before" cachepin.io/cpus=1 && create_start "$POD" app "$TAG-before" pod:cachepin.io/cpus=1; then
  BEFORE_POD=$POD BEFORE=$C
  check "resync: placed before the plugin is killed" [ -n "$(held "$BEFORE")" ]
  kill -KILL "$PLUGIN_PID"; wait "$PLUGIN_PID" 2>/dev/null; PLUGIN_PID=""
  check "resync: removed while the plugin is away" remove_now "$BEFORE_POD" "$BEFORE"
  check "resync: its entry stays meanwhile (nobody released it)" [ -n "$(held "$BEFORE")" ]
  if run_pod "$TAG-away" cachepin.io/cpus=1 && create_start "$POD" app "$TAG-away" pod:cachepin.io/cpus=1; then
    AWAY_POD=$POD AWAY=$C
    check "plugin away: the container starts, on its parent's CPUs" same "$(cgroup_cpus "$AWAY")" "$ALL"
    check "plugin away: nothing in the ledger for it" [ -z "$(held "$AWAY")" ]
    if start_plugin; then
      logged "$D/nri.log" "placed $AWAY .* at resync" 1
      h=$(held "$AWAY")
      check "resync: the removed container's entry is released" [ -z "$(held "$BEFORE")" ]
      check "resync: the plugin logged the release" grep -q "released $BEFORE" "$D/nri.log"
      check "resync: the container created meanwhile is placed, the ledger holds 1 CPU ($h)" [ "$(ncpus "$h")" = 1 ]
      check "resync: the plugin logged it" grep -q "placed $AWAY .* at resync" "$D/nri.log"
      # containerd applies the update after the plugin's answer: wait for it (10 s at most).
      for _ in $(seq 100); do same "$(cgroup_cpus "$AWAY")" "$h" && break; sleep 0.1; done
      check "resync: its cgroup's effective cpuset is that CPU" same "$(cgroup_cpus "$AWAY")" "$h"
      check "resync: its spec's linux.resources.cpu.cpus is that CPU (containerd applied the update: $(spec_cpus "$AWAY"))" \
        same "$(spec_cpus "$AWAY")" "$h"
      check "resync: its Cpus_allowed_list is that CPU" same "$(allowed "$AWAY")" "$h"
    else
      bad "the plugin did not start again"
    fi
  fi
fi

# 7b. containerd restarted under a running plugin: the plugin dials again (one line when the
# connection ends, one when it is registered again) and places the next pod.
if [ -n "$PLUGIN_PID" ]; then
  stop_containerd
  if start_containerd; then
    check "containerd restarted: the plugin said its connection ended" \
      logged "$D/nri.log" 'nri: the connection to the runtime ended .* dialling .* again' 1
    check "containerd restarted: the plugin is registered again" logged "$D/nri.log" 'nri: reconnected: registered again' 1
    check "containerd restarted: the plugin is synchronized again" logged "$D/nri.log" 'nri: synchronized' 3
    check "containerd restarted: the pod placed at the resync keeps its CPU" same "$(held "$AWAY")" "$h"
    # Placed at a resync as at CreateContainer (no cgroup written, none adopted at once:
    # containerd had not applied the update yet), its cgroup is adopted at this Synchronize.
    check "containerd restarted: that pod's entry has its cgroup's inode (no longer pending)" \
      [ "$(ledger | jq --arg id "$AWAY" '[.entries[] | select(.id == $id) | .cgroup_ino // 0] | .[0]')" -gt 0 ]
    if run_pod "$TAG-after" cachepin.io/cpus=1 && create_start "$POD" app "$TAG-after" pod:cachepin.io/cpus=1; then
      a=$(held "$C")
      check "after the restart: a new pod is placed, the ledger holds 1 CPU ($a)" [ "$(ncpus "$a")" = 1 ]
      check "after the restart: its cgroup's effective cpuset is that CPU" same "$(cgroup_cpus "$C")" "$a"
      teardown "$POD" ${C:+"$C"}
    fi
  else
    bad "containerd did not start again"
  fi
fi
[ -n "${AWAY_POD:-}" ] && teardown "$AWAY_POD" "$AWAY"
stop_plugin
check "the plugin stopped on SIGTERM, saying so" grep -q 'nri: stopped by a signal' "$D/nri.log"
check "the ledger is empty" [ "$(entries)" = 0 ]

# 8. The pre-launched form: containerd starts the plugin from its plugin_path (a script
# NN-name there, as /opt/nri/plugins holds) and hands it a connected socket (fd 3,
# NRI_PLUGIN_SOCKET) with its name and index in NRI_PLUGIN_NAME and NRI_PLUGIN_IDX.
stop_containerd
printf '#!/bin/sh\nexec "%s" nri --config "%s" >>"%s" 2>&1\n' "$BIN" "$D/cachepin.json" "$D/nri-pre.log" \
  >"$D/nri-plugins/10-cachepin"
chmod 0755 "$D/nri-plugins/10-cachepin"
if start_containerd; then
  for _ in $(seq 50); do grep -q 'nri: synchronized' "$D/nri-pre.log" 2>/dev/null && break; sleep 0.1; done
  check "pre-launched: the plugin took fd 3 from NRI_PLUGIN_SOCKET" grep -q 'nri: pre-launched, on descriptor 3' "$D/nri-pre.log"
  check "pre-launched: registered as 10-cachepin (NRI_PLUGIN_IDX, NRI_PLUGIN_NAME)" \
    grep -q 'nri: registered as plugin 10-cachepin' "$D/nri-pre.log"
  if run_pod "$TAG-pre" cachepin.io/cpus=1; then
    if create_start "$POD" app "$TAG-pre" pod:cachepin.io/cpus=1; then
      h=$(held "$C")
      check "pre-launched: placed, the ledger holds 1 CPU ($h)" [ "$(ncpus "$h")" = 1 ]
      check "pre-launched: its cgroup's effective cpuset is that CPU" same "$(cgroup_cpus "$C")" "$h"
    fi
    teardown "$POD" ${C:+"$C"}
  fi
  stop_containerd
  check "pre-launched: containerd stopped, the plugin saw its connection end and exits" \
    logged "$D/nri-pre.log" 'nri: the connection to the runtime ended .*; exiting' 1
else
  bad "pre-launched: containerd did not start again"
fi

# What the plugin took to answer containerd's CreateContainer calls (its debug log).
times=$(cat "$D/nri.log" "$D/nri-pre.log" 2>/dev/null | awk '/nri: CreateContainer answered in/ {print $(NF-1)}' | sort -n)
[ -n "$times" ] && echo "note: CreateContainer answered in $(echo $times | tr ' ' ',') us (sorted)"

echo "$PASS passed, $FAIL failed"
if [ "$FAIL" != 0 ]; then
  echo "--- the plugin's log ---"
  tail -30 "$D/nri.log"
  [ -f "$D/nri-pre.log" ] && { echo "--- the pre-launched plugin's log ---"; tail -20 "$D/nri-pre.log"; }
  echo "--- containerd log (errors) ---"
  grep -E 'level=(error|warning)' "$D/containerd.log" | tail -20
  exit 1
fi
exit 0
