#!/usr/bin/env bash
# End-to-end: real containers under a real runtime (runc here; crun in the VM), with
# cachepin as their createRuntime and poststop hook, checked from inside the
# container (/proc/self/status).  Works on any host shape: what each container
# should get is asked of `cachepin plan` on this host with the ledger's CPUs as
# occupied, and the checks that matter (disjoint, released, refused) stand alone.
#
#   RUNTIME=runc|crun CACHEPIN=/path/to/cachepin bash tests/e2e/hook.sh
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
: "${CACHEPIN:=${1:-}}"
[ -n "$CACHEPIN" ] || { echo "usage: CACHEPIN=bin $0" >&2; exit 2; }
CACHEPIN=$(realpath "$CACHEPIN")
. "$HERE/lib.sh"

if [ "$(id -u)" != 0 ] || ! command -v "$RUNTIME" >/dev/null || ! command -v jq >/dev/null; then
  echo "SKIP: needs root, $RUNTIME and jq"
  exit 77
fi
e2e_setup

HOST_CPUS=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)
HOST_MEMS=$(awk '/^Mems_allowed_list/ {print $2}' /proc/self/status)
NCPUS=$("$CACHEPIN" plan --cpus 1 --json | jq -r .cpus >/dev/null && nproc)
echo "host: cpus $HOST_CPUS mems $HOST_MEMS ($NCPUS online for us), runtime $RUNTIME"

# expect N ID [SMT]: the plan `cachepin plan` gives for N CPUs with the ledger's other holders occupied.
expect () {
  "$CACHEPIN" plan --cpus "$1" --occupied "$(e2e_held_except "$2")" ${3:+--smt $3} --json
}

cpus_of () { e2e_allowed "$1" Cpus_allowed_list; }
mems_of () { e2e_allowed "$1" Mems_allowed_list; }
ledger_sum () { sha256sum "$E2E_STATE/ledger.json" 2>/dev/null | cut -d' ' -f1; }
# disjoint LIST LIST: no CPU in both (expanded with the plan's own strict parser via jq-free bash).
expand () { local out=() r; IFS=, read -ra parts <<< "$1"; for r in "${parts[@]}"; do
  if [[ $r == *-* ]]; then out+=($(seq "${r%-*}" "${r#*-}")); else out+=("$r"); fi; done; echo "${out[@]}"; }
both_disjoint () { [ -n "$1" ] && [ -n "$2" ] && disjoint "$1" "$2"; }
disjoint () { local a b; for a in $(expand "$1"); do for b in $(expand "$2"); do [ "$a" != "$b" ] || return 1; done; done; }

# 1. A container without annotations is untouched, and the hook writes nothing.
e2e_run plain '{}' "grep Cpus_allowed_list /proc/self/status"
check "no annotation: runs (rc $E2E_RC)" [ "$E2E_RC" = 0 ]
check "no annotation: keeps the runtime's CPUs ($HOST_CPUS)" grep -q "Cpus_allowed_list:.$HOST_CPUS\$" <<< "$E2E_OUT"
check "no annotation: no state written" [ ! -e "$E2E_STATE" ]

# 2. A: half the host (at least 1), placed as `cachepin plan` says.
HALF=$(( NCPUS / 2 > 0 ? NCPUS / 2 : 1 ))
PLAN_A=$(expect "$HALF" a)
e2e_start a "{\"cachepin.io/cpus\": \"$HALF\"}"
check "A starts (rc $E2E_RC): $E2E_OUT" [ "$E2E_RC" = 0 ]
A_CPUS=$(cpus_of a)
check "A: Cpus_allowed_list $A_CPUS = plan $(jq -r .cpus <<< "$PLAN_A")" same "$A_CPUS" "$(jq -r .cpus <<< "$PLAN_A")"
check "A: Mems_allowed_list $(mems_of a) = plan $(jq -r .mems <<< "$PLAN_A")" same "$(mems_of a)" "$(jq -r .mems <<< "$PLAN_A")"
check "A: in the ledger with those CPUs" same "$(e2e_entry a | jq -r .cpus)" "$A_CPUS"
check "A: ledger pid is the container's" same "$(e2e_entry a | jq -r .pid)" "$("$RUNTIME" state a | jq -r .pid)"

