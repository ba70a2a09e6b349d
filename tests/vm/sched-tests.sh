#!/bin/bash
# The kernel's scheduler features on a real kernel with cache-aware scheduling
# (7.3 from trixie-backports, booted by tests/vm/run-sched-suite.sh with two L3s
# of 8 CPUs): cachepin's probe (hook/host/sched.c, through cachepin-sched-probe) reads
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

# --- cachepin's hook, through runc: sched_cache on-demand, leave, and the effect
# l3_of: the L3 index of each CPU, from sysfs.
declare -A L3_OF
for i in "${!L3S[@]}"; do
  for c in $(cpvm_cpulist_expand "${L3S[$i]}"); do L3_OF[$c]=$i; done
done

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
# together PID: wait, sample; prints "<samples with every thread on one L3> <patterns>".
together() {
  local pid=$1 n=0 k patterns=""
  sleep "$SETTLE"
  for ((k = 0; k < SAMPLES; k++)); do
    sample "$pid"
    [ "$PATTERN" = 3 ] && n=$((n + 1))
    patterns+=" $PATTERN"
    sleep 0.1
  done
  echo "$n$patterns"
}

CACHEPIN=/payload/bin/cachepin
HDIR=/run/cpvm-sched
STATE=$HDIR/state
HCFG=$HDIR/config.json
mkdir -p $HDIR
hostconfig() { printf '{"state_dir": "%s", "sched_cache": "%s", "log_level": "debug", "lock_timeout_ms": 60000}\n' "$STATE" "$1" >$HCFG; }
hooks() { # hooks POSTSTOP-TIMEOUT
  printf '{"createRuntime": [{"path": "%s", "args": ["cachepin", "hook", "--config", "%s", "createRuntime"], "timeout": 60}],
 "poststop": [{"path": "%s", "args": ["cachepin", "hook", "--config", "%s", "poststop"], "timeout": %s}]}' \
    "$CACHEPIN" "$HCFG" "$CACHEPIN" "$HCFG" "$1"
}
CPVM_HOOKS=$(hooks 60)
BIND='.mounts += [{"destination": "/opt", "type": "bind", "source": "/payload/bin", "options": ["rbind", "ro"]}]'
ASK_ON='"cachepin.io/sched-cache": "on"'
restore() { if [ -f $STATE/ledger.json ]; then jq -r '.sched_cache_restore // "none"' $STATE/ledger.json; else echo none; fi; }
in_ledger() { jq -r --arg id "$1" '[.entries[] | select(.id == $id)] | length' $STATE/ledger.json; }
# Every write into the switch, counted (cas-watch: inotify IN_MODIFY).
WATCH=$HDIR/writes
cas-watch $DBG/enabled $WATCH & watcher=$!
for _ in 1 2 3 4 5 6 7 8 9 10; do [ -s $WATCH ] && break; sleep 0.2; done
writes() { grep -c modify $WATCH; }

$PROBE set off >/dev/null
w0=$(writes)
hostconfig on-demand
# A: twelve CPUs (smt=any: no idle siblings held, room for B), so its cpuset spans
# both L3s of eight; three busy threads.
SPAN='"cachepin.io/cpus": "12", "cachepin.io/smt": "any"'
cpvm_create runc cas-a --annotations "{$SPAN, $ASK_ON}" --jq "$BIND" -- /opt/busy3 ||
  cpvm_fail sched.hook.create.a "$(tail -c 400 "$CPVM_BUNDLES/cas-a/stderr")"
