#!/usr/bin/env bash
# `cachepin measure` (issue 33; docs/benchmarks.md, "cachepin measure"): its mechanics
# on the CPUs this process may use, in short runs.  The topology is pinned through a
# host config's `topology` (an hwloc XML of a synthetic machine numbered with this
# host's CPUs), so that what it must say does not depend on how the host's CPUs share
# caches: one L3 (nothing to compare, the in-L3 round trip still printed), two L3s of
# one CPU each (the choice cannot be one L3: nothing to compare), and with 4 CPUs two
# L3s of two (a ratio and a verdict).  Then the host's own topology, its expectations
# from sysfs (the L3s that share a cache), and the refusals of bad options.  Needs no
# root and no cgroup; exit 77 without jq, lstopo-no-graphics or 2 usable CPUs.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: measure.sh PATH-TO-cachepin}")
. "$(dirname "${BASH_SOURCE[0]}")/lib/check.sh"
for tool in jq lstopo-no-graphics; do
  command -v "$tool" >/dev/null || cli_skip measure "no $tool (scripts/deps.sh installs it)"
done
D=$(mktemp -d /tmp/cachepin-measure.XXXXXX)
trap 'rm -rf "$D"' EXIT
expand () { local r a b; for r in ${1//,/ }; do a=${r%-*}; b=${r#*-}; seq "$a" "$b"; done; }
mapfile -t CPUS < <(expand "$(awk '/^Cpus_allowed_list:/ {print $2}' /proc/self/status)")
[ "${#CPUS[@]}" -ge 2 ] || cli_skip measure "needs 2 CPUs this process may use (has ${CPUS[*]})"
A=${CPUS[0]} B=${CPUS[1]}

# config NAME SYNTHETIC: $D/NAME.json, a host config whose topology is SYNTHETIC.
config () {
  lstopo-no-graphics --input "$2" --of xml "$D/$1.xml" 2>"$D/lstopo.err" ||
    { ko "lstopo-no-graphics --input '$2': $(cat "$D/lstopo.err")"; return 1; }
  jq -n --arg s "$D/state" --arg t "$D/$1.xml" '{state_dir: $s, topology: $t}' >"$D/$1.json"
}
# measure NAME ARGS...: stdout in $D/NAME.out, stderr in $D/NAME.err, status in RC.
measure () {
  local name=$1
  shift
  "$BIN" measure "$@" >"$D/$name.out" 2>"$D/$name.err"
  RC=$?
}
j () { jq -c "$1" "$D/$2.out" 2>&1; } # a key of a --json run's output

# --- one L3 of two cores: said plainly, the diagonal still measured
config one "pack:1 l3:1 core:2 pu:1(indexes=$A,$B)" || exit 1
measure one-text --config "$D/one.json" --seconds 0.3
check "one L3: exit" "$RC" 0
contains "one L3: said plainly" "$D/one-text.out" "share one L3: nothing to compare, no spread run"
contains "one L3: the choice's figure" "$D/one-text.out" "cachepin's choice  CPUs $A,$B (1 L3)"
if grep -q '^ratio' "$D/one-text.out"; then ko "one L3: a ratio printed"; else ok "one L3: no ratio"; fi
measure one --config "$D/one.json" --seconds 0.3 --rounds 3 --json
check "one L3 --json: exit" "$RC" 0
check "one L3 --json: format" "$(j .format one)" 1
check "one L3 --json: verdict" "$(j .verdict one)" '"one-l3"'
check "one L3 --json: no spread, no ratio" "$(j '[.spread, .ratio]' one)" '[null,null]'
check "one L3 --json: the choice" "$(j .chosen.cpus one)" "[$A,$B]"
check "one L3 --json: 3 samples" "$(j '.chosen.samples_ns | length' one)" 3
check "one L3 --json: the in-L3 round trip" "$(j '.latency_ns | map(map(type))' one)" '[["number"]]'
check "one L3 --json: median within the samples" \
  "$(j '.chosen as $c | ($c.median_ns >= ($c.samples_ns | min) and $c.median_ns <= ($c.samples_ns | max))' one)" true

# --- two L3s of one CPU each: cachepin cannot put two in one L3
config split "pack:1 l3:2 core:1 pu:1(indexes=$A,$B)" || exit 1
measure split --config "$D/split.json" --seconds 0.3 --json
check "one CPU per L3: exit" "$RC" 0
check "one CPU per L3: verdict" "$(j .verdict split)" '"same-l3s"'
check "one CPU per L3: the table" "$(j '.latency_ns | map(map(type))' split)" '[["null","number"],["number","null"]]'
check "one CPU per L3: the L3s" "$(j '[.l3[].cpus]' split)" "[\"$A\",\"$B\"]"
measure split-text --config "$D/split.json" --seconds 0.3
contains "one CPU per L3: said plainly" "$D/split-text.out" "nothing to"

# --- two L3s of two: both sets run, a ratio and a verdict (4 usable CPUs)
if [ "${#CPUS[@]}" -ge 4 ]; then
  C=${CPUS[2]} E=${CPUS[3]}
  config four "pack:1 l3:2 core:2 pu:1(indexes=$A,$B,$C,$E)" || exit 1
  start=$(date +%s)
  measure four-text --config "$D/four.json" --seconds 1
  check "two L3s of two: exit" "$RC" 0
  secs=$(($(date +%s) - start))
  # Seconds, not minutes: a TCG guest runs it 10-50 times slower than a host.
  if [ "$secs" -le 60 ]; then ok "two L3s of two: ${secs}s for --seconds 1"; else ko "two L3s of two: ${secs}s"; fi
  contains "two L3s of two: the choice" "$D/four-text.out" "cachepin's choice  CPUs $A,$B (1 L3)"
  contains "two L3s of two: the spread set" "$D/four-text.out" "spread over L3s    CPUs $A,$C (2 L3s)"
  if grep -Eq '^ratio +[0-9]+\.[0-9]{2}' "$D/four-text.out"; then ok "two L3s of two: a ratio printed"
  else ko "two L3s of two: no ratio line in: $(cat "$D/four-text.out")"; fi
  measure four --config "$D/four.json" --seconds 1 --rounds 4 --json
  check "two L3s of two --json: verdict is one of" \
    "$(j '.verdict | IN("noisy", "chosen-faster", "spread-faster")' four)" true
  check "two L3s of two --json: the ratio of the medians" \
    "$(j '(.ratio - .spread.median_ns / .chosen.median_ns) | fabs < 1e-6' four)" true
  check "two L3s of two --json: samples of each" "$(j '[.chosen.samples_ns, .spread.samples_ns] | map(length)' four)" \
    "[4,4]"
  check "two L3s of two --json: a full table" "$(j '[.latency_ns[][] | type] | unique' four)" '["number"]'
  check "two L3s of two --json: symmetric" "$(j '.latency_ns[0][1] == .latency_ns[1][0]' four)" true
else
  echo "not run: two L3s of two (needs 4 usable CPUs; has ${#CPUS[@]})"
fi

# --- the host's own topology: as many L3s as sysfs says share a cache (when it says)
jq -n --arg s "$D/state" '{state_dir: $s}' >"$D/host.json"
measure host --config "$D/host.json" --seconds 0.5 --json
measure host-text --config "$D/host.json" --seconds 0.5
sed 's/^/SHOW: /' "$D/host-text.out" # what a guest measured (tests/vm/shapes-tests.sh)
check "host: exit" "$RC" 0
check "host --json: format" "$(j .format host)" 1
declare -A l3s=()
for cpu in "${CPUS[@]}"; do
  for idx in /sys/devices/system/cpu/cpu"$cpu"/cache/index*; do
    [ "$(cat "$idx/level" 2>/dev/null)" = 3 ] && l3s[$(cat "$idx/shared_cpu_list")]=1
  done
done
n_l3=$(j '.l3 | length' host)
if [ "${#l3s[@]}" -gt 0 ]; then
  check "host: the L3s sysfs reports" "$n_l3" "${#l3s[@]}"
else
  echo "host: sysfs reports no L3 here; cachepin's model has $n_l3"
fi
if [ "$n_l3" = 1 ]; then want='"one-l3"'; else want=true; fi
check "host: the verdict fits the L3s" "$(j "if $n_l3 == 1 then .verdict else .verdict != \"one-l3\" end" host)" "$want"
check "host: the table is L3s x L3s" "$(j '[.latency_ns | length, (.[0] | length)]' host)" "[$n_l3,$n_l3]"
# Where the choice is one L3 and the spread set is not, both ran: a ratio.
check "host: a ratio where the sets differ" \
  "$(j 'if .chosen.l3s < (.spread.l3s // .chosen.l3s) then (.ratio | type) else "number" end' host)" '"number"'

# --- refusals: one line naming the option, exit 2 (input) or 3 (the host cannot)
measure bad-rounds --rounds 0
check "--rounds 0: exit" "$RC" 2
contains "--rounds 0: the line" "$D/bad-rounds.err" "--rounds: invalid value \`0\`: expected a number from 1 to 1000"
measure bad-seconds --seconds 0.01
check "--seconds 0.01: exit" "$RC" 2
contains "--seconds 0.01: the line" "$D/bad-seconds.err" "--seconds: invalid value \`0.01\`"
measure bad-one --config "$D/one.json" --cpus 1
check "--cpus 1: exit" "$RC" 2
contains "--cpus 1: the line" "$D/bad-one.err" "--cpus: 1 is not a ring (2 or more)"
measure too-many --config "$D/one.json" --cpus 3
check "--cpus 3 of 2: exit" "$RC" 3
contains "--cpus 3 of 2: the line" "$D/too-many.err" "--cpus 3"
finish measure
