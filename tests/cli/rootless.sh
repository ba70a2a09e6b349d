#!/usr/bin/env bash
# Rootless runtimes run their hooks in their user namespace, where nothing may write
# the host's cgroups or /run/cachepin.  The hook ($1) says so up front in one line
# and the container starts unplaced, or, when it is strict, is refused (exit 3);
# nothing is written.  Two ways in: a user namespace mapping root to the caller
# (what rootless podman gives its hooks: `unshare --user --map-root-user`), and a
# plain non-root uid (setpriv).  A container that does not ask is still left alone
# (exit 0, silent); poststop is silent.
set -u
BIN=$(realpath "${1:?usage: rootless.sh PATH-TO-cachepin}")
. "$(dirname "${BASH_SOURCE[0]}")/lib/check.sh"

[ "$(id -u)" = 0 ] || { echo "rootless.sh: skipped: needs root (to drop it)"; exit 77; }
command -v jq >/dev/null || { echo "rootless.sh: skipped: no jq"; exit 77; }
D=$(mktemp -d /tmp/cachepin-rootless.XXXXXX)
chmod 755 "$D"
trap 'kill $SLEEPER 2>/dev/null; rm -rf "$D"' EXIT
sleep 600 </dev/null >/dev/null 2>&1 & SLEEPER=$!
mkdir -p "$D/bundle"
echo '{"ociVersion": "1.0.2"}' > "$D/bundle/config.json"
echo "{\"state_dir\": \"$D/state\"}" > "$D/cfg.json"
chmod 644 "$D/cfg.json" "$D/bundle/config.json"
state () { # state ANNOTATIONS STATUS
  jq -cn --argjson pid "$SLEEPER" --arg b "$D/bundle" --argjson ann "$1" --arg st "$2" \
    '{"ociVersion": "1.0.2", "id": "rl", "status": $st, "pid": $pid, "bundle": $b, "annotations": $ann}'
}
ASK='{"cachepin.io/cpus": "1"}'
STRICT='{"cachepin.io/cpus": "1", "cachepin.io/strict": "true"}'

run_as () { # run_as WAY ANNOTATIONS STATUS: rc in RC, stderr in $D/err
  local cmd=("$BIN" hook --config "$D/cfg.json")
  case $1 in
    userns) state "$2" "$3" | unshare --user --map-root-user "${cmd[@]}" 2>"$D/err" ;;
    uid) state "$2" "$3" | setpriv --reuid 65534 --regid 65534 --clear-groups "${cmd[@]}" 2>"$D/err" ;;
  esac
  RC=$?
}

if ! unshare --user --map-root-user true 2>/dev/null; then
  echo "rootless.sh: note: this kernel allows no unprivileged user namespace; only the uid case runs"
  WAYS=(uid)
else
  WAYS=(userns uid)
fi
for way in "${WAYS[@]}"; do
  echo "== $way"
  run_as "$way" "$ASK" creating
  check "$way: asks, not strict: starts" "$RC" 0
  if grep -q "rootless: not supported (running as uid" "$D/err"; then ok "$way: one line says why: $(head -c 200 "$D/err")"
  else ko "$way: no rootless line: $(cat "$D/err")"; fi
  check "$way: one line" "$(wc -l < "$D/err")" 1
  run_as "$way" "$STRICT" creating
  check "$way: strict: refused as unsatisfiable" "$RC" 3
  check "$way: strict: the line" "$(cat "$D/err")" "cachepin hook: rootless: not supported (running as uid $([ "$way" = uid ] && echo 65534 || echo 0)$([ "$way" = userns ] && echo ' in a user namespace' || echo ', not root'))"
  run_as "$way" '{"other": "x"}' creating
  check "$way: does not ask: left alone" "$RC" 0
  check "$way: does not ask: silent" "$(cat "$D/err")" ""
  run_as "$way" "$ASK" stopped
  check "$way: poststop: exit 0" "$RC" 0
  check "$way: poststop: silent" "$(cat "$D/err")" ""
  check "$way: nothing written" "$([ -e "$D/state" ] && echo state-dir || echo none)" none
done
echo "rootless.sh: $PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
