#!/usr/bin/env bash
# bench/hook-latency: what `cachepin hook` costs on a container's start path
# (issue 12, item 2; docs/benchmarks.md, "Hook latency").
#
#   bench/hook-latency.sh [--cache] [TOPOLOGY_DIR] [BUILD_DIR]
#     RUNS=20 LEDGER=1000 OUT=bench/results/hook-latency.md DATA=bench/results/data/hook-latency.tsv
#     NOTE="a sentence about the machine, put in the results file"
#     BASE=PATH another cachepin binary (the build before a refactoring, say) timed
#     in the same rounds, interleaved with this one: each hook variant again as
#     base-<variant>, the same check run untimed first (it must give the same cpuset),
#     and a section of ratios this / BASE (issue 20: "behaviour unchanged")
#     STATE_FS=tmpfs (default) or disk: the state directories on a private tmpfs, as
#     the default state_dir /run/cachepin is on Debian (/run is a tmpfs there; the
#     ledger's fsyncs then cost nothing), or on the disk under /tmp (each commit's
#     two fsyncs, about 10 ms on this machine's ext4)
#
# Needs root and a cpuset cgroup hierarchy (v1 or v2).  Inputs: every *.xml under
# TOPOLOGY_DIR (recursively), host config `topology` = FILE, and every sysfs dump
# TOPOLOGY_DIR/hwloc/sysfs-tarballs/*.tar.bz2 (extracted to a temporary directory),
# host config `topology` = "sysfs:DIR" (hwloc's Linux discovery on that root).
# For each it times, RUNS times, interleaved (each round visits every input, and
# within an input the commands in a rotating order):
#   floor       build/bench/bench-floor fed the createRuntime state, then the
#               poststop state (two process starts, as the hook pair is)
#   hwloc-calc  hwloc-calc --input FILE all, or HWLOC_FSROOT=DIR hwloc-calc all
#   cold-0      cachepin hook createRuntime, then poststop, on a real cgroup with a
#               sleeper in it, empty ledger, topology cache removed first
#   cold-N      the same with LEDGER entries in the ledger
#   warm-0      empty ledger, a valid topology cache in place (STATE/topology.cache,
#               saved by the untimed check run and copied back before the sample)
#   warm-N      the same with LEDGER entries
# Each sample is one bench-spawn: wall time fork-to-wait4 and the child's peak RSS
# (ru_maxrss, what /usr/bin/time -f %M prints).
set -u
[ "${1:-}" = --cache ] && shift # the cold/warm comparison is always made now
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
BASE=${BASE:-}
[ -z "$BASE" ] || [ -x "$BASE" ] || die "BASE=$BASE: not an executable"

D=$(mktemp -d /tmp/cachepin-bench.XXXXXX)
TOP="$MNT/cachepin-bench-$$"
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

make_cgroup () { # v1 needs cpus and mems before a task can join
  mkdir "$1" || die "mkdir $1"
  if [ "$MNT" != /sys/fs/cgroup ]; then
    cat "$(dirname "$1")/cpuset.cpus" > "$1/cpuset.cpus"
    cat "$(dirname "$1")/cpuset.mems" > "$1/cpuset.mems"
  fi
}
STATE_FS=${STATE_FS:-tmpfs}
mkdir -m 700 "$D/state"
case $STATE_FS in
  tmpfs) mount -t tmpfs -o size=256m,mode=0700 cachepin-bench "$D/state" || die "cannot mount a tmpfs on $D/state" ;;
  disk) ;;
  *) die "STATE_FS: tmpfs or disk, not $STATE_FS" ;;
