#!/bin/bash
# shellcheck disable=SC1091
# cachepin under the real systemd cgroup managers: the payload of the systemd
# guest (run-systemd-suite.sh, run-vm.sh --rootfs). PID 1 is systemd, cgroup v2.
#
# For each manager a container asks for `cachepin.io/cpus=2` through the shipped
# hook files (deploy/hooks.d: podman reads them from /usr/share/containers/oci/hooks.d;
# runc and crun get their `.hook` objects in config.json):
#   podman       podman run, its default systemd cgroup manager and runtime (crun)
#   podman-runc  podman run --runtime runc: the container's cgroup is the libpod
#                scope itself, so systemd is told
#   runc         runc --systemd-cgroup, cgroupsPath system.slice:cachepin:<id>
#   crun         crun --systemd-cgroup, the same cgroupsPath
#   isolate      runc --systemd-cgroup with `cachepin.io/isolate: "true"` (cpus 1): the
#                scope becomes a cgroup v2 partition (docs/isolation.md); its own checks,
#                results isolate.<check>: `root`, system.slice's exclusive list, every
#                other cgroup and PID 1 without the CPU, after placing and again after
#                daemon-reload, set-property on the scope (CPUWeight=, and
#                AllowedMemoryNodes=, which rewrites its cpuset files) and on
#                system.slice; deleted: all of it given back
#   unit         not a container: `cachepin apply --unit` on services (systemd-unit.sh),
#                its own checks, results unit.<check>
#   nri          not a hook: `cachepin nri` under containerd's systemd cgroup driver, its
#                own checks (systemd-nri.sh, results nri.<check>), last
# Checks, results <manager>.<check>:
#   placed       the cgroup's cpuset.cpus has 2 CPUs, and /proc/<pid>/status
#                Cpus_allowed_list is the same
#   unit         where the container's cgroup is the unit's own (runc: the scope):
#                `systemctl show -p AllowedCPUs` is the placement; where it is a
#                child of the unit (crun's <scope>/container), systemd was not told
#   reload       after `systemctl daemon-reload`: cgroup and Cpus_allowed_list unchanged
#   property     after `systemctl set-property --runtime <unit> CPUWeight=50`: the same
#   cpuset-property  after `systemctl set-property --runtime <unit> AllowedMemoryNodes=<the
#                container's nodes>`, which makes systemd rewrite the unit's cpuset files: the same
#   released     stopped and deleted: the poststop hook ran (the ledger no longer
#                holds the id) and the unit, if it still exists, has no AllowedCPUs
#
# /payload/bin/cachepin is the build under test; /payload/hooks.d/*.json the
# shipped hook files with .hook.path set to it (run-systemd-suite.sh does that).

. /cpvm/guest-lib.sh

CACHEPIN=/payload/bin/cachepin
# The default state_dir: the shipped cachepin-nri.service may write only there
# (ProtectSystem=strict, RuntimeDirectory=cachepin), and every route shares the ledger.
STATE=/run/cachepin
IMAGE=localhost/cpvm-busybox:latest

mkdir -p /etc/cachepin "$CPVM_BUNDLES"
mkdir -p -m 0700 "$STATE" # cachepin refuses a state directory open to others
# The default config path, as the shipped hook files use it. lock_timeout_ms: TCG.
printf '{"state_dir": "%s", "log_level": "debug", "lock_timeout_ms": 60000}\n' "$STATE" >/etc/cachepin/config.json

# The hooks for runc and crun: the shipped files' .hook objects by stage.
CPVM_HOOKS=$(jq -s '{createRuntime: [.[] | select(.stages | index("createRuntime")) | .hook],
                     poststop: [.[] | select(.stages | index("poststop")) | .hook]}' /payload/hooks.d/*.json)
