#!/usr/bin/env bash
# The ledger's promise (no CPU held twice, no CPU withheld for nothing) through the NRI
# plugin, tried as a careless admin and an unlucky node would (issue 31's findings), under
# containerd 2.1.9's CRI with NRI on a private socket, the plugin on it, pods on runc.
#
#   tests/cri/nri-promises.sh --cachepin BIN --stubs DIR
#
# Checked, each against the ledger and the live cgroups:
#   1. a late start: a container created (CreateContainer answered) and started more
#      than 60 s later keeps its CPU meanwhile: a pod created in between is not given it
#      (finding 1: the pending entry was dropped after 60 s), and at its start it runs on it;
#   2. two plugins on one runtime and state directory: a second `cachepin nri` on the same
#      socket exits 1 with one line naming the first; a pre-launched one beside it (the
#      runtime's plugin_path, --socket naming this runtime) exits 1 the same way, and pods
#      are still placed, never failed by two plugins (finding 2);
#   3. the plugin stalled past containerd's 2 s request timeout (SIGSTOP) during a
#      CreateContainer: containerd creates the container unplaced and closes the plugin's
#      connection; the plugin, continued, dials again; its entry stays pending (the
#      container is listed CREATED); at StartContainer it sees the container is not on its
#      placement and releases the entry (never adopted as a drift that withholds the CPUs
#      the container runs on); those CPUs can be had by the next pod; the next
#      Synchronize places the container (finding 5);
#   4. containers started while the plugin is away, a strict and a not-strict one both
#      asking every CPU: the plugin's Synchronize places the strict one first (item 4);
#   5. containerd restarted under the plugin with a container created and not started:
#      its entry stays (CONTAINER_CREATED at Synchronize);
#   6. an in-place resize (UpdateContainerResources with a new quota) of a container whose
#      CPU count is its limit's: placed again on 2 CPUs, containerd applying the answer.
#
# Exit: 0 passed, 1 failed, 77 skipped (as nri.sh).  CACHEPIN_CRI_KEEP=1 keeps the scratch
# directory.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=nri-lib.sh
. "$HERE/nri-lib.sh"
cri_args nri-promises "$@"
cri_prereqs
cri_fetch sid containerd=2.1.9+ds1-5

cri_scratch nrip
NRISOCK=$D/nri.sock
PLUGIN_PID=""
PODS=()

trap nri_cleanup EXIT
trap 'exit 1' INT TERM

configure () {
  mkdir -p "$D/nri-plugins" "$D/nri-conf"
  mkdir -p -m 0700 "$D/cpstate"
  jq -n --arg s "$D/cpstate" '{"state_dir": $s, "log_level": "debug"}' >"$D/cachepin.json"
  config_v3 "  disable = false
  socket_path = '$NRISOCK'
  plugin_path = '$D/nri-plugins'
  plugin_config_path = '$D/nri-conf'" >"$D/config.toml"
}

entries () { ledger | jq '.entries | length'; }
ino_of () { ledger | jq --arg id "$1" '[.entries[] | select(.id == $id) | .cgroup_ino // 0] | .[0] // 0'; }
spec_cpus () { ctr containers info "$1" 2>/dev/null | jq -r '.Spec.linux.resources.cpu.cpus // empty'; }

run_pod () {
  local name=$1
  shift
  POD=$(cri run-pod "$name" "$PARENT" runc "$@") || { bad "$name: RunPodSandbox"; POD=""; return 1; }
  PODS+=("$POD")
}
create_only () {
  local pod=$1 name=$2 podname=$3
  shift 3
  C=$(cri create "$pod" "$name" "$IMAGE" "$PARENT" "$podname" "$@") || { bad "$name: CreateContainer"; C=""; return 1; }
}
start () { cri start "$1" && [ "$(cri state "$1")" = CONTAINER_RUNNING ]; }
remove () { local c; for c in "${@:2}"; do cri stop "$c"; cri rm "$c"; done; cri stop-pod "$1"; cri rm-pod "$1"; }
# wait_for SECONDS COMMAND...: until COMMAND succeeds, SECONDS at most.
# expand CPULIST: one CPU a line.
expand () { echo "$1" | tr ',' '\n' | awk -F- '{ for (i = $1; i <= ($2 == "" ? $1 : $2); i++) print i }'; }
wait_for () { local n=$(($1 * 10)); shift; for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done; "$@"; }

