#!/usr/bin/env bash
# Install, build and run every test (the README's second command; .ci/run calls it):
#   1. CTest: unit, cli, docs (the README's and docs' command blocks), e2e (real runc and
#      podman), install (cmake --install, the .deb), cri (containerd), dra (a Kubernetes API
#      server built from Debian's Go packages: tests/dra), stress-short, vm (QEMU: real kernels, runc and crun, cgroup v1 and
#      v2), vm-sched (the 7.3 kernel: cache-aware scheduling through the hook), vm-systemd
#      (a systemd PID 1 guest: podman, runc and crun with the systemd cgroup driver; about
#      2 minutes, plus about 10 to build its root file system on a fresh machine, cached
#      per ISO week in /var/cache/cachepin/vm/rootfs), vm-shapes (the CLI tests that use
#      real CPUs and cgroups, in guests of three CPU shapes: tests/vm/README.md),
#      vm-isolate (cgroup v2 partitions on the 7.3 and 6.12 kernels, docs/isolation.md);
#   2. the unit and CLI tests again under ASan+UBSan (scripts/sanitize.sh);
#   3. the unit tests under valgrind (scripts/valgrind.sh);
#   4. a short libFuzzer run of every parser (scripts/fuzz.sh);
#   5. the binary built again as -DCMAKE_BUILD_TYPE=Release (-O3), warnings as errors: GCC
#      warns there about what -O2 does not see (build-release/).
# CACHEPIN_TEST_LABELS="unit|cli" bash scripts/test.sh runs only those CTest labels
# and skips 2-5 (labels are matched whole: "vm" is not "vm-sched"). The long runs have
# labels of their own, not run here: stress, fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "scripts/test.sh: run as root (the tests create cgroups and run runc)" >&2; exit 2; }
bash scripts/deps.sh
bash scripts/build.sh

labels="${CACHEPIN_TEST_LABELS:-unit|cli|docs|e2e|install|cri|dra|stress-short|vm|vm-sched|vm-systemd|vm-shapes|vm-isolate}"
(cd build && ctest --output-on-failure -L "^($labels)\$")
if [ -z "${CACHEPIN_TEST_LABELS:-}" ]; then
  echo "== sanitizers (ASan+UBSan): unit and cli"
  bash scripts/sanitize.sh
  echo "== valgrind: unit"
  bash scripts/valgrind.sh
  echo "== fuzzing: every target, short"
  bash scripts/fuzz.sh "${CACHEPIN_FUZZ_SECONDS:-15}"
  echo "== a Release build, warnings as errors"
  cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release -DCACHEPIN_WERROR=ON -DCACHEPIN_TESTS=OFF >/dev/null
  cmake --build build-release -j"$(nproc)" --target cachepin
fi
