#!/usr/bin/env bash
# bench/hook-latency: what `cachepin hook` costs on a container's start path
# (issue 12, item 2; docs/benchmarks.md, "Hook latency").
#
#   bench/hook-latency.sh [--cache] [TOPOLOGY_DIR] [BUILD_DIR]
#     RUNS=20 LEDGER=1000 OUT=bench/results/hook-latency.md DATA=bench/results/data/hook-latency.tsv
#     NOTE="a sentence about the machine, put in the results file"
#
# Needs root and a cpuset cgroup hierarchy (v1 or v2).  For every *.xml under
# TOPOLOGY_DIR (recursively) it times, RUNS times, interleaved (each round visits
# every topology, and within a topology the commands in a rotating order):
#   floor       build/bench/bench-floor fed the createRuntime state, then the
#               poststop state (two process starts, as the hook pair is)
#   hwloc-calc  hwloc-calc --input FILE all
#   hook-0      cachepin hook createRuntime, then poststop, on a real cgroup with a
#               sleeper in it, host config `topology` = FILE, empty ledger
#   hook-N      the same with LEDGER entries in the ledger
# and for every sysfs dump TOPOLOGY_DIR/hwloc/sysfs-tarballs/*.tar.bz2 (extracted
# to a temporary directory) discovery with HWLOC_FSROOT, which the hook cannot be
# given (it scrubs HWLOC_* and its host config has no fsroot key), so through
#   plan        HWLOC_FSROOT=DIR cachepin plan --topology host --cpus 1
#   floor       bench-floor fed the createRuntime state (one process start)
#   hwloc-calc  HWLOC_FSROOT=DIR hwloc-calc all
# Each sample is one bench-spawn: wall time fork-to-wait4 and the child's peak RSS
# (ru_maxrss, what /usr/bin/time -f %M prints).
#
# --cache: the cold/warm comparison of the topology cache (issue 12, item 1).  This
# build has no cache: the mode says so and the table marks the columns n/a.
set -u
CACHE=0
[ "${1:-}" = --cache ] && { CACHE=1; shift; }
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOPDIR=$(realpath "${1:-/work/shared/topologies}")
BUILD=$(realpath -m "${2:-$SRC/build}")
RUNS=${RUNS:-20}
LEDGER=${LEDGER:-1000}
OUT=${OUT:-$SRC/bench/results/hook-latency.md}
DATA=${DATA:-$SRC/bench/results/data/hook-latency.tsv}
. "$SRC/tests/cli/lib/cpuset.sh"

