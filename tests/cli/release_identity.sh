#!/usr/bin/env bash
# A release removes only the entry of the container it belongs to (issue 18, item
# 1), against the real binary ($1), real cpuset cgroups and a real ledger (root, a
# cpuset hierarchy, jq; skipped without them).
#
# Two containers with one id (two runtimes' state roots): the first (pid A, cgroup
# a) is placed; the second (pid B, cgroup b) is refused placement.  The second's
# poststop must keep the first's entry, whether it names its pid (a crafted state)
# or, as runc's poststop does, no pid and config.json's linux.cgroupsPath; then a
# third container is not placed on the first one's CPUs.  The first's own poststop
# (its pid; or its cgroupsPath, or a parent of it: a runtime may put the process
# in a child) still releases it, and so does one that names neither (nothing tells
# the two apart then: the id decides, as before).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib/cpuset.sh"
BIN=$(realpath "${1:?usage: release_identity.sh PATH-TO-cachepin}")
. "$(dirname "${BASH_SOURCE[0]}")/lib/check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/lib/cgtest.sh"
cg_test_setup release_identity
REL=${TOP#"$MNT"} # the cgroups below the hierarchy's mount, as cgroupsPath names them
bundle () { # bundle NAME [CGROUPSPATH]: $D/NAME/config.json asking for 1 CPU
  mkdir -p "$D/$1"
  jq -n --arg p "${2:-}" '{ociVersion: "1.0.2", annotations: {"cachepin.io/cpus": "1"}}
    + (if $p == "" then {} else {linux: {cgroupsPath: $p}} end)' > "$D/$1/config.json"
}
echo "{\"state_dir\": \"$D/state\", \"log_level\": \"info\"}" > "$D/cfg.json"
hook () { # hook STAGE ID PID BUNDLE: stderr in $D/err, rc in $RC
  jq -cn --arg id "$2" --argjson pid "$3" --arg b "$D/$4" \
    --arg st "$([ "$1" = poststop ] && echo stopped || echo creating)" \
    '{ociVersion: "1.0.2", id: $id, status: $st, bundle: $b, annotations: {"cachepin.io/cpus": "1"}}
     + (if $pid == 0 then {} else {pid: $pid} end)' \
    | "$BIN" hook --config "$D/cfg.json" "$1" 2>"$D/err"
  RC=$?
}
field () { jq -r --arg id "$1" '.entries[] | select(.id == $id) | .'"$2" "$D/state/ledger.json" 2>/dev/null; }
expand () { local r a b; for r in ${1//,/ }; do a=${r%-*}; b=${r#*-}; seq "$a" "$b"; done; }
meets () { # meets LIST1 LIST2: the two cpulists share a CPU
  [ -n "$1" ] && [ -n "$2" ] && [ -n "$(comm -12 <(expand "$1" | sort) <(expand "$2" | sort))" ]
}

bundle plain
bundle in-b "$REL/b"
bundle in-a "$REL/a"
bundle above-a "$REL"
make_cgroup "$TOP/a"; start_in "$TOP/a"; PA=$REPLY
make_cgroup "$TOP/b"; start_in "$TOP/b"; PB=$REPLY
make_cgroup "$TOP/c"; start_in "$TOP/c"; PC=$REPLY

# place_pair: the first web placed, the second refused; A's CPUs in $A_CPUS.
place_pair () {
  hook createRuntime web "$PA" plain
  check "$1: the first web is placed" "$RC" 0
  A_CPUS=$(field web cpus)
  check "$1: on the CPUs its cgroup has" "$(cat "$TOP/a/cpuset.cpus")" "$A_CPUS"
  hook createRuntime web "$PB" plain
  contains "$1: the second web is refused placement" "$D/err" "is already placed in cgroup $TOP/a"
}
third_container () { # c1, placed and released: never on the first web's CPUs
  hook createRuntime c1 "$PC" plain
  local c1
  c1=$(field c1 cpus)
  if meets "$c1" "$A_CPUS"; then ko "c1 is placed on the first web's CPUs ($c1, web holds $A_CPUS)"
  else ok "c1 is not placed on the first web's CPUs (c1: ${c1:-unplaced}, web: $A_CPUS)"; fi
  hook poststop c1 "$PC" plain
}
kept () { # kept WHAT: the first web's entry is still there, and the poststop said why
  check "$1: the first web's entry is kept" "$(field web cgroup)" "$REL/a"
  check "$1: with its CPUs" "$(field web cpus)" "$A_CPUS"
  contains "$1: one line says why" "$D/err" "release of web: its entry is kept"
}

echo "== the second web's poststop names its pid"
place_pair pid
hook poststop web "$PB" plain
check "poststop (pid B): exit 0" "$RC" 0
kept "poststop (pid B)"
third_container
hook poststop web "$PA" plain
check "the first web's own poststop (pid A) releases it" "$(field web cpus)" ""
contains "and says so" "$D/err" "released web"

echo "== the second web's poststop names no pid, and config.json its cgroup (as runc's does)"
place_pair cgroupsPath
hook poststop web 0 in-b
check "poststop (cgroupsPath b): exit 0" "$RC" 0
kept "poststop (cgroupsPath b)"
third_container
hook poststop web 0 in-a
check "the first web's own poststop (cgroupsPath a) releases it" "$(field web cpus)" ""

echo "== a cgroupsPath above the entry's cgroup counts (the process may be in a child)"
place_pair parent
hook poststop web 0 above-a
check "poststop naming a's parent releases it" "$(field web cpus)" ""

echo "== systemd's cgroupsPath (slice:prefix:name), expanded as runc's systemd driver does"
# The slice at the hierarchy's root (a dash in its name would be a parent slice);
# the first web in its p-web.scope, the second's poststop naming q-web.scope.
SLICE=cpri$$
SYS=$MNT/$SLICE.slice
cleanup_slice () { local p; for p in "${SLEEPERS[@]}"; do kill "$p" 2>/dev/null; done; sleep 0.2
  rmdir "$SYS/p-web.scope" "$SYS" 2>/dev/null; cg_test_cleanup; }
trap cleanup_slice EXIT
make_cgroup "$SYS"; make_cgroup "$SYS/p-web.scope"
start_in "$SYS/p-web.scope"; PS=$REPLY
bundle sd-p "$SLICE.slice:p:web"
bundle sd-q "$SLICE.slice:q:web"
hook createRuntime web "$PS" plain
check "systemd: the first web is placed" "$RC" 0
A_CPUS=$(field web cpus)
hook createRuntime web "$PB" plain
contains "systemd: the second web is refused placement" "$D/err" "is already placed in cgroup $SYS/p-web.scope"
hook poststop web 0 sd-q
check "poststop (systemd q-web.scope): exit 0" "$RC" 0
check "poststop (systemd q-web.scope): the first web's entry is kept" "$(field web cgroup)" "/$SLICE.slice/p-web.scope"
contains "poststop (systemd q-web.scope): one line says why" "$D/err" "release of web: its entry is kept"
hook poststop web 0 sd-p
check "the first web's own poststop (systemd p-web.scope) releases it" "$(field web cpus)" ""

echo "== a poststop that names neither pid nor cgroup: released by id"
place_pair neither
hook poststop web 0 plain
check "released" "$(field web cpus)" ""

finish release_identity