export CPVM_HOOKS
# Where a package installs OCI hooks, and podman's default hooks_dir.
mkdir -p /usr/share/containers/oci/hooks.d
cp /payload/hooks.d/*.json /usr/share/containers/oci/hooks.d/

cpvm_info "$(systemctl --version | head -1); $(runc --version | head -1); $(crun --version | head -1); $(podman --version)"
cpvm_info "hooks: $(jq -c . <<<"$CPVM_HOOKS")"

# ------------------------------------------------------------------ helpers

# unit_of CGROUP: the innermost unit (*.scope, *.service) on the cgroup's path.
unit_of() { awk -F/ '{ for (i = NF; i > 0; i--) if ($i ~ /\.(scope|service)$/) { print $i; exit } }' <<<"$1"; }

# snapshot PID: "cgroup-cpus|allowed-list" of the container's init.
snapshot() {
  local cg
  cg=$(awk -F: '$1 == "0" { print $3 }' "/proc/$1/cgroup")
  printf '%s|%s' "$(cpvm_cpulist_normalize "$(cat "/sys/fs/cgroup$cg/cpuset.cpus" 2>/dev/null)")" \
    "$(cpvm_allowed_cpus "$1")"
}

# held ID: the ledger's entry for ID ("" when none).
held() { jq -r --arg id "$1" '.entries[]? | select(.id == $id) | .id' "$STATE/ledger.json" 2>/dev/null; }

# check_manager NAME PID: the placed, unit, reload and property checks.
check_manager() {
  local name=$1 pid=$2 cg unit placed now allowed mems
  cg=$(awk -F: '$1 == "0" { print $3 }' "/proc/$pid/cgroup")
  unit=$(unit_of "$cg")
  cpvm_info "$name: pid $pid, cgroup $cg, unit ${unit:-none}"
  placed=$(snapshot "$pid")
  local cpus=${placed%%|*}
  if [ "$(cpvm_cpulist_count "$cpus")" = 2 ] && [ "$cpus" = "${placed#*|}" ]; then
    cpvm_pass "$name.placed" "cpuset.cpus $cpus, Cpus_allowed_list ${placed#*|}"
  else
    cpvm_fail "$name.placed" "cpuset.cpus|Cpus_allowed_list = '$placed', wanted 2 CPUs in both"
    journalctl -b --no-pager -t cachepin | tail -5 | while read -r l; do cpvm_info "journal: $l"; done
    return 1
  fi
  allowed=$(systemctl show -P AllowedCPUs "$unit" 2>&1)
  if [ "${cg##*/}" = "$unit" ]; then
    cpvm_expect_eq "$name.unit" "$cpus" "$(cpvm_cpulist_normalize "$allowed")" "$unit AllowedCPUs"
  else
    cpvm_pass "$name.unit" "the cgroup is a child of $unit (systemd leaves it alone); AllowedCPUs '$allowed'"
  fi
  systemctl daemon-reload
  now=$(snapshot "$pid")
  cpvm_expect_eq "$name.reload" "$placed" "$now" "after daemon-reload: cpuset.cpus|Cpus_allowed_list"
  systemctl set-property --runtime "$unit" CPUWeight=50
  now=$(snapshot "$pid")
  cpvm_expect_eq "$name.property" "$placed" "$now" "after set-property CPUWeight=50: cpuset.cpus|Cpus_allowed_list"
  # A non-empty cpuset property on the unit makes systemd write the unit's
  # cpuset files: AllowedMemoryNodes= set to the nodes the container already
  # has. (systemd 262 left cpuset.cpus alone here even with cachepin's D-Bus
  # call disabled, as on daemon-reload and CPUWeight=: docs/managers.md.)
  mems=$(cat "/sys/fs/cgroup$cg/cpuset.mems.effective")
  systemctl set-property --runtime "$unit" "AllowedMemoryNodes=$mems"
  now=$(snapshot "$pid")
  cpvm_expect_eq "$name.cpuset-property" "$placed" "$now" \
    "after set-property AllowedMemoryNodes='$mems': cpuset.cpus|Cpus_allowed_list"
  UNIT=$unit
}

# check_drift NAME ID PID UNIT: systemd itself rewrites the placed scope's cpuset
# (AllowedCPUs= set by someone else, here systemctl): cachepin status shows the
# entry drifted, on the CPUs systemd gave it (docs/managers.md, "Drift").
check_drift() {
  local name=$1 id=$2 pid=$3 unit=$4 placed other="" c st
  placed=" $(cpvm_cpulist_expand "$(cat "/sys/fs/cgroup$(awk -F: '$1 == "0" { print $3 }' "/proc/$pid/cgroup")/cpuset.cpus")" | tr '\n' ' ')"
  for c in $(seq 0 $(($(nproc) - 1))); do [[ $placed == *" $c "* ]] || { other=$c; break; }; done
  [ -n "$other" ] || { cpvm_skip "$name.drift" "no CPU outside the placement"; return; }
  systemctl set-property --runtime "$unit" "AllowedCPUs=$other"
  st=$("$CACHEPIN" status --json 2>/dev/null)
  cpvm_expect_eq "$name.drift" "true $other" \
    "$(jq -r --arg id "$id" '.ledger.entries[] | select(.id == $id) | "\(.drifted) \(.live_cpus)"' <<<"$st")" \
    "status after set-property AllowedCPUs=$other: drifted, live_cpus"
}

