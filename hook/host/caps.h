/* cachepin: a process's capabilities given up (the NRI plugin's, as it enters its
 * sandbox).
 *
 * The plugin runs as root for days (a privileged DaemonSet, or started by containerd)
 * and needs no capability past its start-up: it writes no cgroup (the runtime applies
 * its answers), its state directory is root's own (uid 0 opens it without
 * CAP_DAC_OVERRIDE), what it reads of other processes (/proc/PID/stat and cgroup,
 * kill(pid, 0), where EPERM still says "alive") is open to any uid, and under
 * systemd it already runs with none (cachepin-nri.service: CapabilityBoundingSet=).
 * What it needs root's capabilities for (the core-scheduling helper's prctl on a
 * container's process, sched_core_helper.h) is forked before. */
#ifndef CP_CAPS_H
#define CP_CAPS_H

#include <stdbool.h>

#include "error.h"

/* Every capability given up: the bounding set emptied where this process may
 * (with CAP_SETPCAP; without it, left: it bounds only execve), the ambient set
 * cleared, then the effective, permitted and inheritable sets set to none with
 * capset(2) and read back.  Before a seccomp filter that kills capset. */
int cp_caps_drop_all (cp_error_t *err);

/* The same, but CAP (a CAP_* number) stays in the bounding set and, where this
   process has it, in the effective and permitted sets: the core-scheduling helper's
   CAP_SYS_PTRACE, the partition helper's CAP_SYS_ADMIN. */
int cp_caps_keep_only (int cap, cp_error_t *err);

/* Whether CAP is in this process's effective set (false when it cannot tell). */
bool cp_caps_effective (int cap);

#endif