build_image || { echo "FAIL: building the image"; exit 1; }
configure
start_containerd || { echo "FAIL: containerd did not start (log above)"; exit 1; }
echo "containerd: $(cri version)"
import_image
start_plugin || { bad "the plugin did not start"; exit 1; }

# The pods' parent is made with the first pod; every expectation comes from it.
run_pod "$TAG-late" cachepin.io/cpus=1 || exit 1
LATE_POD=$POD
ALL=$(cgroup_cpus)
N=$(ncpus "$ALL")
echo "the pods' parent has CPUs $ALL ($N)"

# ---- 1a. created now, started after the old 60 s bound (checked in 1b) ------------------------
create_only "$LATE_POD" app "$TAG-late" pod:cachepin.io/cpus=1 || exit 1
LATE=$C LATE_T0=$(date +%s)
LATE_CPU=$(held "$LATE")
check "late start: CreateContainer placed it (the ledger holds CPU $LATE_CPU, its spec says $(spec_cpus "$LATE"))" \
  same "$(spec_cpus "$LATE")" "$LATE_CPU"
check "late start: its entry is pending (no cgroup recorded yet)" [ "$(ino_of "$LATE")" = 0 ]

# ---- 2. two plugins on one runtime and state directory ----------------------------------------
"$BIN" nri --socket "$NRISOCK" --config "$D/cachepin.json" >"$D/second.log" 2>&1 7>&- 8<&- &
SECOND=$!
for _ in $(seq 50); do kill -0 "$SECOND" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$SECOND" 2>/dev/null; then
  kill "$SECOND"; wait "$SECOND" 2>/dev/null; rc="still running after 5 s"
else
  wait "$SECOND"; rc=$?
fi
check "a second plugin on the same socket and state directory exits 1 (rc $rc)" [ "$rc" = 1 ]
check "  with one line naming the first ($(head -c 200 "$D/second.log"))" \
  grep -q "another cachepin nri (pid $PLUGIN_PID) serves $NRISOCK" "$D/second.log"
check "  and registered nothing" fails grep -q 'registered as plugin' "$D/second.log"
# The pre-launched form beside the dialled one: containerd starts it at its own start.
printf '#!/bin/sh\nexec "%s" nri --socket "%s" --config "%s" >>"%s" 2>&1\n' "$BIN" "$NRISOCK" "$D/cachepin.json" \
  "$D/nri-pre.log" >"$D/nri-plugins/20-cachepin"
chmod 0755 "$D/nri-plugins/20-cachepin"
stop_containerd
start_containerd || { bad "containerd did not start again"; exit 1; }
check "pre-launched beside the running plugin: it exits 1 naming the first" \
  wait_for 10 grep -q "another cachepin nri (pid $PLUGIN_PID) serves $NRISOCK" "$D/nri-pre.log"
check "  and registered nothing" fails grep -q 'registered as plugin' "$D/nri-pre.log"
rm -f "$D/nri-plugins/20-cachepin"
check "containerd restarted: the first plugin is registered again" logged "$D/nri.log" 'nri: reconnected: registered again' 1
check "containerd restarted: and synchronized again" logged "$D/nri.log" 'nri: synchronized' 2

# ---- 5. a created, not started container across the restart: kept --------------------------
check "containerd restarted: the created container's entry stays (listed CONTAINER_CREATED), on CPU $LATE_CPU" \
  same "$(held "$LATE")" "$LATE_CPU"

