#!/usr/bin/env bash
# bench/nri-latency: what the NRI plugin's CreateContainer costs, beside the hook's
# createRuntime for the same placement, on the same 1,000-entry ledger (issue 22;
# docs/benchmarks.md, "NRI plugin latency").
#
#   bench/nri-latency.sh [TOPOLOGY_XML] [BUILD_DIR]
#     RUNS=200 LEDGER=1000 TOPOLOGIES=/work/shared/topologies SKIP=1 OUT=bench/results/nri-latency.md DATA=bench/results/data/nri-latency.tsv
#     NOTE="a sentence about the machine, put in the results file"
#     HOOK=0: the plugin's rounds alone, no hook (the plugin the ledger's only writer,
#     as on a node where NRI is the only route); HOOK=1 (default) interleaves them
#     BIN=PATH another cachepin binary measured in place of this build's
#     BASE=PATH a second cachepin binary measured in the same rounds (its plugin, and
#     its hook, on a ledger of its own, the same 1,000 entries): the ratios this / BASE
#     PLUGIN=EXE started in BIN's place as the plugin, with BIN's arguments (a wrapper
#     that runs it under valgrind or strace; docs/benchmarks.md)
#     SANDBOX=0 the host config says `sandbox: false` (valgrind cannot run under the
#     plugin's seccomp filter); the default keeps the sandbox, as deployed
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
BASE=${BASE:-}
HOOK=${HOOK:-1}
[ -z "$BASE" ] || [ -x "$BASE" ] || die "BASE=$BASE: not an executable"
case $HOOK in 0|1) ;; *) die "HOOK: 0 or 1, not $HOOK" ;; esac

D=$(mktemp -d /tmp/cachepin-nri-bench.XXXXXX)
TOP="$MNT/cachepin-nri-bench-$$"
SLEEPER=""
cleanup () {
  mountpoint -q "$D/state" 2>/dev/null && umount "$D/state"
  mountpoint -q "$D/base-state" 2>/dev/null && umount "$D/base-state"
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

for st in state ${BASE:+base-state}; do
  mkdir -m 700 "$D/$st"
  mount -t tmpfs -o size=64m,mode=0700 cachepin-nri-bench "$D/$st" || die "cannot mount a tmpfs on $D/$st"
done
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
jq -n --arg s "$D/state" --arg t "$XML" --arg c "$ALL" --argjson sb "$([ "${SANDBOX:-1}" = 0 ] && echo false || echo true)" \
  '{state_dir: $s, topology: $t, cpus: $c, on_error: "allow", log_level: "error", sandbox: $sb}' > "$D/cfg.json"
if [ -n "$BASE" ]; then
  cp "$D/state/ledger.json" "$D/base-state/ledger.json"
  jq --arg s "$D/base-state" '.state_dir = $s' "$D/cfg.json" > "$D/cfg-base.json"
fi

# Untimed: the hook places the sleeper's cgroup (narrows it, one more entry) and
# poststop gives the entry back, on the same ledger; BASE's the same on its own.
check_hook () { # BIN CFG STATE
  echo "$ALL" > "$TOP/c/cpuset.cpus"
  "$1" hook --config "$2" createRuntime < "$D/create.json" || die "$1 hook createRuntime failed"
  HOOK_CPUS=$(cat "$TOP/c/cpuset.cpus")
  E1=$(jq '.entries | length' "$3/ledger.json")
  "$1" hook --config "$2" poststop < "$D/poststop.json" || die "$1 hook poststop failed"
  E2=$(jq '.entries | length' "$3/ledger.json")
  [ "$HOOK_CPUS" != "$ALL" ] && [ "$E1" = $((LEDGER + 1)) ] && [ "$E2" = "$LEDGER" ] \
    || die "$1: the hook did not place the sleeper (cpuset $HOOK_CPUS of $ALL, entries $E1 then $E2)"
}
if [ -n "$BASE" ]; then
  check_hook "$BASE" "$D/cfg-base.json" "$D/base-state"
  BASE_HOOK_CPUS=$HOOK_CPUS
fi
check_hook "$BIN" "$D/cfg.json" "$D/state"
[ -z "$BASE" ] || [ "$BASE_HOOK_CPUS" = "$HOOK_CPUS" ] || die "BASE's hook placed on $BASE_HOOK_CPUS, this one's on $HOOK_CPUS"

mkdir -p "$(dirname "$DATA")" "$(dirname "$OUT")"
echo "nri-latency: $LEDGER entries, $RUNS rounds on $(basename "$XML")${BASE:+, beside $BASE}$([ "$HOOK" = 0 ] && echo ", plugin only")" >&2
"$BUILD/bench/bench-nri" --cachepin "$BIN" --config "$D/cfg.json" --cgroups-path "/${TOP#"$MNT"/}/nri" \
  --create "$D/create.json" --poststop "$D/poststop.json" --widen "$TOP/c/cpuset.cpus=$ALL" \
  ${PLUGIN:+--plugin "$PLUGIN"} ${BASE:+--base "$BASE" --base-config "$D/cfg-base.json"} \
  $([ "$HOOK" = 0 ] && echo --no-hook) \
  --rounds "$RUNS" --out "$DATA" > "$D/summary" || die "bench-nri failed: $(cat "$D/summary")"
cat "$D/summary"
NRI_CPUS=$(awk '/answered cpus/ {print $NF}' "$D/summary")
[ "$NRI_CPUS" = "$HOOK_CPUS" ] || die "the plugin placed on $NRI_CPUS, the hook on $HOOK_CPUS: not the same placement"
for st in state ${BASE:+base-state}; do
  E3=$(jq '.entries | length' "$D/$st/ledger.json")
  [ "$E3" = "$LEDGER" ] || die "the ledger in $st has $E3 entries after the run, not $LEDGER"
done
{
  echo "# NRI plugin latency (bench/nri-latency)"
  echo
  if [ "$HOOK" = 0 ]; then
    echo "Generated by \`bench/nri-latency.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'): $RUNS rounds of the plugin"
    echo "alone (HOOK=0: the ledger's only writer); cachepin $("$BIN" --version | awk '{print $2}'),"
  else
    echo "Generated by \`bench/nri-latency.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'): $RUNS rounds, plugin and hook"
    echo "interleaved (the order alternates by round); cachepin $("$BIN" --version | awk '{print $2}'),"
  fi
  [ -z "$BASE" ] || echo "beside BASE=\`$BASE\` in the same rounds (the sides' order alternating, each on its own ledger),"
  echo "$(uname -sr), $(nproc) CPUs, topology $(basename "$XML"), $LEDGER live ledger entries, state on a tmpfs.${NOTE:+ $NOTE}"
  echo "Both placed the container on CPU(s) $NRI_CPUS. Rerun: \`sudo RUNS=$RUNS HOOK=$HOOK${BASE:+ BASE=...} bench/nri-latency.sh\`."
  echo
  echo '```'
  cat "$D/summary"
  echo '```'
  echo
  echo "Samples (us, per round): \`bench/results/data/nri-latency.tsv\`."
} > "$OUT"
echo "nri-latency: wrote $OUT" >&2
