#!/bin/bash
# The systemd guest's payload runner (cpvm-payload.service): what guest-init.sh's
# stage 2 does after its mounts, for a guest whose PID 1 is systemd.  Results go
# to /dev/ttyS1 (guest-lib.sh's protocol), then CPVM-DONE, then power off.
export PATH=/payload/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root

RESULTS_DEV=/dev/ttyS1
if [ -c "$RESULTS_DEV" ] && stty -F "$RESULTS_DEV" raw -echo 2>/dev/null; then :; else RESULTS_DEV=/dev/console; fi
export CPVM_RESULTS_DEV=$RESULTS_DEV
emit() { printf '%s\n' "$*" >>"$RESULTS_DEV"; printf '%s\n' "$*" >/dev/console; }

# shellcheck disable=SC1091 # written by run-vm.sh
[ -f /cpvm/env ] && . /cpvm/env
export CPVM_CGROUP=v2

emit "CPVM-INFO kernel $(uname -r), systemd $(systemctl --version | awk 'NR == 1 { print $2 }'), PID 1 $(cat /proc/1/comm), $(nproc) cpus online, $(awk '/MemTotal/ { print int($2 / 1024) " MiB" }' /proc/meminfo), tests start at uptime $(cut -d' ' -f1 /proc/uptime) s (systemd: $(systemd-analyze time 2>/dev/null | head -1))"
if [ -f /payload/run-tests.sh ]; then
  cd /payload || :
  /bin/bash /payload/run-tests.sh </dev/null
  rc=$?
  cd /
else
  emit "CPVM-INFO /payload/run-tests.sh is missing"
  rc=127
fi
emit "CPVM-INFO uptime $(cut -d' ' -f1 /proc/uptime) s at the end of the tests"
if [ "$rc" != 0 ] || [ -n "${CPVM_DUMP_SYSLOG:-}" ]; then
  echo "---- guest journal (cachepin, runc, crun, podman, conmon, containerd, systemd) ----" >/dev/console
  journalctl -b --no-pager -o short-monotonic -t cachepin -t runc -t crun -t podman -t conmon -t containerd -t systemd 2>/dev/null |
    tail -n 300 | sed 's/^/journal: /' >/dev/console
fi
emit "CPVM-DONE $rc"
sync
systemctl poweroff --force --force
