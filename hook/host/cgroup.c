/* cachepin: the container's cpuset cgroup (see cgroup.h): finding it from the
 * kernel's texts (parsed by cgroup_parse.c, opened by cgroup_open.c), reading what
 * its parent allows and what it has, enabling the controller, writing cpuset.cpus
 * and cpuset.mems.  Every read and write goes through policy/base/io.h: bounded reads,
 * one write(2) per control file. */
#define _GNU_SOURCE
#include "cgroup_internal.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "bitmap.h"
#include "cpulist.h"
#include "util.h"
#include "proc.h"

/* "MOUNT" + "DIR" (below the mount, "/" for its root) + "/NAME" (NAME may be NULL). */
static char *
join_path (const char *mount, const char *dir, const char *name)
{
  if (strcmp (dir, "/") == 0)
    dir = "";
  if (strcmp (mount, "/") == 0)
    mount = "";
  if (name == NULL)
    return *mount || *dir ? cp_xasprintf ("%s%s", mount, dir) : cp_xstrdup ("/");
  return cp_xasprintf ("%s%s/%s", mount, dir, name);
}

/* Move the error LOCAL into *ERR (when the caller wants it); returns -1. */
static int
pass_error (cp_error_t *err, cp_error_t *local)
{
  if (err)
    {
      cp_error_free (err);
      *err = cp_steal_pointer (local);
    }
  return -1;
}

/* ---- reading and writing files ------------------------------------------------ */

/* Read NAME in the directory DIRFD; DIRNAME (full path) names it in messages. */
static int
read_text_at (int dirfd, const char *dirname, const char *name, char **out, cp_error_t *err)
{
  cleanup_free char *full = cp_xasprintf ("%s/%s", dirname, name);
  return cp_io_read_at (dirfd, name, O_NOFOLLOW, full, CP_CGROUP_FILE_MAX, CP_IO_NO_NUL, out, NULL, err);
}

/* TEXT, read from the cgroup file FULL, as a cpulist. */
static int
parse_kernel_cpulist (const char *full, const char *text, hwloc_bitmap_t out, cp_error_t *err)
{
  cleanup_error cp_error_t bad = NULL;
  if (cp_cpulist_parse (text, CP_CPULIST_ALLOW_EMPTY | CP_CPULIST_ALLOW_NEWLINE, out, &bad) < 0)
    /* The kernel's text, not the user's: a runtime error. */
    return cp_fail_runtime (err, "%s: %s", full, cp_error_message (bad));
  return 0;
}

static int
read_cpulist_at (int dirfd, const char *dirname, const char *name, hwloc_bitmap_t out, cp_error_t *err)
{
  cleanup_free char *text = NULL;
  if (read_text_at (dirfd, dirname, name, &text, err) < 0)
    return -1;
  cleanup_free char *full = cp_xasprintf ("%s/%s", dirname, name);
  return parse_kernel_cpulist (full, text, out, err);
}

int
cp_cgroup_read_cpulist_fd (int fd, const char *name, hwloc_bitmap_t out, cp_error_t *err)
{
  cleanup_free char *text = NULL;
  if (cp_io_read_fd (fd, name, CP_CGROUP_FILE_MAX, CP_IO_NO_NUL, -1, &text, NULL, err) < 0)
    return -1;
  return parse_kernel_cpulist (name, text, out, err);
}

/* Write VALUE into NAME in DIRFD: one write(2), never creating the file, never
 * through a symlink (cp_io_write_control() says why). */
static int
write_at (int dirfd, const char *dirname, const char *name, const char *value, cp_error_t *err)
{
  cleanup_free char *full = cp_xasprintf ("%s/%s", dirname, name);
  cleanup_error cp_error_t local = NULL;
  if (cp_io_write_control (dirfd, name, full, value, &local) == 0)
    return 0;
  if (cp_error_errno (local) == EBUSY && strcmp (name, "cgroup.subtree_control") == 0)
    return cp_fail_errno (err, EBUSY,
                          "write %s (cgroup v2 enables a controller for the children only of a cgroup "
                          "without processes of its own)",
                          full);
  return pass_error (err, &local);
}

