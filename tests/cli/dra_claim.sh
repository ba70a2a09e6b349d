#!/bin/bash
# `cachepin dra prepare` and `unprepare` end to end (docs/dra.md, "Prepare"): the real
# binary ($1) on a pinned synthetic topology, a temporary state directory and CDI spec
# directory (no cgroup is written: a claim's CPUs are the NRI plugin's to apply).
# The promises: the claim's CPUs chosen inside its device, PE0 first; recorded in the
# ledger as dra:claim:<uid>:<i> entries and a CDI spec tagging the claim; prepare again
# is the same answer and writes nothing; a device lacking the CPUs now is refused
# (exit 3, one line) with nothing recorded, for a claim of several results too (all or
# none); the claims' CPUs are not taken from the published capacity; unprepare
# removes both, and again is no error; a bad claim is one line naming its field (exit 2).
# Expected CPUs come from the synthetic description's arithmetic: "package:2 l3cache:2
# core:4 pu:2" numbers core i's threads 2i and 2i+1, so L3 j holds CPUs 8j..8j+7 and its
# first threads are the even ones.
set -u
BIN=$(realpath "${1:?usage: dra_claim.sh PATH-TO-cachepin}")
. "$(dirname "${BASH_SOURCE[0]}")/lib/check.sh"
cli_skip () { echo "dra_claim.sh: skipped: $1"; exit 77; }
[ "$(id -u)" = 0 ] || cli_skip "not root (the ledger's state directory is root's)"
command -v lstopo-no-graphics >/dev/null || cli_skip "no lstopo-no-graphics (hwloc; scripts/deps.sh installs it)"
command -v jq >/dev/null || cli_skip "no jq"
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
lstopo-no-graphics --input "package:2 l3cache:2 core:4 pu:2" --of xml "$D/topo.xml" 2>/dev/null ||
  { ko "lstopo-no-graphics cannot write the topology"; finish dra_claim; }
jq -n --arg s "$D/state" --arg t "$D/topo.xml" --arg c "$D/cdi" \
  '{state_dir: $s, topology: $t, cdi_dir: $c, kubelet_state: "", log_level: "warning"}' >"$D/cfg.json"

# claim FILE UID RESULT... : a resource.k8s.io/v1 claim allocated RESULTs ("device:cpus",
# cpus empty: no consumedCapacity, the whole device) on node worker-1.
claim () {
  local file=$1 uid=$2
  shift 2
  python3 - "$file" "$uid" "$@" <<'EOF'
import json, sys
file, uid, results = sys.argv[1], sys.argv[2], sys.argv[3:]
rs = []
for i, r in enumerate(results):
    dev, cpus = r.split(":")
    x = {"request": "r%d" % i, "driver": "cachepin.io", "pool": "worker-1", "device": dev}
    if cpus:
        x["consumedCapacity"] = {"cpus": cpus}
    rs.append(x)
c = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
     "metadata": {"name": "c-" + uid[:4], "namespace": "default", "uid": uid},
     "status": {"allocation": {"devices": {"results": rs}},
                "reservedFor": [{"resource": "pods", "name": "p", "uid": "pod-" + uid[:4]}]}}
json.dump(c, open(file, "w"))
EOF
}
run () { "$BIN" dra "$@" --config "$D/cfg.json" >"$D/out" 2>"$D/err"; RC=$?; }
prepare () { run prepare --node worker-1 --claim "$@" --json; }
field () { jq -r "$1" "$D/out" 2>/dev/null; }
ledger_sum () { sha256sum "$D/state/ledger.json" 2>/dev/null | cut -d' ' -f1; }
spec () { echo "$D/cdi/cachepin.io-claim_$1.json"; }
# one_line NAME RC NEEDLE: exit RC, nothing on stdout, one line on stderr holding NEEDLE.
one_line () {
  if [ "$RC" = "$2" ] && [ ! -s "$D/out" ] && [ "$(wc -l <"$D/err")" = 1 ] && grep -qF -- "$3" "$D/err"; then
    ok "$1: $(cat "$D/err")"
  else
    ko "$1: exit $RC (want $2), stdout '$(head -c 200 "$D/out")', stderr '$(cat "$D/err")' (want '$3')"
  fi
}

