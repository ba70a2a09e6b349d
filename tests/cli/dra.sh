#!/bin/bash
# `cachepin dra slice` end to end (docs/dra.md): the real binary ($1), its slices as
# resource.k8s.io/v1 wants them, the host config's `reserved` and `align` in them, its
# one-line errors; then deploy/kubernetes/dra checked against what it publishes
# (tests/cli/dra_manifests.py), and rendered by Debian sid's kubectl (fetched into
# /var/cache/cachepin by tests/cri/fetch-debs.sh, never installed; without it, and
# nothing else failing, exit 77 saying so).  Expected devices come from the synthetic
# description's own arithmetic, not from the binary.
set -u

BIN=${1:?usage: dra.sh PATH-TO-cachepin}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
SYN="package:2 l3cache:2 core:4 pu:2"   # core i = {2i,2i+1}: L3 j = CPUs 8j..8j+7
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

failures=0
ok () { echo "ok   $*"; }
bad () { failures=$((failures + 1)); echo "FAIL $*"; }
run () {
  "$BIN" "$@" >"$TMP/out" 2>"$TMP/err"
  rc=$?
}

# py EXPR: EXPR over `s` (the slices printed, a list) and `d` (their devices by name).
py () {
  python3 -c 'import json,sys
s=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
d={x["name"]:x for y in s for x in y["spec"]["devices"]}
print(eval(sys.argv[2]))' "$TMP/out" "$1"
}

expect () { # WHAT EXPR WANT
  local got
  got=$(py "$2" 2>&1)
  if [ "$got" = "$3" ]; then ok "$1"; else bad "$1: got $got, want $3 ($(head -c 300 "$TMP/out") $(cat "$TMP/err"))"; fi
}

