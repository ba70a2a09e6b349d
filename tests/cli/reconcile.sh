#!/usr/bin/env bash
# Reconcile opens each cgroup mount point once, not once per ledger entry, and
# still judges every entry as before (real binary $1, real cgroups; root, a cpuset
# hierarchy, jq and strace, skipped without them).
#
# A ledger of N entries, each naming its own cgroup directory under one mount
# (pid 0 and the directory's inode: the NRI plugin's entries once their cgroup is
# recorded, liveness by cgroup only): some directories removed, one entry under a
# mount that is not a cgroup filesystem.  One createRuntime must drop exactly the
# removed ones, keep the rest (the one it cannot judge too), and make at most
# N + a few openat2 calls: one per live entry beneath the mount's fd (its
# cpuset.cpus, read for drift), two per removed one (the file, then the
# directory, to tell gone from unreadable), one per mount point (it was two per
# entry, the mount opened again for each).
# Before it, a poststop (a release) of another entry: it checks only the entries
# that asked for cache-aware scheduling (one of them gone, dropped), so it makes
# no per-entry openat2 call and leaves the other removed ones to the placement.
#
#   bash tests/cli/reconcile.sh build/cachepin
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: reconcile.sh PATH-TO-cachepin}")
. "$(dirname "${BASH_SOURCE[0]}")/lib/check.sh"

need_cpuset reconcile jq strace

N=120
D=$(mktemp -d /tmp/cachepin-reconcile.XXXXXX)
TOP="$MNT/cachepin-reconcile-$$"
SLEEPER=""
cleanup () {
  [ -n "$SLEEPER" ] && { kill "$SLEEPER" 2>/dev/null; wait "$SLEEPER" 2>/dev/null; }
  [ -d "$TOP/l" ] && find "$TOP/l" -mindepth 1 -maxdepth 1 -type d -exec rmdir {} + 2>/dev/null
  rmdir "$TOP/l" "$TOP/c" "$TOP" 2>/dev/null
  rm -rf "$D"
}
trap cleanup EXIT
make_cgroup "$TOP"
make_cgroup "$TOP/c"
make_cgroup "$TOP/l"
for i in $(seq 1 "$N"); do mkdir "$TOP/l/e$i"; done
# Each entry's cgroup as a placement leaves it: its cpuset.cpus holds the entry's
# CPU.  On v2 a new cgroup's list is empty (it inherits its parent's), which
# reconcile rightly reads the careful way (the directory, then the effective
# list): left empty, the bound below held on v1 only.
CPU=$(cpuset_cpus "$TOP" | cut -d, -f1 | cut -d- -f1)
if [ "$MNT" = /sys/fs/cgroup ]; then
  echo +cpuset > "$TOP/l/cgroup.subtree_control"
  for i in $(seq 1 "$N"); do echo "$CPU" > "$TOP/l/e$i/cpuset.cpus"; done
fi
sleep 600 </dev/null >/dev/null 2>&1 &
SLEEPER=$!
echo "$SLEEPER" > "$TOP/c/cgroup.procs"
mkdir -p "$D/bundle"
mkdir -m 0700 "$D/state"
chmod 700 "$D/state"
echo '{"ociVersion": "1.0.2", "annotations": {"cachepin.io/cpus": "1"}}' > "$D/bundle/config.json"
jq -n --arg s "$D/state" '{state_dir: $s, log_level: "info"}' > "$D/cfg.json"
# N shared entries under the cpuset mount, and one under /tmp (not a cgroup fs)
# (and "asker", gone, which asked for cache-aware scheduling); each records its
# directory's inode (an entry without one would be pending, kept while its cgroup
# does not exist yet: ledger.h)
INODES=$(for i in $(seq 1 "$N"); do stat -c %i "$TOP/l/e$i"; done | jq -s -c .)
jq -n --arg mnt "$MNT" --arg top "/${TOP#"$MNT"/}" --argjson n "$N" --arg tmp "$D" --arg cpu "$CPU" \
  --argjson ino "$INODES" '
  def entry($id; $mount; $cg; $ask; $i): {id: $id, cgroup_mount: $mount, cgroup: $cg, cgroup_ino: $i, pid: 0,
    start_time: 0, mode: "shared", cpus: $cpu, held: "", mems: "0", placed_at: 1, sched_cache: $ask,
    core_sched: false, drift: ""};
  {version: 3, entries: ([range(1; $n + 1) as $i
      | entry("e" + ($i | tostring); $mnt; $top + "/l/e" + ($i | tostring); "none"; $ino[$i - 1])]
    + [entry("elsewhere"; $tmp; "/x"; "none"; 1), entry("asker"; $mnt; $top + "/l/gone-asker"; "on"; 1)])}' \
  > "$D/state/ledger.json"
