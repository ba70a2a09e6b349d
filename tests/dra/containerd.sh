#!/usr/bin/env bash
# The kubelet's route end to end with a real runtime: nothing emulated but the kubelet (the
# Go stand-in, tests/dra/standin-lib.sh, v1beta1 only as sid's kubelet 1.32.7) and the
# scheduler (the claim's allocation written first fit, as the structured allocator writes it).
#
#   tests/dra/containerd.sh --cachepin BIN --stubs DIR
#
# A real API server (tests/dra/lib.sh), containerd 2.1.9 from Debian sid with CDI on
# (tests/cri/lib.sh, nri-lib.sh) and `cachepin nri --kubelet-plugin --dra-node` on its NRI
# socket, its host config's cdi_dir containerd's cdi_spec_dirs. The promises (docs/dra.md
# "The kubelet's route"): the agent publishes its node's slice; a claim of N CPUs allocated
# first fit on it is prepared through NodePrepareResources (the CDI device
# cachepin.io/claim=<uid>-0 of its one result, the ledger's dra:claim entries: N CPUs of the allocated device,
# whose CPUs hwloc-calc computes from the device's attributes); a pod's container given that
# CDI device (CRI ContainerConfig.CDI_devices, as the kubelet passes it) runs with the
# claim's spec mounted read-only at /run/cachepin.io/claims/<uid>/0 (the tag) and
# CACHEPIN_DRA_CLAIM=<uid> in its environment, and its live cgroup's cpuset is the claim's
# CPUs; the agent SIGKILLed and started again, a second container gets them too; containerd
# restarted under the agent, it registers again and a third container gets them;
# NodeUnprepareResources after the containers are removed: the entries and the spec gone.
#
# Exit: 0 passed, 1 failed, 77 skipped (what tests/dra/kubelet.sh and tests/cri/nri-dra.sh
# skip for). CACHEPIN_CRI_KEEP=1 keeps containerd's scratch directory.
set -u

DRA=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$DRA/../.." && pwd)
HERE=$DRA
# shellcheck source=lib.sh
. "$DRA/lib.sh"
# shellcheck source=standin-lib.sh
. "$DRA/standin-lib.sh"
# shellcheck source=../cri/lib.sh
. "$SRC/tests/cri/lib.sh"
# shellcheck source=../cri/nri-lib.sh
. "$SRC/tests/cri/nri-lib.sh"
cri_args dra-containerd "$@"
cri_prereqs
for t in curl openssl hwloc-calc; do command -v $t >/dev/null || skip "$t not installed"; done

T0=$(date +%s)
standin_fetch
dra_fetch
# shellcheck disable=SC2034 # HERE: what tests/cri/lib.sh's functions run from now on
HERE=$SRC/tests/cri
cri_fetch sid containerd=2.1.9+ds1-5

NODE=node-c
N=1 # the claim's CPUs
G=/apis/resource.k8s.io/v1
dra_up
DRIVER=system:serviceaccount:kube-system:cachepin
dra_publisher_rules "$DRIVER" claims

cri_scratch drac
NRISOCK=$D/nri.sock
PLUGIN_PID=""
PODS=()
cleanup () {
  local c
  for c in "${CTRS[@]}"; do cri stop "$c" >/dev/null 2>&1; cri rm "$c" >/dev/null 2>&1; done
  nri_cleanup
  standin_down
  dra_down
}
CTRS=()
trap cleanup EXIT
trap 'exit 1' INT TERM

# the agent's cdi_dir the one directory containerd reads CDI specs from (nri-lib.sh)
nri_cdi_config || fail "the configs"

# The kubelet: a v1beta1-only stand-in (sid's kubelet 1.32.7 has no dra/v1), its retries
# shortened; started before containerd's CRI client, whose pipes it must not hold (nri-lib.sh).
STANDIN_ARGS=(-services v1beta1.DRAPlugin -backoff 1s -give-up 10s)
standin_up "$D/kubelet"

build_image || fail "building the image"
start_containerd || fail "containerd did not start (log above)"
echo "containerd: $(cri version)"
import_image

NRI_PLUGIN_ARGS=(--dra-node "$NODE" --kubelet-plugin --kubelet-root "$D/kubelet" --kube-api "$DRA_URL"
  --kube-ca "$DRA_D/ca.crt" --kube-token-file "$DRA_D/token")
if start_plugin; then pass "the agent registered with containerd's NRI"; else fail "the agent did not start"; fi