# released NAME ID UNIT: the ledger forgot ID; UNIT has no AllowedCPUs left if it exists.
released() {
  local name=$1 id=$2 unit=$3 load allowed
  load=$(systemctl show -P LoadState "$unit" 2>/dev/null)
  allowed=$(systemctl show -P AllowedCPUs "$unit" 2>/dev/null)
  if [ -n "$(held "$id")" ]; then
    cpvm_fail "$name.released" "the ledger still holds $id: $(cat "$STATE/ledger.json")"
  elif [ "$load" = loaded ] && [ -n "$allowed" ]; then
    cpvm_fail "$name.released" "$unit still has AllowedCPUs=$allowed"
  else
    cpvm_pass "$name.released" "ledger without $id; $unit: ${load:-gone}, AllowedCPUs '${allowed}'"
  fi
}

# ------------------------------------------------------------------ runc, crun

# CPVM_SD_MANAGERS (--env): a subset of "runc crun podman podman-runc isolate unit nri", to look at one.
MANAGERS=" ${CPVM_SD_MANAGERS:-runc crun podman podman-runc isolate unit nri} "
for rt in runc crun; do
  [[ $MANAGERS == *" $rt "* ]] || continue
  id=sd-$rt
  UNIT=""
  export CPVM_RUNTIME_FLAGS=--systemd-cgroup
  if ! cpvm_create "$rt" "$id" --cgroups-path "system.slice:cachepin:$id" \
       --annotations '{"cachepin.io/cpus": "2"}' -- sleep 600; then
    cpvm_fail "$rt.placed" "create failed: $(tail -5 "$CPVM_BUNDLES/$id/stderr")"
    continue
  fi
  cpvm_start "$rt" "$id"
  pid=$(cpvm_pid "$rt" "$id")
  check_manager "$rt" "$pid"
  [ "$rt" = runc ] && [ -n "$UNIT" ] && check_drift "$rt" "$id" "$pid" "$UNIT"
  cpvm_delete "$rt" "$id"
  released "$rt" "$id" "$UNIT"
  export CPVM_RUNTIME_FLAGS=""
done

# ------------------------------------------------------------------ podman

podman_setup() {
  local rfs
  rfs=$(mktemp -d)
  tar -C /cpvm/rootfs -cf "$rfs.tar" . && podman import -q "$rfs.tar" "$IMAGE" >/dev/null ||
    cpvm_fail podman.import "podman import failed"
  cpvm_info "podman: cgroup manager $(podman info --format '{{.Host.CgroupManager}}'), runtime $(podman info --format '{{.Host.OCIRuntime.Name}}')"
}
# podman_case NAME [PODMAN-RUN-OPTIONS...]: one podman container through the hook.
podman_case() {
  local name=$1 cid pid
  shift
  if cid=$(timeout 180 podman run -d --name "sd-$name" --network none "$@" --annotation cachepin.io/cpus=2 \
             "$IMAGE" sleep 600 2>/run/podman.err); then
    pid=$(podman inspect -f '{{.State.Pid}}' "$cid")
    UNIT=""
    check_manager "$name" "$pid"
    timeout 120 podman rm -f -t 0 "$cid" >/dev/null 2>&1
    released "$name" "$cid" "$UNIT"
  else
    cpvm_fail "$name.placed" "podman run failed: $(tail -5 /run/podman.err)"
  fi
}
[[ $MANAGERS == *" podman"* ]] && podman_setup
[[ $MANAGERS == *" podman "* ]] && podman_case podman
# With runc, the container's cgroup is the libpod scope itself (crun makes a
# `container` child): the unit's own cgroup, so systemd is told.
[[ $MANAGERS == *" podman-runc "* ]] && podman_case podman-runc --runtime runc

# ------------------------------------------------------------------ isolate

