# Sourced by the CLI tests (tests/cli/*.sh; this directory is not a test itself).
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
# CPUs and nodes (a v1 cpuset starts empty, and takes no task until they are set).
make_cgroup () {
  mkdir "$1"
  if [ "$MNT" != /sys/fs/cgroup ]; then
    cat "$(dirname "$1")/cpuset.cpus" > "$1/cpuset.cpus"
    cat "$(dirname "$1")/cpuset.mems" > "$1/cpuset.mems"
  fi
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
