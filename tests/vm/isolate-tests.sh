#!/bin/bash
# cachepin.io/isolate on real kernels (issue 23; docs/isolation.md), booted by
# tests/vm/run-isolate-suite.sh.  Where the kernel has cpuset.cpus.exclusive
# (cgroup v2, Linux 6.7+):
#   apply   `cachepin apply --isolate` of a cgroup beside a busy sibling, with a busy
#           process in another slice: placed off each NUMA node's first core (the
#           host keeps it), the partition reads `root`, its exclusive effective set
#           is the placed CPUs, and every other cgroup's effective set, the busy
#           processes' and PID 1's Cpus_allowed_list leave them out; sampling the
#           last CPU (psr) of every user process that ran since the sample before
#           never finds one there, where a control sample before the partition
#           (as many busy loops as CPUs) found them;
#   two     a second isolated cgroup under the same parent (the parent's exclusive
#           set is the union);
#   rule    a node's first core refused: a request bound to it (strict: refused,
#           nothing written; otherwise placed without isolation);
#   release `cachepin release` gives the CPUs back to everyone;
#   crash   a SIGKILL between the writes (cachepin-isolate-crash), repaired by the
#           next run;
#   runc    a runc container with the hook and the annotation, isolated, then
#           deleted: its poststop releases the partition.
#   plan    `cachepin plan --isolate` of this host now judges the kernel too.
# Without cpuset.cpus.exclusive (6.1, cgroup v1 or v2): the "unsupported" line, and
# the cgroup placed without isolation; plan says the same.
#
# Expectations come from the guest's sysfs and cgroup files, never from a fixed
# topology; the CPUs are the ones the ledger says cachepin placed.
# The busy loops are stopped (SIGSTOP) except while psr is sampled: QEMU runs the
# guest's CPUs on one host thread, so each running loop slows every other step.
# A stopped task's Cpus_allowed_list and its cgroup's effective set are updated by
# the kernel all the same.
# Environment: CPVM_ISO_SAMPLES (default 4), CPVM_ISO_SECTIONS (default all:
# "apply two rule release crash runc").

# shellcheck source=guest-lib.sh
. /cpvm/guest-lib.sh

SAMPLES=${CPVM_ISO_SAMPLES:-4}
SECTIONS=" ${CPVM_ISO_SECTIONS:-apply two rule release crash runc} "
CG=/sys/fs/cgroup
CACHEPIN=/payload/bin/cachepin
CRASH=/payload/bin/cachepin-isolate-crash
HDIR=/run/cpvm-iso
STATE=$HDIR/state
CFG=$HDIR/config.json
SYSLOG=/run/cpvm/syslog
mkdir -p $HDIR
printf '{"state_dir": "%s", "log_level": "debug", "lock_timeout_ms": 60000}\n' "$STATE" >$CFG

cpvm_info "$(cpvm_topology_summary)"
ALL=$(cpvm_cpulist_normalize "$(cat /sys/devices/system/cpu/online)")

