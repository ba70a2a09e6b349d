#!/bin/sh
# PID 1 of the test VM (busybox sh), installed as /init of the initramfs by run-vm.sh.
#
# Stage 1 runs in the initramfs's rootfs, which cannot be pivot_root'ed away from,
# so runc and crun could not start containers there: it copies the whole tree
# into a fresh tmpfs and switch_roots into it. Stage 2 mounts the usual API
# filesystems and the cgroup layout named by cpvm.cgroup= on the kernel command
# line, runs /payload/run-tests.sh, reports CPVM-DONE <rc> and powers off.
#
# Result lines (see guest-lib.sh) go to /dev/ttyS1, which only they use; the
# console (kernel messages and test output) is /dev/ttyS0.

export PATH=/payload/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root

if [ "$1" != stage2 ]; then
  mount -t proc proc /proc
  mkdir -p /newroot
  mount -t tmpfs -o mode=0755 cpvm-root /newroot
  for e in /* /.[!.]*; do
    case $e in /proc|/sys|/dev|/newroot|'/.[!.]*') continue ;; esac
    cp -a "$e" /newroot/
  done
  mkdir -p /newroot/proc /newroot/sys /newroot/dev
  umount /proc
  # shellcheck disable=SC2093 # the lines after it run only if switch_root fails
  exec switch_root /newroot /init stage2
  echo "CPVM-INIT: switch_root failed" >/dev/console
  poweroff -f
fi

mount -t proc proc /proc
mount -t sysfs sysfs /sys
# debugfs, as a distribution mounts it: the scheduler's knobs (sched/llc_balancing/)
# live there. A kernel without CONFIG_DEBUG_FS just has no such directory.
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm /dev/mqueue
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts
ln -sf pts/ptmx /dev/ptmx 2>/dev/null
# As udev leaves them: bash's process substitution (<(...)) opens /dev/fd/N.
ln -sfn /proc/self/fd /dev/fd
ln -sfn /proc/self/fd/0 /dev/stdin
ln -sfn /proc/self/fd/1 /dev/stdout
ln -sfn /proc/self/fd/2 /dev/stderr
mount -t tmpfs -o mode=1777 shm /dev/shm
mount -t mqueue mqueue /dev/mqueue
mount -t tmpfs -o mode=0755 run /run
mount -t tmpfs -o mode=1777 tmp /tmp
hostname cpvm
ip link set lo up 2>/dev/null
# A syslog for hooks (their stdout and stderr are often discarded by the runtime).
mkdir -p /run/cpvm
syslogd -O /run/cpvm/syslog

RESULTS_DEV=/dev/ttyS1
if [ -c "$RESULTS_DEV" ] && stty -F "$RESULTS_DEV" raw -echo 2>/dev/null; then :; else RESULTS_DEV=/dev/console; fi
export CPVM_RESULTS_DEV=$RESULTS_DEV
emit() { printf '%s\n' "$*" >>"$RESULTS_DEV"; printf '%s\n' "$*" >/dev/console; }

cgroup=v2
for arg in $(cat /proc/cmdline); do
  case $arg in cpvm.cgroup=*) cgroup=${arg#cpvm.cgroup=} ;; esac
done

# cgroup v2: the unified hierarchy at /sys/fs/cgroup with every controller
# enabled for the root's children, as systemd leaves a host.
mount_v2() {
  mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup || return 1
  for c in $(cat /sys/fs/cgroup/cgroup.controllers); do
    echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null ||
      emit "CPVM-INFO cannot enable controller $c at the root"
  done
}

# cgroup v1: the classic layout, a tmpfs at /sys/fs/cgroup with one hierarchy per
# controller (cpu,cpuacct and net_cls,net_prio co-mounted, with symlinks), as
# systemd's legacy mode sets up a host. Every controller the kernel has is
# mounted; cpuset is required.
mount_v1() {
  mount -t tmpfs -o mode=0755 cgroup /sys/fs/cgroup || return 1
  ctrls=$(awk 'NR > 1 && $4 == 1 { print $1 }' /proc/cgroups)
  for c in $ctrls; do
    case $c in
      cpu|cpuacct) h=cpu,cpuacct ;;
      net_cls|net_prio) h=net_cls,net_prio ;;
      *) h=$c ;;
    esac
    [ -d "/sys/fs/cgroup/$h" ] && continue
    mkdir -p "/sys/fs/cgroup/$h"
    if ! mount -t cgroup -o "$h" cgroup "/sys/fs/cgroup/$h" 2>/dev/null; then
      rmdir "/sys/fs/cgroup/$h"
      emit "CPVM-INFO cgroup v1 controller $h cannot be mounted"
      continue
    fi
    case $h in *,*)
      for part in $(echo "$h" | tr , ' '); do ln -s "$h" "/sys/fs/cgroup/$part"; done ;;
    esac
  done
  [ -f /sys/fs/cgroup/cpuset/cpuset.cpus ]
}

case $cgroup in
  v2) mount_v2 ;;
  v1) mount_v1 ;;
  *) false ;;
esac
cg_rc=$?

emit "CPVM-INFO kernel $(uname -r), cgroup $cgroup, $(nproc) cpus online ($(cat /sys/devices/system/cpu/online)), $(awk '/MemTotal/ { print int($2 / 1024) " MiB" }' /proc/meminfo), tests start at uptime $(cut -d' ' -f1 /proc/uptime) s"
if [ $cg_rc != 0 ]; then
  emit "CPVM-RESULT cpvm.cgroup-setup FAIL cannot set up the cgroup $cgroup layout"
  emit "CPVM-DONE 1"
  sync; poweroff -f
fi

# Go programs (runc) with one P: under single-threaded TCG every vCPU takes turns
# on one host core, and a Go runtime with a P per vCPU spends those turns on its
# idle Ps' spinning and GC workers.  It changes nothing the tests look at (a
# hook's environment is its spec's, a container's its config.json's); --env
# GOMAXPROCS=N overrides it.
export GOMAXPROCS=1
# shellcheck disable=SC1091 # written by run-vm.sh
[ -f /cpvm/env ] && . /cpvm/env
export CPVM_CGROUP="$cgroup"

if [ -f /payload/run-tests.sh ]; then
  cd /payload || :   # PID 1 must never exit
  /bin/bash /payload/run-tests.sh </dev/null
  rc=$?
  cd /
else
  emit "CPVM-INFO /payload/run-tests.sh is missing"
  rc=127
fi
emit "CPVM-INFO uptime $(cut -d' ' -f1 /proc/uptime) s at the end of the tests"
if [ "$rc" != 0 ] || [ -n "${CPVM_DUMP_SYSLOG:-}" ]; then
  echo "---- guest syslog (/run/cpvm/syslog) ----" >/dev/console
  sed 's/^/syslog: /' /run/cpvm/syslog >/dev/console 2>/dev/null
fi
emit "CPVM-DONE $rc"
sync
poweroff -f