int
cp_cgroup_read_live_cpus (int dirfd, int version, const char *dirname, hwloc_bitmap_t cpus, cp_error_t *err)
{
  if (read_cpulist_at (dirfd, dirname, "cpuset.cpus", cpus, err) < 0)
    return -1;
  /* v2: an empty cpuset.cpus inherits the parent's: the effective set is what the
     cgroup runs on.  (v1 has no empty cpuset.cpus with tasks in it.) */
  if (version == 2 && hwloc_bitmap_iszero (cpus))
    return read_cpulist_at (dirfd, dirname, "cpuset.cpus.effective", cpus, err);
  return 0;
}

/* /proc/<pid>/cgroup or /proc/self/mountinfo, at most MAX bytes. */
static int
read_proc (const char *path, size_t max, char **out, cp_error_t *err)
{
  return cp_io_read_at (AT_FDCWD, path, O_NOFOLLOW, path, max, CP_IO_NO_NUL, out, NULL, err);
}

/* ---- finding the cgroup ----------------------------------------------------------- */

static int
read_mountinfo (char **out, cp_error_t *err)
{
  return read_proc ("/proc/self/mountinfo", CP_CGROUP_MOUNTINFO_MAX, out, err);
}

int
cp_cgroup_from_pid_for (pid_t pid, const char *controller, struct cp_cgroup **out, cp_error_t *err)
{
  if (pid <= 0)
    return cp_fail_input (err, "invalid pid %d", (int) pid);
  char proc[64];
  snprintf (proc, sizeof proc, "/proc/%d/cgroup", (int) pid);
  cleanup_free char *cgroups = NULL;
  cleanup_free char *mountinfo = NULL;
  if (read_proc (proc, CP_CGROUP_PROC_CGROUP_MAX, &cgroups, err) < 0)
    return -1;
  if (read_mountinfo (&mountinfo, err) < 0)
    return -1;
  cleanup_where struct cp_cgroup_where w = { 0 };
  if (cp_cgroup_locate_from_text (mountinfo, cgroups, controller, &w, err) < 0)
    return cp_error_wrap (err, "%s cgroup of pid %d", controller, (int) pid);
  if (strcmp (w.path, "/") == 0)
    return cp_fail_runtime (err,
                            "pid %d is in the root %s cgroup (%s): no cgroup of its own to write "
                            "(on cgroup v1 a process that has exited shows the root)",
                            (int) pid, controller, w.mount);
  if (cp_cgroup_open_where (&w, out, err) < 0)
    return cp_error_wrap (err, "%s cgroup of pid %d", controller, (int) pid);
  return 0;
}

int
cp_cgroup_from_pid (pid_t pid, struct cp_cgroup **out, cp_error_t *err)
{
  return cp_cgroup_from_pid_for (pid, "cpuset", out, err);
}

/* Where the user's PATH points (cp_cgroup_from_path()), from this process's
   /proc/self/cgroup and mountinfo. */
static int
resolve_path (const char *path, struct cp_cgroup_where *w, cp_error_t *err)
{
  cleanup_free char *self = NULL;
  cleanup_free char *mountinfo = NULL;
  if (read_proc ("/proc/self/cgroup", CP_CGROUP_PROC_CGROUP_MAX, &self, err) < 0)
    return -1;
  if (read_mountinfo (&mountinfo, err) < 0)
    return -1;
  return cp_cgroup_resolve_from_text (mountinfo, self, "cpuset", path, w, err);
}

int
cp_cgroup_from_path (const char *path, struct cp_cgroup **out, cp_error_t *err)
{
  cleanup_where struct cp_cgroup_where w = { 0 };
  if (resolve_path (path, &w, err) < 0)
    return -1;
  /* Beneath the mount, the path is the user's: not a cgroup directory is their error. */
  if (cp_cgroup_open_where_flags (&w, CP_CGROUP_OPEN_USER_PATH, out, err) < 0)
    return cp_error_wrap (err, "cgroup `%s`", path);
  return 0;
}