A=aaaaaaaa-0000-4000-8000-000000000001
B=bbbbbbbb-0000-4000-8000-000000000002
C=cccccccc-0000-4000-8000-000000000003
W=dddddddd-0000-4000-8000-000000000004
M=eeeeeeee-0000-4000-8000-000000000005

# ---- prepare: the CPUs inside the device, PE0 first; the ledger and the CDI spec ------
claim "$D/a.json" $A l3-2:4
prepare "$D/a.json"
check "prepare: exit 0" "$RC" 0
check "prepare: l3-2's four first threads" "$(field .cpus)" "16,18,20,22"
check "prepare: the CDI device" "$(field .cdi_device)" "cachepin.io/claim=$A"
check "prepare: the result's device" "$(field '.results[0].device')" "l3-2"
check "prepare: not prepared before" "$(field .already)" "false"
check "ledger: the claim's entry" \
  "$(jq -r --arg id "dra:claim:$A:0" '.entries[] | select(.id == $id) | .cpus' "$D/state/ledger.json")" "16,18,20,22"
check "CDI spec: kind, the claim's device and the result's, the environment's tag" \
  "$(jq -c '[.kind, [.devices[].name], [.devices[].containerEdits.env[]]]' "$(spec $A)" 2>&1)" \
  "[\"cachepin.io/claim\",[\"$A\",\"$A-0\"],[\"CACHEPIN_DRA_CLAIM=$A\",\"CACHEPIN_DRA_CLAIM=$A\"]]"
check "CDI spec: the tag the plugin trusts, the spec mounted read-only at /run/cachepin.io/claims/<uid>/<result>" \
  "$(jq -c '[.devices[].containerEdits.mounts[] | [.hostPath, .containerPath, (.options | index("ro") != null)]] | unique' "$(spec $A)" 2>&1)" \
  "[[\"$(spec $A)\",\"/run/cachepin.io/claims/$A/0\",true]]"
check "prepare: the result's own CDI device" "$(field '.results[0].cdi_device')" "cachepin.io/claim=$A-0"
check "CDI spec: no temporary file left" "$(ls -A "$D/cdi" | wc -l)" 1

# ---- idempotent: the same answer, nothing written -----------------------------------
before=$(ledger_sum)
prepare "$D/a.json"
check "prepare again: exit 0" "$RC" 0
check "prepare again: the same CPUs" "$(field .cpus)" "16,18,20,22"
check "prepare again: prepared already" "$(field .already)" "true"
check "prepare again: the ledger unchanged" "$(ledger_sum)" "$before"
rm -f "$(spec $A)"
prepare "$D/a.json"
check "prepare again, its CDI spec gone: written again, the ledger unchanged" \
  "$(jq -r '.devices[0].containerEdits.env[0]' "$(spec $A)" 2>&1) $(ledger_sum)" "CACHEPIN_DRA_CLAIM=$A $before"
"$BIN" dra prepare --node worker-1 --claim - --config "$D/cfg.json" <"$D/a.json" >"$D/out" 2>"$D/err"
check "prepare from standard input, text: the CDI device and CPUs" \
  "$(head -1 "$D/out" | grep -o 'CDI device .*')" "CDI device cachepin.io/claim=$A, CPUs 16,18,20,22 (NUMA 0)"

# ---- a second claim on the same device: the siblings; a third: refused, exit 3 -----
claim "$D/b.json" $B l3-2:4
prepare "$D/b.json"
check "second claim on l3-2: the other four" "$(field .cpus)" "17,19,21,23"
claim "$D/c.json" $C l3-2:1
before=$(ledger_sum)
prepare "$D/c.json"
one_line "third claim on a full l3-2: refused" 3 "claim $C, result 0 (request r0, device l3-2)"
check "refused: the ledger unchanged" "$(ledger_sum)" "$before"
check "refused: no CDI spec" "$(test -e "$(spec $C)" && echo there || echo none)" none

