#!/bin/bash
# Smoke tests of the VM harness itself (no cachepin): the guest has the topology
# and cgroup layout that run-vm.sh asked for, and runc and crun both place a
# container on the CPUs its config names, run a createRuntime hook, and put the
# container in a cgroup whose cpuset says so.
#
#   tests/vm/run-vm.sh --tests tests/vm/smoke-tests.sh --topology 2s2d --cgroup v2

# shellcheck source=guest-lib.sh
. /cpvm/guest-lib.sh

cpvm_info "$(cpvm_topology_summary)"

# --- the topology is the one QEMU was asked for
smp_field() {   # smp_field NAME DEFAULT: a field of CPVM_SMP (-smp syntax)
  local v
  v=$(tr ',' '\n' <<<"$CPVM_SMP" | sed -n "s/^$1=//p")
  echo "${v:-$2}"
}
cpus=$(cut -d, -f1 <<<"$CPVM_SMP")
sockets=$(smp_field sockets 1) dies=$(smp_field dies 1) cores=$(smp_field cores 1) threads=$(smp_field threads 1)
l3s=$(cpvm_l3_groups)
cpvm_expect_eq topology.cpus "$cpus" "$(cpvm_cpulist_count "$(cat /sys/devices/system/cpu/online)")" "online CPUs"
cpvm_expect_eq topology.l3-count "$((sockets * dies))" "$(grep -c . <<<"$l3s")" "L3 caches"
bad=""
while read -r l; do
  [ "$(cpvm_cpulist_count "$l")" = $((cores * threads)) ] || bad="$bad $l"
done <<<"$l3s"
cpvm_expect_eq topology.l3-size "" "${bad# }" "L3s without $((cores * threads)) CPUs"
smt=$(cpvm_smt_groups)
cpvm_expect_eq topology.cores "$((cpus / threads))" "$(grep -c . <<<"$smt")" "cores"
bad=""
while read -r g; do
  [ "$(cpvm_cpulist_count "$g")" = "$threads" ] || bad="$bad $g"
done <<<"$smt"
cpvm_expect_eq topology.smt "" "${bad# }" "cores without $threads threads"
nodes=$(cpvm_nodes)
want_nodes=$CPVM_NUMA_NODES; [ "${want_nodes:-0}" -gt 0 ] || want_nodes=1
cpvm_expect_eq topology.nodes "$want_nodes" "$(grep -c . <<<"$nodes")" "NUMA nodes"

# --- the cgroup layout is the one asked for, with a usable cpuset controller
cpvm_expect_eq cgroup.version "$CPVM_CGROUP" "$(cpvm_cgroup_version)"
online=$(cpvm_cpulist_normalize "$(cat /sys/devices/system/cpu/online)")
if [ "$CPVM_CGROUP" = v2 ]; then
  cpvm_check cgroup.cpuset grep -qw cpuset /sys/fs/cgroup/cgroup.subtree_control
else
  cpvm_expect_eq cgroup.cpuset "$online" "$(cpvm_cpulist_normalize "$(cat /sys/fs/cgroup/cpuset/cpuset.cpus)")" "root cpuset.cpus"
fi

# Two CPUs to place containers on: the first core of the second L3 (an SMT
# pair where there is SMT), and the first core of the last L3.
first_core_of() {   # first_core_of L3LIST: the first core's CPUs in that L3, or its first 2 CPUs
  local l3=$1 g first
  first=$(cpvm_cpulist_expand "$l3" | head -1)
  while read -r g; do
    if cpvm_cpulist_expand "$g" | grep -qx "$first"; then
      [ "$(cpvm_cpulist_count "$g")" -ge 2 ] && { echo "$g"; return; }
    fi
  done <<<"$smt"
  # shellcheck disable=SC2119 # it reads stdin
  cpvm_cpulist_expand "$l3" | head -2 | cpvm_cpulist_compress
}
second_l3=$(sed -n 2p <<<"$l3s"); [ -n "$second_l3" ] || second_l3=$(head -1 <<<"$l3s")
pair_a=$(first_core_of "$second_l3")
pair_b=$(first_core_of "$(tail -1 <<<"$l3s")")
cpvm_info "containers go to CPUs $pair_a (run) and $pair_b (create/start)"

