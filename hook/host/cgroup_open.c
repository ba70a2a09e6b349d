/* cachepin: opening cgroup directories without following anything (see
 * cgroup.h, "Safety", and cgroup_internal.h). */
#define _GNU_SOURCE
#include "cgroup_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util.h"

#ifndef SYS_openat2
#define SYS_openat2 437 /* the same number on every architecture */
#endif

#define OPEN_DIR_FLAGS (O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* Hand-off of an fd held by a cleanup_close variable. */
static int
steal_fd (int *fd)
{
  int r = *fd;
  *fd = -1;
  return r;
}

/* Opening TARGET failed with errno E.  With CP_CGROUP_OPEN_USER_PATH, what says
 * the user named something that is not a cgroup directory is the user's error. */
static int
open_dir_error (int e, const char *target, unsigned flags, cp_error_t *err)
{
  bool not_a_cgroup = e == ENOENT || e == ENOTDIR || e == ELOOP || e == EXDEV;
  enum cp_error_kind kind = (flags & CP_CGROUP_OPEN_USER_PATH) && not_a_cgroup ? CP_ERR_INPUT : CP_ERR_RUNTIME;
  if (e == ELOOP || e == ENOTDIR)
    return cp_error_set (err, kind, e,
                         "open %s (not a directory, or a symlink on the way: symlinks are not followed)", target);
  if (e == EXDEV)
    return cp_error_set (err, kind, e, "open %s (it leaves the cgroup filesystem)", target);
  return cp_error_set (err, kind, e, "open %s", target);
}

/* openat2 beneath DIRFD (or from "/"): the fd, or -1 with errno set. */
static int
open_dir_openat2 (int dirfd, const char *rel, unsigned flags)
{
  bool absolute = rel[0] == '/';
  const char *comps = absolute ? rel + 1 : rel;
  struct open_how how = {
    .flags = OPEN_DIR_FLAGS,
    .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
  };
  if (!absolute)
    how.resolve |= RESOLVE_BENEATH;
  if (flags & CP_CGROUP_OPEN_SAME_MOUNT)
    how.resolve |= RESOLVE_NO_XDEV;
  const char *arg = *comps ? rel : absolute ? "/" : ".";
  return (int) syscall (SYS_openat2, absolute ? AT_FDCWD : dirfd, arg, &how, sizeof how);
}

/* The same, one openat(O_NOFOLLOW) per component, for kernels without openat2. */
static int
open_dir_walk (int dirfd, const char *base, const char *rel, const char *target, unsigned flags, cp_error_t *err)
{
  bool absolute = rel[0] == '/';
  cleanup_close int cur = absolute ? open ("/", OPEN_DIR_FLAGS) : fcntl (dirfd, F_DUPFD_CLOEXEC, 3);
  if (cur < 0)
    return cp_fail_errno (err, errno, "open %s", absolute ? "/" : base);
  struct stat st0;
  if ((flags & CP_CGROUP_OPEN_SAME_MOUNT) && fstat (cur, &st0) < 0)
    return cp_fail_errno (err, errno, "stat %s", absolute ? "/" : base);
  const char *p = absolute ? rel + 1 : rel;
  while (*p)
    {
      const char *slash = strchr (p, '/');
      size_t n = slash ? (size_t) (slash - p) : strlen (p);
      char name[NAME_MAX + 1];
      memcpy (name, p, n); /* n <= NAME_MAX: cp_cgroup_path_problem() checked */
      name[n] = '\0';
      int next = openat (cur, name, OPEN_DIR_FLAGS);
      if (next < 0)
        return open_dir_error (errno, target, flags, err);
      close (cur);
      cur = next;
      if (flags & CP_CGROUP_OPEN_SAME_MOUNT)
        {
          struct stat st;
          if (fstat (cur, &st) < 0)
            return cp_fail_errno (err, errno, "stat %s", target);
          if (st.st_dev != st0.st_dev)
            return open_dir_error (EXDEV, target, flags, err);
        }
      p = slash ? slash + 1 : p + n;
    }
  return steal_fd (&cur);
}

