#!/usr/bin/env bash
# `cachepin status` against the real binary ($1): bad options, a ledger written by
# a real `cachepin apply` on real cpuset cgroups (root and a cpuset hierarchy; those
# cases are skipped without them), the kernel features against what this host
# shows, a corrupt ledger, a topology given by the host config with its LLC map
# and PE0 list computed by hand, and proof that status writes nothing.  Issue 21's
# "status at a glance": the default view fits 80 columns (long ids and cgroups, a
# 384-CPU synthetic topology, a captured Zen4 one), --wide shows everything, names
# from CRI annotations and `apply`, a hostile name cut and cleaned, GONE after a
# cgroup is removed behind cachepin's back.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: status.sh PATH-TO-cachepin}")
PASS=0 FAIL=0
ok () { PASS=$((PASS + 1)); echo "PASS: $1"; }
ko () { FAIL=$((FAIL + 1)); echo "FAIL: $1"; }
check () { if [ "$2" = "$3" ]; then ok "$1 ($2)"; else ko "$1: got '$2', expected '$3'"; fi; }
command -v jq >/dev/null || { echo "status.sh: skipped: no jq"; exit 77; }

D=$(mktemp -d /tmp/cachepin-status.XXXXXX)
TOP=""
SLEEPERS=()
cleanup () {
  for p in "${SLEEPERS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  if [ -n "$TOP" ]; then for cg in "$TOP"/*/ "$TOP"; do [ -d "$cg" ] && rmdir "$cg" 2>/dev/null; done; fi
  rm -rf "$D"
}
trap cleanup EXIT
# Every file under $1 with its content, mode and times: status must change none.
fingerprint () { (cd "$1" && find . -printf '%p %M %s %T@ %C@\n' | sort && find . -type f -exec sha256sum {} + | sort) | sha256sum | cut -c1-16; }
status_json () { # status_json CONFIG: stdout to $D/out.json, rc in $RC
  "$BIN" status --json --config "$1" >"$D/out.json" 2>"$D/err"
  RC=$?
}
q () { jq -r "$1" "$D/out.json"; }

echo "== bad options: exit 2, one line"
for args in "--bogus" "--config" "extra" "-x" "--json=1"; do
  # shellcheck disable=SC2086
  "$BIN" status $args >"$D/o" 2>"$D/e"
  rc=$?
  check "status $args: exit" "$rc" 2
  check "status $args: one line on stderr" "$(wc -l <"$D/e")" 1
  check "status $args: nothing on stdout" "$(wc -c <"$D/o")" 0
done
"$BIN" status --help >"$D/o"
check "--help: exit" "$?" 0
grep -q -- "--json" "$D/o" && ok "--help names --json" || ko "--help: $(cat "$D/o")"

echo "== missing state directory: an empty ledger, nothing created"
echo "{\"state_dir\": \"$D/none\"}" >"$D/cfg-none.json"
status_json "$D/cfg-none.json"
check "exit" "$RC" 0
check "ledger state" "$(q .ledger.state)" missing
check "no entries" "$(q '.ledger.entries | length')" 0
[ -e "$D/none" ] && ko "status created the state directory" || ok "the state directory was not created"
check "occupancy has one row per LLC" "$(q '.ledger.occupancy | length')" "$(q '.topology.llcs | length')"

echo "== kernel features, as this host shows them"
DBG=/sys/kernel/debug
if ! awk '$5 == "/sys/kernel/debug" {f = 1} END {exit !f}' /proc/self/mountinfo; then
  CAS=debugfs-not-mounted
elif [ -r "$DBG/sched/llc_balancing/enabled" ]; then
  CAS=$([ "$(cat "$DBG/sched/llc_balancing/enabled")" = 1 ] && echo on || echo off)
elif [ -e "$DBG/sched/llc_balancing" ] || ! ls "$DBG/sched" >/dev/null 2>&1; then
  CAS=denied
elif [ -e "$DBG/sched/llc_enabled" ] || grep -qw 'SCHED_CACHE\|NO_SCHED_CACHE' "$DBG/sched/features" 2>/dev/null; then
  CAS=$(q .features.cache_aware_scheduling.state) # an older interface: on or off
  case "$CAS" in on|off) ;; *) CAS="on or off";; esac
else
  CAS=unsupported
fi
check "cache-aware scheduling state" "$(q .features.cache_aware_scheduling.state)" "$CAS"
[ "$CAS" = debugfs-not-mounted ] || [ "$CAS" = unsupported ] &&
  check "no interface" "$(q .features.cache_aware_scheduling.interface)" none
CORE=$(q .features.core_scheduling.state)
case "$CORE" in supported|unsupported|no-smt|denied) ok "core scheduling: a known state ($CORE)";;
  *) ko "core scheduling state: $CORE";; esac
