#!/usr/bin/env bash
# vm.shapes: the tests that use the host's real CPUs and cgroups (tests/cli, and
# tests/e2e on request), unchanged, inside guests of CPU shapes that differ from
# each other and from the usual developer machine, against one cachepin binary.
# A test that expects one machine's shape fails in one of them.
#
#   tests/vm/run-shapes-suite.sh [--bin PATH] [--shapes "a b c"] [--jobs N]
#                                [--cli "drift reapply ..."] [--e2e "hook ..."]
#                                [RUN-VM-OPTIONS...]
#
#   --bin PATH    the cachepin binary (default build/cachepin)
#   --shapes S    which shapes (default "a b c"):
#                   a  -smp 2,sockets=1,cores=2,threads=1   2 cores in one L3, no SMT
#                   b  -smp 2,sockets=1,cores=1,threads=2   1 core with 2 threads
#                   c  -smp 8,sockets=2,cores=2,threads=2   2 L3s (and 2 NUMA nodes) of
#                                                           2 cores with SMT2
#   --jobs N      boots at once (default 3: all of them; TCG is single-threaded, so
#                 three guests share the 2 host cores, and the boot and the idle
#                 waits of one overlap the work of the others)
#   --cli LIST    tests/cli scripts (names without .sh; default $DEFAULT_CLI below)
#   --e2e LIST    tests/e2e scripts under runc (default none: hook.sh alone takes
#                 2-3 minutes in one guest)
#   other options go to run-vm.sh (--env, --verbose, --kernel-pkg, ...)
#
# Each guest first checks that its sysfs reports the shape (L3 shared_cpu_list,
# thread_siblings_list) and fails if not. Ends with one line per shape and
# `vm-shapes: N passed, N failed, N skipped`; exit 0 all passed, 77 QEMU, a
# static busybox, a tool the scripts need or the kernel is missing, else 1.
set -uo pipefail

VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$VM_DIR/../.." && pwd)
WORK=${CPVM_WORK:-$VM_DIR/work}
BIN=$REPO/build/cachepin
SHAPES="a b c"
JOBS=3
# The scripts whose expectations depend on the host's CPUs (how many, SMT, L3s,
# numbering) and on its cgroup layout (the guests are cgroup v2; this kind of host
# is often v1): they place real cgroups on two or more of the host's CPUs. A TCG
# guest runs them 5-15 times slower than the host, so the others, which place one
# CPU anywhere or read no host topology, stay out of the default: release_identity
# (2 minutes in a guest), recreated_cgroup, sandbox, limits, poststop_storm,
# rootless, hostile_cgroup, hostile_ledger, messages, sched (--cli runs any of
# them); hostile (2 minutes on the host), plan and hostile_topology (synthetic and
# captured topologies only) and topocache (captured sysfs dumps, not in the guest).
# measure runs threads on the guest's CPUs and checks its L3 table against the
# guest's sysfs (shape c: two L3s, so both sets run and a ratio is printed; a TCG
# guest emulates no cache, so the figures mean nothing there: docs/benchmarks.md).
DEFAULT_CLI="drift reapply lost_ledger shared_cgroup race reconcile measure"
CLI=$DEFAULT_CLI
E2E=""
PASS_ON=()

while [ $# -gt 0 ]; do
  case $1 in
    --bin) BIN=$2; shift 2 ;;
    --shapes) SHAPES=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --cli) CLI=$2; shift 2 ;;
    --e2e) E2E=$2; shift 2 ;;
    --payload|--tests|--smp|--numa|--name) echo "run-shapes-suite: $1 is set by this script" >&2; exit 2 ;;
    -h|--help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) PASS_ON+=("$1"); shift ;;
  esac
done
[[ $JOBS =~ ^[1-9][0-9]*$ ]] || { echo "run-shapes-suite: --jobs wants a positive number" >&2; exit 2; }
[ -x "$BIN" ] || { echo "run-shapes-suite: $BIN is not an executable (bash scripts/build.sh cachepin)" >&2; exit 2; }

# shape NAME: "SMP|L3s|cores|NUMA nodes", what the guest must report for -smp
# (QEMU numbers CPUs socket by socket, core by core, so SMT siblings are adjacent;
# with -cpu Skylake-Server each socket's die is one L3).
shape () {
  case $1 in
    a) echo "2,sockets=1,cores=2,threads=1|0-1|0 1|" ;;
    b) echo "2,sockets=1,cores=1,threads=2|0-1|0-1|" ;;
    c) echo "8,sockets=2,cores=2,threads=2|0-3 4-7|0-1 2-3 4-5 6-7|node,nodeid=0,cpus=0-3 node,nodeid=1,cpus=4-7" ;;
    *) return 1 ;;
  esac
}
for s in $SHAPES; do shape "$s" >/dev/null || { echo "run-shapes-suite: unknown shape '$s' (a, b, c)" >&2; exit 2; }; done

