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

[ "$(id -u)" = 0 ] || skip "needs root (the cache in /var/cache/cachepin)"
for t in curl jq openssl; do command -v $t >/dev/null || skip "$t not installed"; done

dra_fetch
dra_up
DRIVER=system:serviceaccount:kube-system:cachepin
jq --arg u "$DRIVER" '.users[$u] = [
  {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["list", "watch", "create", "update", "delete"]}]' \
  "$DRA_D/rules.json" >"$DRA_D/rules.new" && mv "$DRA_D/rules.new" "$DRA_D/rules.json"
dra_api_restart
dra_token driver "$DRIVER" system:serviceaccounts >"$DRA_D/token"
echo "$API_PID" >"$DRA_D/api.pid"
# agent.py may start the API server again: the one to stop is the one it names.
trap 'API_PID=$(cat "$DRA_D/api.pid" 2>/dev/null || echo "$API_PID"); dra_down' EXIT
rc=0
DRA_URL=$DRA_URL DRA_D=$DRA_D ADMIN_TOKEN=$ADMIN_TOKEN DRIVER=$DRIVER \
  /usr/bin/python3 "$HERE/agent.py" "$BIN" || rc=$?
[ "$rc" = 0 ] || { [ "$rc" = 77 ] || dra_logs; exit "$rc"; }
echo "PASS"
