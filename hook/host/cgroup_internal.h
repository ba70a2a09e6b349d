/* cachepin: the cgroup module's internals, shared by its files (cgroup.c,
 * cgroup_open.c) and exported for the unit tests (tests/unit/test_cgroup.c,
 * test_sandbox.c).  The hook itself uses hook/host/cgroup.h only. */
#ifndef CP_CGROUP_INTERNAL_H
#define CP_CGROUP_INTERNAL_H

#include <stdbool.h>

#include "cpulist.h"
#include "cgroup.h"
#include "cgroup_parse.h"

/* Bound on a cgroup file we read (a cpulist and its newline); the kernel texts'
 * bounds are in cgroup_parse.h. */
#define CP_CGROUP_FILE_MAX (CP_CPULIST_MAX_LEN + 2)

enum cp_cgroup_open_flags
{
  CP_CGROUP_OPEN_NO_OPENAT2 = 1 << 0, /* take the openat() walk even where openat2 exists */
  CP_CGROUP_OPEN_SAME_MOUNT = 1 << 1, /* refuse to cross into another mount (RESOLVE_NO_XDEV) */
  /* REL is the user's (`cachepin apply --cgroup`): a component that is missing, not
     a directory, a symlink or another mount is an input error (CP_ERR_INPUT, errno
     kept), not a runtime one. */
  CP_CGROUP_OPEN_USER_PATH = 1 << 2,
};

/* Open the directory REL beneath DIRFD (REL absolute: from "/", DIRFD unused) with
 * O_PATH|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC and no symlink, "..", "." or empty
 * component anywhere.  DIRNAME names DIRFD in messages.  Returns the fd or -1. */
int cp_cgroup_open_dir (int dirfd, const char *dirname, const char *rel, unsigned flags, cp_error_t *err);

/* Open W: the mount point (no symlinks on the way, device and filesystem type as W
 * says), then W->path beneath it. */
int cp_cgroup_open_where (const struct cp_cgroup_where *w, struct cp_cgroup **out, cp_error_t *err);

/* The same, W->path opened with FLAGS (CP_CGROUP_OPEN_USER_PATH) besides
 * CP_CGROUP_OPEN_SAME_MOUNT. */
int cp_cgroup_open_where_flags (const struct cp_cgroup_where *w, unsigned flags, struct cp_cgroup **out,
                                cp_error_t *err);

/* cp_cgroup_from_pid() for any controller: lets the tests use a real v2 hierarchy on
 * a host where cpuset is on v1. */
int cp_cgroup_from_pid_for (pid_t pid, const char *controller, struct cp_cgroup **out, cp_error_t *err);

/* cp_cgroup_enable_cpuset() for any controller (v1: nothing to do). */
int cp_cgroup_enable_controller (const struct cp_cgroup *cg, const char *controller, cp_error_t *err);

/* The open cgroup file FD (NAME names it in messages) read and parsed as a
 * cpulist, as every cgroup cpulist file is. */
int cp_cgroup_read_cpulist_fd (int fd, const char *name, hwloc_bitmap_t out, cp_error_t *err);

/* The CPUs the cgroup DIRFD (of cgroup VERSION; DIRNAME names it in messages)
 * runs on: its cpuset.cpus, or on v2 when that is empty (inherited), its
 * cpuset.cpus.effective. */
int cp_cgroup_read_live_cpus (int dirfd, int version, const char *dirname, hwloc_bitmap_t cpus, cp_error_t *err);

/* The tests' shorthand: cp_cgroup_dir_state() says it exists. */
static inline bool
cp_cgroup_dir_exists (const char *mount, const char *path)
{
  return cp_cgroup_dir_state (mount, path) == 1;
}

#endif
