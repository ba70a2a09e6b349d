#!/usr/bin/env bash
# The cluster benchmark's full run (docs/benchmarks.md, "Scheduling strict L3 requests"):
# builds bench-cluster, runs it at two loads on the captured topologies (when
# TOPOLOGY_DIR is a folder) and on the synthetic ones, and writes the tables with
# the commands that made them to bench/results/cluster.md.  A few minutes on 2 cores.
#   bench/cluster.sh [TOPOLOGY_DIR [BUILD_DIR]]      NODES=, PODS=, SEED= change the run
set -euo pipefail
cd "$(dirname "$0")/.."
topologies=${1:-../shared/topologies}
build=${2:-build}
nodes=${NODES:-64}
pods=${PODS:-50000}
seed=${SEED:-34}
[ -f "$build/CMakeCache.txt" ] || cmake -S . -B "$build" >/dev/null
cmake --build "$build" --target bench-cluster >/dev/null
out=bench/results/cluster.md
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
  echo "# Cluster benchmark: scheduling strict L3 requests"
  echo
  echo "Made by \`bench/cluster.sh\` ($(date -u +%Y-%m-%d), $(git rev-parse --short HEAD 2>/dev/null || echo '?'));"
  echo "what it models and what each column means: docs/benchmarks.md."
  for set in captured synthetic; do
    if [ "$set" = captured ]; then
      [ -d "$topologies" ] || { echo; echo "(no captured topologies at $topologies: skipped)"; continue; }
      src=$topologies
    else
      src=none
    fi
    for load in 0.85 0.95; do
      cmd="bench-cluster --nodes $nodes --pods $pods --load $load --strict 0.5 --seed $seed --topologies $src"
      echo
      echo "## $set topologies, load $load"
      echo
      echo "\`$cmd\`"
      echo
      "$build"/bench/$cmd --check
    done
  done
} >"$tmp"
mv "$tmp" "$out"
trap - EXIT
echo "wrote $out"