# ---- the slice, the claim allocated first fit -------------------------------------------------
slices () { kc "$ADMIN_TOKEN" GET "$G/resourceslices?fieldSelector=spec.nodeName%3D$NODE"; }
for _ in $(seq 150); do
  [ "$(slices | jq '.items | length' 2>/dev/null)" -gt 0 ] 2>/dev/null && break
  sleep 0.1
done
slices >"$D/slices.json"
check "the agent published its node's slice" [ "$(jq '.items | length' "$D/slices.json")" -gt 0 ]
W=$(standin wait -driver cachepin.io -timeout 20s)
check "the kubelet stand-in registered the agent (v1beta1): $W" [ "$(jq -r .ok <<<"$W")" = true ]

# First fit, as the structured allocator: the slices' devices in order, the first with N left.
jq --argjson n "$N" '[.items | sort_by(.metadata.name)[] | .spec.devices[]
  | select((.capacity.cpus.value | tonumber) >= $n)][0]' "$D/slices.json" >"$D/device.json"
DEV=$(jq -r .name "$D/device.json")
[ -n "$DEV" ] && [ "$DEV" != null ] || fail "no published device has $N CPU: $(cat "$D/slices.json")"
# The device's CPUs (the slice names none): its domain's PUs as hwloc numbers them
# (docs/dra.md: l3-<index> is the L3 of that logical index, the L3 holding it l3Index).
OBJ=$(jq -r '.attributes as $a | ($a.index.int) as $i | {"llc": (if $a.l3Index then "l3cache:\($a.l3Index.int)" else null end),
  "l2": "l2cache:\($i)", "numa": "numanode:\($i)", "package": "package:\($i)"}[$a.level.string] // empty' "$D/device.json")
[ -n "$OBJ" ] || fail "device $DEV: no hwloc object for its attributes $(jq -c .attributes "$D/device.json")"
DEVCPUS=$(hwloc-calc --po -I pu "$OBJ") || fail "hwloc-calc $OBJ"
echo "     (first fit: $DEV, hwloc $OBJ: CPUs $DEVCPUS; the claim: $N CPU)"

kc "$ADMIN_TOKEN" POST "$G/namespaces/default/resourceclaims" --data-binary @- >"$D/claim.json" <<EOF
{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
 "metadata": {"name": "claim-c", "namespace": "default"},
 "spec": {"devices": {"requests": [{"name": "cpus", "exactly": {
   "deviceClassName": "cachepin.io-l3-cpus", "capacity": {"requests": {"cpus": "$N"}}}}]}}}
EOF
[ "$(status)" = 201 ] || fail "create the claim: HTTP $(status): $(cat "$D/claim.json")"
CUID=$(jq -r .metadata.uid "$D/claim.json")
jq --arg d "$DEV" --arg n "$NODE" --arg c "$N" '.status = {allocation: {
  devices: {results: [{request: "cpus", driver: "cachepin.io", pool: $n, device: $d, consumedCapacity: {cpus: $c}}]},
  nodeSelector: {nodeSelectorTerms: [{matchFields: [{key: "metadata.name", operator: "In", values: [$n]}]}]}}}' \
  "$D/claim.json" >"$D/allocated.json"
kc "$ADMIN_TOKEN" PUT "$G/namespaces/default/resourceclaims/claim-c/status" --data-binary "@$D/allocated.json" >"$D/put.json"
[ "$(status)" = 200 ] || fail "allocate the claim: HTTP $(status): $(cat "$D/put.json")"

# ---- NodePrepareResources --------------------------------------------------------------------
claim_cpus () {
  ledger | jq -r --arg p "dra:claim:$CUID:" '[.entries[] | select(.id | startswith($p)) | .cpus] | join(",")'
}
# jq_true [ARGS] FILTER JSON: FILTER true of the JSON text
jq_true () { local json=${*: -1}; jq -e "${@:1:$#-1}" <<<"$json" >/dev/null; }
# within A B: every CPU of list A is in list B
expand () { awk -v l="$1" 'BEGIN { k = split(l, a, ","); for (i = 1; i <= k; i++) { if (split(a[i], b, "-") == 2) for (c = b[1]; c <= b[2]; c++) print c; else if (a[i] != "") print a[i] } }' | sort -n | uniq; }
within () { [ -n "$1" ] && [ -z "$(comm -23 <(expand "$1") <(expand "$2"))" ]; }
canon () { expand "$1" | paste -sd, -; }

