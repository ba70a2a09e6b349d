#!/usr/bin/env bash
# `cachepin nri --kubelet-plugin --dra-node` end to end: a real API server (tests/dra/lib.sh),
# the kubelet stand-in (standin-lib.sh) and the NRI emulator; tests/dra/kubelet.py says what
# it checks. The agent's rules: its slices, and get on resourceclaims.
#
#   tests/dra/kubelet.sh BIN
#
# Exit 77 (skipped): not root, the Debian archive unreachable and nothing cached, or what
# the emulator needs missing.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(realpath "$1")
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=standin-lib.sh
. "$HERE/standin-lib.sh"

dra_prereqs curl jq openssl

standin_fetch
dra_fetch
dra_up
DRIVER=system:serviceaccount:kube-system:cachepin
dra_publisher_rules "$DRIVER" claims
dra_run_py kubelet.py "$BIN" "$STANDIN_DIR/bin/kubelet-standin"
