# Sourced by the CLI tests (tests/cli/*.sh; this directory is not a test itself).
# cli_skip NAME WHY: say why NAME.sh is skipped and exit 77, which CTest reports as
# skipped (SKIP_RETURN_CODE 77), never as passed.
cli_skip () { echo "$1.sh: skipped: $2"; exit 77; }
# need_cpuset NAME [TOOL...]: skip unless root, each TOOL and a cpuset hierarchy;
# then MNT, that hierarchy's mount point (find_cpuset_mount).
need_cpuset () {
  local name=$1 tool
  shift
  [ "$(id -u)" = 0 ] || cli_skip "$name" "needs root (a real cpuset cgroup)"
  for tool; do command -v "$tool" >/dev/null || cli_skip "$name" "no $tool (scripts/deps.sh installs it)"; done
  MNT=$(find_cpuset_mount)
  [ -n "$MNT" ] || cli_skip "$name" "no cpuset hierarchy"
}
# find_cpuset_mount: print the mount point of the hierarchy holding the cpuset
# controller (a v1 cpuset hierarchy, or /sys/fs/cgroup on v2, where it enables
# cpuset for the root's children), or nothing when there is none.
find_cpuset_mount () {
  if grep -q ' - cgroup cgroup .*cpuset' /proc/self/mountinfo; then
    awk '$0 ~ / - cgroup cgroup / && $NF ~ /cpuset/ {print $5; exit}' /proc/self/mountinfo
  elif [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw cpuset /sys/fs/cgroup/cgroup.controllers; then
    grep -qw cpuset /sys/fs/cgroup/cgroup.subtree_control || echo +cpuset > /sys/fs/cgroup/cgroup.subtree_control
    echo /sys/fs/cgroup
  fi
}

# make_cgroup DIR: a new cgroup under the cpuset hierarchy $MNT with its parent's
# CPUs and nodes (a v1 cpuset starts empty, and takes no task until they are set;
# on v2 the parent enables cpuset for its children, as a runtime's parent cgroup
# has it: without it DIR has no cpuset files at all).
make_cgroup () {
  local parent
  parent=$(dirname "$1")
  if [ "$MNT" != /sys/fs/cgroup ]; then
    mkdir "$1"
    cat "$parent/cpuset.cpus" > "$1/cpuset.cpus"
    cat "$parent/cpuset.mems" > "$1/cpuset.mems"
  else
    grep -qw cpuset "$parent/cgroup.subtree_control" || echo +cpuset > "$parent/cgroup.subtree_control"
    mkdir "$1"
  fi
}

# cpuset_cpus DIR: the CPUs DIR's tasks may run on: cpuset.cpus.effective on v2
# (cpuset.cpus is empty there until written: the parent's CPUs), else cpuset.cpus.
cpuset_cpus () {
  if [ -f "$1/cpuset.cpus.effective" ]; then cat "$1/cpuset.cpus.effective"; else cat "$1/cpuset.cpus"; fi
}

# sleeper_frame NAME: the frame of a test that runs the hook for a process in a
# cgroup of its own (root and $MNT checked by the caller): D a temporary
# directory, CG the cgroup $MNT/NAME-PID holding SLEEPER (a sleeping process),
# all removed at exit; PASS, FAIL, ok and bad count and print the checks.
sleeper_frame () {
  D=$(mktemp -d "/tmp/$1.XXXXXX")
  CG=$MNT/$1-$$
  SLEEPER=""
  trap 'sleeper_frame_cleanup' EXIT
  PASS=0 FAIL=0
  ok () { PASS=$((PASS + 1)); echo "ok   $*"; }
  bad () { FAIL=$((FAIL + 1)); echo "FAIL $*"; }
  make_cgroup "$CG"
  sleep 600 >/dev/null 2>&1 &
  SLEEPER=$!
  echo "$SLEEPER" >"$CG/cgroup.procs"
}
sleeper_frame_cleanup () {
  [ -z "$SLEEPER" ] || { kill "$SLEEPER" 2>/dev/null; wait "$SLEEPER" 2>/dev/null; }
  rmdir "$CG" 2>/dev/null
  rm -rf "$D"
}
