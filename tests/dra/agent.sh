#!/usr/bin/env bash
# `cachepin nri --dra-node` against a real API server (tests/dra/lib.sh) and the NRI
# runtime emulator: tests/dra/agent.py says what it checks. The agent's rules are its
# slices only.
#
#   tests/dra/agent.sh BIN
#
# Exit 77 (skipped): not root, the Debian archive unreachable and nothing cached, or what
# the emulator needs missing.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(realpath "$1")
# shellcheck source=lib.sh
. "$HERE/lib.sh"

dra_prereqs curl jq openssl

dra_fetch
dra_up
DRIVER=system:serviceaccount:kube-system:cachepin
dra_publisher_rules "$DRIVER"
# agent.py may start the API server again: dra_run_py stops the one it names.
dra_run_py agent.py "$BIN"
