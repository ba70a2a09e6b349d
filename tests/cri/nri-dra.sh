#!/usr/bin/env bash
# A prepared DRA claim's CPUs given to the container that carries its CDI device, with
# containerd 2.1.9's CRI and the NRI plugin (docs/dra.md, "Prepare").
#
#   tests/cri/nri-dra.sh --cachepin BIN --stubs DIR
#
# A claim allocated 1 CPU of this host's first device (as `cachepin dra slice` names it)
# is prepared with `cachepin dra prepare` into the plugin's state directory and a CDI spec
# directory containerd reads (enable_cdi); a pod's container created as the kubelet creates
# one given the claim (ContainerConfig.CDI_devices: cachepin.io/claim=<uid>) carries the
# spec's tag in its environment, which containerd applies before NRI's CreateContainer: the
# plugin answers the claim's CPU, and the container's live cgroup and its process run on
# it, with no ledger entry of its own. A second container of the same claim shares it.
# Unprepared, the claim's entries and its spec are gone.
#
# Exit: 0 passed, 1 failed, 77 skipped (what nri.sh skips for). CACHEPIN_CRI_KEEP=1 keeps
# the scratch directory.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"
# shellcheck source=nri-lib.sh
. "$HERE/nri-lib.sh"
cri_args nri-dra "$@"
cri_prereqs
cri_fetch sid containerd=2.1.9+ds1-5

cri_scratch nrid
NRISOCK=$D/nri.sock
PLUGIN_PID=""
PODS=()
trap nri_cleanup EXIT
trap 'exit 1' INT TERM

nri_cdi_config || exit 1


# ---- the claim -------------------------------------------------------------------------------
UID_=5e1f0c2a-7b3d-4e6f-8a9b-0c1d2e3f4a5b
"$BIN" dra slice --node node-1 --config "$D/cachepin.json" --json >"$D/slice.json" \
  || { echo "FAIL: dra slice"; exit 1; }
DEV=$(jq -r '.spec.devices[0].name' "$D/slice.json")
[ -n "$DEV" ] && [ "$DEV" != null ] || { echo "FAIL: this host publishes no device"; exit 1; }
jq -n --arg u "$UID_" --arg d "$DEV" '{apiVersion: "resource.k8s.io/v1", kind: "ResourceClaim",
  metadata: {name: "one-cpu", namespace: "cachepin-test", uid: $u},
  status: {allocation: {devices: {results: [{request: "cpus", driver: "cachepin.io", pool: "node-1",
    device: $d, consumedCapacity: {cpus: "1"}}]}}}}' >"$D/claim.json"

build_image || { echo "FAIL: building the image"; exit 1; }
start_containerd || { echo "FAIL: containerd did not start (log above)"; exit 1; }
echo "containerd: $(cri version)"
import_image
if start_plugin; then pass "the plugin registered"; else bad "the plugin did not start"; exit 1; fi

"$BIN" dra prepare --node node-1 --claim "$D/claim.json" --config "$D/cachepin.json" --json >"$D/prep.json" 2>>"$D/nri.log"
check "dra prepare: exit 0" [ $? = 0 ]
CPUS=$(jq -r .cpus "$D/prep.json")
CDI=$(jq -r .cdi_device "$D/prep.json")
check "dra prepare: 1 CPU of $DEV ($CPUS), CDI device $CDI" [ "$(ncpus "$CPUS")" = 1 ] 
check "dra prepare: the CDI spec is in containerd's spec directory" \
  [ -f "$D/cdi/cachepin.io-claim_$UID_.json" ]

run_pod dra-pod
create_start "$POD" c1 dra-pod "cdi:$CDI"
C1=$C
if [ -n "$C1" ]; then
  check "the container carries the CDI edit: CACHEPIN_DRA_CLAIM=$UID_" \
    same "$(cri exec "$C1" sh -c 'echo $CACHEPIN_DRA_CLAIM')" "$UID_"
  check "its live cgroup's cpuset is the claim's CPU $CPUS" same "$(cgroup_cpus "$C1")" "$CPUS"
  check "its process runs on $CPUS" same "$(allowed "$C1")" "$CPUS"
  check "no ledger entry of its own" [ -z "$(held "$C1")" ]
  check "the plugin said so: container $C1 has DRA claim $UID_" logged "$D/nri.log" "container $C1 has DRA claim $UID_" 1
