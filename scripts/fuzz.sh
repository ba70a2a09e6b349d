#!/usr/bin/env bash
# Build the libFuzzer targets (fuzz/, clang, ASan+UBSan) into ./build-fuzz and run
# each for SECONDS (default 20) on its seed corpus, two at a time on a machine
# with two cores or more.  Fails if any target finds a crash, a leak, a
# sanitizer report or a broken invariant (the input is kept in
# build-fuzz/fuzz/artifacts/<target>/).  Prints the executions per target.
#   bash scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#   FUZZ_KEEP_CORPUS=DIR  keep the new inputs found (never written to fuzz/corpus)
#   FUZZ_JOBS=N           targets run at once (default: the number of CPUs, at most 2)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
shift || true
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(oci_state oci_config hostconfig cpulist ledger cgroup topo_codec journal nri dra_claim grpc kube publisher)
command -v clang >/dev/null || { echo "scripts/fuzz.sh: needs clang (apt-get install clang libclang-rt-14-dev)" >&2; exit 2; }

# No -Werror: clang warns where gcc (the CI build, with -Werror) does not.
CC=clang cmake -S . -B build-fuzz -DCACHEPIN_FUZZ=ON -DCACHEPIN_TESTS=OFF -DCACHEPIN_WERROR=OFF >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target fuzz_targets >build-fuzz/build.log 2>&1 \
  || { tail -n 40 build-fuzz/build.log; echo "scripts/fuzz.sh: build failed (build-fuzz/build.log)" >&2; exit 1; }

jobs=$(nproc)
[ "$jobs" -le 2 ] || jobs=2
jobs=${FUZZ_JOBS:-$jobs}
stats=$(mktemp)
logs=$(mktemp -d)
trap 'rm -rf "$stats" "$logs"' EXIT
export FUZZ_STATS=$stats
echo "fuzzing ${targets[*]} for $seconds s each, $jobs at a time"
failed=0
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} sh -c \
  'bash fuzz/run.sh build-fuzz/fuzz/fuzz_{} "$1" >"$2/{}.log" 2>&1; rc=$?; cat "$2/{}.log"; exit $rc' \
  sh "$seconds" "$logs" || failed=1

echo
printf '%-12s %14s %8s %10s %12s\n' target executions seconds exec/s "new inputs"
sort "$stats" | while read -r name execs secs new rate; do
  printf '%-12s %14s %8s %10s %12s\n' "$name" "$execs" "$secs" "$rate" "$new"
done
if [ "$failed" != 0 ]; then
  echo "scripts/fuzz.sh: a target failed (see above; inputs in build-fuzz/fuzz/artifacts/)" >&2
  exit 1
fi
