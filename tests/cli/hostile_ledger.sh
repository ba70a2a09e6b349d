#!/usr/bin/env bash
# Hostile files in the ledger's state directory, against the real binary ($1).
#
# Something that is not a regular file in place of ledger.lock (symlink, FIFO,
# directory, socket), ledger.json (socket), ledger.json.tmp or ledger.json.prev
# (directory), or sched_cache_restore (FIFO, directory) would fail every run
# forever.  Each must be set aside once (to its
# .corrupt name, with a warning), the run must go on (a poststop release commits
# the ledger), and the next run must find nothing more to set aside.  Then a
# ledger.json damaged after its commit (truncated, an unknown version, removed):
# the hook goes back to ledger.json.prev, the generation before, with one line,
# and loses only the last commit.  Then many hooks at once against a bad lock:
# one of them repairs it, none fails.
#
# `cachepin hook poststop` needs no cgroup and no root-owned fixture: the state
# directory is a scratch one named in a scratch host config.
#
#   bash tests/cli/hostile_ledger.sh build/cachepin
set -u
BIN=$(realpath "${1:?usage: hostile_ledger.sh PATH-TO-cachepin}")
D=$(mktemp -d /tmp/cachepin-hostile-ledger.XXXXXX)
PASS=0 FAIL=0 SKIP=0
SOCKETS=()
cleanup () {
  for p in "${SOCKETS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  rm -rf "$D"
}
trap cleanup EXIT

S=$D/state
echo "{\"state_dir\": \"$S\"}" > "$D/cfg.json"
mkdir "$D/bundle"
echo '{"ociVersion": "1.0.2", "annotations": {"cachepin.io/cpus": "1"}}' > "$D/bundle/config.json"

# A ledger holding X, a container whose cgroup mount is not a cgroup filesystem:
# reconcile cannot tell whether it is gone, so it stays until its poststop.
seed () {
  rm -rf "$S"; mkdir -m 700 "$S"
  cat > "$S/ledger.json" <<JSON
{"version": 1, "entries": [{"id": "x", "cgroup_mount": "$D", "cgroup": "/x", "pid": 0, "start_time": 0,
  "mode": "exclusive", "cpus": "0", "held": "0", "mems": "0", "placed_at": 1}]}
JSON
}
poststop () { # poststop ID: the hook's release of ID; stderr in $D/err, status in $RC
  jq -cn --arg id "$1" --arg bundle "$D/bundle" '{"ociVersion": "1.0.2", "id": $id, "status": "stopped",
    "pid": 0, "bundle": $bundle, "annotations": {"cachepin.io/cpus": "1"}}' \
    | "$BIN" hook --config "$D/cfg.json" poststop 2>"$D/err"
  RC=$?
}
socket_at () { # a bound unix socket at $1, kept open until the end
  python3 -c 'import socket, sys, time; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); print(flush=True); time.sleep(3600)' "$1" \
    > "$D/sock-ready" &
  SOCKETS+=($!)
  for _ in $(seq 100); do [ -S "$1" ] && return; sleep 0.05; done
  echo "could not make a socket at $1"; exit 1
}
kind () { # what $1 is: file, dir, symlink, fifo, socket, none
  if [ -L "$1" ]; then echo symlink; elif [ -p "$1" ]; then echo fifo; elif [ -S "$1" ]; then echo socket
  elif [ -d "$1" ]; then echo dir; elif [ -f "$1" ]; then echo file; else echo none; fi
}
entries () { # the ids in the ledger (an absent ledger.json is an empty ledger)
  if [ ! -e "$S/ledger.json" ]; then echo '[]'; else jq -c '[.entries[].id]' "$S/ledger.json" 2>/dev/null || echo unreadable; fi
}
check () { # check NAME CONDITION-TEXT ACTUAL EXPECTED
  if [ "$3" = "$4" ]; then return 0; fi
  echo "FAIL: $1: $2: got [$3], expected [$4]"
  [ -s "$D/err" ] && sed 's/^/    stderr: /' "$D/err"
  BAD=1
}

# C NAME FILE KIND STDERR: FILE in the state dir made of KIND, then a
# poststop of x, then one of y.
C () {
  local name=$1 file=$2 kind=$3 warning=$4
  if [ "$kind" = socket ] && ! command -v python3 > /dev/null; then
    echo "skip: $name (no python3 to bind a socket)"; SKIP=$((SKIP + 1)); return
  fi
  seed
  case $kind in
    symlink) ln -s /dev/null "$S/$file" ;;
    fifo) mkfifo "$S/$file" ;;
    dir) rm -f "$S/$file"; mkdir "$S/$file"; echo x > "$S/$file/inside" ;;
    socket) rm -f "$S/$file"; socket_at "$S/$file" ;;
  esac
  BAD=0
  poststop x
  check "$name" "status" "$RC" 0
  check "$name" "stderr" "$(sed "s|$D|@D@|g" "$D/err")" "$warning"
  check "$name" "$file set aside" "$(kind "$S/$file.corrupt")" "$kind"
  [ "$file" = ledger.json.tmp ] && check "$name" "$file left" "$(kind "$S/$file")" none
  [ "$file" = ledger.lock ] && check "$name" "new lock" "$(kind "$S/$file")" file
  # x released (or, from a ledger.json set aside, never there again)
  check "$name" "entries after" "$(entries)" '[]'
  poststop y
  check "$name" "second run status" "$RC" 0
  check "$name" "second run stderr" "$(cat "$D/err")" ""
  if [ "$BAD" = 0 ]; then PASS=$((PASS + 1)); echo "ok: $name"; else FAIL=$((FAIL + 1)); fi
}

