#!/usr/bin/env bash
# The DRA tests' API server on its own (tests/dra/lib.sh, fetch-apiserver.sh): brought up
# from Debian's packages, it serves the resource.k8s.io/v1 kinds as the later tests use them:
# a ResourceSlice and a ResourceClaim created and listed with a token, a field selector on
# spec.nodeName, the claim's status written through its status subresource, a watch from a
# resourceVersion, the schema's limits that the driver relies on (required fields, enums,
# maxItems) refused with 422, RBAC rules (401 without a token, 403 outside the rules), a
# token rotated mid-run, and the data and the watch history kept across a restart of the
# API server. Prints the cold build's and the warm start's seconds.
#
#   tests/dra/apiserver.sh
#
# Exit 77 (skipped): not root (it writes /var/cache/cachepin), or the Debian archive
# unreachable and nothing cached.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

dra_prereqs curl jq openssl

dra_fetch
t0=$(date +%s.%N)
dra_up
t1=$(date +%s.%N)
echo "cold build: $(cat "$APISERVER_DIR/build-seconds" 2>/dev/null || echo '?') s (once per version, $APISERVER_DIR)"
echo "warm start: $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s (etcd, the API server ready, 4 CRDs established)"

G=/apis/resource.k8s.io/v1
DRIVER=system:serviceaccount:kube-system:cachepin
expect () { # expect CODE WHAT: the last request's HTTP status was CODE
  [ "$(status)" = "$1" ] || fail "$2: HTTP $(status), not $1: $(head -c 400 "$DRA_D/last" 2>/dev/null)"
  echo "ok: $2 (HTTP $1)"
}
req () { kc "$@" >"$DRA_D/last"; cat "$DRA_D/last"; }

# The driver's rules, as a ClusterRole would grant them: its slices, the claims it
# prepares (read, and their status), nothing else.
jq --arg u "$DRIVER" '.users[$u] = [
  {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
  {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get", "list", "watch"]},
  {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/status"], "verbs": ["update", "patch"]}]' \
  "$DRA_D/rules.json" >"$DRA_D/rules.new" && mv "$DRA_D/rules.new" "$DRA_D/rules.json"
dra_api_restart # the rules are read at start
TOK=$(dra_token driver "$DRIVER" system:serviceaccounts)

echo "== authentication and rules"
req "" GET $G/resourceslices >/dev/null; expect 401 "no token"
req "not-a-token" GET $G/resourceslices >/dev/null; expect 401 "an unknown token"
req "$TOK" GET $G/resourceslices >/dev/null; expect 200 "the driver lists slices"
req "$TOK" POST $G/deviceclasses --data '{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":"x"},"spec":{}}' >/dev/null
expect 403 "the driver creates a DeviceClass (not in its rules)"
req "$TOK" DELETE $G/namespaces/default/resourceclaims/none >/dev/null; expect 403 "the driver deletes a claim"

echo "== a ResourceSlice"
slice () { # slice NAME NODE: one device per L3 with a consumable CPU capacity
  cat <<EOF
{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"$1"},
 "spec":{"driver":"cachepin.io","nodeName":"$2","pool":{"name":"$2","generation":1,"resourceSliceCount":1},
  "devices":[{"name":"l3-0","allowMultipleAllocations":true,
    "attributes":{"cachepin.io/l3":{"int":0},"cachepin.io/numa":{"int":0},"cachepin.io/cpuKind":{"string":"performance"}},
    "capacity":{"cachepin.io/cpus":{"value":"16"}}}]}}
EOF
}
req "$TOK" POST $G/resourceslices --data "$(slice node-a-cachepin.io node-a)" >/dev/null
expect 201 "the driver creates node-a's slice"
req "$TOK" POST $G/resourceslices --data "$(slice node-b-cachepin.io node-b)" >/dev/null
expect 201 "the driver creates node-b's slice"
req "$TOK" GET "$G/resourceslices?fieldSelector=spec.nodeName=node-a" >"$DRA_D/list"; expect 200 "list by spec.nodeName"
[ "$(jq -r '[.items[].metadata.name] | join(",")' "$DRA_D/list")" = node-a-cachepin.io ] \
  || fail "the field selector spec.nodeName=node-a gave $(jq -c '[.items[].metadata.name]' "$DRA_D/list")"
[ "$(jq -r '.items[0].spec.devices[0].capacity["cachepin.io/cpus"].value' "$DRA_D/list")" = 16 ] \
  || fail "the capacity did not come back as written"
echo "ok: the field selector gives node-a's slice alone, its capacity as written"
SLICE_UID=$(req "$TOK" GET $G/resourceslices/node-a-cachepin.io | jq -r .metadata.uid)

echo "== the schema's limits (422, naming the field)"
refused () { # refused WHAT FIELD PATH BODY
  req "$ADMIN_TOKEN" POST "$3" --data "$4" >/dev/null
  expect 422 "$1"
  grep -q -- "$2" "$DRA_D/last" || fail "$1: the answer does not name $2: $(head -c 400 "$DRA_D/last")"
}
refused "a slice without spec.driver" spec.driver $G/resourceslices "$(slice bad-1 node-a | jq -c 'del(.spec.driver)')"
refused "a device with 5 bindingConditions (at most 4)" bindingConditions $G/resourceslices \
  "$(slice bad-2 node-a | jq -c '.spec.devices[0].bindingConditions = ["a","b","c","d","e"]')"
refused "a pool without a generation" spec.pool.generation $G/resourceslices "$(slice bad-3 node-a | jq -c 'del(.spec.pool.generation)')"

echo "== a ResourceClaim and its status"
claim='{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"claim-a","namespace":"default"},
 "spec":{"devices":{"requests":[{"name":"cpus","exactly":{"deviceClassName":"cachepin.io-l3-cpus",
   "capacity":{"requests":{"cachepin.io/cpus":"8"}}}}]}}}'
refused "a request whose allocationMode is not an enum value" allocationMode $G/namespaces/default/resourceclaims \
  "$(echo "$claim" | jq -c '.spec.devices.requests[0].exactly.allocationMode = "Some"')"
req "$ADMIN_TOKEN" POST $G/namespaces/default/resourceclaims --data "$claim" >/dev/null; expect 201 "create claim-a"
req "$TOK" GET $G/namespaces/default/resourceclaims >"$DRA_D/list"; expect 200 "the driver lists claims"
RV=$(jq -r .metadata.resourceVersion "$DRA_D/list")
[ "$(jq -r '.items[0].metadata.name' "$DRA_D/list")" = claim-a ] || fail "claim-a not listed"

# A watch from the list's resourceVersion, then the allocation written as the scheduler's
# allocator would (first fit, the consumed capacity) through the status subresource.
curl -sS -N --cacert "$DRA_D/ca.crt" -H "Authorization: Bearer $TOK" --max-time 20 \
  "$DRA_URL$G/namespaces/default/resourceclaims?watch=1&resourceVersion=$RV" >"$DRA_D/watch" 2>/dev/null &
WATCH=$!
got=$(req "$ADMIN_TOKEN" GET $G/namespaces/default/resourceclaims/claim-a)
alloc='{"devices":{"results":[{"request":"cpus","driver":"cachepin.io","pool":"node-a","device":"l3-0",
  "consumedCapacity":{"cachepin.io/cpus":"8"}}]},
  "nodeSelector":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["node-a"]}]}]}}'