int
cp_cgroup_snapshot_read (struct cp_cgroup_snapshot *m, cp_error_t *err)
{
  *m = (struct cp_cgroup_snapshot) { 0 };
  if (read_proc ("/proc/self/cgroup", CP_CGROUP_PROC_CGROUP_MAX, &m->self, err) < 0
      || read_mountinfo (&m->mountinfo, err) < 0)
    {
      cp_cgroup_snapshot_clear (m);
      return -1;
    }
  return 0;
}

void
cp_cgroup_snapshot_clear (struct cp_cgroup_snapshot *m)
{
  free (m->self);
  free (m->mountinfo);
  *m = (struct cp_cgroup_snapshot) { 0 };
}

int
cp_cgroup_locate_path_in (const struct cp_cgroup_snapshot *m, const char *path, char **mount, char **cgroup,
                          cp_error_t *err)
{
  if (m == NULL)
    return cp_cgroup_locate_path (path, mount, cgroup, err);
  cleanup_where struct cp_cgroup_where w = { 0 };
  if (cp_cgroup_resolve_from_text (m->mountinfo, m->self, "cpuset", path, &w, err) < 0)
    return -1;
  *mount = cp_steal_pointer (&w.mount);
  *cgroup = cp_steal_pointer (&w.path);
  return 0;
}

int
cp_cgroup_locate_path (const char *path, char **mount, char **cgroup, cp_error_t *err)
{
  cleanup_where struct cp_cgroup_where w = { 0 };
  if (resolve_path (path, &w, err) < 0)
    return -1;
  *mount = cp_steal_pointer (&w.mount);
  *cgroup = cp_steal_pointer (&w.path);
  return 0;
}

int
cp_cgroup_ino (const struct cp_cgroup *cg, unsigned long long *ino, cp_error_t *err)
{
  struct stat st;
  if (fstat (cg->dirfd, &st) < 0)
    return cp_fail_errno (err, errno, "stat %s%s", cg->mount, cg->path);
  *ino = (unsigned long long) st.st_ino;
  return 0;
}