want() { case $SECTIONS in *" $1 "*) return 0 ;; esac; return 1; }
# disjoint A B: succeeds when no CPU is in both.
disjoint() { [ "$(cpvm_cpulist_minus "$1" "$2")" = "$(cpvm_cpulist_normalize "$1")" ]; }
rd() { cpvm_cpulist_normalize "$(cat "$1" 2>/dev/null)"; }
ledger() { jq -r --arg id "$1" ".entries[] | select(.id == \$id) | $2" $STATE/ledger.json 2>/dev/null; }
apply() { # apply NAME ARGS...: output in $HDIR/NAME.out/.err, status in RC
  local name=$1
  shift
  $CACHEPIN apply --config $CFG --cgroup "$P/$name" "$@" >"$HDIR/$name.out" 2>"$HDIR/$name.err"
  RC=$?
}
logged() { grep -qF -- "$1" "$SYSLOG" "$HDIR"/*.err 2>/dev/null; }
BUSY=()
busy_in() { # busy_in CGROUP: a busy loop moved into CGROUP, stopped; its pid in BUSY_PID
  (echo $BASHPID >"$1/cgroup.procs" && while :; do :; done) >/dev/null 2>&1 &
  BUSY_PID=$!
  BUSY+=("$BUSY_PID")
  local i
  for ((i = 0; i < 100; i++)); do grep -qx "$BUSY_PID" "$1/cgroup.procs" && break; sleep 0.1; done
  kill -STOP "$BUSY_PID"
}
busy_run() { kill -CONT "${BUSY[@]}" 2>/dev/null; }
busy_stop() { kill -STOP "${BUSY[@]}" 2>/dev/null; }
sleeper_in() { # sleeper_in CGROUP: a sleeping process moved into CGROUP; its pid in SLEEPER_PID
  (echo $BASHPID >"$1/cgroup.procs" && exec sleep 100000) >/dev/null 2>&1 &
  SLEEPER_PID=$!
  BUSY+=("$SLEEPER_PID") # killed at the end with the loops
}
mkcg() { mkdir -p "$1" && echo +cpuset >"$(dirname "$1")/cgroup.subtree_control"; }
# gone CGROUP...: each released cgroup removed, its processes killed first, as a
# runtime removes a deleted container's.  One left behind keeps the cpuset.cpus it
# was placed with, and on 6.12 a sibling whose cpuset.cpus names a partition's CPUs
# makes the kernel refuse it ("Cpu list in cpuset.cpus not exclusive"; 7.3 allows it).
gone() {
  local cg p
  for cg in "$@"; do
    [ -d "$cg" ] || continue
    for p in $(cat "$cg/cgroup.procs"); do kill -9 "$p" 2>/dev/null; done
    rmdir "$cg" 2>/dev/null || { sleep 0.5; rmdir "$cg"; }
  done
}

# --- the unsupported line (6.1: cgroup v1, or v2 without cpuset.cpus.exclusive)
if [ "$(cpvm_cgroup_version)" = v1 ]; then
  REASON="cgroup v1"
  P=$CG/cpuset/iso
elif [ "$(cpvm_cgroup_version)" = v2 ]; then
  P=$CG/iso.slice
  mkcg $P/probe
  if [ -e $P/probe/cpuset.cpus.exclusive ]; then REASON=""; else REASON="kernel has no cpuset.cpus.exclusive (Linux 6.7+)"; fi
  rmdir $P/probe
else
  cpvm_fail iso.cgroup "no cgroup hierarchy"
  cpvm_finish
  exit
fi
if [ -n "$REASON" ]; then
  cpvm_info "unsupported here: $REASON"
  mkdir -p $P/a $P/b
  if [ "$(cpvm_cgroup_version)" = v1 ]; then
    cat $CG/cpuset/cpuset.cpus >$P/cpuset.cpus && cat $CG/cpuset/cpuset.mems >$P/cpuset.mems
    for n in a b; do cat $P/cpuset.cpus >$P/$n/cpuset.cpus && cat $P/cpuset.mems >$P/$n/cpuset.mems; done
  else
    echo +cpuset >$P/cgroup.subtree_control
  fi
  apply a --cpus 1 --isolate
  cpvm_expect_eq iso.unsupported.placed 0 "$RC" "apply --isolate exit status: $(head -c 300 $HDIR/a.err)"
  cpvm_check iso.unsupported.line grep -qF "apply:$P/a: cachepin.io/isolate: unsupported here ($REASON): placed without isolation" $HDIR/a.err
  cpvm_expect_eq iso.unsupported.one-line 1 "$(grep -c 'cachepin.io/isolate' $HDIR/a.err)" "lines naming cachepin.io/isolate"
  cpvm_expect_eq iso.unsupported.cpuset "$(ledger "apply:$P/a" .cpus)" "$(rd $P/a/cpuset.cpus)" "the cgroup holds the placement"
  cpvm_expect_eq iso.unsupported.not-isolated null "$(ledger "apply:$P/a" .isolated)" "the entry's isolated flag"
  b_before=$(cat $P/b/cpuset.cpus)
  apply b --cpus 1 --isolate --strict
  cpvm_expect_eq iso.unsupported.strict 3 "$RC" "strict: refused (unsatisfiable): $(head -c 300 $HDIR/b.err)"
  cpvm_check iso.unsupported.strict-reason grep -qF "cachepin.io/isolate: unsupported here ($REASON)" $HDIR/b.err
  cpvm_expect_eq iso.unsupported.strict-untouched "$b_before" "$(cat $P/b/cpuset.cpus)" "strict: its cpuset.cpus"
  cpvm_expect_eq iso.unsupported.plan "[false,\"unsupported here ($REASON)\",true]" \
    "$($CACHEPIN plan --config $CFG --cpus 1 --isolate --json 2>$HDIR/plan.err | jq -c '.isolate | [.granted, .reason, .kernel_checked]')" \
    "plan --isolate of this host now: granted, reason, kernel_checked ($(grep -v debug $HDIR/plan.err | head -c 300))"
  cpvm_finish
  exit
fi

# --- cgroup v2 with cpuset.cpus.exclusive
# P holds the isolated cgroups and a busy sibling; another slice holds a busy job.
OTHER=$CG/other.slice/job
mkcg $P/sib
mkcg $OTHER
# As many busy loops as CPUs, half in the sibling and half in the other slice:
# where a CPU is allowed, the scheduler puts one there (the control sample below
# shows it), so a psr sample that never finds one on the isolated CPUs means
# something.
NCPU=$(cpvm_cpulist_count "$ALL")
for ((i = 0; i < NCPU; i++)); do
  if ((i % 2 == 0)); then busy_in $P/sib; [ -n "${SIB:-}" ] || SIB=$BUSY_PID; else busy_in $OTHER; [ -n "${JOB:-}" ] || JOB=$BUSY_PID; fi
done
KEPT=$(cpvm_kept_cores)
cpvm_expect_eq plan.kernel "[true,true]" \
  "$($CACHEPIN plan --config $CFG --cpus 1 --isolate --json 2>$HDIR/plan.err | jq -c '.isolate | [.granted, .kernel_checked]')" \
  "plan --isolate of this host now: granted, kernel_checked ($(grep -v debug $HDIR/plan.err | head -c 300))"
cpvm_info "before: root effective $(rd $CG/cpuset.cpus.effective); sibling's loop $(cpvm_allowed_cpus $SIB); PID 1 $(cpvm_allowed_cpus 1)"

# outside CPUS WHAT...: every one of these keeps off CPUS.
outside() {
  local cpus=$1 name=$2
  cpvm_expect_eq "$name.parent-effective" "$(cpvm_cpulist_minus "$ALL" "$cpus")" "$(rd $P/cpuset.cpus.effective)" "$P's effective CPUs"
  cpvm_expect_eq "$name.sibling-effective" "$(cpvm_cpulist_minus "$ALL" "$cpus")" "$(rd $P/sib/cpuset.cpus.effective)" "the sibling's effective CPUs"
  cpvm_expect_eq "$name.other-effective" "$(cpvm_cpulist_minus "$ALL" "$cpus")" "$(rd $OTHER/cpuset.cpus.effective)" "another slice's effective CPUs"
  cpvm_expect_eq "$name.root-effective" "$(cpvm_cpulist_minus "$ALL" "$cpus")" "$(rd $CG/cpuset.cpus.effective)" "the root cgroup's effective CPUs"
  cpvm_expect_eq "$name.sibling-allowed" "$(cpvm_cpulist_minus "$ALL" "$cpus")" "$(cpvm_allowed_cpus $SIB)" "the sibling's busy loop, Cpus_allowed_list"
  cpvm_expect_eq "$name.other-allowed" "$(cpvm_cpulist_minus "$ALL" "$cpus")" "$(cpvm_allowed_cpus $JOB)" "the other slice's busy loop"
  cpvm_expect_eq "$name.pid1-allowed" "$(cpvm_cpulist_minus "$ALL" "$cpus")" "$(cpvm_allowed_cpus 1)" "PID 1"
}
# isolated NAME CG CPUS: the partition as cachepin promises it.
isolated() {
  cpvm_expect_eq "$1.partition" root "$(cat "$2/cpuset.cpus.partition")" "cpuset.cpus.partition"
  cpvm_expect_eq "$1.exclusive-effective" "$3" "$(rd "$2/cpuset.cpus.exclusive.effective")" "cpuset.cpus.exclusive.effective"
}

# psr: the CPU each user process last ran on (field 39 of /proc/PID/stat), sampled
# SAMPLES times 0.1 s apart with the busy loops running.  A sample counts only for a
# process that ran since the one before (the first field of /proc/PID/schedstat,
# its time on a CPU, grew; read before the stat, so the CPU is that run's or a
# later one's): a process asleep since before the partition was made still shows
# the CPU it last ran on (PID 1 did, in a run that counted every process).  HITS
# counts the samples of a process outside SKIP (a cgroup's procs) found on CPUS,
# RAN all samples counted.  Kernel threads (pid 2 and its children) are left out:
# the per-CPU ones run everywhere by design.  Builtins only (a fork is slow under TCG).
psr_sample() {
  local cpus skip=" " k d pid line rest fields run
  local -A last=()
  PSR_COUNT=() # the samples per CPU, for the caller
  cpus=" $(cpvm_cpulist_expand "$1" | tr '\n' ' ') "
  [ -z "$2" ] || skip=" $(tr '\n' ' ' <"$2/cgroup.procs") "
  HITS=0 RAN=0 HIT_LIST=""
  busy_run
  for ((k = 0; k <= SAMPLES; k++)); do
    for d in /proc/[0-9]*; do
      pid=${d#/proc/}
      [[ $skip == *" $pid "* ]] && continue
      read -r run _ <"$d/schedstat" 2>/dev/null || continue
      read -r line <"$d/stat" 2>/dev/null || continue
      rest=${line##*) }
      read -ra fields <<<"$rest"
      # fields[1] is the ppid (stat field 4), fields[36] the last CPU (field 39)
      { [ "${fields[1]}" = 2 ] || [ "$pid" = 2 ]; } && continue
      if [ -n "${last[$pid]:-}" ] && [ "${last[$pid]}" != "$run" ]; then
        RAN=$((RAN + 1))
        PSR_COUNT[${fields[36]}]=$((${PSR_COUNT[${fields[36]}]:-0} + 1))
        if [[ $cpus == *" ${fields[36]} "* ]]; then HITS=$((HITS + 1)); HIT_LIST+=" $pid@${fields[36]}"; fi
      fi
      last[$pid]=$run
    done
    sleep 0.1
  done
  busy_stop
  PSR_BY_CPU=""
  for k in $(printf '%s\n' "${!PSR_COUNT[@]}" | sort -n); do PSR_BY_CPU+=" cpu$k:${PSR_COUNT[$k]}"; done
}

# on CPUS: the samples of COUNTS (the name of a copy of PSR_COUNT) on CPUS.
on() {
  local -n counts=$2
  local c n=0
  for c in $(cpvm_cpulist_expand "$1"); do n=$((n + ${counts[$c]:-0})); done
  echo $n
}

# --- apply: one isolated cgroup
A_CPUS=""
if want apply; then
  # the control: where the loops run before any partition
  psr_sample "$ALL" ""
  declare -A BEFORE_COUNT=()
  for k in "${!PSR_COUNT[@]}"; do BEFORE_COUNT[$k]=${PSR_COUNT[$k]}; done
  cpvm_info "psr before isolation: $RAN samples of user processes that had run; by CPU:$PSR_BY_CPU"
  mkcg $P/a
  sleeper_in $P/a
  A_TASK=$SLEEPER_PID
  apply a --cpus 1 --isolate
  cpvm_expect_eq apply.exit 0 "$RC" "apply --isolate: $(head -c 300 $HDIR/a.err)"
  A_CPUS=$(ledger "apply:$P/a" .cpus)
  cpvm_info "apply:$P/a placed on $A_CPUS: $(head -c 300 $HDIR/a.out)"
  cpvm_check apply.not-kept disjoint "$A_CPUS" "$KEPT"
  cpvm_expect_eq apply.flag true "$(ledger "apply:$P/a" .isolated)" "the ledger entry's isolated flag"
  cpvm_check apply.logged logged "isolated apply:$P/a on CPUs $A_CPUS (partition root)"
  isolated apply $P/a "$A_CPUS"
  cpvm_expect_eq apply.task "$A_CPUS" "$(cpvm_allowed_cpus $A_TASK)" "its own task's Cpus_allowed_list"
  outside "$A_CPUS" apply
  st=$($CACHEPIN status --config $CFG --json | jq -c --arg id "apply:$P/a" '.ledger.entries[] | select(.id == $id) | .isolate')
  cpvm_expect_eq apply.status "{\"partition\":\"root\",\"exclusive_effective\":\"$A_CPUS\"}" "$st" "status --json .isolate"
  cpvm_check apply.status-text sh -c "$CACHEPIN status --config $CFG | grep -q ISOLATED"
  psr_sample "$A_CPUS" $P/a
  cpvm_info "psr: $RAN samples of user processes outside $P/a that had run, $HITS on $A_CPUS$HIT_LIST; by CPU:$PSR_BY_CPU"
  cpvm_expect_eq apply.psr 0 "$HITS" "samples of other processes' last CPU in $A_CPUS (of $RAN)"
  cpvm_check apply.psr-busy test "$RAN" -ge "$((NCPU * SAMPLES / 2))" # the loops ran
  cpvm_check apply.psr-control test "$(on "$A_CPUS" BEFORE_COUNT)" -gt 0 # and before, they ran there
fi

# --- two: a second isolated cgroup under the same parent
B_CPUS=""
if want two && [ -n "$A_CPUS" ]; then
  mkcg $P/b
  apply b --cpus 1 --isolate
  cpvm_expect_eq two.exit 0 "$RC" "apply --isolate of a second cgroup: $(head -c 300 $HDIR/b.err)"
  B_CPUS=$(ledger "apply:$P/b" .cpus)
  cpvm_check two.disjoint disjoint "$A_CPUS" "$B_CPUS"
  cpvm_check two.not-kept disjoint "$B_CPUS" "$KEPT"
  isolated two.b $P/b "$B_CPUS"
  isolated two.a $P/a "$A_CPUS"
  both=$(cpvm_cpulist_normalize "$A_CPUS,$B_CPUS")
  cpvm_expect_eq two.parent-exclusive "$both" "$(rd $P/cpuset.cpus.exclusive)" "the parent's cpuset.cpus.exclusive is the union"
  outside "$both" two
fi

# --- rule: a node's first core, the one the host keeps.  The request's cgroup sits
# under one (P/r) whose cpuset.cpus is exactly that core, so that the placement has
# no other choice; the node is the one holding the first isolated CPU (or node 0
# when that section did not run).
if want rule; then
  read -r node node_cpus < <(cpvm_nodes | awk -v c="${A_CPUS%%[-,]*}" 'NR == 1 { first = $0 } { n = split($2, r, ","); for (i = 1; i <= n; i++) { split(r[i], b, "-"); if (b[2] == "") b[2] = b[1]; if (c != "" && c >= b[1] && c <= b[2]) hit = $0 } } END { print hit != "" ? hit : first }')
  first=${node_cpus%%[-,]*}
  core=$(cpvm_cpulist_normalize "$(cat /sys/devices/system/cpu/cpu$first/topology/thread_siblings_list)")
  n=$(cpvm_cpulist_count "$core")
  cpvm_info "rule: node $node CPUs $node_cpus, its first core $core"
  mkcg $P/r/c
  echo "$core" >$P/r/cpuset.cpus
  before=$(cat $STATE/ledger.json)
  c_before=$(cat $P/r/c/cpuset.cpus)
  $CACHEPIN apply --config $CFG --cgroup $P/r/c --cpus "$n" --isolate --strict >$HDIR/c.out 2>$HDIR/c.err
  RC=$?
  cpvm_info "strict, the node's first core: $(tr '\n' ' ' <$HDIR/c.err | head -c 400)"
  cpvm_expect_eq rule.strict-refused 3 "$RC" "--cpus $n (bound to $core, node $node's first core) --isolate --strict"
  cpvm_check rule.message grep -qF "cachepin.io/isolate: CPUs $core include CPU $first, in the first core of NUMA node $node, which the host keeps (never isolated)" $HDIR/c.err
  cpvm_expect_eq rule.ledger-unchanged "$before" "$(cat $STATE/ledger.json)" "the ledger"
  cpvm_expect_eq rule.cgroup-untouched "$c_before" "$(cat $P/r/c/cpuset.cpus)" "its cpuset.cpus"
  cpvm_expect_eq rule.no-partition member "$(cat $P/r/c/cpuset.cpus.partition)" "its cpuset.cpus.partition"
  $CACHEPIN apply --config $CFG --cgroup $P/r/c --cpus "$n" --isolate >$HDIR/c.out 2>$HDIR/c.err
  RC=$?
  cpvm_info "not strict: $(tr '\n' ' ' <$HDIR/c.err | head -c 400)"
  cpvm_expect_eq rule.placed 0 "$RC" "not strict: placed"
  cpvm_check rule.warning grep -qF "which the host keeps (never isolated): placed without isolation" $HDIR/c.err
  cpvm_expect_eq rule.not-isolated member "$(cat $P/r/c/cpuset.cpus.partition)" "not strict: no partition"
  cpvm_expect_eq rule.no-record "" "$(jq -r --arg id "apply:$P/r/c" '.partitions[]? | select(.id == $id) | .cgroup' $STATE/ledger.json)" "partition records of it"
  $CACHEPIN release --config $CFG --cgroup $P/r/c >/dev/null 2>&1
  rmdir $P/r/c $P/r
fi

# --- release: the CPUs back to everyone
if want release && [ -n "$A_CPUS" ]; then
  for n in a b; do
    [ -d $P/$n ] && [ -n "$(ledger "apply:$P/$n" .cpus)" ] || continue
    cpus=$(ledger "apply:$P/$n" .cpus)
    $CACHEPIN release --config $CFG --cgroup $P/$n >$HDIR/rel-$n.out 2>$HDIR/rel-$n.err
    cpvm_expect_eq release.$n.exit 0 $? "release: $(head -c 300 $HDIR/rel-$n.err)"
    cpvm_check release.$n.logged logged "released the partition of apply:$P/$n (CPUs $cpus)"
    cpvm_expect_eq release.$n.member member "$(cat $P/$n/cpuset.cpus.partition)" "cpuset.cpus.partition"
    cpvm_expect_eq release.$n.exclusive "" "$(cat $P/$n/cpuset.cpus.exclusive)" "its cpuset.cpus.exclusive"
  done
  cpvm_expect_eq release.parent-exclusive "" "$(cat $P/cpuset.cpus.exclusive)" "the parent's cpuset.cpus.exclusive"
  cpvm_expect_eq release.partitions null "$(jq -c .partitions $STATE/ledger.json)" "the ledger's partition records"
  outside "" release
  gone $P/a $P/b
fi

# --- crash: SIGKILL between the writes, the next run repairs
if want crash; then
  if [ ! -x $CRASH ]; then
    cpvm_skip crash "no cachepin-isolate-crash in the payload"
  else
    for point in ancestor exclusive root; do
      mkcg $P/k
      $CRASH $point -- apply --config $CFG --cgroup $P/k --cpus 1 --isolate >$HDIR/k.out 2>$HDIR/k.err
      cpvm_expect_eq crash.$point.killed 137 $? "killed at $point: $(head -c 200 $HDIR/k.err)"
      cpvm_info "crash at $point: records $(jq -c .partitions $STATE/ledger.json); k exclusive '$(cat $P/k/cpuset.cpus.exclusive)' partition '$(cat $P/k/cpuset.cpus.partition)'; parent exclusive '$(cat $P/cpuset.cpus.exclusive)'"
      # the next run: an apply of another cgroup
      mkcg $P/n
      apply n --cpus 1
      cpvm_expect_eq crash.$point.next 0 "$RC" "the next run (apply): $(head -c 200 $HDIR/n.err)"
      cpvm_check crash.$point.repaired logged "repaired the partition of apply:$P/k"
      cpvm_expect_eq crash.$point.member member "$(cat $P/k/cpuset.cpus.partition)" "the crashed cgroup's partition"
      cpvm_expect_eq crash.$point.exclusive "" "$(cat $P/k/cpuset.cpus.exclusive)" "the crashed cgroup's exclusive"
      cpvm_expect_eq crash.$point.parent "" "$(cat $P/cpuset.cpus.exclusive)" "the parent's exclusive"
      cpvm_expect_eq crash.$point.records null "$(jq -c .partitions $STATE/ledger.json)" "the ledger's records"
      outside "" crash.$point
      for n in k n; do $CACHEPIN release --config $CFG --cgroup $P/$n >/dev/null 2>&1; done
      gone $P/k $P/n
      : >$SYSLOG
    done
    # a release cut short: the flag cleared and committed, nothing undone
    mkcg $P/k
    apply k --cpus 1 --isolate
    k_cpus=$(ledger "apply:$P/k" .cpus)
    cpvm_expect_eq crash.unflagged.isolated true "$(ledger "apply:$P/k" .isolated)" "isolated before the release: $(head -c 200 $HDIR/k.err)"
    $CRASH unflagged -- release --config $CFG --cgroup $P/k >$HDIR/k.out 2>$HDIR/k.err
    cpvm_expect_eq crash.unflagged.killed 137 $? "release killed at unflagged: $(head -c 200 $HDIR/k.err)"
    mkcg $P/n
    apply n --cpus 1
    cpvm_check crash.unflagged.repaired logged "repaired the partition of apply:$P/k (CPUs $k_cpus)"
    cpvm_expect_eq crash.unflagged.member member "$(cat $P/k/cpuset.cpus.partition)" "the partition after the next run"
    cpvm_expect_eq crash.unflagged.parent "" "$(cat $P/cpuset.cpus.exclusive)" "the parent's exclusive"
    outside "" crash.unflagged
    for n in k n; do $CACHEPIN release --config $CFG --cgroup $P/$n >/dev/null 2>&1; done
    gone $P/k $P/n
  fi
fi

# --- runc: the hook, the annotation, then delete (poststop releases)
if want runc; then
  export CPVM_HOOKS
  CPVM_HOOKS=$(printf '{"createRuntime": [{"path": "%s", "args": ["cachepin", "hook", "--config", "%s", "createRuntime"], "timeout": 60}],
 "poststop": [{"path": "%s", "args": ["cachepin", "hook", "--config", "%s", "poststop"], "timeout": 60}]}' \
    "$CACHEPIN" "$CFG" "$CACHEPIN" "$CFG")
  echo +cpuset >$P/cgroup.subtree_control
  if cpvm_create runc iso1 --cgroups-path /iso.slice/iso1 \
    --annotations '{"cachepin.io/cpus": "1", "cachepin.io/isolate": "true"}' -- sleep 600; then
    cpus=$(ledger iso1 .cpus)
    cpvm_info "runc iso1 on $cpus: $(tail -c 300 "$CPVM_BUNDLES/iso1/stderr" | tr '\n' ' ')"
    cpvm_expect_eq runc.flag true "$(ledger iso1 .isolated)" "the entry's isolated flag"
    isolated runc $P/iso1 "$cpus"
    cpvm_start runc iso1
    cpvm_expect_eq runc.task "$cpus" "$(cpvm_allowed_cpus "$(cpvm_pid runc iso1)")" "the container's process"
    outside "$cpus" runc
    cpvm_info "runc: sampling psr"
    psr_sample "$cpus" $P/iso1
    cpvm_info "psr (runc): $RAN samples outside the container of processes that had run, $HITS on $cpus$HIT_LIST; by CPU:$PSR_BY_CPU"
    cpvm_expect_eq runc.psr 0 "$HITS" "samples of other processes' last CPU in $cpus (of $RAN)"
    cpvm_check runc.psr-busy test "$RAN" -ge "$((NCPU * SAMPLES / 2))"
    cpvm_info "runc: deleting iso1 (its poststop releases)"
    cpvm_delete runc iso1
    cpvm_info "runc: deleted: $(tail -c 300 "$CPVM_BUNDLES/iso1/stderr" | tr '\n' ' ')"
    cpvm_expect_eq runc.released "" "$(ledger iso1 .cpus)" "the entry after delete (poststop)"
    cpvm_check runc.logged logged "released the partition of iso1 (CPUs $cpus)"
    cpvm_expect_eq runc.parent-exclusive "" "$(cat $P/cpuset.cpus.exclusive)" "the parent's exclusive after delete"
    outside "" runc.deleted
  else
    cpvm_fail runc.create "$(tail -c 400 "$CPVM_BUNDLES/iso1/stderr" | tr '\n' ' ')"
  fi
fi

for p in "${BUSY[@]}"; do kill -9 "$p" 2>/dev/null; done # SIGKILL ends a stopped one too
cpvm_finish
