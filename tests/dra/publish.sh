#!/usr/bin/env bash
# `cachepin dra publish` and `unpublish` against a real API server (tests/dra/lib.sh):
# the node's slices published equal `cachepin dra slice --json`'s; a second round writes
# nothing; a change of the node's capacity publishes a new pool generation; a slice
# deleted or edited by someone else is put back; a token rotated between rounds keeps
# working; a refused token is one line that does not hold the token; the API server
# restarted, the next round catches up; unpublish removes the node's slices and no one
# else's. Synthetic topology (8 L3s of 8 CPUs), so the slices are the same on any host.
#
#   tests/dra/publish.sh BIN
#
# Exit 77 (skipped): not root, or the Debian archive unreachable and nothing cached.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(realpath "$1")
# shellcheck source=lib.sh
. "$HERE/lib.sh"

dra_prereqs curl jq openssl

dra_fetch
dra_up
G=/apis/resource.k8s.io/v1
DRIVER=system:serviceaccount:kube-system:cachepin
TOPO='package:2 numa:1 l3cache:4 core:4 pu:2(indexes=core)'
NODE=node-a
dra_publisher_rules "$DRIVER"
TOK=$(cat "$DRA_D/token")
echo '{}' >"$DRA_D/config.json"

pub () { # pub VERB [ARGS]: one round; its JSON line in $DRA_D/round, stderr in $DRA_D/err
  local verb=$1; shift
  "$BIN" dra "$verb" --node "$NODE" --kube-api "$DRA_URL" --kube-ca "$DRA_D/ca.crt" --kube-token-file "$DRA_D/token" \
    --json "$@" >"$DRA_D/round" 2>"$DRA_D/err"
}
round () { jq -r "$1" "$DRA_D/round"; }
listed () { kc "$ADMIN_TOKEN" GET "$G/resourceslices?fieldSelector=spec.nodeName=$NODE"; }
# same GENERATION [slice args]: the listed slices' specs are `dra slice --json`'s
same () {
  local gen=$1; shift
  "$BIN" dra slice --node "$NODE" --generation "$gen" --json "$@" | jq -s -S 'map(.spec) | sort_by(.pool.name)' >"$DRA_D/want"
  listed | jq -S '[.items[].spec] | sort_by(.pool.name)' >"$DRA_D/got"
  # what the server adds (defaults) aside: every field we sent is there as sent
  jq -e -n --slurpfile w "$DRA_D/want" --slurpfile g "$DRA_D/got" '
    def sub($a; $b): if ($a | type) != ($b | type) then false
      elif ($a | type) == "object" then all($a | keys[]; . as $k | ($b | has($k)) and sub($a[$k]; $b[$k]))
      elif ($a | type) == "array" then ($a | length) == ($b | length) and all(range($a | length); sub($a[.]; $b[.]))
      else $a == $b end;
    sub($w[0]; $g[0])' \
    >/dev/null || fail "the listed slices differ from dra slice --json: $(diff "$DRA_D/want" "$DRA_D/got" | head -20)"
}

echo "== publish"
pub publish --topology "$TOPO" || fail "publish: $(cat "$DRA_D/err")"
[ "$(round .created)/$(round .generation)" = 1/1 ] || fail "the first round: $(cat "$DRA_D/round")"
same 1 --topology "$TOPO"
echo "ok: one slice of 8 devices created, generation 1, equal to dra slice --json"

pub publish --topology "$TOPO" || fail "publish again: $(cat "$DRA_D/err")"
[ "$(round .unchanged)/$(round .generation)" = true/1 ] || fail "a second round wrote: $(cat "$DRA_D/round")"
echo "ok: a second round writes nothing"

echo "== the node's capacity changes: a new generation"
echo '{"reserved": "0,32"}' >"$DRA_D/config.json"
pub publish --topology "$TOPO" --config "$DRA_D/config.json" || fail "publish: $(cat "$DRA_D/err")"
[ "$(round .updated)/$(round .generation)" = 1/2 ] || fail "after reserved changed: $(cat "$DRA_D/round")"
same 2 --topology "$TOPO" --config "$DRA_D/config.json"
listed | jq -e '.items[0].spec.devices[0].capacity.cpus.value == "6"' >/dev/null || fail "l3-0's capacity is not 6"
echo "ok: reserved 0,32: generation 2, l3-0's capacity 6"

echo "== someone else's edits are undone"
kc "$ADMIN_TOKEN" GET "$G/resourceslices/$NODE-cachepin.io-0" | jq -c '.spec.devices[0].capacity.cpus.value = "99"' >"$DRA_D/edit"
kc "$ADMIN_TOKEN" PUT "$G/resourceslices/$NODE-cachepin.io-0" --data-binary "@$DRA_D/edit" >/dev/null
[ "$(status)" = 200 ] || fail "the edit: HTTP $(status)"
pub publish --topology "$TOPO" --config "$DRA_D/config.json" || fail "publish: $(cat "$DRA_D/err")"
[ "$(round .updated)/$(round .generation)" = 1/3 ] || fail "after an edit: $(cat "$DRA_D/round")"
same 3 --topology "$TOPO" --config "$DRA_D/config.json"
kc "$ADMIN_TOKEN" DELETE "$G/resourceslices/$NODE-cachepin.io-0" >/dev/null
pub publish --topology "$TOPO" --config "$DRA_D/config.json" || fail "publish: $(cat "$DRA_D/err")"
# The command remembers nothing between runs: one past the server's, which lists none now
# (the agent remembers its own: dra.agent).
[ "$(round .created)/$(round .generation)" = 1/1 ] || fail "after a delete: $(cat "$DRA_D/round")"
same 1 --topology "$TOPO" --config "$DRA_D/config.json"
echo "ok: an edited slice updated (generation 3), a deleted one created again (generation 1: none listed)"