# iso_state CG: "partition|exclusive.effective|parent's exclusive|root effective|PID 1's
# Cpus_allowed_list" of the cgroup CG (below /sys/fs/cgroup).
iso_state() {
  printf '%s|%s|%s|%s|%s' "$(cat "/sys/fs/cgroup$1/cpuset.cpus.partition" 2>/dev/null)" \
    "$(cpvm_cpulist_normalize "$(cat "/sys/fs/cgroup$1/cpuset.cpus.exclusive.effective" 2>/dev/null)")" \
    "$(cpvm_cpulist_normalize "$(cat "/sys/fs/cgroup${1%/*}/cpuset.cpus.exclusive" 2>/dev/null)")" \
    "$(cpvm_cpulist_normalize "$(cat /sys/fs/cgroup/cpuset.cpus.effective)")" "$(cpvm_allowed_cpus 1)"
}
if [[ $MANAGERS == *" isolate "* ]]; then
  id=sd-iso
  ALL=$(cpvm_cpulist_normalize "$(cat /sys/devices/system/cpu/online)")
  export CPVM_RUNTIME_FLAGS=--systemd-cgroup
  kv=$(uname -r)
  kmaj=${kv%%.*} kmin=${kv#*.} kmin=${kmin%%.*}
  # (system.slice has cpuset files only once a unit asks systemd for the controller)
  if [ "$kmaj" -lt 6 ] || { [ "$kmaj" = 6 ] && [ "$kmin" -lt 7 ]; }; then
    cpvm_skip isolate "this kernel has no cpuset.cpus.exclusive ($kv, before 6.7)"
  elif cpvm_create runc "$id" --cgroups-path "system.slice:cachepin:$id" \
       --annotations '{"cachepin.io/cpus": "1", "cachepin.io/isolate": "true"}' -- sleep 600; then
    cpvm_start runc "$id"
    pid=$(cpvm_pid runc "$id")
    cg=$(awk -F: '$1 == "0" { print $3 }' "/proc/$pid/cgroup")
    unit=$(unit_of "$cg")
    cpus=$(jq -r --arg id "$id" '.entries[] | select(.id == $id) | .cpus' "$STATE/ledger.json")
    want="root|$cpus|$cpus|$(cpvm_cpulist_minus "$ALL" "$cpus")|$(cpvm_cpulist_minus "$ALL" "$cpus")"
    cpvm_info "isolate: pid $pid, cgroup $cg, unit $unit, CPUs $cpus; partition|exclusive|slice exclusive|root effective|PID 1: $(iso_state "$cg")"
    cpvm_expect_eq isolate.placed "$want" "$(iso_state "$cg")" "placed"
    cpvm_expect_eq isolate.task "$cpus" "$(cpvm_allowed_cpus "$pid")" "the container's Cpus_allowed_list"
    systemctl daemon-reload
    cpvm_expect_eq isolate.reload "$want" "$(iso_state "$cg")" "after daemon-reload"
    systemctl set-property --runtime "$unit" CPUWeight=50
    cpvm_expect_eq isolate.property "$want" "$(iso_state "$cg")" "after set-property $unit CPUWeight=50"
    mems=$(cat "/sys/fs/cgroup$cg/cpuset.mems.effective")
    systemctl set-property --runtime "$unit" "AllowedMemoryNodes=$mems"
    cpvm_expect_eq isolate.cpuset-property "$want" "$(iso_state "$cg")" "after set-property $unit AllowedMemoryNodes=$mems"
    systemctl set-property --runtime system.slice CPUWeight=90
    cpvm_expect_eq isolate.slice-property "$want" "$(iso_state "$cg")" "after set-property system.slice CPUWeight=90"
    systemctl daemon-reload
    cpvm_expect_eq isolate.reload-again "$want" "$(iso_state "$cg")" "after a second daemon-reload"
    cpvm_expect_eq isolate.status "root" \
      "$("$CACHEPIN" status --json 2>/dev/null | jq -r --arg id "$id" '.ledger.entries[] | select(.id == $id) | .isolate.partition')" \
      "status --json .isolate.partition"
    cpvm_delete runc "$id"
    released isolate "$id" "$unit"
    cpvm_expect_eq isolate.given-back "|$ALL|$ALL" \
      "$(printf '%s|%s|%s' "$(cpvm_cpulist_normalize "$(cat /sys/fs/cgroup/system.slice/cpuset.cpus.exclusive)")" \
         "$(cpvm_cpulist_normalize "$(cat /sys/fs/cgroup/cpuset.cpus.effective)")" "$(cpvm_allowed_cpus 1)")" \
      "deleted: system.slice exclusive|root effective|PID 1"
  else
    cpvm_fail isolate.placed "create failed: $(tail -5 "$CPVM_BUNDLES/$id/stderr")"
  fi
  journalctl -b --no-pager -t cachepin | grep -F "$id" | tail -4 | while read -r l; do cpvm_info "journal: $l"; done
  export CPVM_RUNTIME_FLAGS=""
fi

# ------------------------------------------------------------------ unit

# `cachepin apply --unit`: its own checks (systemd-unit.sh, results unit.<check>).
[[ $MANAGERS == *" unit "* ]] && . /payload/systemd-unit.sh

# ------------------------------------------------------------------ nri

[[ $MANAGERS == *" nri "* ]] && . /payload/nri/systemd-nri.sh

cpvm_finish
