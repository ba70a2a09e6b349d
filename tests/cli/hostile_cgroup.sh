#!/usr/bin/env bash
# Hostile cgroups for the real binary ($1): cgroup names and --cgroup paths that
# reach the parsers of /proc/<pid>/cgroup and /proc/self/mountinfo
# (hook/host/cgroup_parse.c) through the real kernel, and what the hook and
# `cachepin apply` then open and write.
#
# Each case gives the exit status and the EXACT stderr (@D@ the scratch directory,
# @B@ the test's base cgroup directory, @MNT@ the cpuset hierarchy's mount; a
# placement's info line is checked up to its CPUs, which depend on the host).  A
# case that must place checks that the ledger names the cgroup and that the
# cgroup's own cpuset.cpus (not a look-alike's) holds one CPU; a case that must
# refuse checks that no cgroup under @B@ changed and the ledger did not.
#
# Needs root and a cpuset hierarchy (v1, or v2 with cpuset); skips otherwise.
#   bash tests/cli/hostile_cgroup.sh build/cachepin   (HOSTILE_EXPLORE=1: print, compare nothing)
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: hostile_cgroup.sh PATH-TO-cachepin}")
EXPLORE=${HOSTILE_EXPLORE:-}
PASS=0 FAIL=0
SLEEPERS=() CGROUPS=()

need_cpuset hostile_cgroup
V1=false; [ "$MNT" != /sys/fs/cgroup ] && V1=true

D=$(mktemp -d /tmp/cachepin-hostile-cgroup.XXXXXX)
B="$MNT/cachepin-hcg-$$"
cleanup () {
  for p in "${SLEEPERS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  for ((i = ${#CGROUPS[@]} - 1; i >= 0; i--)); do rmdir "${CGROUPS[$i]}" 2>/dev/null; done
  rm -rf "$D"
}
trap cleanup EXIT

make_cgroup () { # make_cgroup DIR: a cgroup with its parent's CPUs and nodes (v1 needs them set)
  mkdir "$1" || return 1
  CGROUPS+=("$1")
  if $V1; then
    cat "$(dirname "$1")/cpuset.cpus" > "$1/cpuset.cpus"
    cat "$(dirname "$1")/cpuset.mems" > "$1/cpuset.mems"
  fi
}
start_in () { # start_in DIR: a sleeper in the cgroup DIR ("" : stay where we are); pid in $REPLY
  sleep 600 >/dev/null 2>&1 &
  REPLY=$!
  SLEEPERS+=("$REPLY")
  [ -z "$1" ] || echo "$REPLY" > "$1/cgroup.procs"
}
make_cgroup "$B" || { echo "FAIL setup: cannot create $B"; exit 1; }

mkdir -p "$D/bundle"
echo '{"ociVersion": "1.0.2", "annotations": {"cachepin.io/cpus": "1"}}' > "$D/bundle/config.json"
echo "{\"state_dir\": \"$D/state\"}" > "$D/cfg.json"

hook () { # hook ID PID STATUS EVENT
  jq -cn --arg bundle "$D/bundle" --arg id "$1" --argjson pid "$2" --arg status "$3" \
    '{"ociVersion": "1.0.2", "id": $id, "status": $status, "pid": $pid, "bundle": $bundle,
      "annotations": {"cachepin.io/cpus": "1"}}' | timeout 20 "$BIN" hook --config "$D/cfg.json" "$4"
}
ledger_cgroup () { jq -r --arg id "$1" '.entries[] | select(.id == $id) | .cgroup' "$D/state/ledger.json" 2>/dev/null; }
ncpus () { awk -F, '{n=0; for (i=1;i<=NF;i++) {split($i,r,"-"); n += (r[2]==""?1:r[2]-r[1]+1)} print n}' "$1/cpuset.cpus"; }
snapshot () {
  local s c
  s="ledger:$(sha256sum "$D/state/ledger.json" 2>/dev/null | cut -c1-16)"
  while IFS= read -r -d '' c; do s+=" $c:$(cat "$c/cpuset.cpus" 2>/dev/null)"; done < <(find "$B" -type d -print0)
  echo "$s"
}