SMT=$(cat /sys/devices/system/cpu/smt/active 2>/dev/null || echo)
[ "$SMT" = 0 ] && [ "$CORE" = supported ] && ko "core scheduling supported without SMT"
[ -n "$SMT" ] && check "smt_active" "$(q .features.core_scheduling.smt_active)" "$([ "$SMT" = 1 ] && echo true || echo false)"
ASYM=unset
for w in $(cat /proc/cmdline); do
  [ "$w" = -- ] && break
  case "$w" in
    sched_smt_asym_packing|sched_smt_asym_packing=[yY1]*|sched_smt_asym_packing=[oO][nN]*) ASYM=on;;
    sched_smt_asym_packing=[nN0]*|sched_smt_asym_packing=[oO][fF]*) ASYM=off;;
    sched_smt_asym_packing=*) ASYM=invalid;;
  esac
done
check "sched_smt_asym_packing" "$(q .features.smt_asym_packing.state)" "$ASYM"
"$BIN" status --config "$D/cfg-none.json" >"$D/text" 2>&1
check "text: exit" "$?" 0
for f in "cache-aware scheduling" "core scheduling" "sched_smt_asym_packing"; do
  check "text: one line for $f" "$(grep -c "^  $f " "$D/text")" 1
done
if [ "$CAS" = debugfs-not-mounted ]; then
  grep -q "^  cache-aware scheduling .*debugfs is not mounted" "$D/text" && ok "text says debugfs is not mounted" ||
    ko "text: $(grep cache-aware "$D/text")"
fi

