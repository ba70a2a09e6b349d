#!/usr/bin/env bash
# Destroy the named cgroup v1 hierarchies that stress runs before the fix of
# st_cgroup_unmount() (tests/stress/stresslib.c) left behind: each one stays in
# every process's /proc/<pid>/cgroup until the next boot, and every hook run
# reads that file.  A hierarchy is destroyed at the umount that finds it without
# children: this mounts each leaked one by its name on a temporary directory and
# unmounts it, in a mount namespace of its own.  Root.
#   bash tests/stress/reap_hierarchies.sh [NAME_PREFIX]    (default cachepin-stress-)
# A hierarchy whose creator (the pid in cachepin-stress-<pid>-<n>) is alive is a
# running test's, and is left alone.  The cgroups a dead test left in its own are
# removed first (a cgroup with a task in it stays, and so does its hierarchy).
# The removed cgroups are released asynchronously: a second pass, a second later,
# mounts and unmounts what is still listed.
set -u
PREFIX=${1:-cachepin-stress-}
[ "$(id -u)" = 0 ] || { echo "reap_hierarchies: needs root" >&2; exit 1; }
listed () { grep -o ":name=${PREFIX}[^:]*:" /proc/self/cgroup | sed 's/^:name=//; s/:$//' | sort -u; }
before=$(listed | wc -l)
for pass in 1 2; do
listed > "${TMPDIR:-/tmp}/reap.$$"
unshare -m bash -s "${TMPDIR:-/tmp}/reap.$$" <<'INNER'
mount --make-rprivate /
d=$(mktemp -d)
while read -r name; do
  pid=${name#cachepin-stress-}; pid=${pid%%-*}
  if [[ $name == cachepin-stress-* && $pid =~ ^[0-9]+$ ]] && [ -d "/proc/$pid" ]; then
    echo "keep $name: process $pid is alive"; continue
  fi
  mount -t cgroup -o "none,name=$name" none "$d" || { echo "keep $name: cannot mount it"; continue; }
  find "$d" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null
  [ -z "$(find "$d" -mindepth 1 -type d -print -quit)" ] || echo "keep $name: a cgroup in it has tasks"
  umount "$d"
done < "$1"
rmdir "$d"
INNER
rm -f "${TMPDIR:-/tmp}/reap.$$"
sleep 1 # the release of removed cgroups and the destruction are asynchronous
done
echo "reap_hierarchies: name=${PREFIX}*: $before hierarchies before, $(listed | wc -l) after"
