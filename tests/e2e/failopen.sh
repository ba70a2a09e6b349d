#!/usr/bin/env bash
# End-to-end: the hook fails open.  A container that asks for placement without
# strict starts, unplaced, when the hook cannot place it for a reason that is the
# host's (docs/configuration.md, "What happens when placement fails"):
#
#   case       what is broken
#   config     the host config is malformed JSON              (logged as an error)
#   notopo     "topology": "/nonexistent.xml"                  (warning)
#   badtopo    "topology": an XML file of garbage              (warning)
#   fulldisk   state_dir on an 8 KiB tmpfs filled with dd     (warning)
#   locked     ledger.lock held by flock(1), lock_timeout_ms 200 (warning)
#
# Each case is run three ways:
#   1. a real runc container, not strict: starts, Cpus_allowed_list is the host's;
#   2. the same container with cachepin.io/strict=true: refused, and the runtime's
#      error carries exactly one line from the hook, naming the cause;
#   3. `cachepin hook` run directly on the state of a real running container (runc
#      state, hooks removed from its bundle), stderr captured: exactly one line,
#      "cachepin: warning|error: container ID starts unplaced: <cause>", exit 0,
#      and its cpuset untouched; with strict in the state's annotations, exit 1 (2
#      for the config case: a configuration error) and one line "cachepin hook: <cause>".
# Plus on_error=deny (lock held, not strict): refused like strict.
# Nothing is written: no ledger.json appears in any of these state directories.
#
#   RUNTIME=runc CACHEPIN=/path/to/cachepin bash tests/e2e/failopen.sh
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
: "${CACHEPIN:=${1:-}}"
[ -n "$CACHEPIN" ] || { echo "usage: CACHEPIN=bin $0" >&2; exit 2; }
CACHEPIN=$(realpath "$CACHEPIN")
. "$HERE/lib.sh"

if [ "$(id -u)" != 0 ] || ! command -v "$RUNTIME" >/dev/null || ! command -v jq >/dev/null \
   || ! command -v flock >/dev/null; then
  echo "SKIP: needs root, $RUNTIME, jq and flock"
  exit 77
fi
e2e_setup

FO_MOUNT=""
FO_HOLDER=""
fo_cleanup () {
  [ -z "$FO_HOLDER" ] || kill "$FO_HOLDER" 2>/dev/null
  [ -z "$FO_MOUNT" ] || umount "$FO_MOUNT" 2>/dev/null
  e2e_cleanup
}
trap fo_cleanup EXIT

HOST_CPUS=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)
echo "host: cpus $HOST_CPUS, runtime $RUNTIME"

# A running container the direct runs use as their target: its own hooks removed,
# so only the runs below touch it.
e2e_start fo-target '{"cachepin.io/cpus": "1"}' 'del(.hooks)'
[ "$E2E_RC" = 0 ] || { echo "FAIL: cannot start the target container: $E2E_OUT"; exit 1; }
TARGET_PID=$("$RUNTIME" state fo-target | jq -r .pid)
TARGET_CPUS=$(awk '/^Cpus_allowed_list/ {print $2}' "/proc/$TARGET_PID/status")

# config_for CASE: write the host config of CASE into $CFG (its state directory:
# $ST), and set up what it needs.  Not in a subshell: it starts the lock holder.
config_for () {
  local c=$1
  CFG="$E2E_DIR/$c.json" ST="$E2E_DIR/state-$c"
  local cfg=$CFG st=$ST
  case $c in
    config)   printf '{"state_dir": "%s", "log_level": \n' "$st" > "$cfg" ;;
    notopo)   printf '{"state_dir": "%s", "topology": "/nonexistent.xml"}\n' "$st" > "$cfg" ;;
    badtopo)  printf '<?xml version="1.0"?>\n<topology><object type=' > "$E2E_DIR/garbage.xml"
              printf '{"state_dir": "%s", "topology": "%s"}\n' "$st" "$E2E_DIR/garbage.xml" > "$cfg" ;;
    fulldisk) mkdir -p "$E2E_DIR/full"
              mount -t tmpfs -o size=8k,mode=0755 cachepin-full "$E2E_DIR/full" && FO_MOUNT="$E2E_DIR/full"
              dd if=/dev/zero of="$E2E_DIR/full/filler" bs=1k count=64 2>/dev/null
              ST="$E2E_DIR/full/state"
              printf '{"state_dir": "%s"}\n' "$ST" > "$cfg" ;;
    locked|deny)
              mkdir -p -m 0700 "$st"; : > "$st/ledger.lock"
              local extra=""; [ "$c" = deny ] && extra=', "on_error": "deny"'
              printf '{"state_dir": "%s", "lock_timeout_ms": 200%s}\n' "$st" "$extra" > "$cfg"
              # the holder is the sleep itself (exec), so killing it frees the lock
              ( exec 9>"$st/ledger.lock"; flock 9; exec sleep 600 ) </dev/null >/dev/null 2>&1 & FO_HOLDER=$!
              sleep 0.3 ;;
  esac
}

