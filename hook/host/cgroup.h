/* cachepin: the container's cpuset cgroup: find it, read what its parent allows,
 * write cpuset.cpus and cpuset.mems into it.
 *
 * The cpuset controller lives on exactly one hierarchy, and the kernel says which
 * in /proc/<pid>/cgroup: a v1 line listing "cpuset" (its own hierarchy, or co-mounted
 * as "cpu,cpuset"), else the unified "0::" line.  On a hybrid host (v1 hierarchies
 * plus a controller-less cgroup2 at /sys/fs/cgroup/unified) that is the v1 one.
 *
 * Paths.  `mount` is where that hierarchy is mounted in our mount namespace and
 * `path` is the cgroup below the mount point, starting with "/": mount + path is
 * the directory.  When the mount shows the whole hierarchy (mountinfo root "/", the
 * usual case) `path` is also the cgroup's name in the hierarchy, the one
 * /proc/<pid>/cgroup prints; for a mount of a subtree it is the part below it.
 * A cp_cgroup never refers to the mount's root: the root cgroup is not a container's.
 *
 * Safety.  Every directory is opened without following symlinks (openat2 with
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV, or,
 * where the kernel lacks openat2, one openat(O_PATH|O_DIRECTORY|O_NOFOLLOW) per
 * component with a same-filesystem check), "..", "." and empty components are
 * refused, the mount point must be the cgroup filesystem mountinfo lists there, and
 * every read is bounded.  The only files ever written are the cgroup's own
 * cpuset.cpus and cpuset.mems and, on v2 only, the ancestors' cgroup.subtree_control
 * (to enable the cpuset controller down to the cgroup).
 *
 * The module's files: cgroup_parse.c (the kernel's texts, no file access),
 * cgroup_open.c (opening directories), cgroup.c (finding the cgroup, reading and
 * writing its files); cgroup_internal.h has what the unit tests use beyond this. */
#ifndef CP_CGROUP_H
#define CP_CGROUP_H

#include <hwloc.h>
#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

struct cp_cgroup
{
  int version; /* 1: cpuset v1 hierarchy, 2: unified */
  char *mount; /* mount point of the hierarchy holding cpuset, e.g. /sys/fs/cgroup or /sys/fs/cgroup/cpuset */
  char *path;  /* the cgroup below the mount point, starting with "/", never "/" itself */
  int dirfd;   /* O_PATH|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC fd of the cgroup directory */
  int mountfd; /* the same for the mount point: the parent and ancestors are opened beneath it */
};

/* The cpuset cgroup of PID, from /proc/<pid>/cgroup and /proc/self/mountinfo.
 * Refused: a cgroup that was removed ("(deleted)"), the root cgroup (also what a
 * process that has already exited shows on v1), a path outside our cgroup namespace. */
int cp_cgroup_from_pid (pid_t pid, struct cp_cgroup **out, cp_error_t *err);

/* For `cachepin apply --cgroup PATH`: an absolute path under the mount of the
 * hierarchy holding cpuset (/sys/fs/cgroup/cpuset/x on v1, /sys/fs/cgroup/x on v2),
 * or a path relative to that hierarchy's root ("/batch/job1" or "batch/job1"; an
 * absolute path that is not under the cpuset mount nor under any other mount than
 * "/" is taken as relative).  Refused (CP_ERR_INPUT): "..", "." and empty components
 * (so also a trailing "/"), the root, a path under another mount (another cgroup
 * hierarchy, /sys/fs/cgroup itself on v1), non-directories and symlinks. */
int cp_cgroup_from_path (const char *path, struct cp_cgroup **out, cp_error_t *err);

/* What the parent allows: v2 cpuset.cpus.effective and cpuset.mems.effective of the
 * parent; v1 the parent's cpuset.effective_cpus and cpuset.effective_mems, or
 * cpuset.cpus and cpuset.mems where those do not exist.  CPUS or MEMS may be NULL. */
int cp_cgroup_parent_limits (const struct cp_cgroup *cg, hwloc_bitmap_t cpus, hwloc_bitmap_t mems, cp_error_t *err);

/* The cgroup's own current cpuset: v1 cpuset.cpus and cpuset.mems (what
 * cp_cgroup_write_cpuset() writes), v2 cpuset.cpus.effective and cpuset.mems.effective.
 * CPUS or MEMS may be NULL. */
int cp_cgroup_read_cpuset (const struct cp_cgroup *cg, hwloc_bitmap_t cpus, hwloc_bitmap_t mems, cp_error_t *err);