esac
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
# The sleeper's start time (/proc/PID/stat field 22, counted after the `)` that
# ends the command name).
START=$(sed 's/.*) //' "/proc/$SLEEPER/stat" | cut -d' ' -f20)
# Shared entries (no CPU held): LEDGER exclusive entries cannot fit on the small
# machines, and shared ones cost the hook the same parse, validate, reconcile,
# usage and write.  CPU 0 and node 0 are on every captured machine.  Each entry
# has a pid, as every entry the hook writes does, so reconcile checks it as it
# checks a container's (/proc/PID/stat, start time compared): the sleeper's, one
# live process for all of them (the check costs the same whichever pid it is).
jq -n --arg mnt "$MNT" --arg top "/${TOP#"$MNT"/}" --argjson n "$LEDGER" --argjson now "$NOW" \
  --argjson pid "$SLEEPER" --argjson start "$START" '
  {version: 3, entries: [range(1; $n + 1) as $i
    | ($i | tostring) as $s | ("0000000000" + $s)[-(($n | tostring | length)):] as $p
    | {id: ("bench-" + $p), cgroup_mount: $mnt, cgroup: ($top + "/ledger/e" + $p), pid: $pid,
       start_time: $start, mode: "shared", cpus: "0", held: "", mems: "0", placed_at: $now,
       sched_cache: "none", core_sched: false, drift: ""}]}' \
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
hostcfg () { # NAME TOPOLOGY
  mkdir -p -m 700 "$D/state/$1"
  jq -n --arg s "$D/state/$1" --arg t "$2" --arg c "$ALL" \
    '{state_dir: $s, topology: $t, cpus: $c, on_error: "allow", log_level: "error"}' > "$D/cfg-$1.json"
}
# poststop releases the ledger entry only (the runtime removes the cgroup): give
# the sleeper's cgroup all CPUs again before each createRuntime, untimed.
widen () { echo "$ALL" > "$TOP/c/cpuset.cpus"; }
# ledger.json.prev goes too: with ledger.json missing the hook goes back to it (a
# lost ledger costs at most its last commit), so an "empty" ledger after a sample
# with LEDGER entries was the LEDGER entries again.
reset_ledger () { # NAME ENTRIES
  rm -f "$D/state/$1/ledger.json.prev"
  if [ "$2" = 0 ]; then rm -f "$D/state/$1/ledger.json"; else cp "$D/ledger-N.json" "$D/state/$1/ledger.json"; fi
}