# expect_usage_error WHAT NEEDLE ARGS...: exit 2, nothing on stdout, one line naming NEEDLE.
expect_usage_error () {
  local what=$1 needle=$2
  shift 2
  run "$@"
  if [ "$rc" -eq 2 ] && [ ! -s "$TMP/out" ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q -- "$needle" "$TMP/err"; then
    ok "$what: $(cat "$TMP/err")"
  else
    bad "$what: exit $rc, stdout $(head -c 200 "$TMP/out"), stderr $(cat "$TMP/err")"
  fi
}

# ---- the slice of a synthetic machine ----------------------------------------------------
run dra slice --node node-1.example --topology "$SYN" --json
[ "$rc" -eq 0 ] && ok "dra slice --json: exit 0" || bad "dra slice --json: exit $rc, $(cat "$TMP/err")"
expect "one slice" 'len(s)' 1
expect "resource.k8s.io/v1 ResourceSlice" 's[0]["apiVersion"]+" "+s[0]["kind"]' "resource.k8s.io/v1 ResourceSlice"
expect "driver, pool (the node, generation 1, one slice), nodeName" \
  '[s[0]["spec"]["driver"], s[0]["spec"]["pool"], s[0]["spec"]["nodeName"]]' \
  "['cachepin.io', {'name': 'node-1.example', 'generation': 1, 'resourceSliceCount': 1}, 'node-1.example']"
expect "one device per L3, named after it" 'sorted(d)' "['l3-0', 'l3-1', 'l3-2', 'l3-3']"
expect "capacity cpus: the L3's 8 CPUs, whole CPUs, all of it by default" 'd["l3-2"]["capacity"]' \
  "{'cpus': {'value': '8', 'requestPolicy': {'default': '8', 'validRange': {'min': '1', 'step': '1'}}}}"
expect "shared by several claims" 'all(x["allowMultipleAllocations"] for x in d.values())' True
expect "attributes: L3 index, package, cores, threads per core, kind" \
  '[d["l3-3"]["attributes"][k] for k in ("l3Index", "package", "cores", "threadsPerCore", "cpuKind")]' \
  "[{'int': 3}, {'int': 1}, {'int': 4}, {'int': 2}, {'string': 'uniform'}]"

# the host config: reserved CPUs leave the capacity, align names the level
printf '{"reserved": "0-1,9"}\n' >"$TMP/reserved.json"
run dra slice --node n1 --topology "$SYN" --config "$TMP/reserved.json" --json
expect "reserved 0-1,9: L3 0 has 6 CPUs, L3 1 has 7, L3 2 all 8" \
  '[d[n]["capacity"]["cpus"]["value"] for n in ("l3-0", "l3-1", "l3-2")]' "['6', '7', '8']"
expect "reserved: not held outside DRA either (usable less held)" '[d["l3-0"]["attributes"][k]["int"] for k in ("usableCpus", "heldOutside")]' "[6, 0]"
printf '{"defaults": {"align": "package"}}\n' >"$TMP/package.json"
run dra slice --node n1 --topology "$SYN" --config "$TMP/package.json" --json
expect "align package: one device per package" '[(n, x["capacity"]["cpus"]["value"]) for n, x in sorted(d.items())]' \
  "[('package-0', '16'), ('package-1', '16')]"
printf '{"cpus": "0-7"}\n' >"$TMP/cpus.json"
run dra slice --node n1 --topology "$SYN" --config "$TMP/cpus.json" --json
expect "cpus 0-7: only L3 0 is published" 'sorted(d)' "['l3-0']"
run dra slice --node n1 --topology "$SYN" --generation 7 --json
expect "--generation" 's[0]["spec"]["pool"]["generation"]' 7
run dra slice --node big --topology "package:2 l3cache:100 core:1 pu:1" --json
expect "200 L3s: two slices of one pool, 128 devices at most each" \
  '[(x["metadata"]["name"], len(x["spec"]["devices"]), x["spec"]["pool"]["resourceSliceCount"]) for x in s]' \
  "[('big-cachepin.io-0', 128, 2), ('big-cachepin.io-1', 72, 2)]"

run dra slice --node n1 --topology "$SYN"
if [ "$rc" -eq 0 ] && grep -q '^pool n1, driver cachepin.io: 4 devices' "$TMP/out" && grep -q '^l3-1 .* 8-15$' "$TMP/out"; then
  ok "the text: the pool, one line per device"
else
  bad "the text: exit $rc, $(cat "$TMP/out" "$TMP/err")"
fi
run dra slice --node n1 --empty --json
[ "$rc" -eq 0 ] && ok "this host, --empty: exit 0 ($(py 'len(d)') devices)" || bad "this host, --empty: exit $rc, $(cat "$TMP/err")"

# ---- this host's ledger: CPUs held outside DRA leave the capacity -------------------------
# Three entries of the NRI plugin whose containers are not created yet (pending: kept by
# reconcile however long, as a plugin's entry before CreateContainer's cgroup exists):
# one holding 4 CPUs of L3 1, one shared over L3 2 (holds nothing), one holding all of L3 3.
if lstopo-no-graphics --input 'package:2 l3cache:4 core:4 pu:2(indexes=core)' --of xml "$TMP/amd.xml" 2>/dev/null; then
  mkdir -m 0700 "$TMP/state"
  entry () { # ID MODE CPUS HELD
    printf '{"id": "%s", "cgroup_mount": "/sys/fs/cgroup", "cgroup": "/cachepin-dra-%s-none/%s", "pid": 0, "start_time": 0, "mode": "%s", "cpus": "%s", "held": "%s", "mems": "0", "placed_at": 1700000000, "sched_cache": "none", "core_sched": false, "drift": "", "runtime": "/run/containerd/containerd.sock"}' \
      "$1" "$$" "$1" "$2" "$3" "$4"
  }
  printf '{"version": 3, "entries": [%s, %s, %s]}\n' "$(entry ctr-a exclusive 4-5,36-37 4-5,36-37)" \
    "$(entry ctr-s shared 8-11 "")" "$(entry ctr-b exclusive 12-15,44-47 12-15,44-47)" >"$TMP/state/ledger.json"
  printf '{"state_dir": "%s", "topology": "%s", "kubelet_state": ""}\n' "$TMP/state" "$TMP/amd.xml" >"$TMP/host.json"
  BEFORE=$(ls -la "$TMP/state"; cat "$TMP/state/ledger.json")
  run dra slice --node n1 --config "$TMP/host.json" --json
  expect "ledger: L3 3, all held, is left out; the others keep their names" 'sorted(d)' \
    "['l3-0', 'l3-1', 'l3-2', 'l3-4', 'l3-5', 'l3-6', 'l3-7']"
  expect "ledger: L3 1 has 8 - 4 held = 4 CPUs of capacity, 4 held outside DRA" \
    '[d["l3-1"]["capacity"]["cpus"]["value"], d["l3-1"]["attributes"]["heldOutside"]["int"], d["l3-1"]["attributes"]["usableCpus"]["int"]]' \
    "['4', 4, 8]"
  expect "ledger: a shared placement holds nothing: L3 2 keeps its 8" 'd["l3-2"]["capacity"]["cpus"]["value"]' 8
  run dra slice --node n1 --config "$TMP/host.json"
  if grep -q '^pool n1, driver cachepin.io: 7 devices (this host, its ledger), 1 left out' "$TMP/out" \
     && grep -q '^held outside DRA: 2 ledger entries$' "$TMP/out"; then
    ok "ledger: the text says what is left out and what holds CPUs"
  else
    bad "ledger: the text: $(cat "$TMP/out" "$TMP/err")"
  fi
  run dra slice --node n1 --config "$TMP/host.json" --empty --json
  expect "--empty: the ledger not read, every L3 whole" '[len(d), d["l3-1"]["capacity"]["cpus"]["value"]]' "[8, '8']"
  [ "$BEFORE" = "$(ls -la "$TMP/state"; cat "$TMP/state/ledger.json")" ] && ok "ledger: nothing written" \
    || bad "ledger: the state directory changed"
else
  bad "lstopo-no-graphics could not write a synthetic topology's XML (hwloc, scripts/deps.sh)"
fi

# ---- errors: one line naming what was wrong ----------------------------------------------
expect_usage_error "no command" "slice" dra
expect_usage_error "an unknown command" "expected slice" dra slices --node n1
expect_usage_error "no --node" "--node: required" dra slice --topology "$SYN"
expect_usage_error "a node name the API refuses" "--node: \`Node_1\` is not a node name" dra slice --node Node_1 --topology "$SYN"
expect_usage_error "--generation 0" "--generation" dra slice --node n1 --generation 0 --topology "$SYN"
expect_usage_error "a topology that is none" "--topology" dra slice --node n1 --topology "nonsense:3"
expect_usage_error "an unknown option" "--nodes" dra slice --nodes n1

# ---- deploy/kubernetes/dra against the slice ----------------------------------------------
run dra slice --node n1 --topology "$SYN" --json
# one L3 with CPUs held outside DRA, as a node's ledger makes it (the engine's rule is
# unit-tested: tests/unit/test_dra_model.c): the whole-L3 class must pass it over
python3 - "$TMP/out" >"$TMP/slice.json" <<'PY'
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
dev = s[0]["spec"]["devices"][1]
dev["attributes"]["heldOutside"] = {"int": 2}
dev["capacity"]["cpus"]["value"] = dev["capacity"]["cpus"]["requestPolicy"]["default"] = "6"
print("\n".join(json.dumps(x) for x in s))
PY
KUBECTL_DIR=$(bash "$SRC/tests/cri/fetch-debs.sh" --suite sid kubectl=1.36.4+ds-1 2>"$TMP/fetch.err")
KUBECTL=${KUBECTL_DIR:+$KUBECTL_DIR/usr/bin/kubectl}
[ -x "${KUBECTL:-/nonexistent}" ] || KUBECTL=""
if python3 "$SRC/tests/cli/dra_manifests.py" "$SRC" "$TMP/slice.json" "$KUBECTL"; then
  ok "deploy/kubernetes/dra agrees with the slice"
else
  bad "deploy/kubernetes/dra"
fi

echo "$failures failure(s)"
[ "$failures" -eq 0 ] || exit 1
if [ -z "$KUBECTL" ]; then
  echo "SKIP kubectl kustomize: Debian sid's kubectl cannot be had ($(tail -1 "$TMP/fetch.err"))"
  exit 77
fi
exit 0
