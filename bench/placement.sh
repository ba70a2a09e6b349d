#!/bin/bash
# Build and run the placement benchmark, then plot it (docs/benchmarks.md).
#   bench/placement.sh [TOPOLOGY_DIR] [BUILD_DIR]
# Writes bench/results/placement.md, bench/results/data/*.dat and bench/results/*.png.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
topologies=${1:-$src/../shared/topologies}
build=${2:-$src/build}
out=$here/results

[ -f "$build/CMakeCache.txt" ] || cmake -S "$src" -B "$build" >/dev/null
cmake --build "$build" -j2 --target bench-placement >/dev/null
"$build/bench/bench-placement" --events "${EVENTS:-10000}" --seed "${SEED:-12}" --out "$out" "$topologies"
if command -v gnuplot >/dev/null; then
  gnuplot -e "dir='$out'" "$here/placement.gnuplot"
  echo "plots: $out/*.png"
else
  echo "gnuplot not found (apt-get install gnuplot-nox): no plots" >&2
fi