int
cp_cgroup_open_dir (int dirfd, const char *dirname, const char *rel, unsigned flags, cp_error_t *err)
{
  bool absolute = rel[0] == '/';
  const char *base = dirname ? dirname : ".";
  cleanup_free char *target = NULL;
  if (absolute || *rel == '\0')
    target = cp_xstrdup (absolute ? rel : base);
  else
    target = cp_xasprintf ("%s/%s", strcmp (base, "/") == 0 ? "" : base, rel);
  const char *problem = cp_cgroup_path_problem (absolute ? rel + 1 : rel);
  if (problem && (flags & CP_CGROUP_OPEN_USER_PATH))
    return cp_fail_input (err, "`%s`: %s", target, problem);
  if (problem)
    return cp_fail_runtime (err, "`%s`: %s", target, problem);

  if (!(flags & CP_CGROUP_OPEN_NO_OPENAT2))
    {
      int fd = open_dir_openat2 (dirfd, rel, flags);
      if (fd >= 0)
        return fd;
      /* ENOSYS: a kernel before 5.6.  EPERM: a seccomp filter that does not know
         openat2 (O_PATH opens have no other reason to answer EPERM).  The walk
         is as strict, one component at a time. */
      if (errno != ENOSYS && errno != EPERM)
        return open_dir_error (errno, target, flags, err);
    }
  return open_dir_walk (dirfd, base, rel, target, flags, err);
}

static bool
is_cgroup_magic (int version, long type)
{
  if (version == 1)
    return type == (long) CGROUP_SUPER_MAGIC;
  return type == (long) CGROUP2_SUPER_MAGIC;
}

int
cp_cgroup_open_where_flags (const struct cp_cgroup_where *w, unsigned flags, struct cp_cgroup **out,
                            cp_error_t *err)
{
  if (w->version != 1 && w->version != 2)
    return cp_fail_runtime (err, "cgroup version %d is neither 1 nor 2", w->version);
  if (w->mount == NULL || w->mount[0] != '/' || strlen (w->mount) > CP_CGROUP_MAX_PATH)
    return cp_fail_runtime (err, "unusable mount point `%s`", w->mount ? w->mount : "");
  if (w->path == NULL || w->path[0] != '/' || strlen (w->path) > CP_CGROUP_MAX_PATH)
    return cp_fail_runtime (err, "unusable cgroup path `%s`", w->path ? w->path : "");
  if (strcmp (w->path, "/") == 0)
    return cp_fail_runtime (err, "%s is the root of the cgroup mount, not a container's cgroup", w->mount);

  cleanup_close int mountfd = cp_cgroup_open_dir (AT_FDCWD, NULL, w->mount, 0, err);
  if (mountfd < 0)
    return -1;
  struct stat st;
  struct statfs sfs;
  if (fstat (mountfd, &st) < 0)
    return cp_fail_errno (err, errno, "stat %s", w->mount);
  if (fstatfs (mountfd, &sfs) < 0)
    return cp_fail_errno (err, errno, "statfs %s", w->mount);
  if (st.st_dev != w->dev || !is_cgroup_magic (w->version, (long) sfs.f_type))
    return cp_fail_runtime (err,
                            "%s is not the cgroup v%d filesystem /proc/self/mountinfo lists there "
                            "(device %u:%u, expected %u:%u; mounted over?)",
                            w->mount, w->version, major (st.st_dev), minor (st.st_dev), major (w->dev),
                            minor (w->dev));
  cleanup_close int dirfd
      = cp_cgroup_open_dir (mountfd, w->mount, w->path + 1, CP_CGROUP_OPEN_SAME_MOUNT | flags, err);
  if (dirfd < 0)
    return -1;

  struct cp_cgroup *cg = cp_xmalloc0 (sizeof *cg);
  cg->version = w->version;
  cg->mount = cp_xstrdup (w->mount);
  cg->path = cp_xstrdup (w->path);
  cg->dirfd = steal_fd (&dirfd);
  cg->mountfd = steal_fd (&mountfd);
  *out = cg;
  return 0;
}