echo "== 200 L3s: two slices, and back to one"
BIG='package:2 l3cache:100 core:1 pu:1'
pub publish --topology "$BIG" || fail "publish: $(cat "$DRA_D/err")"
[ "$(round .created)/$(round .updated)/$(round .generation)" = 1/1/2 ] || fail "200 devices: $(cat "$DRA_D/round")"
same 2 --topology "$BIG"
pub publish --topology "$TOPO" --config "$DRA_D/config.json" || fail "publish: $(cat "$DRA_D/err")"
[ "$(round .updated)/$(round .deleted)/$(round .generation)" = 1/1/3 ] || fail "back to 8: $(cat "$DRA_D/round")"
same 3 --topology "$TOPO" --config "$DRA_D/config.json"
echo "ok: 200 devices as two slices (one created), then one slice again (one deleted)"

echo "== a token rotated"
TOK2=$(dra_token driver2 "$DRIVER" system:serviceaccounts)
printf '%s\n' "$TOK2" >"$DRA_D/token.new" && mv "$DRA_D/token.new" "$DRA_D/token"
dra_token_drop "$TOK"
echo '{}' >"$DRA_D/config.json"
pub publish --topology "$TOPO" --config "$DRA_D/config.json" || fail "publish with the new token: $(cat "$DRA_D/err")"
[ "$(round .generation)" = 4 ] || fail "with the new token: $(cat "$DRA_D/round")"
echo "ok: the new token publishes generation 4"

echo "== a refused token: one line, without the token"
dra_token_drop "$TOK2"
if pub publish --topology "$TOPO"; then fail "published with a dropped token"; else rc=$?; fi
[ "$rc" = 2 ] || fail "a refused token: exit $rc, not 2: $(cat "$DRA_D/err")"
[ "$(wc -l <"$DRA_D/err")" = 1 ] || fail "a refused token: not one line: $(cat "$DRA_D/err")"
grep -q 'HTTP 401' "$DRA_D/err" || fail "a refused token: no HTTP 401: $(cat "$DRA_D/err")"
! grep -q -F -e "$TOK2" -e "${TOK2#driver2-}" "$DRA_D/err" || fail "the error holds the token"
echo "ok: $(cat "$DRA_D/err")"
TOK3=$(dra_token driver3 "$DRIVER" system:serviceaccounts)
printf '%s\n' "$TOK3" >"$DRA_D/token.new" && mv "$DRA_D/token.new" "$DRA_D/token"

echo "== no server: one line naming it"
dra_stop_api
if pub publish --topology "$TOPO"; then fail "published with the API server stopped"; else rc=$?; fi
[ "$rc" = 1 ] && [ "$(wc -l <"$DRA_D/err")" = 1 ] && grep -q -F "$DRA_URL" "$DRA_D/err" \
  || fail "the server stopped: exit $rc: $(cat "$DRA_D/err")"
echo "ok: $(cat "$DRA_D/err")"

echo "== the API server restarted: the next round catches up"
dra_start_api; dra_served
echo '{"reserved": "4"}' >"$DRA_D/config.json"
pub publish --topology "$TOPO" --config "$DRA_D/config.json" || fail "publish after the restart: $(cat "$DRA_D/err")"
[ "$(round .updated)/$(round .generation)" = 1/5 ] || fail "after the restart: $(cat "$DRA_D/round")"
same 5 --topology "$TOPO" --config "$DRA_D/config.json"
echo "ok: generation 5 after the restart"

echo "== unpublish"
kc "$ADMIN_TOKEN" POST "$G/resourceslices" --data "$("$BIN" dra slice --node node-b --topology "$TOPO" --json)" >/dev/null
[ "$(status)" = 201 ] || fail "node-b's slice: HTTP $(status)"
pub unpublish || fail "unpublish: $(cat "$DRA_D/err")"
[ "$(round .deleted)" = 1 ] || fail "unpublish: $(cat "$DRA_D/round")"
[ "$(listed | jq '.items | length')" = 0 ] || fail "node-a's slices left after unpublish"
kc "$ADMIN_TOKEN" GET "$G/resourceslices/node-b-cachepin.io-0" >/dev/null
[ "$(status)" = 200 ] || fail "unpublish removed node-b's slice"
pub unpublish || fail "unpublish again: $(cat "$DRA_D/err")"
[ "$(round .unchanged)" = true ] || fail "a second unpublish: $(cat "$DRA_D/round")"
echo "ok: node-a's slices deleted, node-b's kept; a second unpublish writes nothing"

dra_down
trap - EXIT
echo "PASS"
