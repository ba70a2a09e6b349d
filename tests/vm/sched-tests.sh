#!/bin/bash
# The kernel's scheduler features on a real kernel with cache-aware scheduling
# (7.3 from trixie-backports, booted by tests/vm/run-sched-suite.sh with two L3s
# of 8 CPUs): cachepin's probe (hook/sched.c, through cachepin-sched-probe) reads
# what the guest's debugfs holds, its write takes and is idempotent, and the
# feature has the effect cachepin relies on: the threads of one process whose
# cpuset spans both L3s end up on one L3 with it on, spread with it off.
#
# Environment (from the host): CPVM_SCHED_CONFIG_CACHE and CPVM_SCHED_CONFIG_CORE
# (y or n, from the kernel's config), CPVM_SCHED_SAMPLES (default 40),
# CPVM_SCHED_SETTLE (seconds before sampling, default 2), CPVM_SCHED_ON_MIN and
# CPVM_SCHED_OFF_MAX (the pass marks, default 30 and 10).

# shellcheck source=guest-lib.sh
. /cpvm/guest-lib.sh

SAMPLES=${CPVM_SCHED_SAMPLES:-40}
SETTLE=${CPVM_SCHED_SETTLE:-2}
ON_MIN=${CPVM_SCHED_ON_MIN:-30}
OFF_MAX=${CPVM_SCHED_OFF_MAX:-10}
DBG=/sys/kernel/debug/sched/llc_balancing
PROBE=cachepin-sched-probe

cpvm_info "$(cpvm_topology_summary)"
mapfile -t L3S < <(cpvm_l3_groups)
cpvm_expect_eq sched.topology.l3s 2 "${#L3S[@]}" "L3 caches"

# key FILE KEY: the value of KEY in a key=value listing.
key() { sed -n "s/^$2=//p" "$1"; }

# --- the interface the issue describes
if [ "${CPVM_SCHED_CONFIG_CACHE:-}" = y ]; then
  knobs=""
  for f in enabled aggr_tolerance epoch_period epoch_affinity_timeout overaggr_pct imb_pct; do
    if [ -f "$DBG/$f" ]; then knobs+=" $f=$(cat "$DBG/$f")"; else knobs+=" $f=MISSING"; fi
  done
  cpvm_info "llc_balancing:$knobs"
  case $knobs in
    *MISSING*) cpvm_fail sched.debugfs.knobs "$knobs" ;;
    *) cpvm_pass sched.debugfs.knobs "$knobs" ;;
  esac
fi

# --- the probe against the real debugfs
out=/tmp/probe.out
if ! $PROBE probe >$out 2>/tmp/probe.err; then
  cpvm_fail sched.probe "$(cat /tmp/probe.err)"
  cpvm_finish; exit
fi
cpvm_info "probe: $(paste -sd' ' $out)"
if [ "${CPVM_SCHED_CONFIG_CACHE:-}" = y ]; then
  cpvm_expect_eq sched.probe.cas.avail supported "$(key $out cas.avail)"
  cpvm_expect_eq sched.probe.cas.iface llc_balancing "$(key $out cas.iface)"
  cpvm_expect_eq sched.probe.cas.enabled "$(cat $DBG/enabled)" "$(key $out cas.enabled)" "enabled as the file holds it"
else
  cpvm_expect_eq sched.probe.cas.avail unsupported "$(key $out cas.avail)"
fi
# Core scheduling: the kernel config decides; the guest has SMT (threads=2).
cpvm_expect_eq sched.probe.core.smt_active 1 "$(key $out core.smt_active)"
if [ "${CPVM_SCHED_CONFIG_CORE:-}" = n ]; then
  cpvm_expect_eq sched.probe.core.avail unsupported "$(key $out core.avail)" "CONFIG_SCHED_CORE off:"
  sleep 600 & victim=$!
  $PROBE core-create $victim >/tmp/core.out 2>/tmp/core.err
  cpvm_expect_eq sched.core.create.errno 22 "$(key /tmp/core.out errno)" "PR_SCHED_CORE_CREATE errno (EINVAL)"
  kill $victim
elif [ "${CPVM_SCHED_CONFIG_CORE:-}" = y ]; then
  cpvm_expect_eq sched.probe.core.avail supported "$(key $out core.avail)"
fi
if grep -qw 'sched_smt_asym_packing=on' /proc/cmdline; then want='on'; else want='unset'; fi
cpvm_expect_eq sched.probe.smt_asym_packing $want "$(key $out smt_asym_packing)" "from the real /proc/cmdline:"

# --- the states a host without access shows
$PROBE --as-uid 65534 probe >/tmp/denied.out 2>&1
cpvm_expect_eq sched.probe.denied denied "$(key /tmp/denied.out cas.avail)" "as uid 65534 (debugfs root is 0700):"
cpvm_info "unprivileged probe: $(paste -sd' ' /tmp/denied.out)"
if umount /sys/kernel/debug; then
  $PROBE probe >/tmp/unmounted.out 2>&1
  cpvm_expect_eq sched.probe.unmounted debugfs-not-mounted "$(key /tmp/unmounted.out cas.avail)"
  mount -t debugfs debugfs /sys/kernel/debug
