# Sourced by the CLI tests that use real cpuset cgroups (after lib/cpuset.sh and
# lib/check.sh).
#   cg_test_setup NAME [TOOL...]   skip (exit 77, saying why) unless root, jq, each
#                                  TOOL and a cpuset hierarchy; then MNT, D (a temp
#                                  directory), TOP ($MNT/cachepin-NAME-$$, created),
#                                  and a trap that kills the sleepers (and their
#                                  children) and removes TOP's cgroups and D
#   start_in CGROUP [CMD...]       a process (default: sleep 600) in CGROUP; its pid
#                                  in REPLY
#   expand CPULIST                 one CPU per line
#   two_cpus NAME                  skip (exit 77) unless TOP has 2 CPUs; then FIRST and
#                                  SECOND, its first two, and USE, them as a cpulist
#                                  (a host config's `cpus` that leaves the others out,
#                                  so that "nothing left" is what a test sees whatever
#                                  the host's size)
#   pin_topology NAME SYNTHETIC    an hwloc XML file of the synthetic topology (its
#                                  PU numbers must be the host's, e.g. with
#                                  pu:1(indexes=$FIRST,$SECOND)) in TOPOLOGY, for
#                                  the host config's `topology`: the placement a
#                                  test expects then does not depend on how the
#                                  host's CPUs share caches and cores; skip
#                                  without lstopo-no-graphics (hwloc)
SLEEPERS=()
cg_test_setup () {
  local name=$1 tool
  shift
  need_cpuset "$name" jq "$@"
  D=$(mktemp -d "/tmp/cachepin-$name.XXXXXX")
  TOP="$MNT/cachepin-$name-$$"
  trap cg_test_cleanup EXIT
  make_cgroup "$TOP"
}
cg_test_cleanup () {
  local p cg
  for p in "${SLEEPERS[@]}"; do pkill -P "$p" 2>/dev/null; kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  # Deepest first: a test may nest (messages.sh: p/svc).
  [ -d "$TOP" ] && find "$TOP" -depth -type d -exec rmdir {} + 2>/dev/null
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
  all=$(cpuset_cpus "$TOP")
  mapfile -t cpus < <(expand "$all")
  [ "${#cpus[@]}" -ge 2 ] || cli_skip "$1" "needs 2 CPUs in $TOP (has $all)"
  FIRST=${cpus[0]} SECOND=${cpus[1]}
  USE="$FIRST-$SECOND"
  [ $((SECOND - FIRST)) = 1 ] || USE="$FIRST,$SECOND"
}
pin_topology () {
  command -v lstopo-no-graphics >/dev/null || cli_skip "$1" "no lstopo-no-graphics (hwloc; scripts/deps.sh installs it)"
  TOPOLOGY="$D/topology.xml"
  lstopo-no-graphics --input "$2" --of xml "$TOPOLOGY" 2>"$D/lstopo.err" && [ -s "$TOPOLOGY" ] ||
    { echo "FAIL: lstopo-no-graphics cannot write the topology '$2': $(cat "$D/lstopo.err")"; exit 1; }
}
