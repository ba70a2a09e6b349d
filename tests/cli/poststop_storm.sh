#!/usr/bin/env bash
# Parallel poststops that time out on the lock leave nothing behind for long
# (issue 18, item 9: 40 parallel poststops once left 38 of 40 entries). The cause:
# a poststop that cannot get the lock within lock_timeout_ms (a holder stalled:
# SIGSTOP, a slow fsync, a starved CPU) logs a warning and keeps the entry; a
# release's reconcile looked only at entries asking for cache-aware scheduling, so
# every later poststop kept them too, until the next placement.  Now a release
# also drops the entries whose process no longer exists.
#
# N containers (shared, 1 CPU) are placed, each a real process in a real cpuset
# cgroup; their processes exit (a runtime runs poststop after the container is
# gone); N poststops run at once while one more cachepin holds the lock past their
# lock_timeout_ms, so they all time out (a warning each, exit 0); then one more
# poststop (any container's) must leave the ledger empty.
#
#   bash tests/cli/poststop_storm.sh build/cachepin
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: poststop_storm.sh PATH-TO-cachepin}")
need_cpuset poststop_storm jq
N=12

D=$(mktemp -d /tmp/cachepin-poststop.XXXXXX)
CGS=() SLEEPERS=() HOLDER=""
cleanup () {
  [ -z "$HOLDER" ] || { kill "$HOLDER" 2>/dev/null; wait "$HOLDER" 2>/dev/null; }
  for p in "${SLEEPERS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  for c in "${CGS[@]}"; do rmdir "$c" 2>/dev/null; done
  rm -rf "$D"
}
trap cleanup EXIT
PASS=0 FAIL=0
ok () { PASS=$((PASS + 1)); echo "ok   $*"; }
bad () { FAIL=$((FAIL + 1)); echo "FAIL $*"; }
entries () { jq '.entries | length' "$D/state/ledger.json"; }

echo "{\"state_dir\": \"$D/state\", \"lock_timeout_ms\": 200}" >"$D/cfg.json"
mkdir "$D/bundle"
echo '{"ociVersion": "1.0.2"}' >"$D/bundle/config.json"
# state I STATUS PID
state () {
  printf '{"ociVersion": "1.0.2", "id": "c%d", "status": "%s", "pid": %d, "bundle": "%s",
    "annotations": {"cachepin.io/cpus": "1", "cachepin.io/mode": "shared"}}' "$1" "$2" "$3" "$D/bundle"
}

for i in $(seq 1 $N); do
  cg=$MNT/cachepin-poststop-$$-$i
  make_cgroup "$cg"
  CGS+=("$cg")
  sleep 600 >/dev/null 2>&1 &
  SLEEPERS+=($!)
  echo $! >"$cg/cgroup.procs"
  state "$i" creating $! >"$D/create$i.json"
  state "$i" stopped $! >"$D/stop$i.json"
  "$BIN" hook --config "$D/cfg.json" createRuntime <"$D/create$i.json" 2>>"$D/place.err" ||
    bad "placing c$i: $(cat "$D/place.err")"
done
[ "$(entries)" = $N ] && ok "$N containers placed" || bad "$(entries) entries after placing $N"

# The containers are gone, as they are when a runtime runs poststop.
for p in "${SLEEPERS[@]}"; do kill "$p"; wait "$p" 2>/dev/null; done
SLEEPERS=()

# One more cachepin holds the lock (the state directory's flock and ledger.lock's),
# a stalled holder, while the poststops wait past their 200 ms.
( exec 8<"$D/state" 9>"$D/state/ledger.lock"; flock 8; flock 9; exec sleep 600 ) </dev/null >/dev/null 2>&1 &
HOLDER=$!
sleep 0.3
pids=()
for i in $(seq 1 $N); do
  "$BIN" hook --config "$D/cfg.json" poststop <"$D/stop$i.json" 2>"$D/stop$i.err" &
  pids+=($!)
done
rcs=0
for p in "${pids[@]}"; do wait "$p" || rcs=$((rcs + 1)); done
[ "$rcs" = 0 ] && ok "every poststop exits 0" || bad "$rcs poststops failed"
timed=$(cat "$D"/stop*.err | grep -c "release of c[0-9]*: .*timed out after")
[ "$timed" = $N ] && ok "all $N poststops timed out on the lock, a warning each" ||
  bad "$timed of $N timed out: $(cat "$D"/stop*.err)"
[ "$(entries)" = $N ] && ok "their $N entries are still there (nothing could write)" || bad "$(entries) entries"
kill "$HOLDER"; wait "$HOLDER" 2>/dev/null; HOLDER=""

# The next release, of any container (here the first one's again: runtimes may
# repeat a poststop), drops every entry whose process is gone.
"$BIN" hook --config "$D/cfg.json" poststop <"$D/stop1.json" 2>"$D/again.err"
check_rc=$?
[ "$check_rc" = 0 ] && ok "the next poststop exits 0" || bad "the next poststop: exit $check_rc: $(cat "$D/again.err")"
[ "$(entries)" = 0 ] && ok "the next poststop leaves the ledger empty" ||
  bad "$(entries) of $N entries left after the next poststop: $(jq -c '[.entries[].id]' "$D/state/ledger.json")"

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