# ---- 3. a stall past containerd's request timeout ---------------------------------------------
if run_pod "$TAG-stall" cachepin.io/cpus=1; then
  STALL_POD=$POD
  kill -STOP "$PLUGIN_PID"
  t0=$(date +%s%N)
  create_only "$STALL_POD" app "$TAG-stall" pod:cachepin.io/cpus=1
  STALL=$C
  ms=$((($(date +%s%N) - t0) / 1000000))
  kill -CONT "$PLUGIN_PID"
  check "stall: containerd gave up after its 2 s timeout and created the container ($ms ms)" \
    [ -n "$STALL" ] && [ "$ms" -ge 1900 ]
  check "stall: its spec has no cpuset (created unplaced)" [ -z "$(spec_cpus "$STALL")" ]
  check "stall: containerd closed the connection (it gave up on the answer); the plugin dialled again" \
    logged "$D/nri.log" 'nri: reconnected: registered again' 2
  if start "$STALL"; then
    check "stall: started, the plugin releases the entry it was never given" \
      logged "$D/nri.log" "$STALL started on CPUs .*, not on its placement" 1
    check "stall: the ledger holds nothing for it" wait_for 5 [ -z "$(held "$STALL")" ]
    check "stall: no entry records a drift (nothing withheld for what it runs on)" \
      [ "$(ledger | jq '[.entries[] | select((.drift // "") != "")] | length')" = 0 ]
    check "stall: it runs on the parent's CPUs" same "$(cgroup_cpus "$STALL")" "$ALL"
    # A plugin started again: its Synchronize places the container that runs unplaced.
    stop_plugin
    if start_plugin; then
      h=$(held "$STALL")
      check "stall, resync: placed at the next Synchronize (the ledger holds $h)" [ "$(ncpus "$h")" = 1 ]
      check "stall, resync: its cgroup is on that CPU once containerd applied the update" \
        wait_for 10 same "$(cgroup_cpus "$STALL")" "$h"
    else
      bad "the plugin did not start again"
    fi
  else
    bad "stall: the container did not start"
  fi
  [ -n "${STALL:-}" ] && remove "$STALL_POD" "$STALL" >/dev/null 2>&1
  check "stall: removed, its entry released" [ -z "$(held "$STALL")" ]
fi

# ---- 4. strict first at Synchronize -------------------------------------------------------
# Both ask every CPU but the late container's (which the ledger holds): only one fits.
WANT=$((N - $(ncpus "$LATE_CPU")))
if [ "$WANT" -ge 1 ]; then
  stop_plugin
  run_pod "$TAG-loose" cachepin.io/cpus="$WANT" && LOOSE_POD=$POD &&
    create_only "$POD" app "$TAG-loose" pod:cachepin.io/cpus="$WANT" && LOOSE=$C && start "$LOOSE"
  run_pod "$TAG-strict" cachepin.io/cpus="$WANT" cachepin.io/strict=true && STRICT_POD=$POD &&
    create_only "$POD" app "$TAG-strict" pod:cachepin.io/cpus="$WANT" pod:cachepin.io/strict=true && STRICT=$C &&
    start "$STRICT"
  if [ -n "${LOOSE:-}" ] && [ -n "${STRICT:-}" ] && start_plugin; then
    check "strict first: the strict container, started while the plugin was away, is placed ($(held "$STRICT"))" \
      [ "$(ncpus "$(held "$STRICT")")" = "$WANT" ]
    check "strict first: the other one, listed first, is left unplaced (no room)" [ -z "$(held "$LOOSE")" ]
    check "strict first: the plugin said why it left it" grep -q "container $LOOSE starts unplaced: cannot place" "$D/nri.log"
  else
    bad "strict first: the two containers or the plugin did not start"
  fi
  [ -n "${LOOSE_POD:-}" ] && remove "$LOOSE_POD" ${LOOSE:+"$LOOSE"} >/dev/null 2>&1
  [ -n "${STRICT_POD:-}" ] && remove "$STRICT_POD" ${STRICT:+"$STRICT"} >/dev/null 2>&1
  check "strict first: both removed, neither holds a CPU" [ -z "$(held "${STRICT:-x}")$(held "${LOOSE:-x}")" ]
