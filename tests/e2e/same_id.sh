#!/usr/bin/env bash
# End-to-end (issue 18, item 1): two runc state roots, one container id.  A first
# `web` (root R1, cgroup r1web) is placed; a second `web` (root R2, cgroup r2web)
# is refused placement (the id is placed in another cgroup) and runs unplaced to
# completion; its poststop (runc gives no pid there, and config.json names its
# cgroup) must not release the first one's entry: the first web stays in the
# ledger on its CPUs, and a third container is not placed on them.  Then the
# first web's own delete releases it.
#
#   CACHEPIN=/path/to/cachepin bash tests/e2e/same_id.sh
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
: "${CACHEPIN:=${1:-}}"
[ -n "$CACHEPIN" ] || { echo "usage: CACHEPIN=bin $0" >&2; exit 2; }
CACHEPIN=$(realpath "$CACHEPIN")
RUNTIME=runc
. "$HERE/lib.sh"

if [ "$(id -u)" != 0 ] || ! command -v runc >/dev/null || ! command -v jq >/dev/null; then
  echo "SKIP: needs root, runc and jq"
  exit 77
fi
e2e_setup
R1="$E2E_DIR/root1" R2="$E2E_DIR/root2"
CG="/cachepin-e2e-same-id-$$" # the containers' cgroups, below each hierarchy's root
same_id_cleanup () {
  local r id
  for r in "$R1" "$R2"; do
    for id in web other; do runc --root "$r" delete -f "$id" >/dev/null 2>&1; done
  done
  # runc removes the containers' cgroups, not the parent it made for them in each hierarchy.
  awk '$9 == "cgroup" || $9 == "cgroup2" {print $5}' /proc/self/mountinfo | while read -r m; do
    [ ! -d "$m$CG" ] || rmdir "$m$CG" 2>/dev/null
  done
  e2e_cleanup
}
trap same_id_cleanup EXIT
# start ROOT ID BUNDLE-NAME CGROUP CMD [detach]: runc run; $E2E_RC, $E2E_OUT.  Its stdio
# goes to a file: a detached container would hold a pipe open as long as it runs.
start () {
  local b log="$E2E_DIR/$3.log"
  b=$(e2e_bundle "$3" '{"cachepin.io/cpus": "1"}' "$5" ".linux.cgroupsPath = \"$CG/$4\"")
  timeout 60 runc --root "$1" run ${6:+-d} --bundle "$b" "$2" >"$log" 2>&1 </dev/null
  E2E_RC=$?
  E2E_OUT=$(cat "$log")
}
cpus_in () { runc --root "$1" exec "$2" sh -c "grep '^Cpus_allowed_list:' /proc/self/status" 2>/dev/null | awk '{print $2}'; }
expand () { local out=() r; IFS=, read -ra parts <<< "$1"; for r in "${parts[@]}"; do
  if [[ $r == *-* ]]; then out+=($(seq "${r%-*}" "${r#*-}")); else out+=("$r"); fi; done; echo "${out[@]}"; }
disjoint () { local a b; for a in $(expand "$1"); do for b in $(expand "$2"); do [ "$a" != "$b" ] || return 1; done; done; }

start "$R1" web web-r1 r1web "sleep 600" detach
check "R1 web starts (rc $E2E_RC): $E2E_OUT" [ "$E2E_RC" = 0 ]
WEB_CPUS=$(cpus_in "$R1" web)
check "R1 web is placed: in the ledger, in $CG/r1web, on its CPUs ($WEB_CPUS)" \
  same "$(e2e_entry web | jq -r '.cgroup | endswith("'"$CG/r1web"'")'):$(e2e_entry web | jq -r .cpus)" "true:$WEB_CPUS"

start "$R2" web web-r2 r2web "true"
check "R2 web (same id, another cgroup) runs to completion unplaced (rc $E2E_RC)" [ "$E2E_RC" = 0 ]
check "R1 web is still in the ledger after R2 web's poststop" \
  same "$(e2e_entry web | jq -r '.cgroup | endswith("'"$CG/r1web"'")')" true
check "with its CPUs ($WEB_CPUS)" same "$(e2e_entry web | jq -r .cpus)" "$WEB_CPUS"

start "$R1" other other r1other "sleep 600" detach
OTHER=$(e2e_entry other | jq -r .cpus)
if [ -n "$OTHER" ]; then
  check "R1 other is not placed on R1 web's CPUs (other $OTHER, web $WEB_CPUS)" disjoint "$OTHER" "$WEB_CPUS"
else
  check "R1 other is not placed (no CPU left besides R1 web's $WEB_CPUS)" [ -z "$OTHER" ]
fi
runc --root "$R1" delete -f other >/dev/null 2>&1

runc --root "$R1" delete -f web >/dev/null 2>&1
check "R1 web's own delete releases it" [ -z "$(e2e_entry web)" ]
e2e_summary