T1=$(date +%s.%N)
R=$(standin prepare -claim "$CUID/default/claim-c" -driver cachepin.io)
echo "     (prepare: $R)"
CDI=$(jq -r '.devices[0].cdiDeviceIDs[0] // empty' <<<"$R")
check "NodePrepareResources: pool $NODE, device $DEV, CDI device cachepin.io/claim=$CUID-0" \
  jq_true --arg n "$NODE" --arg d "$DEV" --arg c "cachepin.io/claim=$CUID-0" \
  '.ok and .devices[0].poolName == $n and .devices[0].deviceName == $d and .devices[0].cdiDeviceIDs == [$c]' "$R"
CPUS=$(canon "$(claim_cpus)")
check "the ledger's dra:claim:$CUID entries: $N CPU ($CPUS) inside $DEV ($DEVCPUS)" \
  eval '[ "$(ncpus "$CPUS")" = "$N" ] && within "$CPUS" "$DEVCPUS"'
check "the ledger's dra:claim:$CUID:0 entry holds them" \
  same "$(canon "$(held "dra:claim:$CUID:0")")" "$CPUS"
SPEC=$D/cdi/cachepin.io-claim_$CUID.json
check "the CDI spec in containerd's cdi_spec_dirs, with the tag (the spec's mount)" \
  grep -q "/run/cachepin.io/claims/$CUID/0" "$SPEC"

# container NAME: a container of the claim's pod given the CDI device, its cgroup and env checked
container_of_claim () {
  create_start "$POD" "$1" dra-pod "cdi:$CDI" || return
  CTRS+=("$C")
  check "$1: its live cgroup's cpuset is the claim's CPUs $CPUS" same "$(canon "$(cgroup_cpus "$C")")" "$CPUS"
  check "$1: CACHEPIN_DRA_CLAIM=$CUID in its environment" same "$(cri exec "$C" sh -c 'echo $CACHEPIN_DRA_CLAIM')" "$CUID"
  check "$1: the claim's spec mounted read-only at /run/cachepin.io/claims/$CUID/0 (the tag the agent trusts)" \
    same "$(cri exec "$C" sh -c "grep -c ' /run/cachepin.io/claims/$CUID/0 ro[, ]' /proc/self/mountinfo")" 1
}
run_pod dra-pod || exit 1
container_of_claim c1
T2=$(date +%s.%N)
echo "     (allocated to running: $(awk -v a="$T1" -v b="$T2" 'BEGIN { printf "%.2f", b - a }') s)"

# ---- the agent SIGKILLed and started again ---------------------------------------------------
kill -KILL "$PLUGIN_PID"
wait "$PLUGIN_PID" 2>/dev/null
PLUGIN_PID=""
if start_plugin; then pass "the agent SIGKILLed and started again: synchronized"; else fail "the agent did not start again"; fi
W=$(standin wait -driver cachepin.io -registrations 2 -timeout 20s)
check "the kubelet stand-in registered the restarted agent again" jq_true .ok "$W"
container_of_claim c2
check "the claim's entries unchanged ($CPUS)" same "$(canon "$(claim_cpus)")" "$CPUS"

# ---- containerd restarted under the agent ----------------------------------------------------
stop_containerd
start_containerd || fail "containerd did not start again (log above)"
check "containerd restarted: the agent registered again" logged "$D/nri.log" 'nri: reconnected: registered again' 1
check "containerd restarted: the agent synchronized again" logged "$D/nri.log" 'nri: synchronized' 3
container_of_claim c3

# ---- the containers removed, NodeUnprepareResources ------------------------------------------
for c in "${CTRS[@]}"; do cri stop "$c" >/dev/null && cri rm "$c" >/dev/null || bad "removing container $c"; done
CTRS=()
U=$(standin unprepare -claim "$CUID/default/claim-c" -driver cachepin.io)
check "NodeUnprepareResources: ok ($U)" jq_true .ok "$U"
check "the ledger's claim entries gone" [ -z "$(claim_cpus)" ]
check "the CDI spec gone" [ ! -e "$SPEC" ]
check "the agent logged the claim's containers" logged "$D/nri.log" "has DRA claim $CUID" 3
check "the kubelet's calls and closes: no gRPC warning in the agent's log" \
  eval '! grep "warning: grpc" "$D/nri.log"'

echo "$PASS passed, $FAIL failed ($(($(date +%s) - T0)) s)"
[ "$FAIL" = 0 ] || { tail -20 "$D/nri.log"; tail -10 "$D/kubelet/standin.log"; exit 1; }
