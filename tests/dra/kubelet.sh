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

[ "$(id -u)" = 0 ] || skip "needs root (the cache in /var/cache/cachepin)"
for t in curl jq openssl; do command -v $t >/dev/null || skip "$t not installed"; done

standin_fetch
dra_fetch
dra_up
DRIVER=system:serviceaccount:kube-system:cachepin
jq --arg u "$DRIVER" '.users[$u] = [
  {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["list", "watch", "create", "update", "delete"]},
  {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get"]}]' \
  "$DRA_D/rules.json" >"$DRA_D/rules.new" && mv "$DRA_D/rules.new" "$DRA_D/rules.json"
dra_api_restart
dra_token driver "$DRIVER" system:serviceaccounts >"$DRA_D/token"
echo "$API_PID" >"$DRA_D/api.pid"
trap 'API_PID=$(cat "$DRA_D/api.pid" 2>/dev/null || echo "$API_PID"); dra_down' EXIT
rc=0
DRA_URL=$DRA_URL DRA_D=$DRA_D ADMIN_TOKEN=$ADMIN_TOKEN DRIVER=$DRIVER \
  /usr/bin/python3 "$HERE/kubelet.py" "$BIN" "$STANDIN_DIR/bin/kubelet-standin" || rc=$?
[ "$rc" = 0 ] || { [ "$rc" = 77 ] || dra_logs; exit "$rc"; }
echo "PASS"