# A createRuntime hook that keeps the state it is given on stdin.
mkdir -p /run/cpvm/hook
cat >/run/cpvm/hook/record-state <<'EOF'
#!/bin/sh
cat >"$1.tmp" && mv "$1.tmp" "$1"
EOF
chmod 0755 /run/cpvm/hook/record-state

for rt in runc crun; do
  ver=$($rt --version | head -1)
  t0=$(cut -d' ' -f1 /proc/uptime)

  # run to completion
  id=smoke-$rt-run
  out=$(cpvm_run $rt "$id" --cpus "$pair_a" -- grep Cpus_allowed_list /proc/self/status)
  rc=$?
  if [ $rc = 0 ]; then
    cpvm_expect_eq "$rt.run.cpus" "$pair_a" "$(cpvm_cpulist_normalize "$(awk '{ print $2 }' <<<"$out")")" "Cpus_allowed_list"
  else
    cpvm_fail "$rt.run.cpus" "$ver: run exited $rc: $(tail -3 "$CPVM_BUNDLES/$id/stderr")"
  fi

  # create, hook, start, exec, delete
  id=smoke-$rt-life
  state=/run/cpvm/hook/$id.json
  hooks=$(jq -cn --arg s "$state" '{createRuntime: [{path: "/run/cpvm/hook/record-state", args: ["record-state", $s], timeout: 30}]}')
  if ! cpvm_create $rt "$id" --cpus "$pair_b" --annotations '{"org.cpvm.smoke": "yes"}' --hooks "$hooks" -- sleep 600; then
    cpvm_fail "$rt.create" "$ver: $(tail -3 "$CPVM_BUNDLES/$id/stderr")"
    continue
  fi
  cpvm_pass "$rt.create" "$ver"
  pid=$(cpvm_pid $rt "$id")
  if [ -f "$state" ]; then
    cpvm_expect_eq "$rt.hook.pid" "$pid" "$(jq -r .pid "$state")" "pid in the hook's state"
    cpvm_expect_eq "$rt.hook.annotation" yes "$(jq -r '.annotations["org.cpvm.smoke"]' "$state")"
    cpvm_info "$rt hook saw status '$(jq -r .status "$state")', bundle $(jq -r .bundle "$state")"
  else
    cpvm_fail "$rt.hook.ran" "no state written by the createRuntime hook"
  fi
  cg=$(cpvm_cgroup_dir "$pid" cpuset)
  cpvm_info "$rt container cgroup: $cg"
  cpvm_expect_eq "$rt.cgroup.cpuset" "$pair_b" "$(cpvm_cpulist_normalize "$(cat "$cg/cpuset.cpus" 2>/dev/null)")" "cpuset.cpus"
  if cpvm_start $rt "$id"; then
    out=$(cpvm_exec $rt "$id" grep Cpus_allowed_list /proc/self/status)
    cpvm_expect_eq "$rt.exec.cpus" "$pair_b" "$(cpvm_cpulist_normalize "$(awk '{ print $2 }' <<<"$out")")" "Cpus_allowed_list in exec"
  else
    cpvm_fail "$rt.start" "$(tail -3 "$CPVM_BUNDLES/$id/stderr")"
  fi
  cpvm_delete $rt "$id"
  if [ -d "$cg" ] && [ "$cg" != /sys/fs/cgroup ] && [ "$cg" != /sys/fs/cgroup/cpuset ]; then
    cpvm_fail "$rt.cgroup.removed" "$cg still exists after delete"
  else
    cpvm_pass "$rt.cgroup.removed"
  fi
  cpvm_info "$rt: $ver; both containers took $(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", b - a }') s"
done

cpvm_cleanup
cpvm_finish