/* v2: write "+cpuset" into cgroup.subtree_control of each ancestor, from the mount's
 * root down to the parent, that does not list cpuset yet; fails when the root's
 * cgroup.controllers has no cpuset.  v1: nothing to do. */
int cp_cgroup_enable_cpuset (const struct cp_cgroup *cg, cp_error_t *err);

/* Write cpuset.cpus, then cpuset.mems (MEMS NULL: leave it).  First checks that CPUS
 * and MEMS are non-empty and within cp_cgroup_parent_limits(), and writes nothing
 * when they are not (CP_ERR_INPUT).  Each write is one write(2) of the whole value,
 * so running it again (a hook killed at its timeout and retried) is harmless. */
int cp_cgroup_write_cpuset (const struct cp_cgroup *cg, hwloc_const_bitmap_t cpus, hwloc_const_bitmap_t mems,
                            cp_error_t *err);

/* For the ledger's reconcile: is MOUNT + PATH still a cgroup directory?  Opened the
 * same careful way as above.  1 it exists, 0 it is gone (ENOENT or ENOTDIR on the
 * way, or an invalid PATH), -1 could not tell (mount not a cgroup filesystem,
 * EACCES, EMFILE, ...): a reconcile keeps an entry on -1. */
int cp_cgroup_dir_state (const char *mount, const char *path);

/* The same for many cgroups (reconcile): each mount point is opened and checked
 * once, in M, and kept open until cp_cgroup_mounts_free(); M NULL is
 * cp_cgroup_dir_state(). */
struct cp_cgroup_mounts;
struct cp_cgroup_mounts *cp_cgroup_mounts_new (void);
void cp_cgroup_mounts_free (struct cp_cgroup_mounts *m);
int cp_cgroup_dir_state_in (struct cp_cgroup_mounts *m, const char *mount, const char *path);
/* cp_cgroup_dir_state_in(), and when the directory is there (1), the CPUs it
 * runs on in CPUS: its cpuset.cpus (v2: cpuset.cpus.effective when that is empty,
 * inherited); empty when they cannot be read (no cpuset controller there).  INO
 * (may be NULL): the directory's inode, 0 when it cannot be read (see
 * cp_cgroup_ino()). */
int cp_cgroup_cpus_in (struct cp_cgroup_mounts *m, const char *mount, const char *path, hwloc_bitmap_t cpus,
                       unsigned long long *ino);

/* The inode of CG's directory (on v2 its cgroup id): a cgroup removed and made
 * again under the same name (a service restarted) has another one. */
int cp_cgroup_ino (const struct cp_cgroup *cg, unsigned long long *ino, cp_error_t *err);

/* Is the cgroup PATH WANT or below it (both below the hierarchy's mount, as a
 * runtime joins an absolute cgroupsPath to it)?  crun may put the process in a
 * child of the cgroup it was given. */
bool cp_cgroup_path_within (const char *path, const char *want);

/* Where cp_cgroup_from_path() looks for PATH, without opening it (it may be gone):
 * the hierarchy's mount point in *MOUNT and the cgroup below it in *CGROUP (the
 * caller frees both).  The same refusals for what PATH is. */
int cp_cgroup_locate_path (const char *path, char **mount, char **cgroup, cp_error_t *err);

/* This process's /proc/self/cgroup and mountinfo read once, for many
 * cp_cgroup_locate_path_in() in a row (a batch of placements: read per path, the
 * two files are most of the work); M NULL there: read now, as
 * cp_cgroup_locate_path(). */
struct cp_cgroup_snapshot
{
  char *self;
  char *mountinfo;
};
int cp_cgroup_snapshot_read (struct cp_cgroup_snapshot *m, cp_error_t *err);
void cp_cgroup_snapshot_clear (struct cp_cgroup_snapshot *m);
int cp_cgroup_locate_path_in (const struct cp_cgroup_snapshot *m, const char *path, char **mount, char **cgroup,
                              cp_error_t *err);

void cp_cgroup_free (struct cp_cgroup *cg);

#define cleanup_cgroup __attribute__ ((cleanup (cp_cgroup_freep)))
void cp_cgroup_freep (struct cp_cgroup **cg);

/* A process in CG's cgroup.procs that is neither CONTAINER nor one of its
 * descendants, in *FOREIGN (0: none).  A cgroup the runtime shares with other
 * processes (runc joining a non-empty cgroup, podman --cgroups=disabled) is not
 * the container's to pin. */
int cp_cgroup_foreign_process (const struct cp_cgroup *cg, pid_t container, pid_t *foreign, cp_error_t *err);

#endif