# 3. B at the same time: what is left, disjoint from A.
REST=$(( NCPUS - HALF ))
if [ "$REST" -gt 0 ]; then
  PLAN_B=$(expect "$REST" b)
  e2e_start b "{\"cachepin.io/cpus\": \"$REST\"}"
  check "B starts (rc $E2E_RC): $E2E_OUT" [ "$E2E_RC" = 0 ]
  B_CPUS=$(cpus_of b)
  check "B: Cpus_allowed_list $B_CPUS = plan $(jq -r .cpus <<< "$PLAN_B")" same "$B_CPUS" "$(jq -r .cpus <<< "$PLAN_B")"
  check "A ($A_CPUS) and B ($B_CPUS) share no CPU" both_disjoint "$A_CPUS" "$B_CPUS"
fi

# 4. The host is full: a strict request fails the container with the hook's message.
SUM=$(ledger_sum)
e2e_run strict '{"cachepin.io/cpus": "1", "cachepin.io/strict": "true"}' "true"
check "strict, host full: container refused (rc $E2E_RC)" [ "$E2E_RC" != 0 ]
check "strict, host full: the hook says why" grep -q "cachepin hook: .*cannot place 1 CPU" <<< "$E2E_OUT"
check "strict, host full: ledger unchanged" [ "$(ledger_sum)" = "$SUM" ]

# 5. The same without strict: starts unplaced, with the runtime's CPUs.
e2e_run lenient '{"cachepin.io/cpus": "1"}' "grep Cpus_allowed_list /proc/self/status"
check "not strict, host full: starts (rc $E2E_RC)" [ "$E2E_RC" = 0 ]
check "not strict, host full: unplaced ($HOST_CPUS)" grep -q "Cpus_allowed_list:.$HOST_CPUS\$" <<< "$E2E_OUT"
check "not strict, host full: not in the ledger" [ -z "$(e2e_entry lenient)" ]

# 6. poststop releases: delete A, and its CPUs are free for the next container.
"$RUNTIME" kill a KILL >/dev/null 2>&1; sleep 0.5; "$RUNTIME" delete -f a >/dev/null 2>&1
check "poststop: A gone from the ledger" [ -z "$(e2e_entry a)" ]
# align=none: A may span several LLCs, and strict alone would refuse a count no LLC holds.
e2e_start d "{\"cachepin.io/cpus\": \"$HALF\", \"cachepin.io/align\": \"none\", \"cachepin.io/strict\": \"true\"}"
check "D gets A's CPUs back ($(cpus_of d) = $A_CPUS)" same "$(cpus_of d)" "$A_CPUS"

# 7. kill -9 of a container's init, no delete, no poststop: the next run reclaims.
if [ "$REST" -gt 0 ]; then
  kill -9 "$("$RUNTIME" state b | jq -r .pid)"; sleep 0.5
  e2e_start e "{\"cachepin.io/cpus\": \"$REST\", \"cachepin.io/align\": \"none\", \"cachepin.io/strict\": \"true\"}"
  check "after kill -9 of B, E starts strict (rc $E2E_RC): $E2E_OUT" [ "$E2E_RC" = 0 ]
  check "E gets B's CPUs ($(cpus_of e) = $B_CPUS)" same "$(cpus_of e)" "$B_CPUS"
  check "B dropped from the ledger" [ -z "$(e2e_entry b)" ]
  "$RUNTIME" delete -f b >/dev/null 2>&1
  "$RUNTIME" delete -f e >/dev/null 2>&1
fi
"$RUNTIME" delete -f d >/dev/null 2>&1
check "ledger empty after deletes" [ "$(e2e_ledger | jq '.entries | length')" = 0 ]

