#!/usr/bin/env bash
# The guest side of vm.shapes (run-shapes-suite.sh): the host's own test scripts
# (tests/cli/*.sh, and tests/e2e/*.sh when asked) run unchanged inside a guest of
# one CPU shape, against the cachepin built on the host (/payload/bin/cachepin).
#
# First the shape itself is checked against what the host asked for (results
# SHAPE.shape.l3 and SHAPE.shape.cores, from the guest's sysfs): a QEMU or kernel
# that reports another shape than -smp asked for would make every later result
# meaningless, so that is a failure, not a skip.  Then one result per script,
# SHAPE.cli.NAME (or SHAPE.e2e.NAME): PASS for exit 0, SKIP for exit 77 (with the
# script's reason), FAIL otherwise, with the script's FAIL lines in the detail and
# its whole output on the console.  A passing script's lines that start with
# "SHOW: " become info lines (measure.sh shows what it measured in the guest).
#
# Environment (run-vm.sh --env):
#   CPVM_SHAPE        the shape's name (a, b, c: tests/vm/README.md)
#   CPVM_SHAPE_L3     the L3s the guest must report, one cpulist each, space-separated
#   CPVM_SHAPE_CORES  its cores (thread_siblings_list), the same way
#   CPVM_SHAPE_CLI    the tests/cli scripts to run (names without .sh)
#   CPVM_SHAPE_E2E    the tests/e2e scripts to run (RUNTIME=runc), may be empty
#   CPVM_SHAPE_TIMEOUT  seconds for one script (default 240)
. /cpvm/guest-lib.sh
S=${CPVM_SHAPE:-shape}
T=${CPVM_SHAPE_TIMEOUT:-240}

l3=$(cpvm_l3_groups | tr '\n' ' ' | sed 's/ $//')
cores=$(cpvm_smt_groups | tr '\n' ' ' | sed 's/ $//')
cpvm_info "$S: -smp $CPVM_SMP: $(cpvm_topology_summary)"
cpvm_expect_eq "$S.shape.l3" "$CPVM_SHAPE_L3" "$l3" "L3 shared_cpu_list"
shape_l3=$?
cpvm_expect_eq "$S.shape.cores" "$CPVM_SHAPE_CORES" "$cores" "thread_siblings_list"
shape_cores=$?
if [ $shape_l3 != 0 ] || [ $shape_cores != 0 ]; then
  cpvm_info "$S: the guest does not have the shape asked for; the tests would prove nothing on it"
  cpvm_finish
  exit 1
fi

# run_script KIND NAME CMD...: one result for one test script.
run_script () {
  local kind=$1 name=$2 log rc start secs
  shift 2
  log=/tmp/shapes-$kind-$name.log
  start=$(date +%s)
  timeout "$T" "$@" >"$log" 2>&1 </dev/null
  rc=$?
  secs=$(($(date +%s) - start))
  case $rc in
    0)
      # What a script shows of the guest (measure.sh: its output there), as info lines.
      grep '^SHOW: ' "$log" | while IFS= read -r line; do cpvm_info "$S.$kind.$name: ${line#SHOW: }"; done
      cpvm_pass "$S.$kind.$name" "${secs}s: $(grep -Ei 'passed|failed' "$log" | tail -1)" ;;
    77) cpvm_skip "$S.$kind.$name" "${secs}s: $(grep -Ei 'skip' "$log" | tail -1)" ;;
    *)
      [ $rc != 124 ] || echo "TIMEOUT after ${T}s" >>"$log"
      echo "---- $S.$kind.$name (exit $rc) ----" >/dev/console
      cat "$log" >/dev/console
      cpvm_fail "$S.$kind.$name" "exit $rc after ${secs}s: $(grep -E '^(FAIL|TIMEOUT)' "$log" | head -5 | cut -c1-300)" ;;
  esac
}

for name in $CPVM_SHAPE_CLI; do
  run_script cli "$name" bash "/payload/cli/$name.sh" /payload/bin/cachepin
done
for name in ${CPVM_SHAPE_E2E:-}; do
  run_script e2e "$name" env RUNTIME=runc CACHEPIN=/payload/bin/cachepin bash "/payload/e2e/$name.sh"
done
cpvm_finish
