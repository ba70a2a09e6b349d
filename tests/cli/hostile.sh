#!/usr/bin/env bash
# Hostile input to the real binary ($1): `cachepin hook` fed a hostile OCI state on
# stdin, a hostile bundle (config.json), hostile annotations or a hostile host
# config, and `cachepin apply` fed hostile cgroup paths and values.
#
# The table below gives, for each case, the exit status and the EXACT stderr (one
# line; @D@ is the scratch directory, @P@ the target's pid, @DEAD@ a pid that has
# exited, @CG@ the target cgroup's directory, @MNT@ the cpuset hierarchy's mount).
# After each case the harness proves that nothing was written:
#   - the ledger of the default state directory (seeded with one entry before the
#     cases) is byte-identical, and no ledger.json.tmp is left;
#   - a case that points the host config at another state directory leaves no
#     ledger.json there;
#   - the target cgroup's and the seed cgroup's cpuset.cpus and cpuset.mems are
#     unchanged.
# A control case at the start and at the end places the same target with good
# input, so that the refusals are for their cause and not for a broken setup.
# After the table: cases that do place (linux.cgroupsPath forms that must be
# accepted, `apply | true`, `apply > /dev/full`, TZ and HWLOC_* in the
# environment), each checked and given back; then an out-of-memory sweep
# (ulimit -v) that must say "out of memory" or give the normal error, never a
# misleading JSON error.
#
# The target is a real process in a real cpuset cgroup (root; on a cgroup v1
# cpuset hierarchy or a v2 one).  Without root, or without a cpuset hierarchy,
# the cases that need it are skipped (counted apart).
#
#   bash tests/cli/hostile.sh build/cachepin         (HOSTILE_EXPLORE=1: print what
#                                                     each case gives, compare nothing)
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: hostile.sh PATH-TO-cachepin}")
EXPLORE=${HOSTILE_EXPLORE:-}
D=$(mktemp -d /tmp/cachepin-hostile.XXXXXX)
PASS=0 FAIL=0 SKIP=0
SLEEPERS=()
CGROUPS=()

cleanup () {
  for p in "${SLEEPERS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  for ((i = ${#CGROUPS[@]} - 1; i >= 0; i--)); do rmdir "${CGROUPS[$i]}" 2>/dev/null; done
  rm -rf "$D"
}
trap cleanup EXIT

# ---- the fixture: a target process in a cgroup of its own, a seed in another ----------

MNT="" CG="" SEED_CG="" P="" ROOT=false
if [ "$(id -u)" = 0 ]; then
  MNT=$(find_cpuset_mount)
fi
make_cgroup () { # make_cgroup DIR: a cgroup with the root's CPUs and nodes (v1 needs them set)
  mkdir "$1" && CGROUPS+=("$1")
  if [ -f "$MNT/cpuset.cpus" ] && [ -f "$1/cpuset.cpus" ] && [ "$MNT" != /sys/fs/cgroup ]; then
    cat "$(dirname "$1")/cpuset.cpus" > "$1/cpuset.cpus"
    cat "$(dirname "$1")/cpuset.mems" > "$1/cpuset.mems"
  fi
}
start_in () { # start_in DIR: a sleeper in the cgroup DIR; its pid in $REPLY
  sleep 600 </dev/null >/dev/null 2>&1 &
  REPLY=$!
  SLEEPERS+=("$REPLY")
  echo "$REPLY" > "$1/cgroup.procs"
}
if [ -n "$MNT" ]; then
  ROOT=true
  make_cgroup "$MNT/cachepin-hostile-$$"
  CG="$MNT/cachepin-hostile-$$/target"
  SEED_CG="$MNT/cachepin-hostile-$$/seed"
  make_cgroup "$CG"
  make_cgroup "$SEED_CG"
  start_in "$CG"; P=$REPLY
  start_in "$SEED_CG"
fi
sleep 0.1 & DEAD=$!; wait "$DEAD"   # a pid that has exited (not reused this soon)

mkdir -p "$D/bundle" "$D/alt"
GOOD_CONFIG='{"ociVersion": "1.0.2", "annotations": {"cachepin.io/cpus": "1"}}'
echo "$GOOD_CONFIG" > "$D/bundle/config.json"
echo "{\"state_dir\": \"$D/state\"}" > "$D/cfg.json"
printf '\x00' > "$D/nul"

# state [JQ-FILTER]: the good state (annotated, creating, the target's pid), edited by jq
state () {
  jq -cn --arg bundle "$D/bundle" --argjson pid "${P:-1}" '{"ociVersion": "1.0.2", "id": "hostile",
    "status": "creating", "pid": $pid, "bundle": $bundle,
    "annotations": {"cachepin.io/cpus": "1"}}' | jq -c "${1:-.}"
}
ann () { state ".annotations = {\"cachepin.io/cpus\": \"1\"} + $1"; }   # ann JSON-OBJECT
cpus () { state ".annotations[\"cachepin.io/cpus\"] = \"$1\""; }          # cpus VALUE (JSON-escaped)

# Snapshots of everything that must not change.
cpuset_of () { cat "$1/cpuset.cpus" "$1/cpuset.mems" 2>/dev/null | tr '\n' ' '; }
snapshot () {
  local s
  s="ledger:$(sha256sum "$D/state/ledger.json" 2>/dev/null | cut -c1-16)"
  s+=" tmp:$(ls "$D/state" 2>/dev/null | grep -c 'ledger.json.tmp')"
  s+=" alt:$(find "$D/alt" -name ledger.json 2>/dev/null | wc -l)"
  [ -z "$CG" ] || s+=" target:$(cpuset_of "$CG") seed:$(cpuset_of "$SEED_CG")"
  echo "$s"
}