# 8. Bad annotation values are refused by name, and nothing is written.
SUM=$(ledger_sum)
bad () {
  local ann=$1 key=$2 value=$3
  e2e_run "bad-$RANDOM" "$ann" "true"
  check "bad $key=$value: refused (rc $E2E_RC)" [ "$E2E_RC" != 0 ]
  check "bad $key=$value: message names it" grep -qF "$key" <<< "$E2E_OUT"
  [ -z "$value" ] || check "bad $key=$value: message names the value" grep -qF "\`$value\`" <<< "$E2E_OUT"
  check "bad $key=$value: ledger unchanged" [ "$(ledger_sum)" = "$SUM" ]
}
bad '{"cachepin.io/cpus": "1", "cachepin.io/smt": "pe1"}' cachepin.io/smt pe1
bad '{"cachepin.io/cpus": "0"}' cachepin.io/cpus 0
bad '{"cachepin.io/cpus": "abc"}' cachepin.io/cpus abc
bad '{"cachepin.io/cpus": "1", "cachepin.io/align": "L4"}' cachepin.io/align L4
bad '{"cachepin.io/cpus": "1", "cachepin.io/mode": "solo"}' cachepin.io/mode solo
bad '{"cachepin.io/cpus": "1", "cachepin.io/strict": "yes"}' cachepin.io/strict yes
bad '{"cachepin.io/cpus": "1", "cachepin.io/mems": "remote"}' cachepin.io/mems remote
bad '{"cachepin.io/cpus": "1", "cachepin.io/cpu": "2"}' cachepin.io/cpu ""

# 9. A container that runs to completion is placed, then released by poststop.
PLAN=$(expect 1 once)
e2e_run once '{"cachepin.io/cpus": "1", "cachepin.io/smt": "pe0"}' "grep _allowed_list /proc/self/status"
check "run to completion: placed as planned" grep -q "Cpus_allowed_list:.$(jq -r .cpus <<< "$PLAN")\$" <<< "$E2E_OUT"
check "run to completion: released" [ -z "$(e2e_entry once)" ]

# 10. cpus from the spec's CPU quota (150000/100000 -> 2, capped by the host).
Q=$(( NCPUS >= 2 ? 150000 : 50000 )); WANT=$(( NCPUS >= 2 ? 2 : 1 ))
e2e_start quota '{"cachepin.io/smt": "any"}' ".linux.resources.cpu = {\"quota\": $Q, \"period\": 100000}"
check "cpus from quota $Q/100000: $WANT CPUs" [ "$(e2e_entry quota | jq -r .cpus | { read -r l; expand "$l" | wc -w; })" = "$WANT" ]
"$RUNTIME" delete -f quota >/dev/null 2>&1

# 10b. The spec's own cpuset is a bound, not a count: `--cpuset-cpus LAST` with
# cachepin.io/cpus=1 runs on LAST (it ran on CPU 0: placed by the parent's CPUs).
# The host's last CPU by its number, not NCPUS - 1: CPU numbers need not start at 0
# or be contiguous (a runtime's cgroup on CPUs 2-5, offline CPUs).
LAST=$(expand "$HOST_CPUS" | tr ' ' '\n' | tail -1)
e2e_start bound '{"cachepin.io/cpus": "1"}' ".linux.resources.cpu = {\"cpus\": \"$LAST\"}"
check "spec cpuset $LAST as a bound: starts (rc $E2E_RC)" [ "$E2E_RC" = 0 ]
check "spec cpuset $LAST as a bound: runs on CPU $LAST" [ "$(cpus_of bound)" = "$LAST" ]
check "spec cpuset $LAST as a bound: the ledger says $LAST" [ "$(e2e_entry bound | jq -r .cpus)" = "$LAST" ]
"$RUNTIME" delete -f bound >/dev/null 2>&1
# A spec cpuset alone gives no count: exclusive mode needs cachepin.io/cpus or a quota.
e2e_start nocount '{"cachepin.io/align": "llc", "cachepin.io/strict": "true"}' ".linux.resources.cpu = {\"cpus\": \"$HOST_CPUS\"}"
check "spec cpuset without a count: refused (rc $E2E_RC)" [ "$E2E_RC" != 0 ]
check "spec cpuset without a count: says why" grep -qF "it is not a count" <<< "$E2E_OUT"
"$RUNTIME" delete -f nocount >/dev/null 2>&1

