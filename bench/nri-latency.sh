#!/usr/bin/env bash
# bench/nri-latency: what the NRI plugin's CreateContainer costs, beside the hook's
# createRuntime for the same placement, on the same 1,000-entry ledger (issue 22;
# docs/benchmarks.md, "NRI plugin latency").
#
#   bench/nri-latency.sh [TOPOLOGY_XML] [BUILD_DIR]
#     RUNS=200 LEDGER=1000 TOPOLOGIES=/work/shared/topologies SKIP=1 OUT=bench/results/nri-latency.md DATA=bench/results/data/nri-latency.tsv
#     NOTE="a sentence about the machine, put in the results file"
#
# Needs root and a cpuset cgroup hierarchy (v1 or v2), and jq.  TOPOLOGY_XML: the
# 384-CPU AMD EPYC 9654 (/work/shared/topologies/.../x86-AMD-19h-Zen4-2xEpyc-9654.xml
# by default; without it, lstopo writes hwloc's synthetic equivalent: 2 packages, 12
# L3 each of 8 cores, SMT2).  The host config names it (`topology`), `cpus` = this
# host's CPUs (so the hook's cpuset write is real), the state directory on a private
# tmpfs (as /run/cachepin is).  The ledger: LEDGER shared entries on CPU 0, each with
# an empty cgroup directory of its own and the sleeper's pid and start time (what
# reconcile checks of a live container).  Then build/bench/bench-nri (bench/nri.c)
# plays the runtime for RUNS rounds, interleaved with the hook.
set -u
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
XML=${1:-$(find "${TOPOLOGIES:-/work/shared/topologies}" -name 'x86-AMD-19h-Zen4-2xEpyc-9654.xml' 2>/dev/null | head -1)}
BUILD=$(realpath -m "${2:-$SRC/build}")
RUNS=${RUNS:-200}
LEDGER=${LEDGER:-1000}
OUT=${OUT:-$SRC/bench/results/nri-latency.md}
DATA=${DATA:-$SRC/bench/results/data/nri-latency.tsv}
. "$SRC/tests/cli/lib/cpuset.sh"

die () { echo "nri-latency: $*" >&2; exit 1; }
# What this host lacks: SKIP=77 (CTest bench.nri) says skipped, else a failure.
lacks () { echo "nri-latency: skipped: $*" >&2; exit "${SKIP:-1}"; }
[ "$(id -u)" = 0 ] || lacks "needs root (real cgroups)"
MNT=$(find_cpuset_mount)
[ -n "$MNT" ] || lacks "no cpuset cgroup hierarchy"
command -v jq >/dev/null || lacks "no jq"
[ -f "$BUILD/CMakeCache.txt" ] || cmake -S "$SRC" -B "$BUILD" >/dev/null || die "cmake failed"
cmake --build "$BUILD" -j2 --target cachepin bench-nri >/dev/null || die "build failed"
BIN=${BIN:-$BUILD/cachepin} # BIN=: another cachepin binary (an earlier build), measured the same way

D=$(mktemp -d /tmp/cachepin-nri-bench.XXXXXX)
TOP="$MNT/cachepin-nri-bench-$$"
SLEEPER=""
cleanup () {
  mountpoint -q "$D/state" 2>/dev/null && umount "$D/state"
  [ -n "$SLEEPER" ] && { kill "$SLEEPER" 2>/dev/null; wait "$SLEEPER" 2>/dev/null; }
  if [ -d "$TOP" ]; then
    [ -d "$TOP/ledger" ] && find "$TOP/ledger" -mindepth 1 -maxdepth 1 -type d -exec rmdir {} + 2>/dev/null
    rmdir "$TOP/ledger" "$TOP/c" "$TOP" 2>/dev/null
  fi
  rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "$XML" ] || [ ! -f "$XML" ]; then
  command -v lstopo >/dev/null || die "no EPYC 9654 XML and no lstopo (Debian hwloc) to write one"
  XML=$D/epyc-9654-synthetic.xml
  lstopo --input 'package:2 l3cache:12 core:8 pu:2(indexes=core)' --of xml "$XML" >/dev/null 2>&1 \
    || die "lstopo could not write the synthetic topology"
fi

