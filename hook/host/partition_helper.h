/* cachepin: cgroup v2 partitions written by a helper process, for a sandboxed
 * process that lives long (the NRI plugin).
 *
 * The plugin's sandbox (sandbox.h, CP_SANDBOX_PLUGIN) writes no cgroup file: the
 * runtime applies its answers.  A partition (partition.h) must be written by
 * cachepin itself, once the container's cgroup exists (StartContainer), and a
 * Landlock rule opening the whole cgroup mount to a process that parses what pods
 * send would let one bug rewrite any cgroup's cpuset, memory limit or process list.
 * So the writes go through a helper forked before the sandbox: it keeps no
 * descriptor but its end of a socket pair and the cgroup2 mount, gives up every
 * capability but CAP_SYS_ADMIN (the cgroup files are root's own, uid 0 writes them
 * without one, but the kernel asks it of whoever makes a remote partition:
 * remote_partition_enable(), else `root invalid (Enable partition not permitted)`),
 * enters the hook's sandbox for that mount (Landlock: read and write beneath it
 * only; the hook's seccomp allowlist, which kills mount and the rest of what the
 * capability would open; no_new_privs) and answers reads and writes of the
 * partition files alone, by partition.c's code.  What it writes is bounded
 * by one rule (cp_partition_helper_judge()):
 *
 *   it takes CPUs from other cgroups only for the cgroup it was last shown a
 *   process in (cp_partition_helper_grant(): the pid is in that cgroup's
 *   cgroup.procs, read by the helper itself), and that cgroup's ancestors;
 *   giving CPUs back (a cpuset.cpus.exclusive shrunk, `member`) it does anywhere
 *   below the root, which is what a release and the repair of a run cut short
 *   need when the container is gone.
 *
 * It dies with its parent (PR_SET_PDEATHSIG) or when the socket closes. */
#ifndef CP_PARTITION_HELPER_H
#define CP_PARTITION_HELPER_H

#include <hwloc.h>
#include <sys/types.h>

#include "error.h"

struct cp_partition_helper
{
  int fd;      /* -1: not started */
  pid_t pid;   /* the helper process */
  char *mount; /* the cgroup2 mount it serves */
};

#define CP_PARTITION_HELPER_INIT { .fd = -1, .pid = 0, .mount = NULL }

/* Fork the helper for the cgroup2 filesystem at MOUNT (opened here, checked to be
 * one).  A runtime error when it is not, or the socket pair or fork fails; a
 * helper whose sandbox does not load exits, and its first answer says so (EPIPE). */
int cp_partition_helper_start (struct cp_partition_helper *h, const char *mount, cp_error_t *err);

/* Show the helper PID, a process of cgroup PATH (below the mount): from now until
 * the next grant PATH and its ancestors may take CPUs.  Refused (-1) when PID is
 * not in PATH's cgroup.procs. */
int cp_partition_helper_grant (const struct cp_partition_helper *h, pid_t pid, const char *path, cp_error_t *err);

/* partition.c's reads and writes go through H from now on (NULL: the kernel's
 * again, in this process).  Only trees on H's mount are served. */
void cp_partition_helper_use (const struct cp_partition_helper *h);

/* Close the socket (the helper exits) and reap it where that is allowed. */
void cp_partition_helper_stop (struct cp_partition_helper *h);

/* The rule above, for a write of VALUE into FILE of cgroup PATH, given the cgroup
 * GRANTED (NULL: none) and, for cpuset.cpus.exclusive, PATH's CURRENT one.  0:
 * allowed; -1 with *ERR naming what was refused.  PATH must be canonical ("/a/b":
 * no empty, `.` or `..` component, no trailing slash) and not the root. */
int cp_partition_helper_judge (const char *granted, const char *path, const char *file, const char *value,
                               hwloc_const_bitmap_t current, cp_error_t *err);

#endif
