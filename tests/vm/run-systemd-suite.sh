#!/usr/bin/env bash
# The systemd VM check: one boot of a Debian sid root file system with systemd
# as PID 1 (tests/vm/systemd-rootfs.sh), cgroup v2, running tests/vm/systemd-tests.sh:
# podman, runc --systemd-cgroup and crun --systemd-cgroup each place a container
# through the shipped hook files, then daemon-reload and a property change on
# the unit must leave cachepin's cpuset in place; then `cachepin nri` as the shipped unit
# starts it, under sid's containerd with `SystemdCgroup = true`, driven by the CRI client
# (tests/vm/systemd-nri.sh) (CTest `vm.systemd`, label `vm-systemd`).
#
#   tests/vm/run-systemd-suite.sh [--bin PATH] [--suite sid] [RUN-VM-OPTIONS...]
#
#   --bin PATH   the cachepin binary (default: build/cachepin)
#   --suite S    the Debian suite of the root file system (default sid)
#   other options go to run-vm.sh (e.g. --verbose, --kernel-suite trixie-backports
#   --kernel-pkg linux-image-7.3.4+deb13-amd64; the default kernel is bookworm's 6.12)
#
# Exit status: run-vm.sh's; 77 (skip) when the VM tools or the root file system
# cannot be had.

set -uo pipefail

VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$VM_DIR/../.." && pwd)
WORK=${CPVM_WORK:-$VM_DIR/work}
BIN=$REPO/build/cachepin
SUITE=sid
PASS_ON=()

while [ $# -gt 0 ]; do
  case $1 in
    --bin) BIN=$2; shift 2 ;;
    --suite) SUITE=$2; shift 2 ;;
    --payload|--tests|--rootfs) echo "run-systemd-suite: $1 is set by this script" >&2; exit 2 ;;
    -h|--help) sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) PASS_ON+=("$1"); shift ;;
  esac
done
skip() { echo "run-systemd-suite: SKIP: $*"; exit 77; }

[ -x "$BIN" ] || { echo "run-systemd-suite: $BIN is not an executable (build it)" >&2; exit 2; }
for tool in qemu-system-x86_64 runc jq zstd cpio; do command -v "$tool" >/dev/null || skip "missing $tool"; done
if [ ! -x "${CPVM_BUSYBOX:-/bin/busybox}" ] || ldd "${CPVM_BUSYBOX:-/bin/busybox}" >/dev/null 2>&1; then skip "missing busybox-static"; fi
rootfs=$("$VM_DIR/systemd-rootfs.sh" --suite "$SUITE") || skip "no $SUITE root file system (tests/vm/systemd-rootfs.sh)"

# The payload: the tests, the binary, and the shipped hook files pointing at it
# (deploy/hooks.d/*.json, or the *.json.in templates where they have become those).
PAYLOAD=$WORK/systemd-payload
rm -rf "$PAYLOAD"
mkdir -p "$PAYLOAD/bin" "$PAYLOAD/hooks.d"
cp "$VM_DIR/systemd-tests.sh" "$PAYLOAD/run-tests.sh"
cp "$VM_DIR/systemd-unit.sh" "$PAYLOAD/"
cp -L "$BIN" "$PAYLOAD/bin/cachepin"
n=0
for f in "$REPO"/deploy/hooks.d/*.json "$REPO"/deploy/hooks.d/*.json.in; do
  [ -f "$f" ] || continue
  out=$(basename "$f" .in)
  # The shipped timeout (10 s) is for a real machine: under TCG on a loaded host
  # a hook's start alone took longer (runc: "hook ran past specified timeout").
  jq --argjson t "${CPVM_HOOK_TIMEOUT:-120}" '.hook.path = "/payload/bin/cachepin" | .hook.timeout = $t' "$f" \
    >"$PAYLOAD/hooks.d/$out" || { echo "run-systemd-suite: $f is not JSON" >&2; exit 2; }
  n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "run-systemd-suite: no hook files in $REPO/deploy/hooks.d" >&2; exit 2; }

# The NRI check's files (payload/nri/, tests/vm/systemd-nri.sh): the CRI client with its
# stubs made here (the guest has python3-grpcio, not the generator), tests/cri/lib.sh for
# its driver, the busybox image (also the sandbox image: nothing is pulled), and the shipped
# unit with its binary's path. Without them the guest skips that check, says why.
nri_payload() {
  local HERE=$REPO/tests/cri D=$PAYLOAD/nri PY=/usr/bin/python3 STUBS=$WORK/cri-stubs
  # shellcheck disable=SC2034 # read by lib.sh's build_image
  local BUSYBOX=${CPVM_BUSYBOX:-/bin/busybox} IMAGE=localhost/cachepin-test/busybox:vm
  mkdir -p "$D"
  cp "$VM_DIR/systemd-nri.sh" "$D/"
  "$PY" -c 'import grpc_tools' 2>/dev/null || { echo "run-systemd-suite: no python3-grpc-tools: the NRI check is skipped"; return 0; }
  # shellcheck source=../cri/lib.sh
  . "$HERE/lib.sh"
  cri_stubs || { echo "run-systemd-suite: no CRI stubs (above): the NRI check is skipped"; return 0; }
  mkdir -p "$D/stubs"
  cp "$STUBS/api_pb2.py" "$STUBS/api_pb2_grpc.py" "$D/stubs/"
  cp "$HERE/cri_client.py" "$HERE/lib.sh" "$D/"
  build_image || { echo "run-systemd-suite: the busybox image could not be built" >&2; exit 2; }
  rm -rf "$D/img"
  echo "$IMAGE" >"$D/image-name"
  sed 's|@CACHEPIN_INSTALLED_BIN@|/payload/bin/cachepin|g' "$REPO/deploy/systemd/cachepin-nri.service.in" \
    >"$D/cachepin-nri.service"
  if grep -q '@[A-Z_]*@' "$D/cachepin-nri.service"; then
    echo "run-systemd-suite: cachepin-nri.service.in has a placeholder this script does not fill" >&2
    exit 2
  fi
}
nri_payload

# Two L3s of two CPUs: a cpus=2 request fits one. The rootfs is the initramfs
# (333 MB unpacked): 3 GiB. Boot to the tests takes 2-7 minutes under TCG (host load).
exec "$VM_DIR/run-vm.sh" --rootfs "$rootfs" --smp 4,sockets=1,dies=2,cores=2,threads=1 --mem 3072 \
  --payload "$PAYLOAD" --name "systemd-$SUITE" --timeout 1500 "${PASS_ON[@]}"