# check NAME RC WANT-RC ERR WANT-ERR [WHY]: record one result.
check () {
  local name=$1 rc=$2 want_rc=$3 err=$4 want=$5 why=${6:-}
  want=${want//@D@/$D}; want=${want//@B@/$B}; want=${want//@MNT@/$MNT}
  if [ -n "$EXPLORE" ]; then printf '%s\n  rc=%s\n  err=%s\n  %s\n' "$name" "$rc" "$err" "$why"; return; fi
  [ "$rc" = "$want_rc" ] || why+=" exit $rc, expected $want_rc;"
  [ "$err" = "$want" ] || why+=" stderr:
      got:  $err
      want: $want
   "
  if [ -z "$why" ]; then PASS=$((PASS + 1)); echo "ok   $name (exit $rc)"
  else FAIL=$((FAIL + 1)); echo "FAIL $name:$why"; fi
}

# placed NAME DIR: a process in the cgroup DIR is placed by the hook: the ledger
# names DIR (below the mount) and DIR's own cpuset.cpus holds one CPU; then released.
placed () {
  local name=$1 dir=$2 why="" rc err
  start_in "$dir"; local pid=$REPLY
  hook "$name" "$pid" creating createRuntime > /dev/null 2> "$D/err"; rc=$?
  err=$(cat "$D/err")
  [ "$(ledger_cgroup "$name")" = "${dir#"$MNT"}" ] || why+=" ledger has \`$(ledger_cgroup "$name")\`, not \`${dir#"$MNT"}\`;"
  [ "$(ncpus "$dir")" = 1 ] || why+=" $dir/cpuset.cpus is \`$(cat "$dir/cpuset.cpus")\`;"
  hook "$name" "$pid" stopped poststop 2>/dev/null
  # stderr: the one info line of a placement (its CPUs depend on the host)
  local want="cachepin: info: placed $name: cpus …"
  [[ $err != "cachepin: info: placed $name: cpus "* || $err == *$'\n'* ]] || want=$err
  check "$name" "$rc" 0 "$err" "$want" "$why"
}

# refused NAME WANT-RC WANT-ERR COMMAND...: nothing under @B@ nor the ledger changes.
refused () {
  local name=$1 want_rc=$2 want=$3 rc err before after why=""; shift 3
  before=$(snapshot)
  "$@" > /dev/null 2> "$D/err"; rc=$?
  after=$(snapshot)
  err=$(cat "$D/err")
  [ "$before" = "$after" ] || why=" something was written: $before -> $after;"
  check "$name" "$rc" "$want_rc" "$err" "$want" "$why"
}
apply () { timeout 20 "$BIN" apply --config "$D/cfg.json" "$@"; }

# ---- names the kernel allows and the parsers must read whole ------------------------------
make_cgroup "$B/a b" && placed "blank in the name" "$B/a b"
# mountinfo escapes a blank as \040; /proc/<pid>/cgroup does not: a cgroup literally
# named `a\040b` is that name, not `a b`.
make_cgroup "$B/a\\040b" && placed "a literal \\040 in the name" "$B/a\\040b"
make_cgroup "$B/x:y:z" && placed "colons in the name" "$B/x:y:z"
make_cgroup "$B/0::" && placed "a name like the unified line" "$B/0::"

# ---- names that must not be taken for what they look like ----------------------------------
# v2 marks a removed cgroup " (deleted)"; a live one named so cannot be told apart
# and is left unplaced, never written.
make_cgroup "$B/z (deleted)"
start_in "$B/z (deleted)"; DP=$REPLY
refused "a live cgroup named \` (deleted)\`" 0 \
  "cachepin: warning: container deleted starts unplaced: container process $DP: cpuset cgroup of pid $DP: cgroup \`${B#"$MNT"}/z (deleted)\` has been removed (the kernel marks it \`(deleted)\`)" \
  hook deleted "$DP" creating createRuntime
# A process in the hierarchy's root cgroup: no cgroup of its own to write.
start_in ""; RP=$REPLY
if grep -qE '^[0-9]+:([^:]*,)?cpuset(,[^:]*)?:/$|^0::/$' "/proc/$RP/cgroup" && $V1; then
  refused "a process in the root cpuset cgroup" 0 \
    "cachepin: warning: container root starts unplaced: container process $RP: pid $RP is in the root cpuset cgroup ($MNT): no cgroup of its own to write (on cgroup v1 a process that has exited shows the root)" \
    hook root "$RP" creating createRuntime
fi

# ---- --cgroup paths ------------------------------------------------------------------------
long=$(printf 'x%.0s' {1..256})
refused "--cgroup with a 256-byte component" 2 \
  "cachepin apply: --cgroup: \`@B@/$long\`: path component longer than 255 bytes" apply --cgroup "$B/$long" --cpus 1
refused "--cgroup with a \`.\` component" 2 "cachepin apply: --cgroup: \`@B@/./a b\`: \`.\` component refused" \
  apply --cgroup "$B/./a b" --cpus 1
refused "--cgroup with \`//\`" 2 "cachepin apply: --cgroup: \`@B@//a b\`: empty path component (\`//\` or a trailing \`/\`)" \
  apply --cgroup "$B//a b" --cpus 1
refused "--cgroup with a trailing \`/\`" 2 "cachepin apply: --cgroup: \`@B@/a b/\`: empty path component (\`//\` or a trailing \`/\`)" \
  apply --cgroup "$B/a b/" --cpus 1
refused "--cgroup that does not exist" 2 "cachepin apply: --cgroup: cgroup \`@B@/nope\`: open @B@/nope: No such file or directory" \
  apply --cgroup "$B/nope" --cpus 1
refused "--cgroup a cgroup file" 2 "cachepin apply: --cgroup: cgroup \`@B@/cgroup.procs\`: open @B@/cgroup.procs (not a directory, or a symlink on the way: symlinks are not followed): Not a directory" \
  apply --cgroup "$B/cgroup.procs" --cpus 1
if $V1; then
  refused "--cgroup the tmpfs holding the v1 mounts" 2 \
    "cachepin apply: --cgroup: \`$(dirname "$MNT")\` is outside the cgroup v1 hierarchy holding cpuset: it is under the tmpfs mount at $(dirname "$MNT") (for a path relative to the hierarchy's root, leave out the leading \`/\`)" \
    apply --cgroup "$(dirname "$MNT")" --cpus 1
fi
# The same cgroup three ways: under the mount, relative to the hierarchy's root, and
# absolute in the hierarchy; each placed in "a b" and released.
for spelling in "$B/a b" "${B#"$MNT/"}/a b" "${B#"$MNT"}/a b"; do
  before=$(cat "$B/a b/cpuset.cpus")
  apply --cgroup "$spelling" --cpus 1 > /dev/null 2> "$D/err"; rc=$?
  why=""
  [ "$(ncpus "$B/a b")" = 1 ] || why=" $B/a b/cpuset.cpus is \`$(cat "$B/a b/cpuset.cpus")\`;"
  timeout 20 "$BIN" release --config "$D/cfg.json" --cgroup "$spelling" > /dev/null 2>&1
  echo "$before" > "$B/a b/cpuset.cpus"
  check "--cgroup spelled \`$spelling\`" "$rc" 0 "$(cat "$D/err")" "" "$why"
done

left=$(jq '.entries | length' "$D/state/ledger.json" 2>/dev/null)
check "every case released" 0 0 "$left" 0

echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