# 10c. Drift: `RUNTIME update --cpuset-cpus` moves a placed container (as podman
# update, systemd or the kubelet may): the CPU it moved to is not handed out to the
# next container, and the ledger records where it went (tests/cli/drift.sh has the rest).
if [ "$NCPUS" -ge 2 ]; then
  e2e_start drifta '{"cachepin.io/cpus": "1"}'
  check "drift: A starts (rc $E2E_RC)" [ "$E2E_RC" = 0 ]
  DA=$(cpus_of drifta)
  NEXT=$("$CACHEPIN" plan --cpus 1 --occupied "$(e2e_held_except '')" --json 2>/dev/null | jq -r '.cpus // empty')
  if [ -n "$NEXT" ]; then
    "$RUNTIME" update --cpuset-cpus "$NEXT" drifta
    check "drift: $RUNTIME update moved A from $DA to $NEXT" same "$(cpus_of drifta)" "$NEXT"
    e2e_start driftb '{"cachepin.io/cpus": "1"}'
    check "drift: B starts (rc $E2E_RC)" [ "$E2E_RC" = 0 ]
    DB=$(e2e_entry driftb | jq -r '.cpus // empty')
    check "drift: B is not placed on $NEXT, where A runs now (got '${DB:-unplaced}')" [ "$DB" != "$NEXT" ]
    check "drift: nor on $DA, which A still holds" [ "$DB" != "$DA" ]
    check "drift: the ledger records where A went" same "$(e2e_entry drifta | jq -r .drift)" "$NEXT"
    check "drift: and keeps what A was placed on" same "$(e2e_entry drifta | jq -r .cpus)" "$DA"
    "$RUNTIME" delete -f driftb >/dev/null 2>&1
  else
    echo "SKIP: drift: no free CPU to move A to"
  fi
  "$RUNTIME" delete -f drifta >/dev/null 2>&1
fi

# 11. Shared mode: the whole least-loaded domain, nothing held.
e2e_start shared '{"cachepin.io/mode": "shared"}'
check "shared: starts (rc $E2E_RC)" [ "$E2E_RC" = 0 ]
check "shared: recorded with nothing held" [ "$(e2e_entry shared | jq -r '.mode + "/" + .held')" = "shared/" ]
check "shared: gets the domain the plan says" same "$(cpus_of shared)" "$("$CACHEPIN" plan --mode shared --json | jq -r .cpus)"
"$RUNTIME" delete -f shared >/dev/null 2>&1

# 12. Per-container annotation in a pod; the sandbox is skipped.
e2e_start sim '{"io.kubernetes.cri.container-name": "sim", "cachepin.io/cpus.container.sim": "1", "cachepin.io/cpus.container.other": "9999"}'
check "per-container key: placed on 1 CPU" [ "$(e2e_entry sim | jq -r .cpus | { read -r l; expand "$l" | wc -w; })" = 1 ]
"$RUNTIME" delete -f sim >/dev/null 2>&1
e2e_run pause '{"io.kubernetes.cri.container-type": "sandbox", "cachepin.io/cpus": "1"}' "grep Cpus_allowed_list /proc/self/status"
check "sandbox container: untouched" grep -q "Cpus_allowed_list:.$HOST_CPUS\$" <<< "$E2E_OUT"

# 13. mems=keep leaves cpuset.mems as the runtime set it.
e2e_run keep '{"cachepin.io/cpus": "1", "cachepin.io/mems": "keep"}' "grep Mems_allowed_list /proc/self/status"
check "mems=keep: Mems_allowed_list stays $HOST_MEMS" grep -q "Mems_allowed_list:.$HOST_MEMS\$" <<< "$E2E_OUT"

e2e_summary