bool
cp_cgroup_path_within (const char *path, const char *want)
{
  size_t n = strlen (want);
  if (strcmp (want, "/") == 0)
    return true;
  return strncmp (path, want, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* ---- reading and writing ------------------------------------------------------------ */

/* Open the ancestor of CG made of its first DEPTH components (0: the mount's root). */
static int
open_ancestor (const struct cp_cgroup *cg, size_t depth, char **name, cp_error_t *err)
{
  const char *p = cg->path + 1;
  for (size_t i = 0; i < depth; i++)
    {
      const char *slash = strchr (p, '/');
      if (slash == NULL)
        abort (); /* callers stay above the cgroup itself */
      p = slash + 1;
    }
  size_t n = (size_t) (p - cg->path);
  cleanup_free char *rel = depth == 0 ? cp_xstrdup ("/") : strndup (cg->path, n - 1);
  if (rel == NULL)
    abort ();
  *name = join_path (cg->mount, rel, NULL);
  if (depth == 0)
    {
      int fd = fcntl (cg->mountfd, F_DUPFD_CLOEXEC, 3);
      if (fd < 0)
        return cp_fail_errno (err, errno, "open %s", *name);
      return fd;
    }
  return cp_cgroup_open_dir (cg->mountfd, cg->mount, rel + 1, CP_CGROUP_OPEN_SAME_MOUNT, err);
}

static size_t
path_depth (const char *path)
{
  size_t n = 0;
  for (const char *p = path; *p; p++)
    if (*p == '/')
      n++;
  return n; /* "/a/b" has depth 2 */
}

/* Read the cpulist FILE in FD into SET (NULL: nothing to do), or FALLBACK where
 * FILE does not exist (v1 without cpuset.effective_*). */
static int
read_either (int fd, const char *dirname, const char *file, const char *fallback, hwloc_bitmap_t set,
             cp_error_t *err)
{
  if (set == NULL)
    return 0;
  cleanup_error cp_error_t local = NULL;
  if (read_cpulist_at (fd, dirname, file, set, &local) == 0)
    return 0;
  if (fallback && cp_error_errno (local) == ENOENT)
    return read_cpulist_at (fd, dirname, fallback, set, err);
  return pass_error (err, &local);
}

static int
read_pair (int fd, const char *dirname, const char *cpus_file, const char *cpus_fallback, const char *mems_file,
           const char *mems_fallback, hwloc_bitmap_t cpus, hwloc_bitmap_t mems, cp_error_t *err)
{
  if (read_either (fd, dirname, cpus_file, cpus_fallback, cpus, err) < 0)
    return -1;
  return read_either (fd, dirname, mems_file, mems_fallback, mems, err);
}

static int
parent_limits (const struct cp_cgroup *cg, hwloc_bitmap_t cpus, hwloc_bitmap_t mems, char **parent_name,
               cp_error_t *err)
{
  cleanup_free char *name = NULL;
  cleanup_close int fd = open_ancestor (cg, path_depth (cg->path) - 1, &name, err);
  if (fd < 0)
    return -1;
  int r;
  if (cg->version == 2)
    r = read_pair (fd, name, "cpuset.cpus.effective", NULL, "cpuset.mems.effective", NULL, cpus, mems, err);
  else
    r = read_pair (fd, name, "cpuset.effective_cpus", "cpuset.cpus", "cpuset.effective_mems", "cpuset.mems", cpus,
                   mems, err);
  if (r < 0)
    return -1;
  if (parent_name)
    *parent_name = cp_steal_pointer (&name);
  return 0;
}

int
cp_cgroup_parent_limits (const struct cp_cgroup *cg, hwloc_bitmap_t cpus, hwloc_bitmap_t mems, cp_error_t *err)
{
  return parent_limits (cg, cpus, mems, NULL, err);
}

int
cp_cgroup_read_cpuset (const struct cp_cgroup *cg, hwloc_bitmap_t cpus, hwloc_bitmap_t mems, cp_error_t *err)
{
  cleanup_free char *name = join_path (cg->mount, cg->path, NULL);
  if (cg->version == 2)
    return read_pair (cg->dirfd, name, "cpuset.cpus.effective", NULL, "cpuset.mems.effective", NULL, cpus, mems, err);
  return read_pair (cg->dirfd, name, "cpuset.cpus", NULL, "cpuset.mems", NULL, cpus, mems, err);
}

int
cp_cgroup_enable_controller (const struct cp_cgroup *cg, const char *controller, cp_error_t *err)
{
  if (cg->version == 1)
    return 0;
  /* Writes go to the ancestors' cgroup.subtree_control only: enabling a controller
     for a cgroup is done in its parent, and for the parent in its own parent, so
     the chain from the root down to the parent has to list it. */
  size_t depth = path_depth (cg->path);
  for (size_t d = 0; d < depth; d++)
    {
      cleanup_free char *name = NULL;
      cleanup_close int fd = open_ancestor (cg, d, &name, err);
      if (fd < 0)
        return -1;
      cleanup_free char *text = NULL;
      if (d == 0)
        {
          if (read_text_at (fd, name, "cgroup.controllers", &text, err) < 0)
            return -1;
          size_t len = strcspn (text, "\n");
          if (!cp_cgroup_has_token (text, len, controller, ' '))
            return cp_fail_runtime (err,
                                    "%s is not in %s/cgroup.controllers (`%.*s`): it is bound to a cgroup v1 "
                                    "hierarchy, or disabled",
                                    controller, name, (int) len, text);
          free (text);
          text = NULL;
        }
      if (read_text_at (fd, name, "cgroup.subtree_control", &text, err) < 0)
        return -1;
      if (cp_cgroup_has_token (text, strcspn (text, "\n"), controller, ' '))
        continue;
      cleanup_free char *value = cp_xasprintf ("+%s", controller);
      if (write_at (fd, name, "cgroup.subtree_control", value, err) < 0)
        return -1;
    }
  return 0;
}

int
cp_cgroup_enable_cpuset (const struct cp_cgroup *cg, cp_error_t *err)
{
  return cp_cgroup_enable_controller (cg, "cpuset", err);
}

/* "cpus 2-3 are outside what the parent ... allows (0-1)" */
static int
check_within (const char *what, hwloc_const_bitmap_t want, hwloc_const_bitmap_t allowed, const char *parent,
              cp_error_t *err)
{
  if (hwloc_bitmap_isincluded (want, allowed))
    return 0;
  cleanup_bitmap hwloc_bitmap_t outside = cp_bitmap_new ();
  hwloc_bitmap_andnot (outside, want, allowed);
  cleanup_free char *o = cp_cpulist_format (outside);
  cleanup_free char *a = cp_cpulist_format (allowed);
  return cp_fail_input (err, "%s %s %s outside what the parent cgroup %s allows (`%s`); nothing written", what, o,
                        hwloc_bitmap_weight (outside) == 1 ? "is" : "are", parent, a);
}

int
cp_cgroup_write_cpuset (const struct cp_cgroup *cg, hwloc_const_bitmap_t cpus, hwloc_const_bitmap_t mems,
                        cp_error_t *err)
{
  if (cpus == NULL || hwloc_bitmap_iszero (cpus))
    return cp_fail_input (err, "refusing to write an empty cpuset.cpus");
  if (mems && hwloc_bitmap_iszero (mems))
    return cp_fail_input (err, "refusing to write an empty cpuset.mems");
  if (hwloc_bitmap_weight (cpus) < 0 || (mems && hwloc_bitmap_weight (mems) < 0))
    return cp_fail_input (err, "refusing to write an infinite cpuset");

  cleanup_bitmap hwloc_bitmap_t pcpus = cp_bitmap_new ();
  cleanup_bitmap hwloc_bitmap_t pmems = mems ? cp_bitmap_new () : NULL;
  cleanup_free char *parent = NULL;
  if (parent_limits (cg, pcpus, pmems, &parent, err) < 0)
    return -1;
  if (check_within ("cpus", cpus, pcpus, parent, err) < 0)
    return -1;
  if (mems && check_within ("mems", mems, pmems, parent, err) < 0)
    return -1;

  cleanup_free char *name = join_path (cg->mount, cg->path, NULL);
  cleanup_free char *cpus_text = cp_cpulist_format (cpus);
  if (write_at (cg->dirfd, name, "cpuset.cpus", cpus_text, err) < 0)
    return -1;
  if (mems)
    {
      cleanup_free char *mems_text = cp_cpulist_format (mems);
      if (write_at (cg->dirfd, name, "cpuset.mems", mems_text, err) < 0)
        return -1;
    }
  return 0;
}

/* cgroup.procs: one pid per line; 4 MiB is over 500,000 of them. */
#define PROCS_MAX (4u << 20)

int
cp_cgroup_foreign_process (const struct cp_cgroup *cg, pid_t container, pid_t *foreign, cp_error_t *err)
{
  cleanup_free char *full = cp_xasprintf ("%s%s/cgroup.procs", cg->mount, cg->path);
  cleanup_free char *text = NULL;
  *foreign = 0;
  if (cp_io_read_at (cg->dirfd, "cgroup.procs", O_NOFOLLOW, full, PROCS_MAX, CP_IO_NO_NUL, &text, NULL, err) < 0)
    return -1;
  char *save = NULL;
  for (char *line = strtok_r (text, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
    {
      char *end = NULL;
      errno = 0;
      long pid = strtol (line, &end, 10);
      if (errno || end == line || *end != '\0' || pid <= 0 || pid > INT_MAX)
        return cp_fail_runtime (err, "%s: unexpected line `%.32s`", full, line);
      if ((pid_t) pid == container)
        continue;
      cleanup_error cp_error_t inner = NULL;
      int r = cp_proc_descends_from ((pid_t) pid, container, &inner);
      if (r < 0 && (cp_error_errno (inner) == ENOENT || cp_error_errno (inner) == ESRCH))
        continue; /* gone while we looked: not in the cgroup any more */
      if (r < 0)
        {
          cp_error_free (err);
          *err = cp_steal_pointer (&inner);
          return -1;
        }
      if (r == 0)
        {
          *foreign = (pid_t) pid;
          return 0;
        }
    }
  return 0;
}
