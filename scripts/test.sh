#!/usr/bin/env bash
# Install, build and run every test (the README's second command; .ci/run calls it).
#   CACHEPIN_TEST_LABELS="unit|cli" bash scripts/test.sh   to run a subset.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "scripts/test.sh: run as root (the tests create cgroups and run runc)" >&2; exit 2; }
bash scripts/deps.sh
bash scripts/build.sh
cd build
labels="${CACHEPIN_TEST_LABELS:-}"
if [ -n "$labels" ]; then
  ctest --output-on-failure -L "$labels"
else
  ctest --output-on-failure
fi