else
  cpvm_skip sched.probe.unmounted "cannot unmount debugfs"
fi

[ "${CPVM_SCHED_CONFIG_CACHE:-}" = y ] || { cpvm_finish; exit; }

# --- writes through the probe's own code, read back from the file
initial=$(cat $DBG/enabled)
if [ "$initial" = 1 ]; then other=off; else other=on; fi
$PROBE set $other >/tmp/set1.out 2>&1
cpvm_expect_eq sched.set.written 1 "$(key /tmp/set1.out written)" "set $other from $initial: written"
cpvm_expect_eq sched.set.file "$((1 - initial))" "$(cat $DBG/enabled)" "the file after set $other"
$PROBE set $other >/tmp/set2.out 2>&1
cpvm_expect_eq sched.set.idempotent 0 "$(key /tmp/set2.out written)" "set $other again: written"

# --- the effect
# l3_of: the L3 index of each CPU, from sysfs.
declare -A L3_OF
for i in "${!L3S[@]}"; do
  for c in $(cpvm_cpulist_expand "${L3S[$i]}"); do L3_OF[$c]=$i; done
done
CG=/sys/fs/cgroup/cpvm-sched
mkdir -p $CG
all=$(cat /sys/devices/system/cpu/online)
echo "$all" >$CG/cpuset.cpus
cpvm_expect_eq sched.cgroup.cpus "$(cpvm_cpulist_normalize "$all")" "$(cpvm_cpulist_normalize "$(cat $CG/cpuset.cpus.effective)")" "the cpuset spans both L3s:"

# sample PID: PATTERN := the L3 pattern of PID's threads now, "3" (all on one L3) or
# "12" / "21": field 39 of each thread's stat (the CPU it last ran on; after the
# ")" that ends the command name it is the 37th), mapped to its L3.  Builtins
# only: every fork is slow under TCG with three vCPUs kept busy.
sample() {
  local f line rest fields counts=() i out=""
  for f in /proc/"$1"/task/*/stat; do
    read -r line <"$f" || continue
    rest=${line##*) }
    read -ra fields <<<"$rest"
    i=${L3_OF[${fields[36]}]}
    counts[i]=$((${counts[i]:-0} + 1))
  done
  for i in "${!counts[@]}"; do out+=${counts[i]}; done
  PATTERN=$out
}

# together MODE: start busy3 in the cgroup with CAS MODE, wait, sample; prints
# "<samples with every thread on one L3> <the per-sample L3 patterns>".
together() {
  local mode=$1 pid n=0 k patterns=""
  $PROBE set "$mode" >/dev/null || return 1
  sh -c "echo \$\$ >$CG/cgroup.procs && exec busy3" &
  pid=$!
  sleep "$SETTLE"
  for ((k = 0; k < SAMPLES; k++)); do
    sample $pid
    [ "$PATTERN" = 3 ] && n=$((n + 1))
    patterns+=" $PATTERN"
    sleep 0.1
  done
  kill $pid
  wait $pid 2>/dev/null
  echo "$n$patterns"
}
t0=$(cut -d' ' -f1 /proc/uptime)
off=$(together off) || cpvm_fail sched.effect.off "set off failed"
on=$(together on) || cpvm_fail sched.effect.on "set on failed"
cpvm_info "effect: $SAMPLES samples after ${SETTLE}s; threads per L3 in each sample (3 = all on one): off:${off#* } on:${on#* }"
off_n=${off%% *} on_n=${on%% *}
cpvm_info "CAS effect: all 3 threads on one L3 in $off_n/$SAMPLES samples with enabled=0, $on_n/$SAMPLES with enabled=1 ($(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", b - a }') s)"
if [ "${on_n:-0}" -ge "$ON_MIN" ]; then cpvm_pass sched.effect.on "$on_n/$SAMPLES >= $ON_MIN"
else cpvm_fail sched.effect.on "$on_n/$SAMPLES samples on one L3 with CAS on, want >= $ON_MIN"; fi
if [ "${off_n:-99}" -le "$OFF_MAX" ]; then cpvm_pass sched.effect.off "$off_n/$SAMPLES <= $OFF_MAX"
else cpvm_fail sched.effect.off "$off_n/$SAMPLES samples on one L3 with CAS off, want <= $OFF_MAX"; fi

# Leave the kernel as it was found.
if [ "$initial" = 1 ]; then $PROBE set on >/dev/null; else $PROBE set off >/dev/null; fi
cpvm_expect_eq sched.restored "$initial" "$(cat $DBG/enabled)" "enabled restored"
rmdir $CG
cpvm_finish