int
cp_cgroup_open_where (const struct cp_cgroup_where *w, struct cp_cgroup **out, cp_error_t *err)
{
  return cp_cgroup_open_where_flags (w, 0, out, err);
}

/* ---- existence, freeing --------------------------------------------------------------- */

static int
state_of (cp_error_t e)
{
  int n = cp_error_errno (e);
  return n == ENOENT || n == ENOTDIR ? 0 : -1;
}

/* Reconcile asks about every entry of the ledger, nearly all under one or two
   mount points: each is opened (and its filesystem checked) once, and every entry
   resolved beneath that fd with the same flags as before (cp_cgroup_open_dir():
   no symlinks, no "..", no other mount).  A bounded number of them, so that a
   ledger naming thousands of mount points costs what it did before, not a search
   per entry through all of them. */
#define MOUNTS_MAX 16

struct cp_cgroup_mounts
{
  struct
  {
    char *mount;
    int fd;      /* the mount point, or -1 ... */
    int state;   /* ... and then what every cgroup under it is: 0 gone, -1 could not tell */
    int version; /* with fd: 1 or 2 */
  } slot[MOUNTS_MAX];
  unsigned n;
};

struct cp_cgroup_mounts *
cp_cgroup_mounts_new (void)
{
  return cp_xmalloc0 (sizeof (struct cp_cgroup_mounts));
}

void
cp_cgroup_mounts_free (struct cp_cgroup_mounts *m)
{
  if (m == NULL)
    return;
  for (unsigned i = 0; i < m->n; i++)
    {
      free (m->slot[i].mount);
      if (m->slot[i].fd >= 0)
        close (m->slot[i].fd);
    }
  free (m);
}

/* MOUNT opened from "/" without following symlinks, on a cgroup filesystem: the fd,
   or -1 with *STATE saying what that means for the cgroups under it. */
static int
open_mount (const char *mount, int *state, int *version)
{
  cleanup_error cp_error_t err = NULL;
  cleanup_close int mountfd = cp_cgroup_open_dir (AT_FDCWD, NULL, mount, 0, &err);
  if (mountfd < 0)
    {
      *state = state_of (err);
      return -1;
    }
  struct statfs sfs;
  if (fstatfs (mountfd, &sfs) < 0
      || !(is_cgroup_magic (1, (long) sfs.f_type) || is_cgroup_magic (2, (long) sfs.f_type)))
    {
      *state = -1;
      return -1;
    }
  *state = 1;
  *version = is_cgroup_magic (2, (long) sfs.f_type) ? 2 : 1;
  return steal_fd (&mountfd);
}

/* Reconcile's common case in one openat2 and one read: PATH's cpuset.cpus opened
   beneath MOUNTFD (the cgroup filesystem checked by open_mount(): no symlink, no
   magic link, no other mount, nothing above it), which is only ever a kernel
   control file there.  True when CPUS holds its non-empty list; false sends the
   caller the careful way (a missing directory or file, an inherited v2 list,
   a kernel without openat2), which also tells a gone cgroup from an unreadable one.
   (An empty v1 list is an answer: a cgroup no task can join, as the ledger's
   entries for cgroups whose processes are gone may be.) */
static bool
read_cpus_beneath (int mountfd, int version, const char *mount, const char *path, hwloc_bitmap_t cpus)
{
  char rel[CP_CGROUP_MAX_PATH + sizeof "/cpuset.cpus"];
  if (snprintf (rel, sizeof rel, "%s/cpuset.cpus", path + 1) >= (int) sizeof rel)
    return false;
  struct open_how how = {
    .flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
  };
  cleanup_close int fd = (int) syscall (SYS_openat2, mountfd, rel, &how, sizeof how);
  if (fd < 0)
    return false;
  cleanup_free char *name = cp_xasprintf ("%s%s/cpuset.cpus", mount, path);
  cleanup_error cp_error_t err = NULL;
  if (cp_cgroup_read_cpulist_fd (fd, name, cpus, &err) < 0)
    return false;
  return version == 1 || !hwloc_bitmap_iszero (cpus);
}