chmod 600 "$D/state/ledger.json"
# gone: every tenth
for i in $(seq 10 10 "$N"); do rmdir "$TOP/l/e$i"; done
GONE=$((N / 10))

jq -cn --arg b "$D/bundle" '{"ociVersion": "1.0.2", id: "e1", status: "stopped", bundle: $b}' > "$D/poststop.json"
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
  strace -f -qq -e trace=openat2 -o "$D/trace-release" "$BIN" hook --config "$D/cfg.json" poststop \
  < "$D/poststop.json" 2>"$D/err-release"
check "poststop succeeds" "$?" 0
check "poststop: its entry and the gone asker are dropped, the other removed ones kept for the placement" \
  "$(jq -c '[(.entries | length), ([.entries[].id | select(. == "e1" or . == "asker")] | length),
             ([.entries[].id | select(test("^e[0-9]*0$"))] | length)]' "$D/state/ledger.json")" "[$N,0,$GONE]"
check "poststop: the log names the gone asker, and no other entry but its own" \
  "$(grep 'released' "$D/err-release" | grep -vc 'released e1$'):$(grep -c 'released asker ' "$D/err-release")" "1:1"
OPENS=$(grep -c 'openat2(' "$D/trace-release")
if [ "$OPENS" -le 12 ]; then ok "poststop: openat2 calls: $OPENS for $N entries (at most 12: none per entry)"
else ko "poststop: openat2 calls: $OPENS for $N entries (at most 12): a release reads every entry's cgroup"; fi

jq -cn --argjson pid "$SLEEPER" --arg b "$D/bundle" '{"ociVersion": "1.0.2", id: "rc", status: "creating",
  pid: $pid, bundle: $b, annotations: {"cachepin.io/cpus": "1"}}' > "$D/create.json"
# LeakSanitizer cannot run under a tracer (it aborts at exit; tests/cli/race.sh): a
# sanitizer build checks leaks everywhere but in this one traced run.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
  strace -f -qq -e trace=openat2 -o "$D/trace" "$BIN" hook --config "$D/cfg.json" createRuntime \
  < "$D/create.json" 2>"$D/err"
check "createRuntime succeeds" "$?" 0
check "the removed cgroups' entries are dropped, the rest kept, the new one added" \
  "$(jq '.entries | length' "$D/state/ledger.json")" $((N - GONE + 1))
check "no removed entry is left" "$(jq '[.entries[].id | select(test("^e[0-9]*0$"))] | length' "$D/state/ledger.json")" 0
check "the entry reconcile cannot judge is kept" \
  "$(jq '[.entries[] | select(.id == "elsewhere")] | length' "$D/state/ledger.json")" 1
check "the log names each dropped entry" "$(grep -c 'released e[0-9]*0 ' "$D/err")" "$GONE"
OPENS=$(grep -c 'openat2(' "$D/trace")
if [ "$OPENS" -le $((N + GONE + 12)) ]; then ok "openat2 calls: $OPENS for $N entries, $GONE removed (at most $((N + GONE + 12)))"
else ko "openat2 calls: $OPENS for $N entries, $GONE removed (at most $((N + GONE + 12))): the mount is opened per entry"; fi

echo "reconcile.sh: $PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
