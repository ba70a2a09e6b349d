#!/usr/bin/env bash
# The scheduler-feature VM check: one boot of a kernel with cache-aware scheduling
# (Debian's 7.3 from trixie-backports) on two L3s of 8 CPUs, running
# tests/vm/sched-tests.sh with cachepin-sched-probe and a static busy-loop program.
#
#   tests/vm/run-sched-suite.sh [--probe PATH] [--kernel-suite S] [--kernel-pkg P]
#                               [RUN-VM-OPTIONS...]
#
#   --probe PATH      cachepin-sched-probe (default: build/tests/cachepin-sched-probe)
#   --bin PATH        the cachepin binary whose hook runc runs (default: build/cachepin)
#   --kernel-suite S  default trixie-backports
#   --kernel-pkg P    default linux-image-7.3.4+deb13-amd64
#   other options go to run-vm.sh (e.g. --verbose, --env CPVM_SCHED_SAMPLES=80)
#
# Exit status: run-vm.sh's; 77 (skip) when the VM tools, a static libc or the
# kernel cannot be had.

set -uo pipefail

VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$VM_DIR/../.." && pwd)
WORK=${CPVM_WORK:-$VM_DIR/work}
PROBE=$REPO/build/tests/cachepin-sched-probe
BIN=$REPO/build/cachepin
SUITE=trixie-backports
PKG=linux-image-7.3.4+deb13-amd64
PASS_ON=()

while [ $# -gt 0 ]; do
  case $1 in
    --probe) PROBE=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --kernel-suite) SUITE=$2; shift 2 ;;
    --kernel-pkg) PKG=$2; shift 2 ;;
    --payload|--tests|--smp) echo "run-sched-suite: $1 is set by this script" >&2; exit 2 ;;
    -h|--help) sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) PASS_ON+=("$1"); shift ;;
  esac
done
skip() { echo "run-sched-suite: SKIP: $*"; exit 77; }

[ -x "$PROBE" ] || { echo "run-sched-suite: $PROBE is not an executable (build the tests)" >&2; exit 2; }
[ -x "$BIN" ] || { echo "run-sched-suite: $BIN is not an executable (build cachepin)" >&2; exit 2; }
for tool in qemu-system-x86_64 runc crun jq bash gzip gcc; do command -v "$tool" >/dev/null || skip "missing $tool"; done
if [ ! -x "${CPVM_BUSYBOX:-/bin/busybox}" ] || ldd "${CPVM_BUSYBOX:-/bin/busybox}" >/dev/null 2>&1; then skip "missing busybox-static"; fi
kdir=$("$VM_DIR/fetch-kernel.sh" --suite "$SUITE" --pkg "$PKG") || skip "cannot fetch $PKG from $SUITE"

# What the kernel was built with decides what the guest expects.
config=$(compgen -G "$kdir/boot/config-*" | head -1 || true)
conf() {   # conf NAME: y, or n when unset, or "" without a config file
  [ -n "$config" ] || return 0
  if grep -q "^CONFIG_$1=y" "$config"; then echo y; else echo n; fi
}

PAYLOAD=$WORK/sched-payload
rm -rf "$PAYLOAD"
mkdir -p "$PAYLOAD/bin"
cp "$VM_DIR/sched-tests.sh" "$PAYLOAD/run-tests.sh"
cp -L "$PROBE" "$PAYLOAD/bin/cachepin-sched-probe"
for prog in busy3 cas-watch; do
  gcc -O1 -static -pthread -o "$PAYLOAD/bin/$prog" "$VM_DIR/$prog.c" 2>"$WORK/sched-$prog.err" ||
    skip "cannot link a static program: $(head -3 "$WORK/sched-$prog.err")"
done

exec "$VM_DIR/run-vm.sh" --kernel-dir "$kdir" --smp 16,sockets=1,dies=2,cores=4,threads=2 \
  --payload "$PAYLOAD" --name sched-7.3 --timeout 900 --bin "$BIN" --host-tool flock \
  --env "CPVM_SCHED_CONFIG_CACHE=$(conf SCHED_CACHE)" --env "CPVM_SCHED_CONFIG_CORE=$(conf SCHED_CORE)" \
  "${PASS_ON[@]}"