echo "== a topology from the host config, a ledger written by hand"
if command -v lstopo-no-graphics >/dev/null; then
  lstopo-no-graphics --input 'package:2 l3cache:4 core:4 pu:2(indexes=core)' --of xml "$D/syn.xml" 2>/dev/null
  mkdir -m 0700 "$D/syn"
  entry () { # ID MODE CPUS HELD
    printf '{"id": "%s", "cgroup_mount": "/sys/fs/cgroup", "cgroup": "/%s", "pid": 0, "start_time": 0, "mode": "%s", "cpus": "%s", "held": "%s", "mems": "0", "placed_at": 1700000000}' \
      "$1" "$1" "$2" "$3" "$4"
  }
  printf '{"version": 1, "entries": [%s, %s, %s]}\n' "$(entry ctr-a exclusive 0-1 0-1,32-33)" \
    "$(entry ctr-b exclusive 4 4,36)" "$(entry ctr-c shared 8-11 '')" >"$D/syn/ledger.json"
  echo "{\"state_dir\": \"$D/syn\", \"topology\": \"$D/syn.xml\", \"reserved\": \"63\"}" >"$D/cfg-syn.json"
  BEFORE=$(fingerprint "$D/syn")
  status_json "$D/cfg-syn.json"
  check "exit" "$RC" 0
  check "source" "$(q .topology.source)" "$D/syn.xml"
  check "packages" "$(q .topology.packages)" 2
  check "LLCs" "$(q '.topology.llcs | length')" 8
  # Core c (0..31) has the threads c and c+32; L3 #i has cores 4i..4i+3.
  check "L3 #0" "$(q '.topology.llcs[0].cpus')" "0-3,32-35"
  check "L3 #7" "$(q '.topology.llcs[7].cpus')" "28-31,60-63"
  check "PE0 threads" "$(q .topology.pe0)" "0-31"
  check "SMT width" "$(q .topology.smt_width)" 2
  check "entries" "$(q '[.ledger.entries[].id] | join(" ")')" "ctr-a ctr-b ctr-c"
  check "ctr-b's LLCs" "$(q '.ledger.entries[1].llcs | map(tostring) | join(",")')" 1
  check "L3 #0 held" "$(q '.ledger.occupancy[0].held')" "0-1,32-33"
  check "L3 #0 count" "$(q '.ledger.occupancy[0].held_count')/$(q '.ledger.occupancy[0].size')" 4/8
  check "L3 #0 map (CPUs 0 1 2 3 32 33 34 35)" "$(q '.ledger.occupancy[0].map')" "##..##.."
  check "L3 #1 map" "$(q '.ledger.occupancy[1].map')" "#...#..."
  check "L3 #2: shared, none held" "$(q '.ledger.occupancy[2].map') $(q '.ledger.occupancy[2].held_count')" "ssss.... 0"
  check "L3 #7: the reserved CPU 63 is not handed out" "$(q '.ledger.occupancy[7].map')" ".......-"
  check "L3 #2 holders" "$(q '.ledger.occupancy[2].holders | join(" ")')" "ctr-c"
  check "held counts add up to the held CPUs" "$(q '[.ledger.occupancy[].held_count] | add')" "$(q .ledger.held_count)"
  check "held" "$(q .ledger.held)" "0-1,4,32-33,36"
  "$BIN" status --config "$D/cfg-syn.json" >"$D/text" 2>&1
  check "L3 #7: the reserved CPU, for the map" "$(q '.ledger.occupancy[7].reserved')" "63"
  check "L3 #0: its cores, for the map" "$(q '.ledger.occupancy[0].core_cpus | join(" ")')" "0,32 1,33 2,34 3,35"
  # The map (plan's too): a core as its first CPU and a mark per thread, its holders below.
  grep -q '^  L3 map, a core as its first CPU and a mark per thread:$' "$D/text" && ok "text: the map's title" ||
    ko "text: no map title: $(grep -i 'map' "$D/text")"
  grep -q '^  x=held s=shared r=reserved \.=free -=not allowed$' "$D/text" && ok "text: the map's legend" ||
    ko "text: no legend: $(grep -i 'held' "$D/text")"
  grep -A1 '^  L3#0 ' "$D/text" | tr '\n' '|' | grep -q '^  L3#0 *4/8 held  0:xx 1:xx 2:\.\. 3:\.\.|  *by ctr-a|$' &&
    ok "text: the L3#0 line, CPUs 0,32 and 1,33 held, by ctr-a" || ko "text: the L3#0 line: $(grep -A1 'L3#0' "$D/text")"
  grep -q '^  L3#2 *0/8 held  8:s\. 9:s\. 10:s\. 11:s\.$' "$D/text" && ok "text: the L3#2 line, shared" ||
    ko "text: the L3#2 line: $(grep 'L3#2' "$D/text")"
  grep -q '^  L3#7 *0/8 held  28:\.\. 29:\.\. 30:\.\. 31:\.r$' "$D/text" && ok "text: the L3#7 line, 63 reserved" ||
    ko "text: the L3#7 line: $(grep 'L3#7' "$D/text")"
  long=$(awk 'length($0) > 80' "$D/text" | grep -c '^  L3#\|^  *by \|map, ')
  check "text: no map line is wider than 80 columns" "$long" 0
  check "status wrote nothing in the state directory" "$(fingerprint "$D/syn")" "$BEFORE"

  echo "== a drifted entry: the LLC it drifted to names it as a holder"
  # ctr-d holds core 4 (CPUs 4,36, L3 #1) and its cgroup was last seen on CPU 8
  # (L3 #2): CPU 8 counts as held, so L3 #2's holders must name ctr-d.  Its
  # cgroup does not exist: status shows the drift the last hook run recorded.
  mkdir -m 0700 "$D/syn-drift"
  printf '{"version": 3, "entries": [{"id": "ctr-d", "cgroup_mount": "/sys/fs/cgroup", "cgroup": "/cachepin-status-%s-none/ctr-d", "pid": 0, "start_time": 0, "mode": "exclusive", "cpus": "4", "held": "4,36", "mems": "0", "placed_at": 1700000000, "sched_cache": "none", "core_sched": false, "drift": "8"}]}\n' \
    "$$" >"$D/syn-drift/ledger.json"
  echo "{\"state_dir\": \"$D/syn-drift\", \"topology\": \"$D/syn.xml\"}" >"$D/cfg-syn-drift.json"
  status_json "$D/cfg-syn-drift.json"
  check "exit" "$RC" 0
  check "held: the placed and the drifted CPUs" "$(q .ledger.held)" "4,8,36"
  check "L3 #2 map: CPU 8 held" "$(q '.ledger.occupancy[2].map')" "#......."
  check "L3 #2 holders: ctr-d, which drifted there" "$(q '.ledger.occupancy[2].holders | join(" ")')" "ctr-d"
  check "L3 #1 holders: ctr-d, placed there" "$(q '.ledger.occupancy[1].holders | join(" ")')" "ctr-d"
  check "no LLC with a held or shared CPU lacks a holder" \
    "$(q '[.ledger.occupancy[] | select((.map | test("[#s]")) and (.holders | length) == 0) | .index] | map(tostring) | join(",")')" ""
  "$BIN" status --config "$D/cfg-syn-drift.json" >"$D/text" 2>&1
  grep -A1 '^  L3#2 ' "$D/text" | tr '\n' '|' | grep -q '^  L3#2 *1/8 held  8:x\. 9:\.\. 10:\.\. 11:\.\.|  *by ctr-d|$' &&
    ok "text: the L3#2 line names ctr-d" || ko "text: the L3#2 line: $(grep -A1 'L3#2' "$D/text")"

  echo "== a corrupt ledger: reported, exit 0, left as it is"
  echo '{"version": 1, "entries": [' >"$D/syn/ledger.json"
  BEFORE=$(fingerprint "$D/syn")
  status_json "$D/cfg-syn.json"
  check "exit" "$RC" 0
  check "ledger state" "$(q .ledger.state)" invalid
  [ -n "$(q '.ledger.error // empty')" ] && ok "it says why: $(q .ledger.error)" || ko "no error for a corrupt ledger"
  check "the topology is still shown" "$(q .topology.pe0)" "0-31"
  "$BIN" status --config "$D/cfg-syn.json" >"$D/text" 2>&1
  check "text: exit" "$?" 0
  check "text: one ledger line" "$(grep -c '^ledger *invalid: ' "$D/text")" 1
  check "the corrupt ledger is not set aside nor repaired" "$(fingerprint "$D/syn")" "$BEFORE"
else
  echo "status.sh: synthetic topology cases skipped: no lstopo-no-graphics (hwloc)"
fi

echo "== what the hook would refuse, and a ledger it set aside: warnings, nothing repaired"
mkdir -m 0700 "$D/warn"
chmod 0777 "$D/warn" # past the umask
echo garbage >"$D/warn/ledger.json.corrupt"
echo "{\"state_dir\": \"$D/warn\"}" >"$D/cfg-warn.json"
BEFORE=$(fingerprint "$D/warn")
status_json "$D/cfg-warn.json"
check "exit" "$RC" 0
check "two warnings" "$(q '.ledger.warnings | length')" 2
q '.ledger.warnings[]' | grep -q "has mode 0777, open to group or others" && ok "the mode is named" || ko "$(q .ledger.warnings)"
q '.ledger.warnings[]' | grep -q "set aside as $D/warn/ledger.json.corrupt" && ok "the set-aside ledger is named" ||
  ko "$(q .ledger.warnings)"
"$BIN" status --config "$D/cfg-warn.json" >"$D/text" 2>&1
check "text: two warning lines" "$(grep -c '^  warning: ' "$D/text")" 2
check "nothing repaired" "$(fingerprint "$D/warn")" "$BEFORE"
check "the mode is left as it was" "$(stat -c %a "$D/warn")" 777

echo "== an unreadable host config: reported, exit 0"
"$BIN" status --json --config "$D/no-such.json" >"$D/out.json" 2>"$D/err"
check "exit" "$?" 0
[ -n "$(q '.config.error // empty')" ] && ok "config error: $(q .config.error)" || ko "no config error"
check "the ledger is not guessed" "$(q .ledger.state)" null

echo "== a ledger written by a real apply"
if [ "$(id -u)" != 0 ]; then echo "status.sh: apply cases skipped: needs root"
elif ! MNT=$(find_cpuset_mount) || [ -z "$MNT" ]; then echo "status.sh: apply cases skipped: no cpuset hierarchy"
else
  TOP="$MNT/cachepin-status-$$"
  make_cgroup "$TOP"; make_cgroup "$TOP/a"; make_cgroup "$TOP/b"
  echo "{\"state_dir\": \"$D/state\"}" >"$D/cfg.json"
  "$BIN" apply --config "$D/cfg.json" --cgroup "$TOP/a" --cpus 1 >/dev/null 2>"$D/err" || ko "apply a: $(cat "$D/err")"
  "$BIN" apply --config "$D/cfg.json" --cgroup "$TOP/b" --mode shared >/dev/null 2>"$D/err" || ko "apply b: $(cat "$D/err")"
  BEFORE=$(fingerprint "$D/state")
  status_json "$D/cfg.json"
  check "exit" "$RC" 0
  check "entries" "$(q '[.ledger.entries[].id] | join(" ")')" "$(jq -r '[.entries[].id] | join(" ")' "$D/state/ledger.json")"
  check "a's CPUs" "$(q ".ledger.entries[] | select(.id == \"apply:$TOP/a\") | .cpus")" "$(cat "$TOP/a/cpuset.cpus")"
  check "b's mode" "$(q ".ledger.entries[] | select(.id == \"apply:$TOP/b\") | .mode")" shared
  HELD=$(jq -r '[.entries[] | select(.mode == "exclusive") | .held] | join(",")' "$D/state/ledger.json")
  check "held CPUs, as the ledger says" "$(q .ledger.held)" "$HELD"
  check "occupancy counts add up to the held CPUs" "$(q '[.ledger.occupancy[].held_count] | add')" \
    "$(echo "$HELD" | tr ',' '\n' | awk -F- '{n += ($2 == "" ? 1 : $2 - $1 + 1)} END {print n + 0}')"
  check "cgroup: cpuset mount" "$(q .cgroup.cpuset_mount)" "$MNT"
  check "cgroup: cpuset version" "$(q .cgroup.cpuset_version)" "$([ "$MNT" = /sys/fs/cgroup ] && echo 2 || echo 1)"
  "$BIN" status --config "$D/cfg.json" >"$D/text" 2>&1
  check "text: exit" "$?" 0
  for re in '^cgroup ' '^topology ' '^ledger ' '^kernel features$' '^config ' "apply:…[^ ]*/a " '^  L3#0 \|^  L2#0 \|^  LLC#0 \|^  [A-Za-z0-9]*#0 '; do
    grep -q "$re" "$D/text" && ok "text has /$re/" || ko "text lacks /$re/"
  done
  "$BIN" status --wide --config "$D/cfg.json" >"$D/text" 2>&1
  grep -q "apply:$TOP/a" "$D/text" && ok "--wide: the full id" || ko "--wide lacks apply:$TOP/a: $(cat "$D/text")"
  check "status wrote nothing in the state directory" "$(fingerprint "$D/state")" "$BEFORE"
  "$BIN" release --config "$D/cfg.json" --cgroup "$TOP/a" >/dev/null 2>&1
  "$BIN" release --config "$D/cfg.json" --cgroup "$TOP/b" >/dev/null 2>&1
fi

# ---- issue 21: status at a glance ----

# too_wide FILE: the lines of FILE longer than 80 characters (UTF-8: "…" is one),
# but the occupancy map's rows (the map is plan's: hook/cli/status_text.c print_llc).
too_wide () {
  local l
  while IFS= read -r l; do
    [[ $l =~ ^\ \ [A-Za-z0-9]+#[0-9]+\  ]] && continue
    [ "${#l}" -gt 80 ] && printf '%s: %s\n' "${#l}" "$l"
  done < <(LC_ALL=C.UTF-8 cat "$1")
}
export LC_ALL=C.UTF-8
# fits NAME FILE: every line of FILE (the map's rows aside) fits 80 columns.
fits () {
  local over
  over=$(too_wide "$2")
  [ -z "$over" ] && ok "$1: every line fits 80 columns" || ko "$1: lines over 80 columns:
$over"
}
hexid () { printf '%s' "$1" | sha256sum | cut -c1-64; }
# cpulist_other ALLOWED PLACED: a CPU of the cpulist ALLOWED that is not PLACED (one CPU), or nothing.
cpulist_other () {
  local r a b c
  for r in ${1//,/ }; do a=${r%-*}; b=${r#*-}
    for ((c = a; c <= b; c++)); do [ "$c" != "$2" ] && { echo "$c"; return; }; done
  done
}

echo "== 80 columns: long ids, long cgroups, long names"
if command -v lstopo-no-graphics >/dev/null; then
  [ -r "$D/syn.xml" ] || lstopo-no-graphics --input 'package:2 l3cache:4 core:4 pu:2(indexes=core)' --of xml "$D/syn.xml" 2>/dev/null
  mkdir -m 0700 "$D/wide"
  A=$(hexid a) B=$(hexid b)
  LONGCG="/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0123456789abcdef.slice/cri-containerd-$A.scope"
  v3 () { # ID NAME-MEMBER CGROUP MODE CPUS HELD
    printf '{"id": "%s"%s, "cgroup_mount": "/sys/fs/cgroup", "cgroup": "%s", "pid": 0, "start_time": 0, "mode": "%s", "cpus": "%s", "held": "%s", "mems": "0", "placed_at": 1700000000, "sched_cache": "on", "core_sched": true, "drift": ""}' \
      "$1" "$2" "$3" "$4" "$5" "$6"
  }
  printf '{"version": 3, "entries": [%s, %s, %s, %s]}\n' \
    "$(v3 "$A" ', "name": "a-namespace-with-a-long-name/a-pod-named-at-length-5d8f7c9b4-x2k9q/web-frontend"' "$LONGCG" exclusive 0-1,4,6,8 0-1,4,6,8,32-33,36,38,40)" \
    "$(v3 "$B" ', "name": "db"' "/machine.slice/libpod-$B.scope/container" shared 16-23 '')" \
    "$(v3 "apply:/sys/fs/cgroup/system.slice/a-very-long-service-name-for-nightly-batch-jobs.service" '' \
      /system.slice/a-very-long-service-name-for-nightly-batch-jobs.service exclusive 12 12,44)" \
    "$(v3 apply:/sys/fs/cgroup/batch ', "name": "nightly"' /batch exclusive 13 13,45)" >"$D/wide/ledger.json"
  echo "{\"state_dir\": \"$D/wide\", \"topology\": \"$D/syn.xml\"}" >"$D/cfg-wide.json"
  "$BIN" status --config "$D/cfg-wide.json" >"$D/text" 2>&1
  check "text: exit" "$?" 0
  fits "four entries of long ids, cgroups and names" "$D/text"
  grep -q "^  ${A:0:12}  .* exclusive 0-1,4,6,8  " "$D/text" && ok "a's line: its 12-character id and CPUs" ||
    ko "a's line: $(grep "${A:0:12}" "$D/text")"
  grep -q "^  ${A:0:12} .*a-namespace.*web-frontend" "$D/text" && ok "a's name, cut in the middle" ||
    ko "a's name: $(grep "${A:0:12}" "$D/text")"
  grep -q "^  ${B:0:12} *db *shared *16-23 " "$D/text" && ok "b's line" || ko "b's line: $(grep "${B:0:12}" "$D/text")"
  grep -q '^  apply:/batch  *nightly  *exclusive 13 ' "$D/text" && ok "apply:/batch, by its path under the mount" ||
    ko "apply:/batch: $(grep batch "$D/text")"
  grep -q '^  apply:….*\.service  *-  *exclusive 12 ' "$D/text" && ok "a long apply cgroup: its end kept" ||
    ko "the long apply entry: $(grep 'service' "$D/text")"
  # The map's rows (plan's) name their holders as they are.
  if grep -v '^  [A-Za-z0-9]*#[0-9]* ' "$D/text" | grep -q "$A"; then ko "the default view shows a full 64-character id"
  else ok "no full id in the default view (the map's rows aside)"; fi
  "$BIN" status --wide --config "$D/cfg-wide.json" >"$D/wide.txt" 2>&1
  check "--wide: exit" "$?" 0
  grep -q "^  $A exclusive" "$D/wide.txt" && ok "--wide: the full id" || ko "--wide: $(grep "${A:0:12}" "$D/wide.txt")"
  grep -qF "$LONGCG" "$D/wide.txt" && ok "--wide: the full cgroup" || ko "--wide: no $LONGCG"
  grep -q "^  apply:/sys/fs/cgroup/batch .* -  *2023-11-14 22:13:20 " "$D/wide.txt" && ok "--wide: apply's pid 0 is -" ||
    ko "--wide: the pid of apply:/sys/fs/cgroup/batch: $(grep 'cgroup/batch' "$D/wide.txt")"
  "$BIN" status -w --config "$D/cfg-wide.json" | cmp -s - "$D/wide.txt" && ok "-w is --wide" || ko "-w differs from --wide"
  status_json "$D/cfg-wide.json"
  check "--json: names" "$(q '[.ledger.entries[] | .name // "null"] | join(",")')" \
    "a-namespace-with-a-long-name/a-pod-named-at-length-5d8f7c9b4-x2k9q/web-frontend,db,null,nightly"
  check "--json: one state per entry" "$(q '[.ledger.entries[] | .state] | map(select(. == "ok" or . == "drifted" or . == "gone" or . == "pending")) | length')" 4

  echo "== 80 columns: a 384-CPU synthetic topology"
  lstopo-no-graphics --input 'package:2 numanode:2 l3cache:6 core:8 pu:2(indexes=core)' --of xml "$D/s384.xml" 2>/dev/null
  mkdir -m 0700 "$D/s384"
  echo "{\"state_dir\": \"$D/s384\", \"topology\": \"$D/s384.xml\", \"reserved\": \"0,7,100-120,383\"}" >"$D/cfg-384.json"
  status_json "$D/cfg-384.json"
  if [ "$(q '.topology.online')" = 0-383 ]; then
    check "384: LLCs" "$(q '.topology.llcs | length')" 24
    "$BIN" status --config "$D/cfg-384.json" >"$D/text" 2>&1
    check "384: text exit" "$?" 0
    fits "384 CPUs, 24 L3s, 4 NUMA nodes" "$D/text"
    # Wrapped, not cut: every L3 is still named, and the last one's CPUs.
    check "384: every L3 named" "$(grep -o '#[0-9]*:' "$D/text" | sort -u | wc -l)" 24
    grep -q "$(q '.topology.llcs[23].cpus')" "$D/text" && ok "384: the last L3's CPUs are shown" || ko "384: no $(q '.topology.llcs[23].cpus')"
    # ... and each L3's CPU list whole on one line, never split after a comma (two
    # L3s read where there is one); the NUMA nodes' too
    split=""
    for i in $(seq 0 23); do
      grep -qE -- "(^| )#$i:$(q ".topology.llcs[$i].cpus")( |\$)" "$D/text" || split+=" L3#$i"
    done
    for i in $(seq 0 3); do
      grep -qE -- "(^| )#$(q ".topology.numa_nodes[$i].os_index"):$(q ".topology.numa_nodes[$i].cpus")( |\$)" "$D/text" \
        || split+=" NUMA#$i"
    done
    check "384: every L3's and node's CPU list on one line" "${split:-none split}" "none split"
  else
    ko "the synthetic topology in the config: $(q .topology.error)"
  fi
else
  echo "status.sh: 80-column cases with a written ledger skipped: no lstopo-no-graphics (hwloc)"
fi
ZEN4=${CACHEPIN_TOPOLOGIES:-}/hwloc/x86-AMD-19h-Zen4-2xEpyc-9654.xml
if [ -n "${CACHEPIN_TOPOLOGIES:-}" ] && [ -r "$ZEN4" ]; then
  mkdir -m 0700 "$D/zen4"
  echo "{\"state_dir\": \"$D/zen4\", \"topology\": \"$ZEN4\"}" >"$D/cfg-zen4.json"
  "$BIN" status --config "$D/cfg-zen4.json" >"$D/text" 2>&1
  check "zen4: exit" "$?" 0
  fits "the captured 2x EPYC 9654" "$D/text"
else
  echo "status.sh: the captured Zen4 case skipped: no x86-AMD-19h-Zen4-2xEpyc-9654.xml in CACHEPIN_TOPOLOGIES"
fi

echo "== names from the engine, apply's, a hostile one; GONE"
if [ "$(id -u)" != 0 ]; then echo "status.sh: name and GONE cases skipped: needs root"
elif ! MNT=$(find_cpuset_mount) || [ -z "$MNT" ]; then echo "status.sh: name and GONE cases skipped: no cpuset hierarchy"
else
  TOP="$MNT/cachepin-status-$$"
  [ -d "$TOP" ] || make_cgroup "$TOP"
  make_cgroup "$TOP/ctr"
  sleep 600 >/dev/null 2>&1 &
  SLEEPERS+=("$!")
  echo "$!" >"$TOP/ctr/cgroup.procs"
  mkdir -p "$D/bundle" "$D/names"
  chmod 0700 "$D/names"
  echo '{"ociVersion": "1.0.2", "annotations": {"cachepin.io/cpus": "1"}}' >"$D/bundle/config.json"
  echo "{\"state_dir\": \"$D/names\"}" >"$D/cfg-names.json"
  # hook STAGE ID ANNOTATIONS-JSON-MEMBERS: the hook for the sleeper in $TOP/ctr.
  hook () {
    printf '{"ociVersion": "1.0.2", "id": "%s", "status": "%s", "pid": %d, "bundle": "%s", "annotations": {"cachepin.io/cpus": "1", %s}}' \
      "$2" "$([ "$1" = poststop ] && echo stopped || echo creating)" "${SLEEPERS[-1]}" "$D/bundle" "$3" |
      "$BIN" hook --config "$D/cfg-names.json" "$1" 2>"$D/err"
    RC=$?
  }
  C1=$(hexid cri-containerd)
  hook createRuntime "$C1" '"io.kubernetes.cri.container-name": "web", "io.kubernetes.cri.sandbox-name": "shop-7d9f8", "io.kubernetes.cri.sandbox-namespace": "prod"'
  check "containerd: placed" "$RC" 0
  status_json "$D/cfg-names.json"
  check "containerd: the name, namespace/pod/container" "$(q ".ledger.entries[] | select(.id == \"$C1\") | .name")" prod/shop-7d9f8/web
  check "containerd: ok" "$(q ".ledger.entries[] | select(.id == \"$C1\") | .state")" ok
  check "containerd: the journal's record has the name" "$(q '.recent[-1].name')" prod/shop-7d9f8/web
  "$BIN" status --config "$D/cfg-names.json" >"$D/text" 2>&1
  grep -q "^  ${C1:0:12}  *prod/shop-7d9f8/web  *exclusive .* ok$" "$D/text" && ok "containerd: the text line" ||
    ko "containerd: $(grep "${C1:0:12}" "$D/text")"
  # A drift the next run sees is recorded under the entry's name too.
  PLACED=$(cat "$TOP/ctr/cpuset.cpus")
  OTHER=$(cpulist_other "$(cat "$TOP/cpuset.cpus")" "$PLACED")
  if [ "$MNT" != /sys/fs/cgroup ] && [ -n "$OTHER" ]; then
    echo "$OTHER" >"$TOP/ctr/cpuset.cpus"
    make_cgroup "$TOP/probe"
    "$BIN" apply --config "$D/cfg-names.json" --cgroup "$TOP/probe" --mode shared >/dev/null 2>&1
    "$BIN" release --config "$D/cfg-names.json" --cgroup "$TOP/probe" >/dev/null 2>&1
    rmdir "$TOP/probe"
    status_json "$D/cfg-names.json"
    check "drift: its record names it" \
      "$(q "[.recent[] | select(.kind == \"drift\" and .id == \"$C1\") | .name] | last")" prod/shop-7d9f8/web
    check "drift: DRIFTED" "$(q ".ledger.entries[] | select(.id == \"$C1\") | .state")" drifted
    echo "$PLACED" >"$TOP/ctr/cpuset.cpus"
  else
    echo "status.sh: the drift record's name skipped: cgroup v2 (cpuset.cpus is the runtime's) or one CPU"
  fi
  hook poststop "$C1" '"io.kubernetes.cri.container-name": "web", "io.kubernetes.cri.sandbox-name": "shop-7d9f8", "io.kubernetes.cri.sandbox-namespace": "prod"'
  status_json "$D/cfg-names.json"
  check "containerd: released" "$(q '.ledger.entries | length')" 0
  check "containerd: the release's record has the name" "$(q '.recent[-1].kind + " " + .recent[-1].name')" "released prod/shop-7d9f8/web"

  C2=$(hexid cri-o)
  hook createRuntime "$C2" '"io.kubernetes.container.name": "db", "io.kubernetes.pod.name": "pg-0", "io.kubernetes.pod.namespace": "data"'
  status_json "$D/cfg-names.json"
  check "CRI-O: the name" "$(q ".ledger.entries[] | select(.id == \"$C2\") | .name")" data/pg-0/db
  hook poststop "$C2" '"io.kubernetes.container.name": "db"'

  # A hostile name: 10 KB of escape sequences, a bidi override and newlines.
  EVIL=$(for i in $(seq 1 1300); do printf '\\u001b[2J\\u202e\\n'; done)
  C3=$(hexid hostile)
  hook createRuntime "$C3" "\"io.kubernetes.container.name\": \"$EVIL\""
  check "hostile name: placed all the same" "$RC" 0
  NAME=$(jq -r --arg id "$C3" '.entries[] | select(.id == $id) | .name' "$D/names/ledger.json")
  [ "${#NAME}" -gt 0 ] && [ "$(printf '%s' "$NAME" | wc -c)" -le 253 ] && ok "hostile name: cut to at most 253 bytes" ||
    ko "hostile name: ${#NAME} characters kept"
  if printf '%s' "$NAME" | LC_ALL=C grep -q $'[\x01-\x1f\x7f]\|\xe2\x80\xae'; then ko "hostile name: kept raw"; else ok "hostile name: kept clean"; fi
  "$BIN" status --config "$D/cfg-names.json" >"$D/text" 2>&1
  "$BIN" status --wide --config "$D/cfg-names.json" >>"$D/text" 2>&1
  if LC_ALL=C grep -q $'\x1b\|\xe2\x80\xae' "$D/text"; then ko "hostile name: printed raw"; else ok "hostile name: never printed raw"; fi
  fits "hostile name (default view)" <("$BIN" status --config "$D/cfg-names.json" 2>&1)
  hook poststop "$C3" '"io.kubernetes.container.name": "x"'

  make_cgroup "$TOP/job"
  "$BIN" apply --config "$D/cfg-names.json" --cgroup "$TOP/job" --cpus 1 --name nightly-batch >/dev/null 2>"$D/err" ||
    ko "apply --name: $(cat "$D/err")"
  make_cgroup "$TOP/svc"
  "$BIN" apply --config "$D/cfg-names.json" --cgroup "$TOP/svc" --mode shared >/dev/null 2>"$D/err" ||
    ko "apply: $(cat "$D/err")"
  status_json "$D/cfg-names.json"
  check "apply --name: the name" "$(q ".ledger.entries[] | select(.id == \"apply:$TOP/job\") | .name")" nightly-batch
  check "apply: the cgroup's path is its name" "$(q ".ledger.entries[] | select(.id == \"apply:$TOP/svc\") | .name")" "/cachepin-status-$$/svc"
  check "apply: the journal's record has the name" "$(q '.recent[-1].name')" "/cachepin-status-$$/svc"

  echo "== GONE: a cgroup removed behind cachepin's back"
  rmdir "$TOP/job"
  BEFORE=$(fingerprint "$D/names")
  status_json "$D/cfg-names.json"
  check "--json: gone" "$(q ".ledger.entries[] | select(.id == \"apply:$TOP/job\") | .state")" gone
  check "--json: the other is ok" "$(q ".ledger.entries[] | select(.id == \"apply:$TOP/svc\") | .state")" ok
  q ".ledger.entries[] | select(.id == \"apply:$TOP/job\") | .gone_why" | grep -q "no longer exists" &&
    ok "--json: why it is gone" || ko "gone_why: $(q ".ledger.entries[] | select(.id == \"apply:$TOP/job\") | .gone_why")"
  "$BIN" status --config "$D/cfg-names.json" >"$D/text" 2>&1
  grep -q "^  apply:…[^ ]*/job  *nightly-batch  *exclusive .* GONE$" "$D/text" && ok "text: GONE in the state column" ||
    ko "text: $(grep nightly "$D/text")"
  grep -q "GONE: its CPUs stay held until the next placement" "$D/text" && ok "text: says what happens to it" ||
    ko "text: no word on what happens to a GONE entry"
  check "status wrote nothing (GONE is not repaired)" "$(fingerprint "$D/names")" "$BEFORE"
  check "the GONE entry is still in the ledger" "$(jq -r --arg id "apply:$TOP/job" '[.entries[] | select(.id == $id)] | length' "$D/names/ledger.json")" 1

  echo "== GONE: a process that exited"
  kill "${SLEEPERS[-1]}"; wait "${SLEEPERS[-1]}" 2>/dev/null
  sleep 600 >/dev/null 2>&1 &
  SLEEPERS+=("$!")
  echo "$!" >"$TOP/ctr/cgroup.procs"
  C4=$(hexid pid-gone)
  hook createRuntime "$C4" '"io.kubernetes.container.name": "short-lived"'
  check "placed" "$RC" 0
  kill "${SLEEPERS[-1]}"; wait "${SLEEPERS[-1]}" 2>/dev/null
  status_json "$D/cfg-names.json"
  check "--json: its pid gone: gone" "$(q ".ledger.entries[] | select(.id == \"$C4\") | .state")" gone
  "$BIN" release --config "$D/cfg-names.json" --cgroup "$TOP/svc" >/dev/null 2>&1
fi

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