die () { echo "hook-latency: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (real cgroups)"
MNT=$(find_cpuset_mount)
[ -n "$MNT" ] || die "no cpuset cgroup hierarchy"
command -v hwloc-calc >/dev/null || die "no hwloc-calc (Debian package hwloc)"
command -v jq >/dev/null || die "no jq"
[ -f "$BUILD/CMakeCache.txt" ] || cmake -S "$SRC" -B "$BUILD" >/dev/null || die "cmake failed"
cmake --build "$BUILD" -j2 --target cachepin bench-floor bench-spawn >/dev/null || die "build failed"
BIN=$BUILD/cachepin FLOOR=$BUILD/bench/bench-floor SPAWN=$BUILD/bench/bench-spawn

if [ "$CACHE" = 1 ]; then
  # Once the cache exists: run hook-0/hook-N twice, with the cache file removed
  # before each sample (cold) and kept from the previous one (warm).
  echo "hook-latency: --cache: the topology cache is not available in this build (issue 12, item 1);" \
    "measuring without it" >&2
fi

D=$(mktemp -d /tmp/cachepin-bench.XXXXXX)
TOP="$MNT/cachepin-bench-$$"
SLEEPER=""
cleanup () {
  [ -n "$SLEEPER" ] && { kill "$SLEEPER" 2>/dev/null; wait "$SLEEPER" 2>/dev/null; }
  if [ -d "$TOP" ]; then
    [ -d "$TOP/ledger" ] && find "$TOP/ledger" -mindepth 1 -maxdepth 1 -type d -exec rmdir {} + 2>/dev/null
    rmdir "$TOP/ledger" "$TOP/c" "$TOP" 2>/dev/null
  fi
  rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

make_cgroup () { # v1 needs cpus and mems before a task can join
  mkdir "$1" || die "mkdir $1"
  if [ "$MNT" != /sys/fs/cgroup ]; then
    cat "$(dirname "$1")/cpuset.cpus" > "$1/cpuset.cpus"
    cat "$(dirname "$1")/cpuset.mems" > "$1/cpuset.mems"
  fi
}
make_cgroup "$TOP"
make_cgroup "$TOP/c"
ALL=$(cat "$TOP/c/cpuset.cpus")
sleep 3600 </dev/null >/dev/null 2>&1 &
SLEEPER=$!
echo "$SLEEPER" > "$TOP/c/cgroup.procs" || die "cannot move the sleeper into $TOP/c"

# The ledger's cgroups: empty directories in the same hierarchy (no task ever
# joins them, so v1 needs no cpus/mems), so reconcile finds them alive.
echo "hook-latency: setup ($SECONDS s)" >&2
mkdir "$TOP/ledger"
for i in $(seq -w 1 "$LEDGER"); do mkdir "$TOP/ledger/e$i"; done
NOW=$(date +%s)
# Shared entries (no CPU held): LEDGER exclusive entries cannot fit on the small
# machines, and shared ones cost the hook the same parse, validate, reconcile,
# usage and write.  CPU 0 and node 0 are on every captured machine.
jq -n --arg mnt "$MNT" --arg top "/${TOP#"$MNT"/}" --argjson n "$LEDGER" --argjson now "$NOW" '
  {version: 1, entries: [range(1; $n + 1) as $i
    | ($i | tostring) as $s | ("0000000000" + $s)[-(($n | tostring | length)):] as $p
    | {id: ("bench-" + $p), cgroup_mount: $mnt, cgroup: ($top + "/ledger/e" + $p), pid: 0,
       start_time: 0, mode: "shared", cpus: "0", held: "", mems: "0", placed_at: $now}]}' \
  > "$D/ledger-N.json"
mkdir -p "$D/bundle"
echo '{"ociVersion": "1.0.2", "annotations": {"cachepin.io/cpus": "1"}}' > "$D/bundle/config.json"
jq -cn --argjson pid "$SLEEPER" --arg b "$D/bundle" \
  '{ociVersion: "1.0.2", id: "bench", status: "creating", pid: $pid, bundle: $b,
    annotations: {"cachepin.io/cpus": "1"}}' > "$D/create.json"
jq -cn --arg b "$D/bundle" \
  '{ociVersion: "1.0.2", id: "bench", status: "stopped", bundle: $b,
    annotations: {"cachepin.io/cpus": "1"}}' > "$D/poststop.json"

# Topologies: name<TAB>kind<TAB>path
: > "$D/topos"
while IFS= read -r f; do
  printf '%s\txml\t%s\n' "$(basename "$f" .xml)" "$f" >> "$D/topos"