# One sample, appended to the data: TOPOLOGY COMMAND then bench-spawn's fields.
# A pair (hook, floor) is two spawns, summed; peak RSS the larger; status the worse.
sample () { # NAME KIND PATH VARIANT
  local name=$1 kind=$2 path=$3 var=$4
  echo "0 0 0" > "$D/b"
  case "$kind:$var" in
    *:floor)
      "$SPAWN" "$D/create.json" "$FLOOR" > "$D/a"
      "$SPAWN" "$D/poststop.json" "$FLOOR" > "$D/b" ;;
    xml:hwloc-calc)
      "$SPAWN" /dev/null hwloc-calc --input "$path" all > "$D/a" ;;
    sysfs:hwloc-calc)
      HWLOC_FSROOT=$path "$SPAWN" /dev/null hwloc-calc all > "$D/a" ;;
    *:cold-0|*:cold-N|*:warm-0|*:warm-N|*:base-cold-0|*:base-cold-N|*:base-warm-0|*:base-warm-N)
      local bin=$BIN cache=cache v=$var
      if [ "${var#base-}" != "$var" ]; then bin=$BASE cache=base-cache v=${var#base-}; fi
      if [ "${v#*-}" = 0 ]; then reset_ledger "$name" 0; else reset_ledger "$name" "$LEDGER"; fi
      if [ "${v%-*}" = cold ]; then rm -f "$D/state/$name/topology.cache"
      else cp "$D/$cache-$name" "$D/state/$name/topology.cache"; fi
      widen
      "$SPAWN" "$D/create.json" "$bin" hook --config "$D/cfg-$name.json" createRuntime > "$D/a"
      "$SPAWN" "$D/poststop.json" "$bin" hook --config "$D/cfg-$name.json" poststop > "$D/b" ;;
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
: > "$D/base-placed"
check () { # BIN PLACED CACHE: the check of every input with one binary
  local BIN=$1 placed=$2 cache=$3
  while IFS=$'\t' read -r name kind path; do
    if [ "$kind" = xml ]; then hostcfg "$name" "$path"; else hostcfg "$name" "sysfs:$path"; fi
    rm -f "$D/state/$name/topology.cache"
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
      printf '%s\t%s\t%s\t%s\n' "$name" "$n" "$got" "$ok" >> "$placed"
    done
    # the cache the first run wrote, for the warm samples; the second run must have used it
    [ -f "$D/state/$name/topology.cache" ] || die "$name: the hook wrote no topology cache"
    cp "$D/state/$name/topology.cache" "$D/$cache-$name"
  done < "$D/topos"
}
check "$BIN" "$D/placed" cache
[ -z "$BASE" ] || check "$BASE" "$D/base-placed" base-cache
echo "hook-latency: checked ($SECONDS s)" >&2

echo "hook-latency: $(wc -l < "$D/topos") inputs, $RUNS rounds" >&2
START=$(date +%s)
for r in $(seq 1 "$RUNS"); do
  while IFS=$'\t' read -r name kind path; do
    vs=(floor hwloc-calc cold-0 cold-N warm-0 warm-N)
    [ -z "$BASE" ] || vs+=(base-cold-0 base-cold-N base-warm-0 base-warm-N)
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
# createRuntime alone (the first spawn of a pair): its median as one more "command", create-<variant>
awk -F'\t' 'NR > 1 && $2 ~ /^(cold|warm)-/ {print $1 "\t" $2 "\t" $4}' "$DATA" | sort -t$'\t' -k1,1 -k2,2 -k3,3n \
  | awk -F'\t' '
    function flush() { if (n) printf "%s\tcreate-%s\t%.1f\n", c1, c2, (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) / 1000 }
    { k = $1 "\t" $2; if (k != cur) { flush(); cur = k; c1 = $1; c2 = $2; n = 0 } v[++n] = $3 }
    END { flush() }' >> "$D/stats.tsv"
declare -A ST
while IFS=$'\t' read -r t c med mn mx rss; do
  ST[$t/$c/3]=$med; ST[$t/$c/4]=$mn; ST[$t/$c/5]=$mx; ST[$t/$c/6]=$rss
done < "$D/stats.tsv"
stat () { echo "${ST[$1/$2/$3]:-}"; }
ratio () { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "-"; else printf "%.2f", a / b }'; }
cell () { printf '%s (%s-%s)' "$(stat "$1" "$2" 3)" "$(stat "$1" "$2" 4)" "$(stat "$1" "$2" 5)"; }

HW_HOST=$(hwloc-calc --number-of pu all 2>/dev/null)
N=$LEDGER
# count TOPOLOGIES-WHERE: how many inputs satisfy A <= F * B (medians), as "m/n"
count () { # A B F [kind] [placed]: inputs where A <= F x B (placed: only the placed inputs)
  awk -F'\t' -v a="$1" -v b="$2" -v f="$3" -v only="${4:-}" -v placed="${5:-}" '
    FILENAME == ARGV[1] { kind[$1] = $2; next }
    FILENAME == ARGV[2] { if ($4 ~ /^unplaced/) unplaced[$1] = 1; next }
    $2 == a {x[$1] = $3} $2 == b {y[$1] = $3}
    END {n = 0; m = 0; for (t in x) if ((only == "" || kind[t] == only) && !(placed != "" && t in unplaced)) {n++; if (x[t] <= f * y[t]) m++}; print m "/" n}' \
    <(awk -F'\t' '{print $1 "\t" $2}' "$D/topos") "$D/placed" "$D/stats.tsv"
}
range () { # VARIANT-A VARIANT-B: min-max of the ratio of medians over the placed inputs
  while IFS=$'\t' read -r name kind path; do
    grep -q "^$name	[0-9]*	[^	]*	unplaced" "$D/placed" && continue
    ratio "$(stat "$name" "$1" 3)" "$(stat "$name" "$2" 3)"; echo
  done < "$D/topos" | sort -n | awk 'NF {v[++n] = $1} END {if (n) printf "%s-%s", v[1], v[n]}'
}
{
  echo "# Hook latency (bench/hook-latency)"
  echo
  echo "Generated by \`bench/hook-latency.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'): $RUNS rounds, interleaved;"
  echo "cachepin $("$BIN" --version | awk '{print $2}'), hwloc $(hwloc-calc --version 2>&1 | awk '{print $2}'),"
  echo "$(uname -sr), ${HW_HOST:-?} CPUs, state directories on $STATE_FS.${NOTE:+ $NOTE} On a shared or busy host absolute times vary from"
  echo "run to run; the ratios are of commands measured side by side, in the same rounds."
  echo "Rerun: \`sudo RUNS=$RUNS LEDGER=$LEDGER bench/hook-latency.sh $TOPDIR\`."
  echo "Times in ms, wall clock fork to wait4, as *median (min-max)*; peak RSS the largest"
  echo "over the samples, KiB."
  echo
  echo "## \`cachepin hook createRuntime\` + \`poststop\`, cold and warm topology cache"
  echo
  echo "Inputs: the XML files (host config \`topology\` = the file) and the sysfs dumps (\`topology\` ="
  echo "\`sysfs:DIR\`, hwloc's Linux discovery on the dump; \`sysfs:\` in the first column)."
  echo "floor = bench-floor fed the createRuntime state, then the poststop state (two process starts, like the"
  echo "hook pair). cold: the topology cache removed before the sample (discovery, and the cache written);"
  echo "warm: a valid cache in place. -0: empty ledger; -$N: $N ledger entries (shared, live cgroups)."
  echo "create: createRuntime alone (one start). \"(unplaced)\": none of this host's CPUs is online in that"
  echo "topology, so createRuntime loads the topology and the ledger, finds nothing to place, and lets the"
  echo "container start unplaced (see Checks)."
  echo
  echo "| input | floor | hwloc-calc | cold-0 | cold-$N | warm-0 | warm-$N | warm-$N / floor | cold create-0 / hwloc-calc | cold-0 / hwloc-calc | peak RSS floor / hwloc-calc / cold-$N / warm-$N |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  while IFS=$'\t' read -r name kind path; do
    mark=""
    grep -q "^$name	[0-9]*	[^	]*	unplaced" "$D/placed" && mark=" (unplaced)"
    printf '| %s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s / %s / %s |\n' "$name" "$mark" \
      "$(cell "$name" floor)" "$(cell "$name" hwloc-calc)" "$(cell "$name" cold-0)" "$(cell "$name" cold-N)" \
      "$(cell "$name" warm-0)" "$(cell "$name" warm-N)" \
      "$(ratio "$(stat "$name" warm-N 3)" "$(stat "$name" floor 3)")" \
      "$(ratio "$(stat "$name" create-cold-0 3)" "$(stat "$name" hwloc-calc 3)")" \
      "$(ratio "$(stat "$name" cold-0 3)" "$(stat "$name" hwloc-calc 3)")" \
      "$(stat "$name" floor 6)" "$(stat "$name" hwloc-calc 6)" "$(stat "$name" cold-N 6)" "$(stat "$name" warm-N 6)"
  done < "$D/topos"
  echo
  echo "## Targets (issue 12), as measured here"
  echo
  echo "- Warm hook at most 2x the floor with $N entries (warm-$N / floor <= 2): $(count warm-N floor 2 "" placed) of"
  echo "  the placed inputs ($(count warm-N floor 2 xml placed) XML, $(count warm-N floor 2 sysfs placed) sysfs); ratio $(range warm-N floor)."
  echo "  With an empty ledger (warm-0 / floor <= 2): $(count warm-0 floor 2)."
  echo "- Cold at most hwloc-calc on the same input: one cold createRuntime (empty ledger) <= one"
  echo "  hwloc-calc: $(count create-cold-0 hwloc-calc 1) inputs ($(count create-cold-0 hwloc-calc 1 xml) XML,"
  echo "  $(count create-cold-0 hwloc-calc 1 sysfs) sysfs), ratio $(range create-cold-0 hwloc-calc); the cold pair (two starts) <= one hwloc-calc:"
  echo "  $(count cold-0 hwloc-calc 1); with $N entries, one cold createRuntime: $(count create-cold-N hwloc-calc 1)."
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
  if [ -n "$BASE" ]; then
    echo "## Against the baseline binary (BASE)"
    echo
    echo "BASE = \`$BASE\` (cachepin $("$BASE" --version | awk '{print $2}')), timed in the same rounds as"
    echo "\`$BIN\`, interleaved. Its untimed check gave the same cpuset and outcome on every input and"
    echo "ledger: $(cmp -s "$D/placed" "$D/base-placed" && echo yes || echo "**no** (see below)")."
    echo "Ratios of the medians, this binary / BASE (1.00: the same time):"
    echo
    echo "| input | cold-0 | cold-$N | warm-0 | warm-$N |"
    echo "|---|---|---|---|---|"
    while IFS=$'\t' read -r name kind path; do
      printf '| %s |' "$name"
      for v in cold-0 cold-N warm-0 warm-N; do
        printf ' %s |' "$(ratio "$(stat "$name" "$v" 3)" "$(stat "$name" "base-$v" 3)")"
      done
      echo
    done < "$D/topos"
    echo
    echo "Over the placed inputs, the range of the ratio: cold-0 $(range cold-0 base-cold-0), cold-$N"
    echo "$(range cold-N base-cold-N), warm-0 $(range warm-0 base-warm-0), warm-$N $(range warm-N base-warm-N)."
    if ! cmp -s "$D/placed" "$D/base-placed"; then
      echo
      echo "The checks that differ (this binary, then BASE):"
      echo
      diff "$D/placed" "$D/base-placed" | sed 's/^/    /'
    fi
    echo
  fi
  echo "Samples with a non-zero exit status: $BAD. Raw samples: \`bench/results/data/hook-latency.tsv\`."
} > "$OUT"
echo "hook-latency: wrote $OUT" >&2
