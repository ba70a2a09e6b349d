#!/usr/bin/env bash
# `cachepin status` against the real binary ($1): bad options, a ledger written by
# a real `cachepin apply` on real cpuset cgroups (root and a cpuset hierarchy; those
# cases are skipped without them), the kernel features against what this host
# shows, a corrupt ledger, a topology given by the host config with its LLC map
# and PE0 list computed by hand, and proof that status writes nothing.
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
  for re in '^cgroup ' '^topology ' '^ledger ' '^kernel features$' '^config ' "apply:$TOP/a" '^  L3#0 \|^  L2#0 \|^  LLC#0 \|^  [A-Za-z0-9]*#0 '; do
    grep -q "$re" "$D/text" && ok "text has /$re/" || ko "text lacks /$re/"
  done
  check "status wrote nothing in the state directory" "$(fingerprint "$D/state")" "$BEFORE"
  "$BIN" release --config "$D/cfg.json" --cgroup "$TOP/a" >/dev/null 2>&1
  "$BIN" release --config "$D/cfg.json" --cgroup "$TOP/b" >/dev/null 2>&1
fi

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