# reset: the good bundle and config back before each case
reset () {
  rm -rf "$D/bundle" "$D/alt"/*; mkdir -p "$D/bundle"
  echo "$GOOD_CONFIG" > "$D/bundle/config.json"
  CFG="$D/cfg.json"
}

# T NAME RC EXPECTED-STDERR NEEDS-ROOT(root|-) COMMAND...: one case.  COMMAND
# prepares the input: it writes the stdin of `cachepin hook` to $D/in, or sets
# ARGS for another command line; it may change $CFG and the bundle, set ENV
# (VAR=VALUE words for the environment), MAX_MS (the case fails if it takes
# longer) and AFTER (run after the case).
T () {
  local name=$1 want_rc=$2 want_err=$3 needs=$4; shift 4
  if [ "$needs" = root ] && ! $ROOT; then
    SKIP=$((SKIP + 1)); echo "skip $name (needs root and a cpuset hierarchy)"; return
  fi
  reset
  ARGS=() AFTER="" ENV=() MAX_MS=""
  : > "$D/in"
  "$@"
  [ ${#ARGS[@]} -gt 0 ] || ARGS=(hook --config "$CFG" createRuntime)
  local before after rc err t0 ms
  before=$(snapshot)
  t0=$(date +%s%N)
  timeout 20 env "${ENV[@]}" "$BIN" "${ARGS[@]}" < "$D/in" > "$D/out" 2> "$D/err"; rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  after=$(snapshot)
  [ -z "$AFTER" ] || eval "$AFTER"
  err=$(cat "$D/err")
  want_err=${want_err//@D@/$D}; want_err=${want_err//@P@/$P}; want_err=${want_err//@DEAD@/$DEAD}
  want_err=${want_err//@CG@/$CG}; want_err=${want_err//@MNT@/$MNT}
  if [ -n "$EXPLORE" ]; then
    printf '%s\n  rc=%s\n  err=%s\n  %s\n' "$name" "$rc" "$err" "$([ "$before" = "$after" ] && echo unchanged || echo "CHANGED: $before -> $after")"
    return
  fi
  local why=""
  [ "$rc" = "$want_rc" ] || why+=" exit $rc, expected $want_rc;"
  [ "$err" = "$want_err" ] || why+=" stderr:
      got:  $err
      want: $want_err
   "
  [ "$before" = "$after" ] || why+=" something was written: $before -> $after;"
  [ -z "$MAX_MS" ] || [ "$ms" -le "$MAX_MS" ] || why+=" took $ms ms, more than $MAX_MS;"
  if [ -z "$why" ]; then PASS=$((PASS + 1)); echo "ok   $name (exit $rc)"
  else FAIL=$((FAIL + 1)); echo "FAIL $name:$why"; fi
}

# ---- inputs ------------------------------------------------------------------------------
in_state () { state "${1:-.}" > "$D/in"; }
in_raw () { printf '%s' "$1" > "$D/in"; }
in_ann () { ann "$1" > "$D/in"; }
in_cpus () { cpus "$1" > "$D/in"; }
in_oversize () { { head -c 1100000 /dev/zero | tr '\0' ' '; state; } > "$D/in"; }
in_nul_after () { { state; cat "$D/nul"; echo garbage; } > "$D/in"; }
in_many_annotations () { # [EXTRA-MEMBER]: 5000 foreign annotations, and EXTRA-MEMBER
  jq -cn --arg bundle "$D/bundle" --argjson pid "${P:-1}" '{"ociVersion": "1.0.2", "id": "hostile",
    "status": "creating", "pid": $pid, "bundle": $bundle,
    "annotations": ([range(5000) | {key: "k\(.)", value: "v"}] | from_entries)}' \
    | jq -c ".annotations += {${1:-}}" > "$D/in"; }
in_many_ours () {
  state ".annotations += ([range(4096) | {key: \"cachepin.io/cpus.container.c\\(.)\", value: \"1\"}] | from_entries)" > "$D/in"; }
in_huge_value () { state ".annotations[\"cachepin.io/cpus\"] = (\"1\" * 100000)" > "$D/in"; }
in_huge_key () { state ".annotations[\"cachepin.io/\" + (\"x\" * 2000)] = \"1\"" > "$D/in"; }
# in_twice JQ-FILTER MEMBERS: the good state edited by JQ-FILTER, with MEMBERS (JSON
# text) put first in its annotations, to repeat a key as jq cannot
in_twice () { state "$1" | sed "s|\"annotations\":{|\"annotations\":{${2//\\/\\\\},|" > "$D/in"; }
in_huge_foreign () { state ".annotations[\"io.example/blob\"] = (\"A\" * 900000) | .annotations[\"cachepin.io/smt\"] = \"pe1\"" > "$D/in"; }
# bundle tricks.  With "bare" the state has no annotations, so the hook reads
# config.json to see whether the container asks (runtimes that do not copy them);
# otherwise the state asks, and config.json is read for the spec's CPUs.
in_bundle () { if [ "${2:-}" = bare ]; then state "del(.annotations) | .bundle = \"$1\""
               else state ".bundle = \"$1\""; fi > "$D/in"; }
bundle_symlink () { echo "$GOOD_CONFIG" > "$D/alt/config.json"; rm "$D/bundle/config.json"
                    ln -s "$D/alt/config.json" "$D/bundle/config.json"; in_bundle "$D/bundle" "${1:-}"; }
bundle_zero_link () { rm "$D/bundle/config.json"; ln -s /dev/zero "$D/bundle/config.json"; in_bundle "$D/bundle" "${1:-}"; }
bundle_fifo () { rm "$D/bundle/config.json"; mkfifo "$D/bundle/config.json"; in_bundle "$D/bundle" "${1:-}"; }
bundle_dir () { rm "$D/bundle/config.json"; mkdir "$D/bundle/config.json"; in_bundle "$D/bundle" "${1:-}"; }
bundle_chardev () { rm "$D/bundle/config.json"; mknod "$D/bundle/config.json" c 1 5; in_bundle "$D/bundle" "${1:-}"; }
bundle_big () { { printf '{"annotations": {"cachepin.io/cpus": "1"}, "x": "'; head -c 5000000 /dev/zero | tr '\0' a; printf '"}'; } > "$D/bundle/config.json"; in_bundle "$D/bundle" "${1:-}"; }
bundle_missing () { rm "$D/bundle/config.json"; in_bundle "$D/bundle" "${1:-}"; }
bundle_bad_json () { printf '{"annotations": {"cachepin.io/cpus": "1"}} trailing' > "$D/bundle/config.json"; in_bundle "$D/bundle" "${1:-}"; }
bundle_bad_quota () { echo '{"annotations": {"cachepin.io/mode": "exclusive"}, "linux": {"resources": {"cpu": {"quota": "5"}}}}' > "$D/bundle/config.json"; in_bundle "$D/bundle" "${1:-}"; }
bundle_bad_cpuset () { echo '{"linux": {"resources": {"cpu": {"cpus": "0-"}}}}' > "$D/bundle/config.json"; state '.annotations = {"cachepin.io/smt": "any"}' > "$D/in"; }
# host configs
host_config () { printf '%s' "$1" > "$D/alt/cfg.json"; CFG="$D/alt/cfg.json"; in_state; }
host_state_symlink () { mkdir -m 0700 "$D/alt/real"; ln -s "$D/alt/real" "$D/alt/state"
                        host_config "{\"state_dir\": \"$D/alt/state\"}"; }
host_state_file () { : > "$D/alt/state"; host_config "{\"state_dir\": \"$D/alt/state\"}"; }
host_state_open () { mkdir -m 0777 "$D/alt/state"; chmod 0777 "$D/alt/state"; host_config "{\"state_dir\": \"$D/alt/state\"}"; }
host_state_shared () { mkdir -m 0755 "$D/alt/state"; chmod 0755 "$D/alt/state"; host_config "{\"state_dir\": \"$D/alt/state\"}"; }
host_config_fifo () { mkfifo "$D/alt/cfg.json"; CFG="$D/alt/cfg.json"; in_state; }
host_config_big () { { printf '{"state_dir": "/x", "topology": "'; head -c 1100000 /dev/zero | tr '\0' a; printf '"}'; } > "$D/alt/cfg.json"; CFG="$D/alt/cfg.json"; in_state; }
# apply
apply () { ARGS=(apply --config "$CFG" "$@"); }
apply_symlink () { ln -s "$CG" "$D/alt/cg-link"; apply --cgroup "$D/alt/cg-link" --cpus 1; }
apply_via_symlink_component () { ln -s "$(dirname "$CG")" "$D/alt/parent-link"; apply --cgroup "$D/alt/parent-link/target" --cpus 1; }
release () { ARGS=(release --config "$CFG" "$@"); }
# the target placed for container "owner" (before the snapshot), then apply on its
# cgroup; "owner" is released after the case
apply_over_container () {
  state '.id = "owner"' | "$BIN" hook --config "$CFG" createRuntime 2>/dev/null
  apply --cgroup "$CG" --cpus 1
  AFTER='state ".id = \"owner\" | .status = \"stopped\"" | "$BIN" hook --config "$CFG" poststop 2>/dev/null'
}
good () { in_state; }
# stdin a pipe whose writer sends TEXT and then keeps it open (a runtime that never
# closes it); the writer goes after the case
in_open_pipe () {
  rm -f "$D/in"; mkfifo "$D/in"
  ( exec > "$D/in"; printf '%s' "$1"; exec sleep 30 ) &
  SLEEPERS+=("$!")
  AFTER="kill $! 2>/dev/null; rm -f \"\$D/in\""
}
# TZ naming a FIFO nobody writes: glibc's tzset() (syslog's timestamps) would
# block in open(2)
tz_fifo () { mkfifo "$D/alt/tz"; ENV=(TZ="$D/alt/tz"); MAX_MS=5000; "$@"; }

# ---- the seed: one entry in the default ledger, so that "unchanged" means something ----
if $ROOT; then
  "$BIN" apply --config "$D/cfg.json" --cgroup "$SEED_CG" --cpus 1 >/dev/null 2>&1 \
    || { echo "FAIL setup: cannot seed the ledger with $SEED_CG"; exit 1; }
fi

# ---- control: good input is placed (then released again, so the cases start clean) ----
control () {
  if ! $ROOT; then SKIP=$((SKIP + 1)); echo "skip control $1 (needs root)"; return; fi
  reset
  local before rc
  before=$(sha256sum "$D/state/ledger.json" | cut -c1-16)
  state | "$BIN" hook --config "$D/cfg.json" createRuntime > /dev/null 2>"$D/err"; rc=$?
  if [ "$rc" = 0 ] && jq -e '.entries[] | select(.id == "hostile")' "$D/state/ledger.json" >/dev/null; then
    PASS=$((PASS + 1)); echo "ok   control $1: good input is placed"
  else
    FAIL=$((FAIL + 1)); echo "FAIL control $1: good input not placed (exit $rc): $(cat "$D/err")"
  fi
  # give it back: poststop, and the target's cpuset as it was
  state '.status = "stopped"' | "$BIN" hook --config "$D/cfg.json" poststop 2>/dev/null
  cat "$(dirname "$CG")/cpuset.cpus" > "$CG/cpuset.cpus" 2>/dev/null
}
control start

# ---- the cases ---------------------------------------------------------------------------
#  name                                 exit  stderr (exact, one line)                                      root  input
# stdin: size and syntax
T "stdin over 1 MiB"                     2 'cachepin hook: state: larger than 1048576 bytes' - in_oversize
T "stdin empty"                          2 'cachepin hook: state: empty input' - in_raw ''
T "stdin never closed, whole state"      2 'cachepin hook: annotation cachepin.io/smt: invalid value `pe1` (expected pe0-first|pe0|cores|any)' - eval 'in_open_pipe "$(ann "{\"cachepin.io/smt\": \"pe1\"}")"; MAX_MS=2500'
T "stdin never closed, never whole"      2 'cachepin hook: state: no complete JSON object after 5 s on stdin (the runtime did not close it)' - eval 'in_open_pipe "{\"ociVersion\": \"1.0.2\""; MAX_MS=8000'
T "stdin malformed JSON"                 2 'cachepin hook: state: invalid JSON at byte 30: unexpected end of data' - in_raw '{"ociVersion": "1.0.2", "id": '
T "stdin trailing garbage"               2 'cachepin hook: state: invalid JSON at byte 24: unexpected character' - in_raw '{"ociVersion": "1.0.2"} xyz'
T "stdin two objects"                    2 'cachepin hook: state: invalid JSON at byte 23: unexpected character' - in_raw '{"ociVersion": "1.0.2"}{"id": "x"}'
T "stdin NUL byte then garbage"          2 "cachepin hook: state: invalid JSON at byte $(state | wc -c): NUL byte" - in_nul_after
T "stdin top level array"                2 'cachepin hook: state: expected a JSON object' - in_raw '[{"id": "x"}]'
T "stdin duplicate id"                   2 'cachepin hook: state: duplicate key "id"' - in_raw '{"ociVersion": "1.0.2", "id": "a", "id": "b"}'
T "stdin duplicate key with a newline"   2 'cachepin hook: state: duplicate key "a?b"' - in_raw '{"a\nb": 1, "a\nb": 2}'
T "stdin single-quoted key"              2 'cachepin hook: state: invalid JSON at byte 7: unexpected character' - in_raw "{'id': 'x'}"
T "stdin NaN pid"                        2 'cachepin hook: state: invalid JSON at byte 64: unexpected character' - in_raw '{"ociVersion": "1.0.2", "id": "x", "status": "creating", "pid": NaN}'
T "stdin invalid UTF-8 in the id"        2 'cachepin hook: state: invalid JSON at byte 29: invalid utf-8 string' - in_raw "$(printf '{"ociVersion":"1.0.2","id":"a\xffb","status":"creating"}')"
# stdin: types and values
T "pid a string"                         2 'cachepin hook: state: pid: expected an integer from 1 to 4194304, got "123"' - in_state '.pid = "123"'
T "pid negative"                         2 'cachepin hook: state: pid: expected an integer from 1 to 4194304, got -5' - in_state '.pid = -5'
T "pid zero"                             2 'cachepin hook: state: pid: expected an integer from 1 to 4194304, got 0' - in_state '.pid = 0'
T "pid huge"                             2 'cachepin hook: state: pid: expected an integer from 1 to 4194304, got 18446744073709551615' - in_raw '{"ociVersion": "1.0.2", "id": "x", "status": "creating", "pid": 99999999999999999999, "bundle": "/b", "annotations": {"cachepin.io/cpus": "1"}}'
T "pid float"                            2 'cachepin hook: state: pid: expected an integer from 1 to 4194304, got 1.5' - in_state '.pid = 1.5'
T "pid 1e3"                              2 'cachepin hook: state: pid: expected an integer from 1 to 4194304, got 1e3' - in_raw '{"ociVersion": "1.0.2", "id": "x", "status": "creating", "pid": 1e3, "bundle": "/b", "annotations": {"cachepin.io/cpus": "1"}}'
T "pid above pid_max"                    2 'cachepin hook: state: pid: expected an integer from 1 to 4194304, got 4194305' - in_state '.pid = 4194305'
T "pid 1 (init, not a container)"        2 "cachepin hook: state: pid: 1 is the init of this pid namespace, not a container's init" - in_state '.pid = 1'
T "pid of an exited process"             0 'cachepin: warning: container hostile starts unplaced: container process @DEAD@: open /proc/@DEAD@/cgroup: No such file or directory' root in_state ".pid = $DEAD"
T "pid of another placed cgroup's task"  0 "cachepin: warning: container hostile starts unplaced: cgroup $SEED_CG is already placed, for \`apply:$SEED_CG\`" root in_state ".pid = ${SLEEPERS[1]:-0}"
T "status unknown"                       2 'cachepin hook: state: status: expected creating|created|running|stopped, got "paused"' - in_state '.status = "paused"'
T "status running, no stage"             2 'cachepin hook: state: status `running` says no stage; give one (createRuntime or poststop)' - eval 'in_state ".status = \"running\""; ARGS=(hook --config "$CFG")'
T "stage unknown"                        2 'cachepin hook: stage `start`: expected createRuntime, prestart or poststop' - eval 'in_state; ARGS=(hook --config "$CFG" start)'
T "id missing"                           2 'cachepin hook: state: id: missing' - in_state 'del(.id)'
T "id with a newline"                    2 'cachepin hook: state: id: contains a control character' - in_state '.id = "a\nb"'
T "id with an escaped NUL"               2 'cachepin hook: state: id: contains a NUL character' - in_state '.id = "a\u0000b"'
T "id with a slash"                      2 "cachepin hook: state: id: contains a '/'" - in_state '.id = "../../etc"'
T "id .."                                2 'cachepin hook: state: id: `..` is not a container id' - in_state '.id = ".."'
T "id of 2000 bytes"                     2 'cachepin hook: state: id: longer than 1024 bytes' - in_state '.id = ("x" * 2000)'
T "bundle relative"                      2 'cachepin hook: state: bundle: expected an absolute path, got "bundle"' - in_state '.bundle = "bundle"'
T "annotations an array (none ours)"     0 '' - in_state '.annotations = [1]'
T "annotation value a number"            2 'cachepin hook: state: annotations: cachepin.io/cpus: expected a string, got 1' - in_state '.annotations["cachepin.io/cpus"] = 1'
# annotations
T "cpus 0x3"                             2 'cachepin hook: annotation cachepin.io/cpus: invalid value `0x3`: expected a number from 1 to 8192' - in_cpus '0x3'
T "cpus 1e3"                             2 'cachepin hook: annotation cachepin.io/cpus: invalid value `1e3`: expected a number from 1 to 8192' - in_cpus '1e3'
T "cpus leading space"                   2 'cachepin hook: annotation cachepin.io/cpus: invalid value ` 8`: expected a number from 1 to 8192' - in_cpus ' 8'
T "cpus 08"                              2 'cachepin hook: annotation cachepin.io/cpus: invalid value `08`: expected a number from 1 to 8192' - in_cpus '08'
T "cpus -1"                              2 'cachepin hook: annotation cachepin.io/cpus: invalid value `-1`: expected a number from 1 to 8192' - in_cpus '-1'
T "cpus +1"                              2 'cachepin hook: annotation cachepin.io/cpus: invalid value `+1`: expected a number from 1 to 8192' - in_cpus '+1'
T "cpus 1.0"                             2 'cachepin hook: annotation cachepin.io/cpus: invalid value `1.0`: expected a number from 1 to 8192' - in_cpus '1.0'
T "cpus huge"                            2 'cachepin hook: annotation cachepin.io/cpus: invalid value `99999999999999999999`: expected a number from 1 to 8192' - in_cpus '99999999999999999999'
T "cpus fullwidth digit"                 2 'cachepin hook: annotation cachepin.io/cpus: invalid value `１`: expected a number from 1 to 8192' - in_cpus '１'
T "cpus with a newline"                  2 'cachepin hook: annotation cachepin.io/cpus: invalid value `1?`: expected a number from 1 to 8192' - in_cpus '1\n'
T "cpus with an escaped NUL"             2 'cachepin hook: state: annotations: cachepin.io/cpus: contains a NUL character' - in_cpus '1\u0000'
T "cpus empty"                           2 'cachepin hook: annotation cachepin.io/cpus: invalid value ``: expected a number from 1 to 8192' - in_cpus ''
T "cpus of 100000 bytes"                 2 'cachepin hook: state: annotations: cachepin.io/cpus: longer than 256 bytes' - in_huge_value
# The limit is named: the target's parent cgroup, and the file it was read from.
if $ROOT; then
  PARENT_CG=$(dirname "$CG") PARENT_FILE=cpuset.effective_cpus
  [ "$MNT" = /sys/fs/cgroup ] && PARENT_FILE=cpuset.cpus.effective
  PARENT_CPUS=$(cat "$PARENT_CG/$PARENT_FILE")
  PARENT_N=$(awk -F, '{n=0; for (i=1;i<=NF;i++) {split($i,r,"-"); n += (r[2]==""?1:r[2]-r[1]+1)} print n}' <<<"$PARENT_CPUS")
  PARENT_WORD=CPUs; [ "$PARENT_N" = 1 ] && PARENT_WORD=CPU
fi
T "cpus 64 (more than the host)"         0 "cachepin: warning: container hostile starts unplaced: cpus: 64 is more than the ${PARENT_N:-} ${PARENT_WORD:-} the parent cgroup ${PARENT_CG:-} allows (${PARENT_FILE:-}: ${PARENT_CPUS:-})" root in_cpus '64'
T "unknown cachepin.io key"              2 'cachepin hook: annotation cachepin.io/cpuset: unknown key (did you mean cachepin.io/cpus? expected cachepin.io/cpus|align|smt|mode|strict|mems|sched-cache|core-sched|isolate, optionally followed by .container.<name>)' - in_ann '{"cachepin.io/cpuset": "0-3"}'
T "unknown key of 2000 bytes"            2 'cachepin hook: state: annotations: key `cachepin.io/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...` longer than 1024 bytes' - in_huge_key
T "5000 foreign annotations, none ours"  0 '' - in_many_annotations
T "5000 foreign annotations, bad smt"    2 'cachepin hook: annotation cachepin.io/smt: invalid value `pe1` (expected pe0-first|pe0|cores|any)' - in_many_annotations '"cachepin.io/smt": "pe1"'
T "4097 cachepin.io annotations"         2 'cachepin hook: state: annotations: 4097 cachepin.io/ annotations, more than the 4096 accepted' - in_many_ours
# a container without a cachepin.io/ key is never failed, whatever its state holds
T "foreign key of 2000 bytes, none ours" 0 '' - in_state '.annotations = {("x" * 2000): "1"}'
T "foreign value with a NUL, none ours"  0 '' - in_state '.annotations = {"io.example/a": "a\u0000b"}'
T "foreign value a number, none ours"    0 '' - in_state '.annotations = {"io.example/a": 5, "io.example/b": null, "io.example/c": {}}'
T "foreign value with a NUL, ours too"   2 'cachepin hook: annotation cachepin.io/smt: invalid value `pe1` (expected pe0-first|pe0|cores|any)' - in_ann '{"io.example/a": "a\u0000b", "cachepin.io/smt": "pe1"}'
T "pid a string, none ours"              0 '' - in_state '.pid = "123" | .annotations = {"io.example/a": "b"}'
T "pid missing, id .., none ours"        0 '' - in_state 'del(.pid) | .id = ".." | .annotations = {"io.example/a": "b"}'
T "annotations {}: config.json decides"  2 'cachepin hook: state: pid: missing' - in_state 'del(.pid) | .annotations = {}'
T "bundle relative, status bad, none ours" 0 '' - in_state '.bundle = "b" | .status = "paused" | .annotations = {"io.kubernetes.cri-o.ContainerType": 5}'
T "bare state, bad pid, config not ours" 0 '' - eval 'echo "{\"annotations\": {\"io.example/a\": \"b\"}}" > "$D/bundle/config.json"; in_state "del(.annotations) | .pid = -5"'
T "bare state, bad pid, config ours"     2 'cachepin hook: state: pid: expected an integer from 1 to 4194304, got -5' - in_state 'del(.annotations) | .pid = -5'
T "bare state, bundle relative"          0 'cachepin: warning: container hostile left alone: its state has no annotations and state: bundle: expected an absolute path, got "b"' - in_state 'del(.annotations) | .bundle = "b"'
T "900 KB foreign value, bad smt"        2 'cachepin hook: annotation cachepin.io/smt: invalid value `pe1` (expected pe0-first|pe0|cores|any)' - in_huge_foreign
T "smt with an escape sequence"          2 'cachepin hook: annotation cachepin.io/smt: invalid value `pe0?[31m` (expected pe0-first|pe0|cores|any)' - in_ann '{"cachepin.io/smt": "pe0\u001b[31m"}'
T "per-container unknown key"            2 'cachepin hook: annotation cachepin.io/cpu.container.x: unknown key (did you mean cachepin.io/cpus.container.x? expected cachepin.io/cpus|align|smt|mode|strict|mems|sched-cache|core-sched|isolate, optionally followed by .container.<name>)' - in_ann '{"cachepin.io/cpu.container.x": "1"}'
# a key given twice: one of ours is an ambiguous request where it applies, refused as an
# invalid value is; anyone else's is not ours to judge; the annotations member twice is
# refused whatever it asks (which one counts is what no reader can know)
T "cachepin.io key given twice"          2 'cachepin hook: annotation cachepin.io/cpus: given twice' - in_twice . '"cachepin.io/cpus": "2"'
T "cachepin.io key twice, escaped"       2 'cachepin hook: annotation cachepin.io/cpus: given twice' - in_twice . '"cachepin.io/\u0063pus": "1"'
T "per-container key twice, this one's"  2 'cachepin hook: annotation cachepin.io/cpus.container.app: given twice' - in_twice '.annotations += {"io.kubernetes.container.name": "app", "cachepin.io/cpus.container.app": "1"}' '"cachepin.io/cpus.container.app": "1"'
T "another container's key twice alone"  0 '' - in_twice '.annotations = {"io.kubernetes.container.name": "app", "cachepin.io/cpus.container.db": "1"}' '"cachepin.io/cpus.container.db": "2"'
T "foreign key given twice, none ours"   0 '' - in_twice '.annotations = {"io.example/a": "1"}' '"io.example/a": "2"'
T "foreign key given twice, bad smt"     2 'cachepin hook: annotation cachepin.io/smt: invalid value `pe1` (expected pe0-first|pe0|cores|any)' - in_twice '.annotations = {"cachepin.io/smt": "pe1"}' '"io.example/a": "1", "io.example/a": "2"'
T "annotations given twice"              2 'cachepin hook: state: duplicate key "annotations"' - eval 'in_state; sed -i "s|}\$|,\"annotations\":{}}|" "$D/in"'
# bundle, the state asking for placement: config.json is needed, and refused
T "bundle with ../ to nowhere"           1 'cachepin hook: bundle @D@/nowhere/../bundle: open: No such file or directory' - in_bundle "$D/nowhere/../bundle"
T "config.json a symlink"                2 'cachepin hook: @D@/bundle/config.json: is a symbolic link' - bundle_symlink
T "config.json a symlink to /dev/zero"   2 'cachepin hook: @D@/bundle/config.json: is a symbolic link' - bundle_zero_link
T "config.json a FIFO"                   2 'cachepin hook: @D@/bundle/config.json: not a regular file' - bundle_fifo
T "config.json a directory"              2 'cachepin hook: @D@/bundle/config.json: not a regular file' - bundle_dir
T "config.json a char device (zero)"     2 'cachepin hook: @D@/bundle/config.json: not a regular file' root bundle_chardev
T "config.json over 4 MiB"               2 'cachepin hook: @D@/bundle/config.json: larger than 4194304 bytes' - bundle_big
T "config.json missing"                  1 'cachepin hook: open @D@/bundle/config.json: No such file or directory' - bundle_missing
T "config.json trailing garbage"         2 'cachepin hook: config.json: invalid JSON at byte 43: unexpected character' - bundle_bad_json
T "config.json quota a string"           2 'cachepin hook: config.json: linux.resources.cpu.quota: expected an integer, got "5"' - bundle_bad_quota
T "config.json cpus \"0-\""              2 'cachepin hook: config.json: linux.resources.cpu.cpus: `0-`: a number is missing at the end' - bundle_bad_cpuset
# bundle, the state without annotations: cannot tell whether it asks, left alone
T "bare state, config.json a symlink"    0 'cachepin: warning: container hostile left alone: its state has no annotations and @D@/bundle/config.json: is a symbolic link' - bundle_symlink bare
T "bare state, config.json a FIFO"       0 'cachepin: warning: container hostile left alone: its state has no annotations and @D@/bundle/config.json: not a regular file' - bundle_fifo bare
T "bare state, config.json missing"      0 'cachepin: warning: container hostile left alone: its state has no annotations and open @D@/bundle/config.json: No such file or directory' - bundle_missing bare
T "bare state, config.json garbage"      0 'cachepin: warning: container hostile left alone: its state has no annotations and config.json: invalid JSON at byte 43: unexpected character' - bundle_bad_json bare
# the caller's environment: TZ naming a FIFO must not block the hook (it logs)
T "TZ a FIFO, hook logs a warning"       0 'cachepin: warning: container hostile left alone: its state has no annotations and @D@/bundle/config.json: is a symbolic link' - tz_fifo bundle_symlink bare
T "TZ a FIFO, hook fails a container"    2 'cachepin hook: annotation cachepin.io/smt: invalid value `pe1` (expected pe0-first|pe0|cores|any)' - tz_fifo in_ann '{"cachepin.io/smt": "pe1"}'
# options after the stage (GNU order, as hook files in the wild write them)
T "hook STAGE --config F"                0 'cachepin: error: container hostile starts unplaced: @D@/alt/cfg.json: lock_timeout_ms: expected an integer from 1 to 60000, got 0' - eval 'host_config "{\"lock_timeout_ms\": 0}"; ARGS=(hook createRuntime --config "$CFG")'
T "hook STAGE --config F, POSIXLY_CORRECT" 0 'cachepin: error: container hostile starts unplaced: @D@/alt/cfg.json: lock_timeout_ms: expected an integer from 1 to 60000, got 0' - eval 'host_config "{\"lock_timeout_ms\": 0}"; ARGS=(hook createRuntime --config "$CFG"); ENV=(POSIXLY_CORRECT=1)'
T "hook -- STAGE"                        2 'cachepin hook: annotation cachepin.io/smt: invalid value `pe1` (expected pe0-first|pe0|cores|any)' - eval 'in_ann "{\"cachepin.io/smt\": \"pe1\"}"; ARGS=(hook --config "$CFG" -- createRuntime)'
T "hook two stages"                      2 'cachepin hook: `poststop`: unexpected argument' - eval 'ARGS=(hook createRuntime --config "$CFG" poststop)'
T "hook STAGE -- STAGE"                  2 'cachepin hook: `poststop`: unexpected argument' - eval 'ARGS=(hook createRuntime --config "$CFG" -- poststop)'
# what the caller typed reaches stderr as one line a terminal shows as is
T "unknown command with ESC"             2 'cachepin: unknown command `x?[2J` (see `cachepin --help`)' - eval 'ARGS=($'"'"'x\e[2J'"'"')'
T "unknown command with U+2028"          2 'cachepin: unknown command `a?b` (see `cachepin --help`)' - eval 'ARGS=($'"'"'a\xe2\x80\xa8b'"'"')'
T "unknown command with U+0085"          2 'cachepin: unknown command `a?b` (see `cachepin --help`)' - eval 'ARGS=($'"'"'a\xc2\x85b'"'"')'
T "unknown command with U+202E"          2 'cachepin: unknown command `a?b` (see `cachepin --help`)' - eval 'ARGS=($'"'"'a\xe2\x80\xaeb'"'"')'
T "unknown command, invalid UTF-8"       2 'cachepin: unknown command `a?b` (see `cachepin --help`)' - eval 'ARGS=($'"'"'a\xffb'"'"')'
T "unknown option with ESC"              2 'cachepin apply: --?[2Jx: unknown option (see `cachepin apply --help`)' - eval 'ARGS=(apply $'"'"'--\e[2Jx'"'"')'
T "unknown short option U+0085"          2 'cachepin plan: -?: unknown option (see `cachepin plan --help`)' - eval 'ARGS=(plan -$'"'"'\xc2\x85'"'"')'
T "option value with U+2028"             2 'cachepin apply: --mems: invalid value `a?b` (expected local|keep)' - eval 'ARGS=(apply --mems $'"'"'a\xe2\x80\xa8b'"'"')'
T "unexpected argument with U+202E"      2 'cachepin release: `a?b`: unexpected argument (see `cachepin release --help`)' - eval 'ARGS=(release $'"'"'a\xe2\x80\xaeb'"'"')'
T "stage with ESC"                       2 'cachepin hook: stage `?[2J`: expected createRuntime, prestart or poststop' - eval 'ARGS=(hook $'"'"'\e[2J'"'"')'
# host config (the container asks, not strict: it starts unplaced, the cause logged)
T "state_dir relative"                   0 'cachepin: error: container hostile starts unplaced: @D@/alt/cfg.json: state_dir: expected an absolute path, got "state"' - host_config '{"state_dir": "state"}'
T "state_dir a symlink"                  0 'cachepin: warning: container hostile starts unplaced: ledger @D@/alt/state: state directory `@D@/alt/state` is a symlink; refusing it' root host_state_symlink
T "state_dir a regular file"             0 'cachepin: warning: container hostile starts unplaced: ledger @D@/alt/state: open state directory `@D@/alt/state`: Not a directory' root host_state_file
T "state_dir world-writable"             0 'cachepin: warning: container hostile starts unplaced: ledger @D@/alt/state: state directory `@D@/alt/state` has mode 0777, open to group or others: not one cachepin made for itself (0700); refusing it' root host_state_open
T "state_dir a shared 0755 directory"    0 'cachepin: warning: container hostile starts unplaced: ledger @D@/alt/state: state directory `@D@/alt/state` has mode 0755, open to group or others: not one cachepin made for itself (0700); refusing it' root host_state_shared
T "lock_timeout_ms 0"                    0 'cachepin: error: container hostile starts unplaced: @D@/alt/cfg.json: lock_timeout_ms: expected an integer from 1 to 60000, got 0' - host_config '{"lock_timeout_ms": 0}'
T "lock_timeout_ms 99999999999"          0 'cachepin: error: container hostile starts unplaced: @D@/alt/cfg.json: lock_timeout_ms: expected an integer from 1 to 60000, got 99999999999' - host_config '{"lock_timeout_ms": 99999999999}'
T "lock_timeout_ms \"5\""                0 'cachepin: error: container hostile starts unplaced: @D@/alt/cfg.json: lock_timeout_ms: expected an integer from 1 to 60000, got "5"' - host_config '{"lock_timeout_ms": "5"}'
T "lock_timeout_ms 1.5"                  0 'cachepin: error: container hostile starts unplaced: @D@/alt/cfg.json: lock_timeout_ms: expected an integer from 1 to 60000, got 1.5' - host_config '{"lock_timeout_ms": 1.5}'
T "host config unknown key"              0 'cachepin: error: container hostile starts unplaced: @D@/alt/cfg.json: unknown key "sandbox_off"' - host_config '{"sandbox_off": true}'
T "host config key mistyped"            0 'cachepin: error: container hostile starts unplaced: @D@/alt/cfg.json: unknown key "on-error" (did you mean "on_error"?)' - host_config '{"on-error": "deny"}'
T "host config sandbox a string"         0 'cachepin: error: container hostile starts unplaced: @D@/alt/cfg.json: sandbox: expected true or false, got "false"' - host_config '{"sandbox": "false"}'
T "host config a FIFO"                   0 'cachepin: error: container hostile starts unplaced: @D@/alt/cfg.json: not a regular file' - host_config_fifo
T "host config over 1 MiB"               0 'cachepin: error: container hostile starts unplaced: @D@/alt/cfg.json: larger than 1048576 bytes' - host_config_big
T "host config missing (explicit path)"  0 'cachepin: error: container hostile starts unplaced: open @D@/alt/none.json: No such file or directory' - eval 'CFG=$D/alt/none.json; in_state'
T "host config, strict container"        2 'cachepin hook: @D@/alt/cfg.json: lock_timeout_ms: expected an integer from 1 to 60000, got 0' - eval 'host_config "{\"lock_timeout_ms\": 0}"; in_state ".annotations[\"cachepin.io/strict\"] = \"true\""'
# apply / release on hostile cgroup paths and values
T "apply --cgroup ../../etc"             2 'cachepin apply: --cgroup: `../../etc`: `..` component refused' root apply --cgroup ../../etc --cpus 1
T "apply --cgroup mount/../../../etc"    2 'cachepin apply: --cgroup: `@MNT@/../../../etc`: `..` component refused' root apply --cgroup "$MNT/../../../etc" --cpus 1
T "apply --cgroup a symlink"             2 'cachepin apply: --cgroup: cgroup `@D@/alt/cg-link`: open @MNT@@D@/alt/cg-link: No such file or directory' root apply_symlink
T "apply --cgroup via a symlinked dir"   2 'cachepin apply: --cgroup: cgroup `@D@/alt/parent-link/target`: open @MNT@@D@/alt/parent-link/target: No such file or directory' root apply_via_symlink_component
T "apply --cgroup a regular file"        2 'cachepin apply: --cgroup: cgroup `@CG@/cpuset.cpus`: open @CG@/cpuset.cpus (not a directory, or a symlink on the way: symlinks are not followed): Not a directory' root apply --cgroup "$CG/cpuset.cpus" --cpus 1
T "apply --cgroup the hierarchy root"    2 'cachepin apply: --cgroup: `@MNT@` is the root of the cpuset hierarchy mounted at @MNT@, not a container'"'"'s cgroup' root apply --cgroup "$MNT" --cpus 1
T "apply --cgroup /"                     2 'cachepin apply: --cgroup: `/` is the root of the cpuset hierarchy mounted at @MNT@, not a container'"'"'s cgroup' root apply --cgroup / --cpus 1
T "apply --cgroup empty"                 2 'cachepin apply: --cgroup: empty cgroup path' root apply --cgroup "" --cpus 1
T "apply --cgroup with a newline"        2 'cachepin apply: --cgroup: cgroup `a?b`: open @MNT@/a?b: No such file or directory' root apply --cgroup "$(printf 'a\nb')" --cpus 1
T "apply --cgroup /proc/self"            2 "cachepin apply: --cgroup: \`/proc/self\` is outside the cgroup v$( [ "$MNT" = /sys/fs/cgroup ] && echo 2 || echo 1) hierarchy holding cpuset: it is under the proc mount at /proc (for a path relative to the hierarchy's root, leave out the leading \`/\`)" root apply --cgroup /proc/self --cpus 1
T "apply --cgroup of a container's"      1 'cachepin apply: cgroup @CG@ is already placed, for `owner`' root apply_over_container
T "apply --cpus 0x3"                     2 'cachepin apply: --cpus: invalid value `0x3`: expected a number from 1 to 8192' root apply --cgroup "$CG" --cpus 0x3
T "apply --cpus 08"                      2 'cachepin apply: --cpus: invalid value `08`: expected a number from 1 to 8192' root apply --cgroup "$CG" --cpus 08
T "release a cgroup never applied"       2 'cachepin release: --cgroup: @CG@ was not placed by `cachepin apply`' root release --cgroup "$CG"

control end

# ---- cases that place: checked, then given back ---------------------------------------
ok () { PASS=$((PASS + 1)); echo "ok   $1"; }
bad () { FAIL=$((FAIL + 1)); echo "FAIL $1: $2"; }
in_ledger () { jq -e --arg id "$1" '.entries[] | select(.id == $id)' "$D/state/ledger.json" >/dev/null 2>&1; }
give_back () { # the target's placements released and its cpuset as it was
  state '.status = "stopped"' | "$BIN" hook --config "$D/cfg.json" poststop 2>/dev/null
  "$BIN" release --config "$D/cfg.json" --cgroup "$CG" >/dev/null 2>&1
  cat "$(dirname "$CG")/cpuset.cpus" > "$CG/cpuset.cpus" 2>/dev/null
}
# placed NAME CGROUPS-PATH: the good state with config.json's linux.cgroupsPath set;
# it must be placed (the pid's cgroup is that path or below it, or the path is not
# an absolute cgroupfs one)
placed () {
  reset
  jq -cn --arg p "$2" '{"ociVersion": "1.0.2", "annotations": {"cachepin.io/cpus": "1"}, "linux": {"cgroupsPath": $p}}' > "$D/bundle/config.json"
  local rc
  state | "$BIN" hook --config "$D/cfg.json" createRuntime > /dev/null 2> "$D/err"; rc=$?
  if [ "$rc" = 0 ] && in_ledger hostile; then ok "$1 (placed)"; else bad "$1" "not placed (exit $rc): $(cat "$D/err")"; fi
  give_back
}
apply_target () { "$BIN" apply --config "$D/cfg.json" --cgroup "$CG" --cpus 1 "$@"; }
if $ROOT; then
  REL=${CG#"$MNT"}
  placed "cgroupsPath the pid's cgroup" "$REL"
  placed "cgroupsPath the pid's cgroup, uncleaned" "/$(dirname "$REL")//./x/../$(basename "$REL")/"
  placed "cgroupsPath a parent of the pid's cgroup" "$(dirname "$REL")"
  placed "cgroupsPath relative (not checked)" "elsewhere/c1"
  placed "cgroupsPath systemd form (not checked)" "system.slice:cachepin:elsewhere"
  T "cgroupsPath another cgroup"         2 "cachepin hook: state: pid: process @P@ is in cgroup $REL, outside /elsewhere/c1, the cgroup config.json's linux.cgroupsPath names" root eval 'echo "{\"annotations\": {\"cachepin.io/cpus\": \"1\"}, \"linux\": {\"cgroupsPath\": \"/elsewhere/c1\"}}" > "$D/bundle/config.json"; in_state'
  T "cgroupsPath a sibling by prefix"    2 "cachepin hook: state: pid: process @P@ is in cgroup $REL, outside ${REL%/*}/targ, the cgroup config.json's linux.cgroupsPath names" root eval 'echo "{\"annotations\": {\"cachepin.io/cpus\": \"1\"}, \"linux\": {\"cgroupsPath\": \"${REL%/*}/targ\"}}" > "$D/bundle/config.json"; in_state'

  # stdout closed after a committed placement: not a failure, nothing printed
  reset
  { apply_target 2> "$D/err"; echo $? > "$D/rc"; } | true
  if [ "$(cat "$D/rc")" = 0 ] && [ ! -s "$D/err" ] && in_ledger "apply:$CG"; then ok "apply | true: exit 0, placed"
  else bad "apply | true" "exit $(cat "$D/rc"), stderr: $(cat "$D/err")"; fi
  give_back
  # stdout full: the placement stands, one line says so
  apply_target > /dev/full 2> "$D/err"; rc=$?
  want="cachepin apply: the placement was made, but its result could not be printed: write stdout: No space left on device"
  if [ "$rc" = 1 ] && [ "$(cat "$D/err")" = "$want" ] && in_ledger "apply:$CG"; then ok "apply > /dev/full: exit 1, placed, one line"
  else bad "apply > /dev/full" "exit $rc, stderr: $(cat "$D/err")"; fi
  give_back
  # TZ a FIFO: apply and release log with the ledger's lock held, and must not block
  mkfifo "$D/alt/tz"
  t0=$(date +%s%N)
  TZ="$D/alt/tz" timeout 20 "$BIN" apply --config "$D/cfg.json" --cgroup "$CG" --cpus 1 > /dev/null 2> "$D/err"; rc=$?
  TZ="$D/alt/tz" timeout 20 "$BIN" release --config "$D/cfg.json" --cgroup "$CG" > /dev/null 2>> "$D/err"; rc2=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  if [ "$rc" = 0 ] && [ "$rc2" = 0 ] && [ "$ms" -lt 5000 ]; then ok "apply and release with TZ a FIFO ($ms ms)"
  else bad "apply and release with TZ a FIFO" "exit $rc/$rc2 after $ms ms: $(cat "$D/err")"; fi
  give_back
  # HWLOC_* must not replace the host's topology
  want=$(apply_target --json 2>&1); give_back
  for e in "HWLOC_SYNTHETIC=pack:1 l3:1 core:4 pu:2" "HWLOC_XMLFILE=/dev/null" "HWLOC_THISSYSTEM=0"; do
    got=$(env "$e" "$BIN" apply --config "$D/cfg.json" --cgroup "$CG" --cpus 1 --json 2>&1); give_back
    if [ "$got" = "$want" ]; then ok "apply with $e: the host's topology"
    else bad "apply with $e" "got $got, want $want"; fi
  done
else
  SKIP=$((SKIP + 1)); echo "skip the cases that place (need root and a cpuset hierarchy)"
fi

# ---- out of memory: "cachepin: out of memory", never a misleading JSON error -------------
# A 1 MB state under address-space limits from too low to start to enough: each run
# must start unplaced by its fault (exit 2, the bad smt), or say "out of memory".
state '.annotations["io.example/blob"] = ("A" * 1000000) | .annotations["cachepin.io/smt"] = "pe1"' > "$D/big"
oom=0 misled=""
for kb in $(seq 4000 250 14000); do
  # (a shell of its own reports the abort, to /dev/null)
  bash -c 'ulimit -v "$1"; "$2" hook --config "$3/cfg.json" createRuntime < "$3/big" > /dev/null 2> "$3/err"' \
    _ "$kb" "$BIN" "$D" 2>/dev/null; rc=$?
  first=$(head -1 "$D/err")
  # Killed before a word, where `cachepin --version` under the same limit dies too: the
  # loader could not map the binary (a sanitizer build's segments): too low to start.
  if [ "$rc" = 139 ] && [ -z "$first" ] &&
    ! bash -c 'ulimit -v "$1"; "$2" --version' _ "$kb" "$BIN" >/dev/null 2>&1; then
    continue
  fi
  case "$rc:$first" in
    127:*"error while loading shared libraries"*) ;;  # too low to start at all
    127:*"cannot allocate TLS data structures for initial thread"*) ;;  # the same, a step later (ld.so)
    2:"cachepin hook: annotation cachepin.io/smt: invalid value \`pe1\` (expected pe0-first|pe0|cores|any)") ;;
    134:"cachepin: out of memory") oom=$((oom + 1)) ;;
    *) misled+=" [${kb} KiB: exit $rc: $first]" ;;
  esac
done
if [ -n "$misled" ]; then bad "out of memory" "$misled"
elif [ "$oom" = 0 ]; then SKIP=$((SKIP + 1)); echo "skip out of memory (no limit tried ran out of memory)"
else ok "out of memory: $oom limits said so, none misled"; fi

echo "$PASS passed, $FAIL failed${SKIP:+, $SKIP skipped}"
[ "$FAIL" = 0 ]