done < <(find "$TOPDIR" -name '*.xml' -type f | sort)
for t in "$TOPDIR"/hwloc/sysfs-tarballs/*.tar.bz2; do
  [ -f "$t" ] || continue
  n=$(basename "$t" .tar.bz2)
  mkdir -p "$D/sysfs"
  tar -xjf "$t" -C "$D/sysfs" || die "cannot extract $t"
  [ -d "$D/sysfs/$n" ] || die "$t does not hold $n/"
  printf 'sysfs:%s\tsysfs\t%s\n' "$n" "$D/sysfs/$n" >> "$D/topos"
done
[ -s "$D/topos" ] || die "no topology under $TOPDIR"

# The host config of one topology: its own state_dir; CPUs limited to the ones
# this host has (0-1 at least), so the cpuset write is real and succeeds.
hostcfg () { # NAME PATH
  mkdir -p "$D/state/$1"
  jq -n --arg s "$D/state/$1" --arg t "$2" --arg c "$ALL" \
    '{state_dir: $s, topology: $t, cpus: $c, on_error: "allow", log_level: "error"}' > "$D/cfg-$1.json"
}
# poststop releases the ledger entry only (the runtime removes the cgroup): give
# the sleeper's cgroup all CPUs again before each createRuntime, untimed.
widen () { echo "$ALL" > "$TOP/c/cpuset.cpus"; }
reset_ledger () { # NAME ENTRIES
  if [ "$2" = 0 ]; then rm -f "$D/state/$1/ledger.json"; else cp "$D/ledger-N.json" "$D/state/$1/ledger.json"; fi
}

# One sample, appended to the data: TOPOLOGY COMMAND then bench-spawn's fields.
# A pair (hook, floor) is two spawns, summed; peak RSS the larger; status the worse.
sample () { # NAME KIND PATH VARIANT
  local name=$1 kind=$2 path=$3 var=$4
  echo "0 0 0" > "$D/b"
  case "$kind:$var" in
    xml:floor|sysfs:floor)
      "$SPAWN" "$D/create.json" "$FLOOR" > "$D/a"
      [ "$kind" = xml ] && "$SPAWN" "$D/poststop.json" "$FLOOR" > "$D/b" ;;
    xml:hwloc-calc)
      "$SPAWN" /dev/null hwloc-calc --input "$path" all > "$D/a" ;;
    sysfs:hwloc-calc)
      HWLOC_FSROOT=$path "$SPAWN" /dev/null hwloc-calc all > "$D/a" ;;
    sysfs:plan)
      HWLOC_FSROOT=$path "$SPAWN" /dev/null "$BIN" plan --topology host --cpus 1 > "$D/a" ;;
    xml:hook-0|xml:hook-N)
      if [ "$var" = hook-0 ]; then reset_ledger "$name" 0; else reset_ledger "$name" "$LEDGER"; fi
      widen
      "$SPAWN" "$D/create.json" "$BIN" hook --config "$D/cfg-$name.json" createRuntime > "$D/a"
      "$SPAWN" "$D/poststop.json" "$BIN" hook --config "$D/cfg-$name.json" poststop > "$D/b" ;;
    *) die "sample: $kind:$var" ;;
  esac
  read -r ta ma sa < "$D/a"; read -r tb mb sb < "$D/b"
  printf '%s\t%s\t%d\t%d\t%d\t%d\t%d\n' "$name" "$var" $((ta + tb)) "$ta" "$tb" $((ma > mb ? ma : mb)) \
    $((sa > sb ? sa : sb)) >> "$D/raw.tsv"
}

# Check once, untimed, that each hook pair places the sleeper (createRuntime
# narrows its cpuset and adds a ledger entry) and releases it (poststop removes the
# entry).  A topology in which no CPU of this host is online cannot be placed here:
# the hook logs it and lets the container start unplaced (on_error allow); its
# runs still load the topology and the ledger, and the table says so.
printf 'topology\tcommand\twall_us\tfirst_us\tsecond_us\tmaxrss_kb\tstatus\n' > "$D/raw.tsv"
: > "$D/placed"
while IFS=$'\t' read -r name kind path; do
  [ "$kind" = xml ] || continue
  hostcfg "$name" "$path"
  for n in 0 "$LEDGER"; do
    reset_ledger "$name" "$n"
    widen
    "$BIN" hook --config "$D/cfg-$name.json" createRuntime < "$D/create.json" 2>"$D/err"
    rc=$?
    got=$(cat "$TOP/c/cpuset.cpus")
    e1=$(jq '.entries | length' "$D/state/$name/ledger.json" 2>/dev/null)
    "$BIN" hook --config "$D/cfg-$name.json" poststop < "$D/poststop.json" 2>>"$D/err"
    rc2=$?
    e2=$(jq '.entries | length' "$D/state/$name/ledger.json" 2>/dev/null)
    if [ "$rc" = 0 ] && [ "$rc2" = 0 ] && [ "$got" != "$ALL" ] && [ "$e1" = $((n + 1)) ] && [ "$e2" = "$n" ]; then
      ok=placed
    elif [ "$rc" = 0 ] && [ "$rc2" = 0 ] && [ "$got" = "$ALL" ] && [ "${e1:-0}" = "$n" ]; then
      ok="unplaced (none of this host's CPUs $ALL is online in it)"
    else
      ok="FAILED (exit $rc/$rc2, cpuset $got, entries $e1 then $e2: $(tr '\n' ' ' < "$D/err" | head -c 200))"
      echo "hook-latency: $name, $n entries: $ok" >&2
    fi
    printf '%s\t%s\t%s\t%s\n' "$name" "$n" "$got" "$ok" >> "$D/placed"
  done
done < "$D/topos"
echo "hook-latency: checked ($SECONDS s)" >&2

echo "hook-latency: $(wc -l < "$D/topos") inputs, $RUNS rounds" >&2
START=$(date +%s)
for r in $(seq 1 "$RUNS"); do
  while IFS=$'\t' read -r name kind path; do
    if [ "$kind" = xml ]; then vs=(floor hwloc-calc hook-0 hook-N); else vs=(floor hwloc-calc plan); fi
    k=${#vs[@]}
    for ((j = 0; j < k; j++)); do sample "$name" "$kind" "$path" "${vs[$(((j + r) % k))]}"; done
  done < "$D/topos"
  printf '.' >&2
done
echo " $(( $(date +%s) - START )) s" >&2

mkdir -p "$(dirname "$DATA")" "$(dirname "$OUT")"
cp "$D/raw.tsv" "$DATA"
BAD=$(awk -F'\t' 'NR > 1 && $7 != 0' "$DATA" | wc -l)

# median/min/max (ms) and the median peak RSS (KiB) of each topology and command
awk -F'\t' 'NR > 1 {print $1 "\t" $2 "\t" $3 "\t" $6}' "$DATA" | sort -t$'\t' -k1,1 -k2,2 -k3,3n \
  | awk -F'\t' '
    function flush() { if (n) { printf "%s\t%s\t%.1f\t%.1f\t%.1f\t%d\n", key1, key2,
        (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) / 1000, v[1] / 1000, v[n] / 1000, rmax } }
    { k = $1 "\t" $2; if (k != cur) { flush(); cur = k; key1 = $1; key2 = $2; n = 0; rmax = 0 }
      v[++n] = $3; if ($4 > rmax) rmax = $4 }
    END { flush() }' > "$D/stats.tsv"
# createRuntime alone, hook-N: its median as one more "command"
awk -F'\t' 'NR > 1 && $2 == "hook-N" {print $1 "\t" $4}' "$DATA" | sort -t$'\t' -k1,1 -k2,2n \
  | awk -F'\t' '
    function flush() { if (n) printf "%s\tcreate-N\t%.1f\n", cur, (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) / 1000 }
    { if ($1 != cur) { flush(); cur = $1; n = 0 } v[++n] = $2 }
    END { flush() }' >> "$D/stats.tsv"
declare -A ST
while IFS=$'\t' read -r t c med mn mx rss; do
  ST[$t/$c/3]=$med; ST[$t/$c/4]=$mn; ST[$t/$c/5]=$mx; ST[$t/$c/6]=$rss
done < "$D/stats.tsv"
stat () { echo "${ST[$1/$2/$3]:-}"; }
ratio () { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "-"; else printf "%.2f", a / b }'; }
cell () { printf '%s (%s-%s)' "$(stat "$1" "$2" 3)" "$(stat "$1" "$2" 4)" "$(stat "$1" "$2" 5)"; }

HW_HOST=$(hwloc-calc --number-of pu all 2>/dev/null)
{
  echo "# Hook latency (bench/hook-latency)"
  echo
  echo "Generated by \`bench/hook-latency.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'): $RUNS rounds, interleaved;"
  echo "cachepin $("$BIN" --version | awk '{print $2}'), hwloc $(hwloc-calc --version 2>&1 | awk '{print $2}'),"
  echo "$(uname -sr), ${HW_HOST:-?} CPUs.${NOTE:+ $NOTE} On a shared or busy host absolute times vary from"
  echo "run to run; the ratios are of commands measured side by side, in the same rounds."
  echo "Rerun: \`sudo RUNS=$RUNS LEDGER=$LEDGER bench/hook-latency.sh $TOPDIR\`."
  echo "Times in ms, wall clock fork to wait4, as *median (min-max)*; peak RSS the largest"
  echo "over the samples, KiB. Topology cache (issue 12, item 1): **not available in this build**: every hook"
  echo "run is cold (discovery, here an XML load, on every invocation)."
  echo
  echo "## From XML: \`cachepin hook createRuntime\` + \`poststop\`"
  echo
  echo "floor = bench-floor fed the createRuntime state, then the poststop state (two process starts, like the"
  echo "hook pair). hook-0: empty ledger; hook-$LEDGER: $LEDGER ledger entries (shared, live cgroups)."
  echo "\"(unplaced)\": none of this host's CPUs is online in that topology, so createRuntime loads the"
  echo "topology and the ledger, finds nothing to place, and lets the container start unplaced (see Checks)."
  echo
  echo "| topology | floor | hwloc-calc | hook-0 | hook-$LEDGER | hook-$LEDGER / floor | hook-$LEDGER / hwloc-calc | createRuntime alone / hwloc-calc | peak RSS floor / hwloc-calc / hook-$LEDGER |"
  echo "|---|---|---|---|---|---|---|---|---|"
  while IFS=$'\t' read -r name kind path; do
    [ "$kind" = xml ] || continue
    cr=$(stat "$name" create-N 3)
    mark=""
    grep -q "^$name	[0-9]*	[^	]*	unplaced" "$D/placed" && mark=" (unplaced)"
    printf '| %s%s | %s | %s | %s | %s | %s | %s | %s | %s / %s / %s |\n' "$name" "$mark" \
      "$(cell "$name" floor)" "$(cell "$name" hwloc-calc)" "$(cell "$name" hook-0)" "$(cell "$name" hook-N)" \
      "$(ratio "$(stat "$name" hook-N 3)" "$(stat "$name" floor 3)")" \
      "$(ratio "$(stat "$name" hook-N 3)" "$(stat "$name" hwloc-calc 3)")" \
      "$(ratio "$cr" "$(stat "$name" hwloc-calc 3)")" \
      "$(stat "$name" floor 6)" "$(stat "$name" hwloc-calc 6)" "$(stat "$name" hook-N 6)"
  done < "$D/topos"
  echo
  echo "## Discovery from sysfs dumps (\`HWLOC_FSROOT\`): through \`cachepin plan\`, not the hook"
  echo
  echo "The hook cannot be pointed at a sysfs dump: it removes every HWLOC_* variable from its environment"
  echo "(hook/main.c, scrub_environment) and its host config's \`topology\` is \"host\" or an XML file. So"
  echo "discovery is measured with \`HWLOC_FSROOT=DIR cachepin plan --topology host --cpus 1\` (plan keeps its"
  echo "environment; same cp_topo_load() and placement, no ledger or cgroup), against one floor start and"
  echo "\`HWLOC_FSROOT=DIR hwloc-calc all\`."
  echo
  echo "| sysfs dump | floor | hwloc-calc | plan | plan / floor | plan / hwloc-calc | peak RSS floor / hwloc-calc / plan |"
  echo "|---|---|---|---|---|---|---|"
  while IFS=$'\t' read -r name kind path; do
    [ "$kind" = sysfs ] || continue
    printf '| %s | %s | %s | %s | %s | %s | %s / %s / %s |\n' "${name#sysfs:}" \
      "$(cell "$name" floor)" "$(cell "$name" hwloc-calc)" "$(cell "$name" plan)" \
      "$(ratio "$(stat "$name" plan 3)" "$(stat "$name" floor 3)")" \
      "$(ratio "$(stat "$name" plan 3)" "$(stat "$name" hwloc-calc 3)")" \
      "$(stat "$name" floor 6)" "$(stat "$name" hwloc-calc 6)" "$(stat "$name" plan 6)"
  done < "$D/topos"
  echo
  echo "## Targets (issue 12), as measured here"
  echo
  warm_ok=$(awk -F'\t' '$2 == "hook-N" {h[$1] = $3} $2 == "floor" {f[$1] = $3}
    END {n = 0; m = 0; for (t in h) {n++; if (h[t] <= 2 * f[t]) m++}; print m "/" n}' "$D/stats.tsv")
  cold_ok=$(awk -F'\t' '$2 == "hook-N" {h[$1] = $3} $2 == "hwloc-calc" {c[$1] = $3}
    END {n = 0; m = 0; for (t in h) {n++; if (h[t] <= c[t]) m++}; print m "/" n}' "$D/stats.tsv")
  echo "- Warm hook at most 2x the floor with $LEDGER entries: no warm hook exists (no cache); the"
  echo "  uncached hook (hook-$LEDGER) is within 2x the floor on $warm_ok XML topologies."
  echo "- Cold at most hwloc-calc on the same input: hook-$LEDGER (createRuntime + poststop) is at most"
  echo "  hwloc-calc on $cold_ok XML topologies."
  echo
  echo "## Checks"
  echo
  echo "Before timing, each topology's hook pair was run once, untimed: createRuntime must narrow the"
  echo "sleeper's cgroup (cpuset.cpus, \`$ALL\` before) and add a ledger entry, poststop must remove it."
  echo
  echo "| topology | ledger entries | cpuset given | ok |"
  echo "|---|---|---|---|"
  awk -F'\t' '{printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4}' "$D/placed"
  echo
  echo "Samples with a non-zero exit status: $BAD. Raw samples: \`bench/results/data/hook-latency.tsv\`."
} > "$OUT"
echo "hook-latency: wrote $OUT" >&2
