#!/usr/bin/env bash
# Resource limits are a system failure (docs/configuration.md, "When placement
# fails"): one clear line, and on_error (or the container's strict) decides. The
# real binary runs `cachepin hook createRuntime` for a container asking for 1 CPU,
# its pid a real process in a real cpuset cgroup, under:
#   RLIMIT_FSIZE 0   was: SIGXFSZ killed the hook (exit 153, no message)
#   RLIMIT_NOFILE n  for every n from 3 to 24 (below what the loader needs: skipped),
#                    where the hook runs out of descriptors at one step or
#                    another: was a refusal of a
#                    non-strict container when config.json could not be opened
#                    (exit 1), and `Permission denied` on /proc/PID/stat when the
#                    sandbox's rule for it was skipped
#
#   bash tests/cli/limits.sh build/cachepin
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: limits.sh PATH-TO-cachepin}")
need_cpuset limits

sleeper_frame cachepin-limits
mkdir "$D/bundle"
echo '{"ociVersion": "1.0.2", "annotations": {"cachepin.io/cpus": "1"}}' >"$D/bundle/config.json"
echo "{\"state_dir\": \"$D/state\"}" >"$D/cfg.json"
echo "{\"state_dir\": \"$D/state\", \"on_error\": \"deny\"}" >"$D/cfg-deny.json"
# The state on a file, not a pipe: with 4 descriptors the shell has none for a pipe.
state () {
  printf '{"ociVersion": "1.0.2", "id": "limits", "status": "creating", "pid": %d, "bundle": "%s",
    "annotations": {"cachepin.io/cpus": "1"%s}}' "$SLEEPER" "$D/bundle" "${1:-}" >"$D/state.json"
}

# run LIMIT CONFIG: the hook under `ulimit LIMIT`; RC, ERR (its stderr, through a
# pipe: a small RLIMIT_FSIZE must not hit it).  Its stdin and stdout are opened
# before the limit: the shell has no descriptor to spare after it.
run () {
  rm -rf "$D/state"
  ERR=$( { (exec <"$D/state.json" >/dev/null; ulimit $1; exec "$BIN" hook --config "$2" createRuntime) 2>&1
           echo $? >"$D/rc"; } )
  RC=$(cat "$D/rc")
}
lines () { [ -z "$1" ] && echo 0 || printf '%s\n' "$1" | wc -l; }
leftovers () { find "$D/state" -name '*.tmp*' 2>/dev/null | tr '\n' ' '; }

echo "== RLIMIT_FSIZE 0: the write fails with EFBIG, one line, nothing left behind"
state
run "-f 0" "$D/cfg.json"
[ "$RC" = 0 ] && ok "fsize: starts unplaced (exit 0)" || bad "fsize: exit $RC (153 is SIGXFSZ), stderr '$ERR'"
[ "$(lines "$ERR")" = 1 ] && printf '%s' "$ERR" | grep -q "container limits starts unplaced: .*File too large" &&
  ok "fsize: one line: $ERR" || bad "fsize: stderr '$ERR'"
[ -z "$(leftovers)" ] && ok "fsize: no temporary file left" || bad "fsize: left $(leftovers)"
run "-f 0" "$D/cfg-deny.json"
[ "$RC" = 1 ] && ok "fsize, on_error deny: exit 1" || bad "fsize, on_error deny: exit $RC, stderr '$ERR'"
[ "$(lines "$ERR")" = 1 ] && printf '%s' "$ERR" | grep -q "File too large" &&
  ok "fsize, on_error deny: one line" || bad "fsize, on_error deny: stderr '$ERR'"
[ -z "$(leftovers)" ] && ok "fsize, on_error deny: no temporary file left" || bad "fsize, on_error deny: left $(leftovers)"

echo "== RLIMIT_NOFILE 3..24: out of descriptors anywhere is one line and starts unplaced"
state
exhausted=0 placed=0
for n in $(seq 3 24); do
  run "-n $n" "$D/cfg.json"
  what="nofile $n: exit $RC, stderr '$ERR'"
  if printf '%s' "$ERR" | grep -q "error while loading shared libraries"; then
    continue # the dynamic loader's failure, before cachepin runs
  elif [ "$RC" != 0 ] || [ "$(lines "$ERR")" != 1 ]; then
    bad "$what (expected exit 0 and one line)"
  elif printf '%s' "$ERR" | grep -q "Permission denied"; then
    bad "$what (a skipped sandbox rule read as EACCES)"
  elif printf '%s' "$ERR" | grep -q "starts unplaced: .*Too many open files"; then
    exhausted=$((exhausted + 1))
  elif printf '%s' "$ERR" | grep -q "placed limits:"; then
    placed=$((placed + 1))
  else
    bad "$what (neither placed nor out of descriptors)"
  fi
done
[ "$exhausted" -gt 0 ] && [ "$placed" -gt 0 ] && ok "nofile: $exhausted limits ran out (one line each, unplaced), $placed placed" ||
  bad "nofile: $exhausted ran out, $placed placed: the range no longer covers both"

echo "== RLIMIT_NOFILE, strict: a system failure, exit 1 (never 2, the container's own error)"
state ', "cachepin.io/strict": "true"'
strict_ok=1
for n in $(seq 3 24); do
  run "-n $n" "$D/cfg.json"
  if printf '%s' "$ERR" | grep -q "cachepin.*Too many open files"; then
    [ "$RC" = 1 ] && [ "$(lines "$ERR")" = 1 ] || { strict_ok=0; bad "strict, nofile $n: exit $RC, stderr '$ERR'"; }
  fi
done
[ "$strict_ok" = 1 ] && ok "strict: every run out of descriptors exits 1 with one line"

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