mkdir -m 700 "$D/state"
mount -t tmpfs -o size=64m,mode=0700 cachepin-nri-bench "$D/state" || die "cannot mount a tmpfs on $D/state"
make_cgroup "$TOP"
make_cgroup "$TOP/c"
ALL=$(cat "$TOP/c/cpuset.cpus")
sleep 3600 </dev/null >/dev/null 2>&1 &
SLEEPER=$!
echo "$SLEEPER" > "$TOP/c/cgroup.procs" || die "cannot move the sleeper into $TOP/c"
mkdir "$TOP/ledger"
for i in $(seq -w 1 "$LEDGER"); do mkdir "$TOP/ledger/e$i"; done
NOW=$(date +%s)
START=$(sed 's/.*) //' "/proc/$SLEEPER/stat" | cut -d' ' -f20)
jq -n --arg mnt "$MNT" --arg top "/${TOP#"$MNT"/}" --argjson n "$LEDGER" --argjson now "$NOW" \
  --argjson pid "$SLEEPER" --argjson start "$START" '
  {version: 3, entries: [range(1; $n + 1) as $i
    | ($i | tostring) as $s | ("0000000000" + $s)[-(($n | tostring | length)):] as $p
    | {id: ("bench-" + $p), cgroup_mount: $mnt, cgroup: ($top + "/ledger/e" + $p), pid: $pid,
       start_time: $start, mode: "shared", cpus: "0", held: "", mems: "0", placed_at: $now,
       sched_cache: "none", core_sched: false, drift: ""}]}' > "$D/state/ledger.json"
mkdir -p "$D/bundle"
echo '{"ociVersion": "1.0.2", "annotations": {"cachepin.io/cpus": "1"}}' > "$D/bundle/config.json"
jq -cn --argjson pid "$SLEEPER" --arg b "$D/bundle" \
  '{ociVersion: "1.0.2", id: "bench-hook", status: "creating", pid: $pid, bundle: $b,
    annotations: {"cachepin.io/cpus": "1"}}' > "$D/create.json"
jq -cn --arg b "$D/bundle" \
  '{ociVersion: "1.0.2", id: "bench-hook", status: "stopped", bundle: $b,
    annotations: {"cachepin.io/cpus": "1"}}' > "$D/poststop.json"
jq -n --arg s "$D/state" --arg t "$XML" --arg c "$ALL" \
  '{state_dir: $s, topology: $t, cpus: $c, on_error: "allow", log_level: "error"}' > "$D/cfg.json"

# Untimed: the hook places the sleeper's cgroup (narrows it, one more entry) and
# poststop gives the entry back, on the same ledger.
"$BIN" hook --config "$D/cfg.json" createRuntime < "$D/create.json" || die "hook createRuntime failed"
HOOK_CPUS=$(cat "$TOP/c/cpuset.cpus")
E1=$(jq '.entries | length' "$D/state/ledger.json")
"$BIN" hook --config "$D/cfg.json" poststop < "$D/poststop.json" || die "hook poststop failed"
E2=$(jq '.entries | length' "$D/state/ledger.json")
[ "$HOOK_CPUS" != "$ALL" ] && [ "$E1" = $((LEDGER + 1)) ] && [ "$E2" = "$LEDGER" ] \
  || die "the hook did not place the sleeper (cpuset $HOOK_CPUS of $ALL, entries $E1 then $E2)"

mkdir -p "$(dirname "$DATA")" "$(dirname "$OUT")"
echo "nri-latency: $LEDGER entries, $RUNS rounds on $(basename "$XML")" >&2
"$BUILD/bench/bench-nri" --cachepin "$BIN" --config "$D/cfg.json" --cgroups-path "/${TOP#"$MNT"/}/nri" \
  --create "$D/create.json" --poststop "$D/poststop.json" --widen "$TOP/c/cpuset.cpus=$ALL" \
  --rounds "$RUNS" --out "$DATA" > "$D/summary" || die "bench-nri failed: $(cat "$D/summary")"
cat "$D/summary"
NRI_CPUS=$(awk '/answered cpus/ {print $NF}' "$D/summary")
[ "$NRI_CPUS" = "$HOOK_CPUS" ] || die "the plugin placed on $NRI_CPUS, the hook on $HOOK_CPUS: not the same placement"
E3=$(jq '.entries | length' "$D/state/ledger.json")
[ "$E3" = "$LEDGER" ] || die "the ledger has $E3 entries after the run, not $LEDGER"
{
  echo "# NRI plugin latency (bench/nri-latency)"
  echo
  echo "Generated by \`bench/nri-latency.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'): $RUNS rounds, plugin and hook"
  echo "interleaved (the order alternates by round); cachepin $("$BIN" --version | awk '{print $2}'),"
  echo "$(uname -sr), $(nproc) CPUs, topology $(basename "$XML"), $LEDGER live ledger entries, state on a tmpfs.${NOTE:+ $NOTE}"
  echo "Both placed the container on CPU(s) $NRI_CPUS. Rerun: \`sudo RUNS=$RUNS bench/nri-latency.sh\`."
  echo
  echo '```'
  cat "$D/summary"
  echo '```'
  echo
  echo "Samples (us, per round): \`bench/results/data/nri-latency.tsv\`."
} > "$OUT"
echo "nri-latency: wrote $OUT" >&2
