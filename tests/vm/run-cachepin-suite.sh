#!/usr/bin/env bash
# The cachepin VM suite: tests/vm/cachepin-tests.sh (and tests/e2e/hook.sh under
# runc and crun) in four boots, cgroup v2 and v1 on the 2s2d and odd18
# topologies, with a given cachepin binary.
#
#   tests/vm/run-cachepin-suite.sh [--bin PATH] [--e2e-dir DIR] [--jobs N] [--matrix M]
#                                  [--prefix P] [RUN-VM-OPTIONS...]
#
#   --bin PATH   the cachepin binary to test (default: build/cachepin)
#   --e2e-dir D  where hook.sh and lib.sh come from (default: tests/e2e)
#   --jobs N     boots at once (default 2: one per host core)
#   --matrix M   CGROUP:TOPOLOGY words (default "v2:2s2d v1:2s2d v2:odd18 v1:odd18"; the
#                guest shares the slow checks out over these four, see
#                CACHEPIN_VM_SPLIT in cachepin-tests.sh: v2:2s2d is the longest boot;
#                each boot may take 780 s: two at a time on 2 cores, a TCG guest
#                running runc's e2e took over 540 s on a clean CI run)
#   --prefix P   run names P-CGROUP-TOPOLOGY, logs in tests/vm/work/ (default cachepin)
#   other options go to run-vm.sh, e.g. --env CACHEPIN_VM_RUNTIMES=crun,
#   --env CACHEPIN_VM_SECTIONS="pe0 strict", --env CACHEPIN_VM_SPLIT=none (every
#   check under both runtimes in every boot: about twice as long),
#   --env CPVM_DUMP_SYSLOG=1
#
# Ends with `vm-suite: N passed, N failed, N skipped`. Exit status: 0 all boots
# passed; 77 the VM tools or kernels are missing (skip); else the first failing
# boot's status.

set -uo pipefail

VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$VM_DIR/../.." && pwd)
WORK=${CPVM_WORK:-$VM_DIR/work}
BIN=$REPO/build/cachepin
E2E_DIR=$REPO/tests/e2e
JOBS=2
MATRIX="v2:2s2d v1:2s2d v2:odd18 v1:odd18"
PREFIX=cachepin
PASS_ON=()

while [ $# -gt 0 ]; do
  case $1 in
    --bin) BIN=$2; shift 2 ;;
    --e2e-dir) E2E_DIR=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --matrix) MATRIX=$2; shift 2 ;;
    --prefix) PREFIX=$2; shift 2 ;;
    --payload|--tests) echo "run-cachepin-suite: $1 is set by this script" >&2; exit 2 ;;
    -h|--help) sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) PASS_ON+=("$1"); shift ;;
  esac
done

[ -x "$BIN" ] || { echo "run-cachepin-suite: $BIN is not an executable (bash scripts/build.sh cachepin)" >&2; exit 2; }
missing=""
for tool in qemu-system-x86_64 runc crun jq bash gzip; do command -v "$tool" >/dev/null || missing+=" $tool"; done
if [ ! -x "${CPVM_BUSYBOX:-/bin/busybox}" ] || ldd "${CPVM_BUSYBOX:-/bin/busybox}" >/dev/null 2>&1; then missing+=" busybox-static"; fi
if [ -n "$missing" ]; then
  echo "run-cachepin-suite: SKIP: missing$missing (see tests/vm/README.md)"
  exit 77
fi

# The kernels (fetched once with apt-get download, then cached in /var/cache/cachepin/vm/kernels).
custom_kernel=0
for a in "${PASS_ON[@]}"; do case $a in --kernel-dir|--kernel-pkg) custom_kernel=1 ;; esac; done
if [ $custom_kernel = 0 ]; then
  for cg in $(tr ' ' '\n' <<<"$MATRIX" | cut -d: -f1 | sort -u); do
    if ! "$VM_DIR/run-vm.sh" --cgroup "$cg" --fetch-kernel >/dev/null; then
      echo "run-cachepin-suite: SKIP: no kernel for cgroup $cg (apt-get update? offline?)"
      exit 77
    fi
  done
fi

# The payload: the guest script, the e2e scripts it also runs, and the binary
# (run-vm.sh adds its libraries).
PAYLOAD=$WORK/$PREFIX-payload
rm -rf "$PAYLOAD"
mkdir -p "$PAYLOAD/bin" "$PAYLOAD/e2e"
cp "$VM_DIR/cachepin-tests.sh" "$PAYLOAD/run-tests.sh"
cp "$E2E_DIR/hook.sh" "$E2E_DIR/lib.sh" "$PAYLOAD/e2e/" || exit 2
cp -L "$BIN" "$PAYLOAD/bin/cachepin"
echo "run-cachepin-suite: $(sha256sum "$BIN" | cut -c1-16) $BIN; $MATRIX; $JOBS at a time"

start=$(date +%s)
OUT=$WORK/$PREFIX-suite.out
"$VM_DIR/run-suite.sh" --jobs "$JOBS" --matrix "$MATRIX" --prefix "$PREFIX" \
  --payload "$PAYLOAD" --timeout 780 "${PASS_ON[@]}" 2>&1 | tee "$OUT" | grep -v '^vm-suite: '
rc=${PIPESTATUS[0]}
echo "run-cachepin-suite: $(($(date +%s) - start)) s in all; logs: $WORK/$PREFIX-*.log"
line=$(grep '^vm-suite: ' "$OUT" | tail -1)
if [ -z "$line" ]; then
  line="vm-suite: 0 passed, 1 failed, 0 skipped"
  [ "$rc" != 0 ] || rc=1
fi
echo "$line"
exit "$rc"