# Through the main resource the status is not written (a status subresource).
req "$ADMIN_TOKEN" PUT $G/namespaces/default/resourceclaims/claim-a \
  --data "$(echo "$got" | jq -c --argjson a "$alloc" '.status.allocation = $a')" >/dev/null
expect 200 "a PUT of the claim itself"
[ "$(jq -r '.status.allocation // "none"' "$DRA_D/last")" = none ] || fail "the main resource wrote the status"
got=$(req "$ADMIN_TOKEN" GET $G/namespaces/default/resourceclaims/claim-a)
req "$ADMIN_TOKEN" PUT $G/namespaces/default/resourceclaims/claim-a/status \
  --data "$(echo "$got" | jq -c --argjson a "$alloc" '.status.allocation = $a | .status.reservedFor = [{"resource":"pods","name":"pod-a","uid":"0d6d6f2a-1"}]')" >/dev/null
expect 200 "the allocation written through claim-a/status"
ALLOC_RV=$(jq -r .metadata.resourceVersion "$DRA_D/last")
# The driver writes the device's status (what the kubelet plugin reports), by patch.
req "$TOK" PATCH $G/namespaces/default/resourceclaims/claim-a/status \
  --data '{"status":{"devices":[{"driver":"cachepin.io","pool":"node-a","device":"l3-0","data":{"cpus":"0-7"}}]}}' >/dev/null
expect 200 "the driver patches claim-a's status"
for _ in $(seq 100); do
  [ "$(jq -s '[.[] | select(.type == "MODIFIED")] | length' "$DRA_D/watch" 2>/dev/null)" -ge 2 ] && break
  sleep 0.1
done
kill "$WATCH" 2>/dev/null || true; wait "$WATCH" 2>/dev/null || true
jq -e -s '[.[] | select(.type == "MODIFIED" and .object.status.allocation.devices.results[0].device == "l3-0")] | length >= 1' \
  "$DRA_D/watch" >/dev/null || fail "the watch from $RV did not see the allocation: $(head -c 600 "$DRA_D/watch")"
jq -e -s '[.[] | select(.type == "MODIFIED" and .object.status.devices[0].data.cpus == "0-7")] | length >= 1' \
  "$DRA_D/watch" >/dev/null || fail "the watch from $RV did not see the device status"
echo "ok: the watch from resourceVersion $RV saw the allocation and the device status"

