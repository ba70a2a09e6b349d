# Sourced by the CLI tests that use real cpuset cgroups (after lib/cpuset.sh and
# lib/check.sh).
#   cg_test_setup NAME [TOOL...]   skip (exit 0, saying why) unless root, jq, each
#                                  TOOL and a cpuset hierarchy; then MNT, D (a temp
#                                  directory), TOP ($MNT/cachepin-NAME-$$, created),
#                                  and a trap that kills the sleepers (and their
#                                  children) and removes TOP's cgroups and D
#   start_in CGROUP [CMD...]       a process (default: sleep 600) in CGROUP; its pid
#                                  in REPLY
#   expand CPULIST                 one CPU per line
#   two_cpus NAME                  skip (exit 0) unless TOP has 2 CPUs; then FIRST and
#                                  SECOND, its first two, and USE, them as a cpulist
#                                  (a host config's `cpus` that leaves the others out,
#                                  so that "nothing left" is what a test sees whatever
#                                  the host's size)
SLEEPERS=()
cg_test_setup () {
  local name=$1 tool
  shift
  [ "$(id -u)" = 0 ] || { echo "$name.sh: skipped: needs root"; exit 77; }
  for tool in jq "$@"; do
    command -v "$tool" >/dev/null || { echo "$name.sh: skipped: no $tool (scripts/deps.sh installs it)"; exit 77; }
  done
  MNT=$(find_cpuset_mount)
  [ -n "$MNT" ] || { echo "$name.sh: skipped: no cpuset hierarchy"; exit 77; }
  D=$(mktemp -d "/tmp/cachepin-$name.XXXXXX")
  TOP="$MNT/cachepin-$name-$$"
  trap cg_test_cleanup EXIT
  make_cgroup "$TOP"
}
cg_test_cleanup () {
  local p cg
  for p in "${SLEEPERS[@]}"; do pkill -P "$p" 2>/dev/null; kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  for cg in "$TOP"/*/ "$TOP"; do [ -d "$cg" ] && rmdir "$cg" 2>/dev/null; done
  rm -rf "$D"
}
start_in () {
  local cg=$1
  shift
  [ $# -gt 0 ] || set -- sleep 600
  "$@" </dev/null >/dev/null 2>&1 &
  REPLY=$!
  SLEEPERS+=("$REPLY")
  echo "$REPLY" > "$cg/cgroup.procs"
}
expand () {
  local r a b; for r in ${1//,/ }; do a=${r%-*}; b=${r#*-}; seq "$a" "$b"; done
}
two_cpus () {
  local all cpus
  all=$(cat "$TOP/cpuset.cpus")
  mapfile -t cpus < <(expand "$all")
  if [ "${#cpus[@]}" -lt 2 ]; then echo "$1.sh: skipped: needs 2 CPUs in $TOP (has $all)"; exit 77; fi
  FIRST=${cpus[0]} SECOND=${cpus[1]}
  USE="$FIRST-$SECOND"
  [ $((SECOND - FIRST)) = 1 ] || USE="$FIRST,$SECOND"
}
