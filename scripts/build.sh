#!/usr/bin/env bash
# Configure and build cachepin into ./build (warnings are errors); an argument
# names one target (scripts/build.sh cachepin).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCACHEPIN_WERROR=ON ${CACHEPIN_CMAKE_ARGS:-} >/dev/null
cmake --build build -j"$(nproc)" ${1:+--target "$1"}