echo "== a token rotated mid-run"
TOK2=$(dra_token driver2 "$DRIVER" system:serviceaccounts)
req "$TOK2" GET $G/resourceslices >/dev/null; expect 200 "the new token, the old one still valid"
req "$TOK" GET $G/resourceslices >/dev/null; expect 200 "the old token until it is dropped"
dra_token_drop "$TOK"
req "$TOK" GET $G/resourceslices >/dev/null; expect 401 "the old token, dropped"
req "$TOK2" PUT $G/resourceslices/node-b-cachepin.io \
  --data "$(req "$TOK2" GET $G/resourceslices/node-b-cachepin.io | jq -c '.spec.pool.generation = 2')" >/dev/null
expect 200 "the new token updates node-b's slice"
req "$TOK2" DELETE $G/resourceslices/node-b-cachepin.io >/dev/null; expect 200 "the new token deletes node-b's slice"

echo "== the API server restarted"
dra_api_restart
req "$TOK2" GET $G/resourceslices/node-a-cachepin.io >/dev/null; expect 200 "node-a's slice after the restart"
[ "$(jq -r .metadata.uid "$DRA_D/last")" = "$SLICE_UID" ] || fail "node-a's slice is another object after the restart"
req "$TOK2" GET $G/resourceslices/node-b-cachepin.io >/dev/null; expect 404 "node-b's slice stays deleted"
req "$TOK2" GET $G/namespaces/default/resourceclaims/claim-a >"$DRA_D/c"; expect 200 "claim-a after the restart"
jq -e '.status.allocation.devices.results[0].consumedCapacity["cachepin.io/cpus"] == "8" and .status.devices[0].data.cpus == "0-7"' \
  "$DRA_D/c" >/dev/null || fail "claim-a's status did not survive the restart: $(head -c 400 "$DRA_D/c")"
# A client that watched before the restart resumes from its last resourceVersion: the
# API server either replays what changed since (etcd keeps the history) or, its watch
# cache begun at the restart, answers 410 Expired, and the client lists again (as
# client-go's reflector does) and watches from the list's resourceVersion. Either way it
# misses nothing.
watch_from () { # watch_from RV CHANGE-LABEL: the watch's events in $DRA_D/watch
  curl -sS -N --cacert "$DRA_D/ca.crt" -H "Authorization: Bearer $TOK2" --max-time 20 \
    "$DRA_URL$G/namespaces/default/resourceclaims?watch=1&resourceVersion=$1" >"$DRA_D/watch" 2>/dev/null &
  WATCH=$!
  sleep 0.5
  req "$ADMIN_TOKEN" PATCH $G/namespaces/default/resourceclaims/claim-a --data "{\"metadata\":{\"labels\":{\"$2\":\"yes\"}}}" >/dev/null
  expect 200 "claim-a labelled $2"
  for _ in $(seq 100); do
    jq -e -s --arg l "$2" 'any(.[]; .type == "ERROR" or (.object.metadata.labels[$l]? == "yes"))' "$DRA_D/watch" >/dev/null 2>&1 && break
    sleep 0.1
  done
  kill "$WATCH" 2>/dev/null || true; wait "$WATCH" 2>/dev/null || true
}
watch_from "$ALLOC_RV" after-restart
if jq -e -s '.[0].type == "ERROR" and .[0].object.code == 410' "$DRA_D/watch" >/dev/null; then
  echo "ok: a watch from $ALLOC_RV after the restart: 410 Expired, $(jq -r -s '.[0].object.message' "$DRA_D/watch")"
  req "$TOK2" GET $G/namespaces/default/resourceclaims >"$DRA_D/list"; expect 200 "the list again"
  jq -e '.items[0].metadata.labels["after-restart"] == "yes" and .items[0].status.devices[0].data.cpus == "0-7"' "$DRA_D/list" \
    >/dev/null || fail "the list after 410 lacks what changed: $(head -c 600 "$DRA_D/list")"
  watch_from "$(jq -r .metadata.resourceVersion "$DRA_D/list")" after-relist
  jq -e -s 'any(.[]; .type == "MODIFIED" and .object.metadata.labels["after-relist"] == "yes")' "$DRA_D/watch" >/dev/null \
    || fail "the watch from the new list's resourceVersion: $(head -c 600 "$DRA_D/watch")"
  echo "ok: listed again, everything there, and the watch from the list's resourceVersion sees the next change"
else
  jq -e -s '.[0].object.status.devices[0].data.cpus == "0-7" and any(.[]; .object.metadata.labels["after-restart"] == "yes")' \
    "$DRA_D/watch" >/dev/null || fail "the watch from $ALLOC_RV after the restart: $(head -c 600 "$DRA_D/watch")"
  echo "ok: a watch from $ALLOC_RV after the restart replayed the status patch, then the label"
fi

dra_down
trap - EXIT
echo "PASS"