teardown_for () {
  case $1 in
    fulldisk) umount "$E2E_DIR/full"; FO_MOUNT="" ;;
    locked|deny) kill "$FO_HOLDER" 2>/dev/null; wait "$FO_HOLDER" 2>/dev/null; FO_HOLDER="" ;;
  esac
}

# run_case CASE LEVEL CAUSE_REGEX STRICT_RC
run_case () {
  local c=$1 level=$2 cause=$3 strict_rc=$4 cfg st out rc lines
  config_for "$c"
  cfg=$CFG st=$ST E2E_CONFIG=$CFG

  # 1. runc, not strict: starts unplaced.
  e2e_run "fo-$c" '{"cachepin.io/cpus": "1"}' "grep Cpus_allowed_list /proc/self/status"
  check "$c: runc, not strict: starts (rc $E2E_RC)" [ "$E2E_RC" = 0 ]
  check "$c: runc, not strict: unplaced (Cpus_allowed_list $HOST_CPUS)" grep -q "Cpus_allowed_list:.$HOST_CPUS\$" <<< "$E2E_OUT"

  # 2. runc, strict: refused, one line from the hook naming the cause.
  e2e_run "fo-$c-strict" '{"cachepin.io/cpus": "1", "cachepin.io/strict": "true"}' "true"
  check "$c: runc, strict: refused (rc $E2E_RC)" [ "$E2E_RC" != 0 ]
  lines=$(grep -o 'cachepin hook: .*' <<< "$E2E_OUT")
  check "$c: runc, strict: one hook line naming the cause: $lines" \
    eval '[ "$(grep -c "cachepin hook:" <<< "$E2E_OUT")" = 1 ] && grep -Eq "cachepin hook: $cause" <<< "$E2E_OUT"'

  # 3. the hook directly on a real container's state: one line, exit 0, cpuset untouched.
  out=$("$RUNTIME" state fo-target | "$CACHEPIN" hook --config "$cfg" createRuntime 2>&1 >/dev/null); rc=$?
  check "$c: direct: exit 0 (got $rc)" [ "$rc" = 0 ]
  check "$c: direct: exactly one line on stderr: $out" [ "$(printf '%s\n' "$out" | grep -c .)" = 1 ]
  check "$c: direct: logged as $level, naming the cause" \
    grep -Eq "^cachepin: $level: container fo-target starts unplaced: $cause" <<< "$out"
  check "$c: direct: the target's cpuset is untouched ($TARGET_CPUS)" \
    [ "$(awk '/^Cpus_allowed_list/ {print $2}' "/proc/$TARGET_PID/status")" = "$TARGET_CPUS" ]

  # 3b. the same, strict in the state's annotations.
  out=$("$RUNTIME" state fo-target | jq -c '.annotations["cachepin.io/strict"] = "true"' \
        | "$CACHEPIN" hook --config "$cfg" createRuntime 2>&1 >/dev/null); rc=$?
  check "$c: direct, strict: exit $strict_rc (got $rc)" [ "$rc" = "$strict_rc" ]
  check "$c: direct, strict: one line \"cachepin hook: <cause>\": $out" \
    eval '[ "$(printf "%s\n" "$out" | grep -c .)" = 1 ] && grep -Eq "^cachepin hook: $cause" <<< "$out"'

  check "$c: no ledger written" [ ! -e "$st/ledger.json" ]
  teardown_for "$c"
}

run_case config   error   "$E2E_DIR/config\\.json: invalid JSON at byte [0-9]+" 2
run_case notopo   warning 'topology: `/nonexistent\.xml` is neither' 1
run_case badtopo  warning 'topology: `.*/garbage\.xml`: not a usable hwloc XML file' 1
run_case fulldisk warning "ledger: write \`$E2E_DIR/full/state/ledger\\.json\\.tmp\`: No space left on device" 1
run_case locked   warning "ledger .*: timed out after [0-9]+ ms \\(limit 200 ms\\) waiting for the lock" 1

# on_error=deny: the same lock failure refuses a container that is not strict.
config_for deny; E2E_CONFIG=$CFG
e2e_run fo-deny '{"cachepin.io/cpus": "1"}' "true"
check "on_error=deny, not strict: refused (rc $E2E_RC)" [ "$E2E_RC" != 0 ]
check "on_error=deny: one hook line naming the cause" \
  eval '[ "$(grep -c "cachepin hook:" <<< "$E2E_OUT")" = 1 ] && grep -q "cachepin hook: ledger .*timed out" <<< "$E2E_OUT"'
teardown_for deny

# Control: with everything repaired the same target is placed (so the cases above
# failed for their cause, not for a broken setup).
printf '{"state_dir": "%s"}\n' "$E2E_DIR/state-ok" > "$E2E_DIR/ok.json"
out=$("$RUNTIME" state fo-target | "$CACHEPIN" hook --config "$E2E_DIR/ok.json" createRuntime 2>&1); rc=$?
check "control: placed (rc $rc): $out" [ "$rc" = 0 ]
check "control: in the ledger" [ "$(jq -r '.entries[0].id' "$E2E_DIR/state-ok/ledger.json" 2>/dev/null)" = fo-target ]

e2e_summary
