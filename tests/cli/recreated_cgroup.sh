#!/usr/bin/env bash
# An entry does not outlive its cgroup (issue 18, item 4), against the real binary
# ($1), real cpuset cgroups and a real ledger (root, a cpuset hierarchy, jq;
# skipped without them).
#
#   - `apply --cgroup rp`, then rp removed and made again (a service restart): the
#     new rp is another cgroup, not a drifted rp.  The next placement drops the
#     entry and does not withhold the CPUs the new rp's full cpuset names: `apply
#     --cgroup rq` gets a CPU (the line saying why goes to syslog: `apply` logs
#     there only; tests/unit/test_ledger.c checks the reason).
#   - `release --cgroup` of a placed cgroup that is gone drops its entry (exit 0);
#     of one removed and made again drops it and leaves the new cgroup as it is;
#     of a gone cgroup that was never placed says so (exit 2).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: recreated_cgroup.sh PATH-TO-cachepin}")
. "$(dirname "${BASH_SOURCE[0]}")/lib/check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cgtest.sh"
cg_test_setup recreated_cgroup
ALL=$(cat "$TOP/cpuset.cpus")
echo "{\"state_dir\": \"$D/state\", \"log_level\": \"info\"}" > "$D/cfg.json"
field () { jq -r --arg id "apply:$1" '.entries[] | select(.id == $id) | .'"$2" "$D/state/ledger.json" 2>/dev/null; }
apply () { "$BIN" apply --config "$D/cfg.json" --cgroup "$1" --cpus 1 >"$D/out" 2>"$D/err"; RC=$?; }
release () { "$BIN" release --config "$D/cfg.json" --cgroup "$1" >"$D/out" 2>"$D/err"; RC=$?; }
again () { rmdir "$1" && make_cgroup "$1"; } # again DIR: removed and made again, as a restart does

echo "== a cgroup made again is another cgroup"
make_cgroup "$TOP/rp"
apply "$TOP/rp"
check "apply rp: exit" "$RC" 0
RP_CPUS=$(field "$TOP/rp" cpus)
check "its entry records the cgroup's inode" "$(field "$TOP/rp" cgroup_ino)" "$(stat -c %i "$TOP/rp")"
again "$TOP/rp"
check "the new rp has its parent's CPUs (as a new cgroup does)" "$(cat "$TOP/rp/cpuset.cpus")" "$ALL"
make_cgroup "$TOP/rq"
apply "$TOP/rq"
check "apply rq after rp was made again: exit" "$RC" 0
[ "$RC" = 0 ] || echo "  ($(cat "$D/err"))"
check "rp's entry is dropped" "$(field "$TOP/rp" cpus)" ""
check "rq holds one CPU" "$(field "$TOP/rq" cpus)" "$(cat "$TOP/rq/cpuset.cpus")"
release "$TOP/rq"
release "$TOP/rp" # a stale entry left (the old code's): the next sections start without it

echo "== release of a placed cgroup that is gone"
make_cgroup "$TOP/rg"
apply "$TOP/rg"
check "apply rg: exit" "$RC" 0
rmdir "$TOP/rg"
release "$TOP/rg"
check "release of the gone rg: exit" "$RC" 0
[ "$RC" = 0 ] || echo "  ($(cat "$D/err"))"
contains "it says the cgroup is gone" "$D/out" "released (the cgroup no longer exists)"
check "its entry is dropped" "$(field "$TOP/rg" cpus)" ""
release "$TOP/rg"
check "again: nothing placed there, exit" "$RC" 2
contains "it says so" "$D/err" "was not placed by \`cachepin apply\` (and no longer exists)"

echo "== release of a placed cgroup made again"
make_cgroup "$TOP/rr"
apply "$TOP/rr"
check "apply rr: exit" "$RC" 0
again "$TOP/rr"
NEW=$(cat "$TOP/rr/cpuset.cpus")
release "$TOP/rr"
check "release of the remade rr: exit" "$RC" 0
contains "it says the cgroup was made again" "$D/out" "the cgroup was removed and made again"
check "its entry is dropped" "$(field "$TOP/rr" cpus)" ""
check "the new rr is left as it is" "$(cat "$TOP/rr/cpuset.cpus")" "$NEW"
apply "$TOP/rr"
check "the new rr can be placed" "$RC" 0
release "$TOP/rr"
check "and released, as any other" "$RC" 0
contains "it says so" "$D/out" "rr: released"

finish recreated_cgroup