/* PATH's state beneath MOUNTFD and, when CPUS is not NULL and the directory is
   there, the CPUs it runs on (left empty when they cannot be read); when INO is
   not NULL, the directory's inode (0 when it cannot be read), which takes the
   careful way (the directory itself opened). */
static int
state_beneath (int mountfd, int version, const char *mount, const char *path, hwloc_bitmap_t cpus,
               unsigned long long *ino)
{
  if (ino)
    *ino = 0;
  else if (cpus && read_cpus_beneath (mountfd, version, mount, path, cpus))
    return 1;
  cleanup_error cp_error_t err = NULL;
  cleanup_close int fd = cp_cgroup_open_dir (mountfd, mount, path + 1, CP_CGROUP_OPEN_SAME_MOUNT, &err);
  if (fd < 0)
    return state_of (err);
  struct stat st;
  if (ino && fstat (fd, &st) == 0)
    *ino = (unsigned long long) st.st_ino;
  if (cpus)
    {
      cleanup_free char *name = cp_xasprintf ("%s%s", mount, path);
      if (cp_cgroup_read_live_cpus (fd, version, name, cpus, &err) < 0)
        hwloc_bitmap_zero (cpus);
    }
  return 1;
}

static int
state_in (struct cp_cgroup_mounts *m, const char *mount, const char *path, hwloc_bitmap_t cpus,
          unsigned long long *ino)
{
  if (cpus)
    hwloc_bitmap_zero (cpus);
  if (ino)
    *ino = 0;
  if (mount == NULL || path == NULL || mount[0] != '/' || path[0] != '/' || strlen (mount) > CP_CGROUP_MAX_PATH
      || strlen (path) > CP_CGROUP_MAX_PATH)
    return 0;
  if (cp_cgroup_path_problem (path + 1))
    return 0;
  for (unsigned i = 0; m && i < m->n; i++)
    if (strcmp (m->slot[i].mount, mount) == 0)
      return m->slot[i].fd < 0 ? m->slot[i].state
                               : state_beneath (m->slot[i].fd, m->slot[i].version, mount, path, cpus, ino);
  int state, version = 0;
  cleanup_close int mountfd = open_mount (mount, &state, &version);
  if (m && m->n < MOUNTS_MAX)
    {
      unsigned i = m->n++;
      m->slot[i].mount = cp_xstrdup (mount);
      m->slot[i].state = state;
      m->slot[i].version = version;
      m->slot[i].fd = steal_fd (&mountfd);
      return m->slot[i].fd < 0 ? state : state_beneath (m->slot[i].fd, version, mount, path, cpus, ino);
    }
  return mountfd < 0 ? state : state_beneath (mountfd, version, mount, path, cpus, ino);
}

int
cp_cgroup_dir_state_in (struct cp_cgroup_mounts *m, const char *mount, const char *path)
{
  return state_in (m, mount, path, NULL, NULL);
}

int
cp_cgroup_cpus_in (struct cp_cgroup_mounts *m, const char *mount, const char *path, hwloc_bitmap_t cpus,
                   unsigned long long *ino)
{
  return state_in (m, mount, path, cpus, ino);
}

int
cp_cgroup_dir_state (const char *mount, const char *path)
{
  return cp_cgroup_dir_state_in (NULL, mount, path);
}

void
cp_cgroup_free (struct cp_cgroup *cg)
{
  if (cg == NULL)
    return;
  if (cg->dirfd >= 0)
    close (cg->dirfd);
  if (cg->mountfd >= 0)
    close (cg->mountfd);
  free (cg->mount);
  free (cg->path);
  free (cg);
}

void
cp_cgroup_freep (struct cp_cgroup **cg)
{
  cp_cgroup_free (*cg);
  *cg = NULL;
}
