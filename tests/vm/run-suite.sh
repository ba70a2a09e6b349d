#!/usr/bin/env bash
# Run one payload in every VM configuration of the suite: cgroup v2 and v1, each
# on the 2s2d and odd18 topologies (four boots), and sum up.
#
#   tests/vm/run-suite.sh [--jobs N] [--matrix "v2:2s2d v1:odd18 ..."] [--prefix NAME]
#                         RUN-VM-OPTIONS...   (e.g. --tests tests/vm/smoke-tests.sh)
#
#   --jobs N     boots at once (default 1). Each QEMU uses one host core (TCG is
#                single-threaded), so 2 halves the time on a 2-core machine, at
#                the cost of slower guests.
#   --matrix M   the configurations, CGROUP:TOPOLOGY words (default above)
#   --prefix P   run names are P-CGROUP-TOPOLOGY (default vm); logs in tests/vm/work/
#
# Exit status: 0 when every boot passed, else the first failing boot's status.

set -uo pipefail

VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=${CPVM_WORK:-$VM_DIR/work}
JOBS=1
MATRIX="v2:2s2d v1:2s2d v2:odd18 v1:odd18"
PREFIX=vm
PASS_ON=()

while [ $# -gt 0 ]; do
  case $1 in
    --jobs) JOBS=$2; shift 2 ;;
    --matrix) MATRIX=$2; shift 2 ;;
    --prefix) PREFIX=$2; shift 2 ;;
    --cgroup|--topology|--name|--smp|--numa)
      echo "run-suite: $1 is set per boot by --matrix" >&2; exit 2 ;;
    -h|--help) sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) PASS_ON+=("$1"); shift ;;
  esac
done
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || { echo "run-suite: --jobs wants a positive number" >&2; exit 2; }
mkdir -p "$WORK"

# Fetch each kernel once, before boots run side by side.
has_kernel_opt=0
for a in "${PASS_ON[@]}"; do case $a in --kernel-dir|--kernel-pkg) has_kernel_opt=1 ;; esac; done
if [ $has_kernel_opt = 0 ]; then
  for cg in $(tr ' ' '\n' <<<"$MATRIX" | cut -d: -f1 | sort -u); do
    "$VM_DIR/run-vm.sh" --cgroup "$cg" --fetch-kernel >/dev/null || exit 2
  done
fi

suite_start=$(date +%s)
declare -A PID_OF RC_OF
names=()
running=0
finish_one() {   # wait for any boot, record its status
  local pid rc name
  wait -n -p pid; rc=$?
  for name in "${names[@]}"; do
    if [ "${PID_OF[$name]:-}" = "$pid" ]; then
      RC_OF[$name]=$rc
      cat "$WORK/$name.out"
    fi
  done
  running=$((running - 1))
}
for conf in $MATRIX; do
  cg=${conf%%:*} topo=${conf#*:}
  name=$PREFIX-$cg-$topo
  names+=("$name")
  [ $running -lt "$JOBS" ] || finish_one
  "$VM_DIR/run-vm.sh" --cgroup "$cg" --topology "$topo" --name "$name" "${PASS_ON[@]}" >"$WORK/$name.out" 2>&1 &
  PID_OF[$name]=$!
  running=$((running + 1))
done
while [ $running -gt 0 ]; do finish_one; done

echo "== vm suite: $(($(date +%s) - suite_start)) s for ${#names[@]} boots, $JOBS at a time"
passed=0 failed=0 skipped=0 rc=0
for name in "${names[@]}"; do
  line=$(grep '^vm: ' "$WORK/$name.out" | tail -1)
  secs=$(sed -n "s/^== vm $name: .*: \([0-9.]*\)s$/\1/p" "$WORK/$name.out" | head -1)
  read -r p f s < <(sed -n 's/^vm: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/p' <<<"$line")
  passed=$((passed + ${p:-0})) failed=$((failed + ${f:-0})) skipped=$((skipped + ${s:-0}))
  status=ok
  if [ "${RC_OF[$name]}" != 0 ]; then
    status="FAILED (exit ${RC_OF[$name]})"
    [ "$rc" != 0 ] || rc=${RC_OF[$name]}
    # A boot that died counts as one failure even when no result line said so.
    [ "${f:-0}" -gt 0 ] || failed=$((failed + 1))
  fi
  printf '   %-24s %6ss  %s  %s\n' "$name" "${secs:-?}" "${line#vm: }" "$status"
done
echo "vm-suite: $passed passed, $failed failed, $skipped skipped"
exit "$rc"