# The guest's tools beyond busybox, bash and jq (run-vm.sh stages those): what the
# scripts call that busybox lacks or has in another form.
TOOLS="strace lstopo-no-graphics flock pkill setpriv unshare"
[ -z "$E2E" ] || TOOLS+=" runc"
missing=""
for tool in qemu-system-x86_64 jq bash gzip $TOOLS; do command -v "$tool" >/dev/null || missing+=" $tool"; done
if [ ! -x "${CPVM_BUSYBOX:-/bin/busybox}" ] || ldd "${CPVM_BUSYBOX:-/bin/busybox}" >/dev/null 2>&1; then missing+=" busybox-static"; fi
if [ -n "$missing" ]; then
  echo "run-shapes-suite: SKIP: missing$missing (scripts/deps.sh installs them)"
  exit 77
fi
custom_kernel=0
for a in "${PASS_ON[@]}"; do case $a in --kernel-dir|--kernel-pkg) custom_kernel=1 ;; esac; done
if [ $custom_kernel = 0 ] && ! "$VM_DIR/run-vm.sh" --cgroup v2 --fetch-kernel >/dev/null; then
  echo "run-shapes-suite: SKIP: no kernel for cgroup v2 (apt-get update? offline?)"
  exit 77
fi

# The payload: the guest script, the test scripts as they are in the tree, the binary.
mkdir -p "$WORK"
PAYLOAD=$WORK/shapes-payload
rm -rf "$PAYLOAD"
mkdir -p "$PAYLOAD/bin"
cp "$VM_DIR/shapes-tests.sh" "$PAYLOAD/run-tests.sh"
cp -r "$REPO/tests/cli" "$PAYLOAD/cli"
cp -r "$REPO/tests/e2e" "$PAYLOAD/e2e"
cp -L "$BIN" "$PAYLOAD/bin/cachepin"
tool_args=()
for tool in $TOOLS; do tool_args+=(--host-tool "$tool"); done
echo "run-shapes-suite: $(sha256sum "$BIN" | cut -c1-16) $BIN; shapes $SHAPES, $JOBS at a time"
echo "run-shapes-suite: cli: $(echo $CLI)${E2E:+; e2e (runc): $E2E}"

start=$(date +%s)
declare -A PID_OF RC_OF
running=0
finish_one () {
  local pid rc s
  wait -n -p pid; rc=$?
  for s in $SHAPES; do [ "${PID_OF[$s]:-}" != "$pid" ] || RC_OF[$s]=$rc; done
  running=$((running - 1))
}
for s in $SHAPES; do
  IFS='|' read -r smp l3 cores numa <<<"$(shape "$s")"
  numa_args=()
  for n in $numa; do numa_args+=(--numa "$n"); done
  [ $running -lt "$JOBS" ] || finish_one
  "$VM_DIR/run-vm.sh" --cgroup v2 --smp "$smp" "${numa_args[@]}" --name "shapes-$s" \
    --payload "$PAYLOAD" "${tool_args[@]}" --timeout 900 \
    --env "CPVM_SHAPE=$s" --env "CPVM_SHAPE_L3=$l3" --env "CPVM_SHAPE_CORES=$cores" \
    --env "CPVM_SHAPE_CLI=$(echo $CLI)" --env "CPVM_SHAPE_E2E=$E2E" \
    "${PASS_ON[@]}" >"$WORK/shapes-$s.out" 2>&1 &
  PID_OF[$s]=$!
  running=$((running + 1))
done
while [ $running -gt 0 ]; do finish_one; done

passed=0 failed=0 skipped=0 rc=0
for s in $SHAPES; do
  out=$WORK/shapes-$s.out res=$WORK/shapes-$s.results
  p=$(grep -c '^CPVM-RESULT [^ ]* PASS' "$res" 2>/dev/null)
  f=$(grep -c '^CPVM-RESULT [^ ]* FAIL' "$res" 2>/dev/null)
  k=$(grep -c '^CPVM-RESULT [^ ]* SKIP' "$res" 2>/dev/null)
  status=ok
  if [ "${RC_OF[$s]}" != 0 ]; then
    status="FAILED (run-vm.sh exit ${RC_OF[$s]})"
    rc=1
    [ "${f:-0}" -gt 0 ] || f=1   # a boot that died is a failure even without a FAIL line
    grep -E '^CPVM-RESULT [^ ]* FAIL' "$res" 2>/dev/null | sed 's/^/  /'
    tail -5 "$out" | sed 's/^/  /'
  fi
  grep -E '^CPVM-RESULT [^ ]* SKIP' "$res" 2>/dev/null | sed 's/^/  /'
  passed=$((passed + ${p:-0})) failed=$((failed + ${f:-0})) skipped=$((skipped + ${k:-0}))
  printf '   shape %s  -smp %-30s %3s passed, %s failed, %s skipped  %s\n' "$s" "$(shape "$s" | cut -d'|' -f1)" \
    "${p:-0}" "${f:-0}" "${k:-0}" "$status"
done
echo "run-shapes-suite: $(($(date +%s) - start)) s; logs: $WORK/shapes-{a,b,c}.{log,results,out}"
echo "vm-shapes: $passed passed, $failed failed, $skipped skipped"
exit "$rc"
