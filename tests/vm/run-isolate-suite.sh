#!/usr/bin/env bash
# cachepin.io/isolate on real kernels (issue 23, docs/isolation.md): tests/vm/isolate-tests.sh
# in three boots, one at a time:
#   7.3   Debian's linux-image-7.3.4+deb13-amd64 (trixie-backports), cgroup v2: the partitions
#   6.12  the harness's v2 default (bookworm's linux-image-6.12-amd64): the partitions
#   6.1   the harness's v1 default (bookworm's linux-image-amd64), cgroup v1: the "unsupported" line
# each with 8 CPUs, two sockets (two L3s), two NUMA nodes of four cores, no SMT.
#
#   tests/vm/run-isolate-suite.sh [--bin PATH] [--crash PATH] [--kernels "7.3 6.12 6.1"]
#                                 [RUN-VM-OPTIONS...]
#
#   --bin PATH     the cachepin binary (default: build/cachepin)
#   --crash PATH   cachepin-isolate-crash (default: build/tests/cachepin-isolate-crash; without
#                  it the crash section is skipped)
#   --kernels L    which boots (default "7.3 6.12 6.1")
#   other options go to run-vm.sh (e.g. --verbose, --env CPVM_ISO_SECTIONS="apply release")
#
# Ends with `vm-isolate: N passed, N failed, N skipped` and a line per boot with its seconds;
# exit status: the first failing boot's run-vm.sh status, 0 when all passed, 77 (skip) when
# the VM tools or a kernel cannot be had.

set -uo pipefail

VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$VM_DIR/../.." && pwd)
WORK=${CPVM_WORK:-$VM_DIR/work}
BIN=$REPO/build/cachepin
CRASH=$REPO/build/tests/cachepin-isolate-crash
KERNELS="7.3 6.12 6.1"
PASS_ON=()

while [ $# -gt 0 ]; do
  case $1 in
    --bin) BIN=$2; shift 2 ;;
    --crash) CRASH=$2; shift 2 ;;
    --kernels) KERNELS=$2; shift 2 ;;
    --payload|--tests|--smp|--numa|--cgroup|--kernel-dir) echo "run-isolate-suite: $1 is set by this script" >&2; exit 2 ;;
    -h|--help) sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) PASS_ON+=("$1"); shift ;;
  esac
done
skip() { echo "run-isolate-suite: SKIP: $*"; exit 77; }

[ -x "$BIN" ] || { echo "run-isolate-suite: $BIN is not an executable (build cachepin)" >&2; exit 2; }
for tool in qemu-system-x86_64 runc jq bash gzip; do command -v "$tool" >/dev/null || skip "missing $tool"; done
if [ ! -x "${CPVM_BUSYBOX:-/bin/busybox}" ] || ldd "${CPVM_BUSYBOX:-/bin/busybox}" >/dev/null 2>&1; then skip "missing busybox-static"; fi

PAYLOAD=$WORK/isolate-payload
rm -rf "$PAYLOAD"
mkdir -p "$PAYLOAD/bin"
cp "$VM_DIR/isolate-tests.sh" "$PAYLOAD/run-tests.sh"
cp -L "$BIN" "$PAYLOAD/bin/cachepin"
if [ -x "$CRASH" ]; then cp -L "$CRASH" "$PAYLOAD/bin/cachepin-isolate-crash"; else echo "run-isolate-suite: no $CRASH: the crash section is skipped" >&2; fi

SMP=8,sockets=2,dies=1,cores=4,threads=1
NUMA=(--numa node,nodeid=0,cpus=0-3 --numa node,nodeid=1,cpus=4-7)
# kernel_args NAME: run-vm.sh's kernel and cgroup options for a boot.
kernel_args() {
  case $1 in
    7.3)
      local kdir
      kdir=$("$VM_DIR/fetch-kernel.sh" --suite trixie-backports --pkg linux-image-7.3.4+deb13-amd64) || return 1
      echo "--kernel-dir $kdir --cgroup v2" ;;
    6.12) echo "--cgroup v2" ;;
    6.1) echo "--cgroup v1" ;;
    *) return 1 ;;
  esac
}

first_fail=0 pass=0 fail=0 skipped=0 summary=""
for k in $KERNELS; do
  args=$(kernel_args "$k") || skip "cannot fetch the $k kernel"
  start=$SECONDS
  # shellcheck disable=SC2086 # the kernel options are words
  "$VM_DIR/run-vm.sh" $args --smp $SMP "${NUMA[@]}" --payload "$PAYLOAD" --name "isolate-$k" \
    --timeout 900 "${PASS_ON[@]}" >"$WORK/isolate-$k.out" 2>&1
  rc=$?
  tail -1 "$WORK/isolate-$k.out"
  read -r p f s < <(awk '/^CPVM-RESULT/ {n[$3]++} END {print n["PASS"]+0, n["FAIL"]+0, n["SKIP"]+0}' "$WORK/isolate-$k.results" 2>/dev/null)
  pass=$((pass + ${p:-0})) fail=$((fail + ${f:-0})) skipped=$((skipped + ${s:-0}))
  if [ $rc -ne 0 ]; then
    grep '^CPVM-RESULT .* FAIL' "$WORK/isolate-$k.results" 2>/dev/null
    [ "${f:-0}" -gt 0 ] || fail=$((fail + 1))
    [ $first_fail -ne 0 ] || first_fail=$rc
  fi
  summary+="  $k: exit $rc, ${p:-0} passed, ${f:-0} failed, ${s:-0} skipped, $((SECONDS - start)) s"$'\n'
done
printf '%s' "$summary"
echo "vm-isolate: $pass passed, $fail failed, $skipped skipped"
exit $first_fail
