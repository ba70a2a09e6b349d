/* cachepin: cgroup v2 cpuset partitions, the kernel's files (issue 23).
 *
 * A "remote partition" (Linux 6.7+): CPUs written into cpuset.cpus.exclusive of
 * every ancestor below the root and of the cgroup itself, then `root` into the
 * cgroup's cpuset.cpus.partition, are taken out of every other cgroup's effective
 * CPUs.  This module reads and writes those files and parses what the kernel
 * says; the steps, their order and the ledger are hook/engine/isolate.c's.
 *
 * Files (cgroup v2, non-root cpuset-enabled cgroups): cpuset.cpus.exclusive (rw),
 * cpuset.cpus.exclusive.effective (ro), cpuset.cpus.partition (rw: `member`,
 * `root`, `isolated`; read back `root invalid (REASON)` when the kernel could not
 * make it); the root cgroup has cpuset.cpus.isolated.
 *
 * Safety, as cgroup.h: the mount is opened without following symlinks and must
 * be a cgroup2 filesystem (or is the caller's checked mountfd), each cgroup
 * beneath it without symlinks, `..` or another mount; only the three files
 * above are ever written, never in the root cgroup. */
#ifndef CP_PARTITION_H
#define CP_PARTITION_H

#include <hwloc.h>
#include <stdbool.h>

#include "error.h"

struct cp_cgroup;

#define CP_PARTITION_EXCLUSIVE "cpuset.cpus.exclusive"
#define CP_PARTITION_EXCLUSIVE_EFFECTIVE "cpuset.cpus.exclusive.effective"
#define CP_PARTITION_FILE "cpuset.cpus.partition"
#define CP_PARTITION_CPUS_EFFECTIVE "cpuset.cpus.effective"

/* Where the cgroups are: the hierarchy's mount, and its fd when the caller has
 * one already checked (cp_cgroup's mountfd; -1: opened from MOUNT and checked
 * to be cgroup2, which needs fstatfs: before the sandbox). */
struct cp_partition_tree
{
  const char *mount;
  int mountfd;
};

enum cp_partition_kind
{
  CP_PARTITION_MEMBER = 0,
  CP_PARTITION_ROOT,
  CP_PARTITION_ISOLATED,
};

/* cpuset.cpus.partition as read. */
struct cp_partition_state
{
  enum cp_partition_kind kind;
  bool invalid;
  char reason[256]; /* the text in parentheses of `root invalid (...)`, "" if none */
};

/* Parse the file's text ("root\n", "member", "isolated invalid (Cpu list in
 * cpuset.cpus not exclusive)"); anything else is a runtime error naming it. */
int cp_partition_parse (const char *text, struct cp_partition_state *out, cp_error_t *err);

/* Whether partitions can be made for CG: 1 yes; 0 no and *WHY (the caller frees)
 * says what is missing: "cgroup v1", "kernel has no cpuset.cpus.exclusive (Linux
 * 6.7+)"; -1 when it could not tell (ERR).  Judged by the first of CG and its
 * ancestors below the root that has cpuset files (the controller may be enabled
 * down to CG only when it is placed), else by the root's cpuset.cpus.isolated. */
int cp_partition_supported (const struct cp_cgroup *cg, char **why, cp_error_t *err);

/* The same for the host's cpuset hierarchy as a whole, judged at its root (where
 * `cachepin plan` and the NRI plugin have no cgroup of their own: the root cgroup
 * has cpuset.cpus.isolated from Linux 6.7, with cpuset.cpus.exclusive below it);
 * when supported and MOUNT is not NULL, the hierarchy's mount in *MOUNT (the caller
 * frees). */
int cp_partition_supported_host (char **mount, char **why, cp_error_t *err);

/* The cpulist file FILE (one of the names above) of cgroup PATH in T. */
int cp_partition_read_cpus (const struct cp_partition_tree *t, const char *path, const char *file, hwloc_bitmap_t out,
                            cp_error_t *err);
/* cpuset.cpus.exclusive of PATH (never "/") set to CPUS (empty: cleared). */
int cp_partition_write_exclusive (const struct cp_partition_tree *t, const char *path, hwloc_const_bitmap_t cpus,
                                  cp_error_t *err);
int cp_partition_read_state (const struct cp_partition_tree *t, const char *path, struct cp_partition_state *out,
                             cp_error_t *err);
/* cpuset.cpus.partition of PATH (never "/"): KIND member or root. */
int cp_partition_write_state (const struct cp_partition_tree *t, const char *path, enum cp_partition_kind kind,
                              cp_error_t *err);

/* FILE of cgroup PATH in T read whole into *TEXT (the caller frees), or VALUE
 * written into it, as the functions above do (the partition helper's requests,
 * partition_helper.h: it judges what may be written first). */
int cp_partition_read_file (const struct cp_partition_tree *t, const char *path, const char *file, char **text,
                            cp_error_t *err);
int cp_partition_write_file (const struct cp_partition_tree *t, const char *path, const char *file, const char *value,
                             cp_error_t *err);

/* The cgroup2 filesystem at MOUNT opened (a runtime error when it is not one). */
int cp_partition_open_mount (const char *mount, cp_error_t *err);

/* The files' reads and writes, which the unit tests replace with a cgroup tree of
 * their own (NULL: the kernel's).  TEXT is the caller's to free. */
struct cp_partition_io
{
  int (*read) (const struct cp_partition_tree *t, const char *path, const char *file, char **text, cp_error_t *err);
  int (*write) (const struct cp_partition_tree *t, const char *path, const char *file, const char *value,
                cp_error_t *err);
};
void cp_partition_set_io (const struct cp_partition_io *io);

#endif