fi
create_start "$POD" c2 dra-pod "cdi:$CDI"
C2=$C
[ -n "$C2" ] && check "a second container of the claim shares $CPUS" same "$(cgroup_cpus "$C2")" "$CPUS"
# A pod that writes the environment's tag itself, without the claim's device: not the
# claim's container (the tag the plugin trusts is the spec's mount, out of a pod's reach).
create_start "$POD" forged dra-pod "env:CACHEPIN_DRA_CLAIM=$UID_"
CF=$C
if [ -n "$CF" ]; then
  check "a container that sets CACHEPIN_DRA_CLAIM=$UID_ itself is not given $CPUS" \
    [ "$(cgroup_cpus "$CF")" != "$CPUS" ]
  check "the plugin said why" logged "$D/nri.log" "container $CF: CACHEPIN_DRA_CLAIM=$UID_ in its environment without the claim's CDI mount" 1
fi

"$BIN" dra unprepare --claim-uid "$UID_" --config "$D/cachepin.json" >/dev/null 2>>"$D/nri.log"
check "dra unprepare: the CDI spec removed" [ ! -e "$D/cdi/cachepin.io-claim_$UID_.json" ]
check "dra unprepare: no entry of the claim left" \
  [ "$(ledger | jq --arg p "dra:claim:$UID_:" '[.entries[] | select(.id | startswith($p))] | length')" = 0 ]

# ---- a claim of two results (two requests): each result's device gives its own CPUs -------
# First fit, as the allocator: both on the first device when it has two CPUs, else one on
# each of the first two devices.
USABLE=$(jq -r --arg d "$DEV" '.spec.devices[] | select(.name == $d) | .capacity.cpus.value' "$D/slice.json")
DEV_B=$DEV
[ "$USABLE" -ge 2 ] || DEV_B=$(jq -r '.spec.devices[1].name // empty' "$D/slice.json")
if [ -n "$DEV_B" ]; then
  UID2=6e2f1d3b-8c4e-4f70-9bac-1d2e3f4a5b6c
  jq -n --arg u "$UID2" --arg d "$DEV" --arg e "$DEV_B" '{apiVersion: "resource.k8s.io/v1", kind: "ResourceClaim",
    metadata: {name: "two-cpus", namespace: "cachepin-test", uid: $u},
    status: {allocation: {devices: {results: [
      {request: "a", driver: "cachepin.io", pool: "node-1", device: $d, consumedCapacity: {cpus: "1"}},
      {request: "b", driver: "cachepin.io", pool: "node-1", device: $e, consumedCapacity: {cpus: "1"}}]}}}}' \
    >"$D/claim2.json"
  "$BIN" dra prepare --node node-1 --claim "$D/claim2.json" --config "$D/cachepin.json" --json >"$D/prep2.json" \
    2>>"$D/nri.log"
  check "two results: prepared" [ $? = 0 ]
  R1=$(jq -r '.results[1].cpus' "$D/prep2.json")
  ALL2=$(jq -r .cpus "$D/prep2.json")
  run_pod dra-pod2
  create_start "$POD" only-b dra-pod2 "cdi:$(jq -r '.results[1].cdi_device' "$D/prep2.json")"
  [ -n "$C" ] && check "the container given request b's device runs on b's CPU $R1 alone" \
    same "$(cgroup_cpus "$C")" "$R1"
  create_start "$POD" whole dra-pod2 "cdi:$(jq -r .cdi_device "$D/prep2.json")"
  [ -n "$C" ] && check "the container given the claim's device runs on both, $ALL2" same "$(cgroup_cpus "$C")" "$ALL2"
else
  echo "skipped: a claim of two results (one device of one usable CPU here)"
fi

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
