#!/usr/bin/env bash
# Build the Debian package from this tree: configure in a build directory of its
# own (prefix /usr, as the package installs; no tests), build the binary, and run
# `cpack -G DEB` (CMakeLists.txt, "the Debian package").  Prints the path of the .deb.
#   bash packaging/build-deb.sh [BUILD_DIR]      (default: build-deb)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-deb}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
  -DCACHEPIN_TESTS=OFF -DCACHEPIN_BENCH=OFF -DCACHEPIN_WERROR=ON ${CACHEPIN_CMAKE_ARGS:-} >/dev/null
cmake --build "$dir" -j"$(nproc)" --target cachepin >/dev/null
(cd "$dir" && cpack -G DEB >cpack.log 2>&1) || { cat "$dir/cpack.log" >&2; exit 1; }
ls "$(cd "$dir" && pwd)"/cachepin_*.deb