# ---- the whole device (no consumedCapacity); several results, all or none ----------
claim "$D/w.json" $W l3-0:
prepare "$D/w.json"
check "whole device l3-0: its 8 CPUs" "$(field .cpus)" "0-7"
claim "$D/m.json" $M l3-1:2 l3-3:9
before=$(ledger_sum)
prepare "$D/m.json"
one_line "two results, the second too big: refused" 3 "device l3-3 has 8 usable CPUs, the claim consumes 9"
check "two results refused: nothing recorded (the first neither)" "$(ledger_sum)" "$before"
claim "$D/m.json" $M l3-1:2 l3-3:2
prepare "$D/m.json"
check "two results: both, one commit" "$(field '[.results[].cpus] | join(" ")')" "8,10 24,26"
check "two results: the claim's device mounts both tags, each result's its own" \
  "$(jq -c '[.devices[] | [.name, [.containerEdits.mounts[].containerPath | split("/")[-1]]]]' "$(spec $M)")" \
  "[[\"$M\",[\"0\",\"1\"]],[\"$M-0\",[\"0\"]],[\"$M-1\",[\"1\"]]]"
check "two results: two entries" \
  "$(jq -r --arg p "dra:claim:$M:" '[.entries[] | select(.id | startswith($p))] | length' "$D/state/ledger.json")" 2
claim "$D/x.json" $M l3-1:2
prepare "$D/x.json"
one_line "the same uid with other results: refused" 1 "claim $M is prepared already with other results"

# ---- the published capacity does not count the claims (the scheduler does) ---------
"$BIN" dra slice --node worker-1 --config "$D/cfg.json" --json >"$D/out" 2>"$D/err"
check "slice: l3-2 keeps its capacity 8, heldOutside 0, with two claims on it" \
  "$(jq -c '.spec.devices[] | select(.name == "l3-2") | [.capacity.cpus.value, .attributes.heldOutside.int]' "$D/out")" \
  '["8",0]'
"$BIN" status --config "$D/cfg.json" --json >"$D/out" 2>"$D/err"
check "status: the claims' entries, state claim, origin dra" \
  "$(jq -r '[.ledger.entries[] | select(.origin == "dra") | .state] | unique | join(",")' "$D/out")" "claim"
"$BIN" status --config "$D/cfg.json" >"$D/out" 2>"$D/err"
contains "status text: CLAIM in the STATE column" "$D/out" "CLAIM"

# ---- unprepare: the entries and the spec go; again: no error ------------------------
run unprepare --claim-uid $A --json
check "unprepare: exit 0, one entry released" "$RC $(field .released)" "0 1"
check "unprepare: the spec removed" "$(test -e "$(spec $A)" && echo there || echo none)" none
check "unprepare: its entry gone" \
  "$(jq -r --arg id "dra:claim:$A:0" '[.entries[] | select(.id == $id)] | length' "$D/state/ledger.json")" 0
run unprepare --claim-uid $A --json
check "unprepare again: exit 0, nothing released" "$RC $(field .released)" "0 0"
claim "$D/c.json" $C l3-2:4
prepare "$D/c.json"
check "its CPUs free again: a new claim gets them" "$(field .cpus)" "16,18,20,22"

# ---- bad input: one line naming the field, exit 2 ----------------------------------
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"]["cpus"]="2.5"; json.dump(c, open(sys.argv[2], "w"))' "$D/b.json" "$D/bad.json"
prepare "$D/bad.json"
one_line "a fractional quantity" 2 "--claim: status.allocation.devices.results[0].consumedCapacity.cpus: not a whole quantity"
run prepare --node worker-1 --claim "$D/a.json" --topology x
one_line "prepare --topology" 2 "--topology: not an option of \`dra prepare\`"
run prepare --claim "$D/a.json"
one_line "prepare without --node" 2 "--node: required"
run prepare --node worker-2 --claim "$D/a.json"
one_line "a claim of another node" 2 "no device of driver cachepin.io on this node's pool"
run prepare --node worker-1 --claim "$D/missing.json"
one_line "a missing file (exit 1: the system's refusal)" 1 "--claim: open"
run unprepare --claim-uid ../x
one_line "unprepare: a bad uid" 2 "--claim-uid: \`../x\` is not a uid"
run unprepare
one_line "unprepare without --claim-uid" 2 "--claim-uid: required"
finish dra_claim