RELEASED=$'\ncachepin: info: released x'
LOCK_WARNING='cachepin: warning: @D@/state/ledger.lock was not a regular file; moved it to ledger.lock.corrupt and created a new lock'$RELEASED
C "ledger.lock a symlink to /dev/null" ledger.lock symlink "$LOCK_WARNING"
C "ledger.lock a FIFO"                 ledger.lock fifo "$LOCK_WARNING"
C "ledger.lock a directory"            ledger.lock dir "$LOCK_WARNING"
C "ledger.lock a socket"               ledger.lock socket "$LOCK_WARNING"
C "ledger.json a socket"               ledger.json socket 'cachepin: warning: ledger: @D@/state/ledger.json was not trusted (not a regular file); moved it to ledger.json.corrupt; started an empty ledger (no previous generation, ledger.json.prev, to go back to)'
C "ledger.json.tmp a directory"        ledger.json.tmp dir 'cachepin: warning: @D@/state/ledger.json.tmp was a directory; moved it to ledger.json.tmp.corrupt'"$RELEASED"
C "ledger.json.prev a directory"       ledger.json.prev dir 'cachepin: warning: @D@/state/ledger.json.prev was a directory; moved it to ledger.json.prev.corrupt'"$RELEASED"
RESTORE_WARNING='cachepin: warning: @D@/state/sched_cache_restore was not trusted (not a regular file); moved it to sched_cache_restore.corrupt; the value of cache-aware scheduling to give back, if cachepin held the switch, is lost: the switch is left as it is'$RELEASED
C "sched_cache_restore a FIFO"         sched_cache_restore fifo "$RESTORE_WARNING"
C "sched_cache_restore a directory"    sched_cache_restore dir "$RESTORE_WARNING"
BAD=0
check "/dev/null" "kind" "$(stat -c %F /dev/null)" "character special file"
[ "$BAD" = 0 ] && PASS=$((PASS + 1))

# A ledger.json damaged after its commit.  x and y are held; y's poststop is the
# last commit (which keeps the ledger holding both as ledger.json.prev); then
# ledger.json is damaged.  The next run goes back to the previous generation: x
# is still held (its CPUs are not handed out again), and only the last commit is
# lost (y is held again until the next reconcile can tell it is gone).
seed2 () {
  seed
  jq -c --arg d "$D" '.entries += [.entries[0] | .id = "y" | .cgroup = "/y" | .cpus = "1" | .held = "1"]' \
    "$S/ledger.json" > "$D/l2" && mv "$D/l2" "$S/ledger.json"
}
for damage in truncated version removed; do
  seed2
  BAD=0
  poststop y
  check "damaged ($damage)" "the last commit" "$(entries)" '["x"]'
  check "damaged ($damage)" "the generation before kept" "$(jq -c '[.entries[].id]' "$S/ledger.json.prev")" '["x","y"]'
  case $damage in
    truncated) : > "$S/ledger.json" ;;
    version) echo '{"version": 99, "entries": []}' > "$S/ledger.json" ;;
    removed) rm "$S/ledger.json" ;;
  esac
  poststop z
  check "damaged ($damage)" "status" "$RC" 0
  case $damage in
    truncated) lost='@D@/state/ledger.json was not trusted (empty input); moved it to ledger.json.corrupt' ;;
    version) lost='@D@/state/ledger.json was not trusted (unsupported version 99 (expected 1 to N)); moved it to ledger.json.corrupt' ;;
    removed) lost='@D@/state/ledger.json is missing' ;;
  esac
  check "damaged ($damage)" "one line" "$(sed -E "s|$D|@D@|g; s/expected 1 to [0-9]+/expected 1 to N/" "$D/err")" \
    "cachepin: warning: ledger: $lost; went back to the previous generation, ledger.json.prev (2 entries): at most the last commit is lost"
  check "damaged ($damage)" "x still held, y back" "$(entries)" '["x","y"]'
  poststop z
  check "damaged ($damage)" "the next run is quiet" "$(cat "$D/err")" ""
  if [ "$BAD" = 0 ]; then PASS=$((PASS + 1)); echo "ok: damaged ledger.json ($damage)"; else FAIL=$((FAIL + 1)); fi
done

# Many hooks at once against a bad lock: every one succeeds, one repairs it.
for kind in fifo dir; do
  seed
  if [ $kind = fifo ]; then mkfifo "$S/ledger.lock"; else mkdir "$S/ledger.lock"; fi
  pids=()
  for i in $(seq 24); do
    poststop_bg () { jq -cn --arg id "c$1" --arg bundle "$D/bundle" '{"ociVersion": "1.0.2", "id": $id,
      "status": "stopped", "pid": 0, "bundle": $bundle, "annotations": {"cachepin.io/cpus": "1"}}' \
      | "$BIN" hook --config "$D/cfg.json" poststop 2>"$D/err.$1"; }
    poststop_bg "$i" & pids+=($!)
  done
  rcs=0
  for p in "${pids[@]}"; do wait "$p" || rcs=$((rcs + 1)); done
  BAD=0
  check "race ($kind)" "failed hooks" "$rcs" 0
  check "race ($kind)" "warnings" "$(cat "$D"/err.* | grep -c 'ledger.lock was not a regular file')" 1
  check "race ($kind)" "other stderr" "$(cat "$D"/err.* | grep -v 'ledger.lock was not a regular file')" ""
  check "race ($kind)" "lock" "$(kind "$S/ledger.lock")" file
  check "race ($kind)" "entries" "$(entries)" '["x"]'
  rm -f "$D"/err.*
  if [ "$BAD" = 0 ]; then PASS=$((PASS + 1)); echo "ok: race ($kind)"; else FAIL=$((FAIL + 1)); fi
done

echo "$PASS passed, $FAIL failed, $SKIP skipped"
[ "$FAIL" = 0 ]