cpvm_expect_eq sched.hook.on-demand.first 1 "$(cat $DBG/enabled)" "enabled after the first container asking (createRuntime):"
cpvm_expect_eq sched.hook.on-demand.kept off "$(restore)" "the ledger keeps the value to give back:"
a_pid=$(cpvm_pid runc cas-a)
a_cpus=$(cpvm_cgroup_read "$a_pid" cpuset.cpus)
declare -A a_l3
for c in $(cpvm_cpulist_expand "$a_cpus"); do a_l3[${L3_OF[$c]}]=1; done
a_l3s=${#a_l3[@]}
cpvm_expect_eq sched.hook.spans 2 "$a_l3s" "L3s under container A's cpuset ($a_cpus):"

# status --json in the guest, against the guest's sysfs.
st=$($CACHEPIN status --json --config $HCFG 2>/dev/null)
cpvm_expect_eq sched.status.cas.state on "$(jq -r '.features.cache_aware_scheduling.state' <<<"$st")"
cpvm_expect_eq sched.status.cas.interface llc_balancing "$(jq -r '.features.cache_aware_scheduling.interface' <<<"$st")"
cpvm_expect_eq sched.status.cas.asked_by '["cas-a"]' "$(jq -c '.features.cache_aware_scheduling.asked_by' <<<"$st")"
cpvm_expect_eq sched.status.cas.restore off "$(jq -r '.features.cache_aware_scheduling.restore' <<<"$st")"
cpvm_expect_eq sched.status.llcs "$(printf '%s\n' "${L3S[@]}" | while read -r l; do cpvm_cpulist_normalize "$l"; done | sort | paste -sd' ')" \
  "$(jq -r '.topology.llcs[].cpus' <<<"$st" | while read -r l; do cpvm_cpulist_normalize "$l"; done | sort | paste -sd' ')" "LLC CPUs, status vs sysfs:"
cpvm_expect_eq sched.status.online "$(cpvm_cpulist_normalize "$(cat /sys/devices/system/cpu/online)")" \
  "$(cpvm_cpulist_normalize "$(jq -r '.topology.online' <<<"$st")")"
cpvm_expect_eq sched.status.smt_width 2 "$(jq -r '.topology.smt_width' <<<"$st")"
cpvm_expect_eq sched.status.entry.cpus "$(cpvm_cpulist_normalize "$a_cpus")" \
  "$(cpvm_cpulist_normalize "$(jq -r '.ledger.entries[] | select(.id == "cas-a") | .cpus' <<<"$st")")" "container A's CPUs, status vs its cgroup:"

# The effect, in A: its threads on one L3 while cachepin holds the switch on.
cpvm_start runc cas-a
on=$(together "$a_pid")
cpvm__rt runc kill cas-a KILL # stop the busy loop now (TCG); its poststop comes with delete
# B asks too; A goes: still on.  B goes: back to off.
cpvm_create runc cas-b --annotations "{\"cachepin.io/cpus\": \"2\", $ASK_ON}" -- sleep 600
cpvm_expect_eq sched.hook.b.placed 1 "$(in_ledger cas-b)" "B placed:"
cpvm_expect_eq sched.hook.on-demand.second 1 "$(cat $DBG/enabled)"
cpvm_delete runc cas-a
cpvm_expect_eq sched.hook.on-demand.held 1 "$(cat $DBG/enabled)" "after A's poststop, B still asking:"
cpvm_delete runc cas-b
cpvm_expect_eq sched.hook.on-demand.restored 0 "$(cat $DBG/enabled)" "after the last poststop:"
cpvm_expect_eq sched.hook.on-demand.forgotten none "$(restore)"
cpvm_expect_eq sched.hook.on-demand.writes 2 "$(($(writes) - w0))" "writes into the switch (on once, off once):"

# The effect's other half: the same container, not asking, with the switch off.
cpvm_create runc cas-e --annotations "{$SPAN}" --jq "$BIND" -- /opt/busy3
e_pid=$(cpvm_pid runc cas-e)
cpvm_start runc cas-e
off=$(together "$e_pid")
cpvm_delete runc cas-e
cpvm_expect_eq sched.hook.not-asking 0 "$(cat $DBG/enabled)" "a container not asking leaves it off:"
cpvm_info "effect in a placed container spanning both L3s: $SAMPLES samples after ${SETTLE}s; threads per L3 in each sample (3 = all on one): off:${off#* } on:${on#* }"
off_n=${off%% *} on_n=${on%% *}
cpvm_info "CAS effect through the hook: all 3 threads on one L3 in $off_n/$SAMPLES samples with the switch off, $on_n/$SAMPLES with cachepin holding it on"
if [ "${on_n:-0}" -ge "$ON_MIN" ]; then cpvm_pass sched.effect.on "$on_n/$SAMPLES >= $ON_MIN"
else cpvm_fail sched.effect.on "$on_n/$SAMPLES samples on one L3 with CAS on, want >= $ON_MIN"; fi
if [ "${off_n:-99}" -le "$OFF_MAX" ]; then cpvm_pass sched.effect.off "$off_n/$SAMPLES <= $OFF_MAX"
else cpvm_fail sched.effect.off "$off_n/$SAMPLES samples on one L3 with CAS off, want <= $OFF_MAX"; fi

# A poststop hook SIGKILLed (runc kills a hook at its timeout; here it waits for a
# ledger lock the test holds): the switch stays on for the dead container until
# the next run, which gives it back.
CPVM_HOOKS=$(hooks 2)
cpvm_create runc cas-k --annotations "{\"cachepin.io/cpus\": \"2\", $ASK_ON}" -- sleep 600
cpvm_expect_eq sched.hook.killed.on 1 "$(cat $DBG/enabled)"
# The lock is held by the sleep alone (the subshell execs into it), so killing it
# gives the lock back as soon as the delete is over, not when a fixed sleep ends;
# the delete starts once the lock is seen taken.
( exec 9>$STATE/ledger.lock; flock 9; exec sleep 120 ) & locker=$!
for ((i = 0; i < 100; i++)); do flock -n $STATE/ledger.lock true || break; sleep 0.05; done
t0=$(cut -d' ' -f1 /proc/uptime)
cpvm_delete runc cas-k
cpvm_info "runc delete with the poststop hook stalled: $(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", b - a }') s"
kill $locker; wait $locker 2>/dev/null
cpvm_expect_eq sched.hook.killed.entry 1 "$(in_ledger cas-k)" "the killed poststop released nothing:"
cpvm_expect_eq sched.hook.killed.held 1 "$(cat $DBG/enabled)"
CPVM_HOOKS=$(hooks 60)
cpvm_create runc cas-p --annotations '{"cachepin.io/cpus": "1"}' -- sleep 600
cpvm_expect_eq sched.hook.killed.restored 0 "$(cat $DBG/enabled)" "the next hook run (another container):"
cpvm_expect_eq sched.hook.killed.dropped 0 "$(in_ledger cas-k)"
cpvm_delete runc cas-p

# leave: never written, whoever asks.
hostconfig leave
w1=$(writes)
cpvm_create runc cas-l --annotations "{\"cachepin.io/cpus\": \"2\", $ASK_ON}" -- sleep 600
cpvm_delete runc cas-l
cpvm_expect_eq sched.hook.leave.value 0 "$(cat $DBG/enabled)"
cpvm_expect_eq sched.hook.leave.writes 0 "$(($(writes) - w1))" "writes into the switch under leave:"
kill $watcher

# Leave the kernel as it was found.
if [ "$initial" = 1 ]; then $PROBE set on >/dev/null; else $PROBE set off >/dev/null; fi
cpvm_expect_eq sched.restored "$initial" "$(cat $DBG/enabled)" "enabled restored"
cpvm_finish