else
  echo "note: one CPU: the strict-first case needs two"
fi

# ---- 1b. the late start, past the old bound -----------------------------------------------
left=$((LATE_T0 + 65 - $(date +%s)))
[ "$left" -gt 0 ] && { echo "waiting $left s: the late start comes 65 s after its CreateContainer"; sleep "$left"; }
if run_pod "$TAG-between" cachepin.io/cpus=1; then
  BETWEEN_POD=$POD
  create_only "$POD" app "$TAG-between" pod:cachepin.io/cpus=1 && BETWEEN=$C
  b=$(held "${BETWEEN:-x}")
  check "late start: a pod created 65 s later is not given CPU $LATE_CPU (it got '${b:-none}')" \
    [ "$b" != "$LATE_CPU" ]
  check "late start: the late container's entry is still there" same "$(held "$LATE")" "$LATE_CPU"
fi
if start "$LATE"; then
  check "late start: started 65 s after its creation, it runs on CPU $LATE_CPU (cgroup)" \
    same "$(cgroup_cpus "$LATE")" "$LATE_CPU"
  check "late start: its Cpus_allowed_list is CPU $LATE_CPU" same "$(allowed "$LATE")" "$LATE_CPU"
  check "late start: its entry records its cgroup now (settled at StartContainer)" \
    wait_for 5 [ "$(ino_of "$LATE")" != 0 ]
else
  bad "late start: the container did not start"
fi
[ -n "${BETWEEN_POD:-}" ] && remove "$BETWEEN_POD" ${BETWEEN:+"$BETWEEN"} >/dev/null 2>&1
remove "$LATE_POD" "$LATE" >/dev/null 2>&1
check "everything removed: the ledger is empty" wait_for 5 [ "$(entries)" = 0 ]
check "no CPU was held twice: the plugin logged no conflict" fails grep -q 'CONFLICT\|held by two' "$D/nri.log"

# ---- 6. an in-place resize of a container sized by its CPU limit ----------------------------
if [ "$N" -ge 2 ] && run_pod "$TAG-resize" cachepin.io/align=llc; then
  RESIZE_POD=$POD
  if create_only "$POD" app "$TAG-resize" pod:cachepin.io/align=llc quota:100000 && start "$C"; then
    RESIZE=$C r1=$(held "$C")
    check "resize: sized by its limit (1 CPU), placed on $r1" [ "$(ncpus "$r1")" = 1 ]
    if cri update "$RESIZE" 200000; then
      r2=$(held "$RESIZE")
      check "resize: a limit of 2 CPUs places it again on 2 ($r2), its first CPU among them" \
        [ "$(ncpus "$r2")" = 2 ] && expand "$r2" | grep -qx "$r1"
      check "resize: its cgroup is on them (containerd applied the answer)" same "$(cgroup_cpus "$RESIZE")" "$r2"
      check "resize: its spec says them" same "$(spec_cpus "$RESIZE")" "$r2"
      check "resize: the plugin logged it" grep -q "resized $RESIZE: its limit asks 2 CPUs (it had 1)" "$D/nri.log"
    else
      bad "resize: UpdateContainerResources"
    fi
  fi
  remove "$RESIZE_POD" ${RESIZE:+"$RESIZE"} >/dev/null 2>&1
  check "resize: removed, the ledger is empty" wait_for 5 [ "$(entries)" = 0 ]
fi

stop_plugin
echo "$PASS passed, $FAIL failed"
if [ "$FAIL" != 0 ]; then
  echo "--- the plugin's log ---"
  tail -40 "$D/nri.log"
  echo "--- containerd log (errors) ---"
  grep -E 'level=(error|warning)' "$D/containerd.log" | tail -20
  exit 1
fi
exit 0
