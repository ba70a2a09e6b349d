/* cachepin: cgroup v2 cpuset partitions, the kernel's files (see partition.h). */
#define _GNU_SOURCE
#include "partition.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cgroup_internal.h"
#include "io.h"
#include "util.h"

/* ---- the text of cpuset.cpus.partition ------------------------------------------ */

int
cp_partition_parse (const char *text, struct cp_partition_state *out, cp_error_t *err)
{
  *out = (struct cp_partition_state) { 0 };
  size_t len = strcspn (text, "\n");
  if (text[len] == '\n' && text[len + 1] != '\0')
    return cp_fail_runtime (err, "cpuset.cpus.partition: more than one line");
  static const struct
  {
    const char *word;
    enum cp_partition_kind kind;
  } words[] = { { "member", CP_PARTITION_MEMBER }, { "root", CP_PARTITION_ROOT }, { "isolated", CP_PARTITION_ISOLATED } };
  for (size_t i = 0; i < CP_ARRAY_SIZE (words); i++)
    {
      size_t n = strlen (words[i].word);
      if (len < n || strncmp (text, words[i].word, n) != 0)
        continue;
      const char *rest = text + n;
      size_t rest_len = len - n;
      out->kind = words[i].kind;
      if (rest_len == 0)
        return 0;
      if (rest_len < 8 || strncmp (rest, " invalid", 8) != 0)
        break;
      out->invalid = true;
      rest += 8;
      rest_len -= 8;
      if (rest_len == 0)
        return 0;
      if (rest_len < 3 || rest[0] != ' ' || rest[1] != '(' || rest[rest_len - 1] != ')')
        break;
      snprintf (out->reason, sizeof out->reason, "%.*s", (int) (rest_len - 3), rest + 2);
      return 0;
    }
  return cp_fail_runtime (err, "cpuset.cpus.partition: unexpected `%.*s`", (int) (len < 64 ? len : 64), text);
}

/* ---- the kernel's files ----------------------------------------------------------- */

/* MOUNT opened, and in *V2 whether it is a cgroup2 filesystem. */
static int
open_mount_dir (const char *mount, bool *v2, cp_error_t *err)
{
  cleanup_close int fd = cp_cgroup_open_dir (AT_FDCWD, NULL, mount, 0, err);
  if (fd < 0)
    return -1;
  struct statfs sfs;
  if (fstatfs (fd, &sfs) < 0)
    return cp_fail_errno (err, errno, "statfs %s", mount);
  *v2 = sfs.f_type == CGROUP2_SUPER_MAGIC;
  int r = fd;
  fd = -1;
  return r;
}

/* T's mount: the caller's fd (duplicated), or MOUNT opened and checked to be a
   cgroup2 filesystem. */
static int
open_mount (const struct cp_partition_tree *t, cp_error_t *err)
{
  if (t->mountfd >= 0)
    {
      int fd = fcntl (t->mountfd, F_DUPFD_CLOEXEC, 3);
      return fd < 0 ? cp_fail_errno (err, errno, "open %s", t->mount) : fd;
    }
  bool v2 = false;
  cleanup_close int fd = open_mount_dir (t->mount, &v2, err);
  if (fd < 0)
    return -1;
  if (!v2)
    return cp_fail_runtime (err, "%s is not a cgroup v2 filesystem", t->mount);
  int r = fd;
  fd = -1;
  return r;
}

/* The directory of cgroup PATH ("/": the mount's root) in T. */
static int
open_cgroup (const struct cp_partition_tree *t, const char *path, cp_error_t *err)
{
  if (path[0] != '/')
    return cp_fail_runtime (err, "cgroup path `%.64s` is not absolute", path);
  cleanup_close int mountfd = open_mount (t, err);
  if (mountfd < 0 || path[1] == '\0')
    {
      int r = mountfd;
      mountfd = -1;
      return r;
    }
  return cp_cgroup_open_dir (mountfd, t->mount, path + 1, CP_CGROUP_OPEN_SAME_MOUNT, err);
}

static char *
full_name (const struct cp_partition_tree *t, const char *path, const char *file)
{
  return cp_xasprintf ("%s%s/%s", t->mount, strcmp (path, "/") == 0 ? "" : path, file);
}

static int
kernel_read (const struct cp_partition_tree *t, const char *path, const char *file, char **text, cp_error_t *err)
{
  cleanup_close int dirfd = open_cgroup (t, path, err);
  if (dirfd < 0)
    return -1;
  cleanup_free char *name = full_name (t, path, file);
  return cp_io_read_at (dirfd, file, O_NOFOLLOW, name, CP_CGROUP_FILE_MAX + 256, CP_IO_NO_NUL, text, NULL, err);
}

static int
kernel_write (const struct cp_partition_tree *t, const char *path, const char *file, const char *value,
              cp_error_t *err)
{
  cleanup_close int dirfd = open_cgroup (t, path, err);
  if (dirfd < 0)
    return -1;
  cleanup_free char *name = full_name (t, path, file);
  return cp_io_write_control (dirfd, file, name, value, err);
}

static const struct cp_partition_io kernel_io = { .read = kernel_read, .write = kernel_write };
static const struct cp_partition_io *io = &kernel_io;

void
cp_partition_set_io (const struct cp_partition_io *fake)
{
  io = fake ? fake : &kernel_io;
}

/* ---- reading and writing ------------------------------------------------------------ */

static int
refuse_root (const struct cp_partition_tree *t, const char *path, cp_error_t *err)
{
  if (path[0] == '/' && path[1] != '\0' && cp_cgroup_path_problem (path + 1) == NULL)
    return 0;
  return cp_fail_runtime (err, "refusing to write a partition file of `%.64s` under %s (the root, or not a cgroup path)",
                          path, t->mount);
}

int
cp_partition_read_file (const struct cp_partition_tree *t, const char *path, const char *file, char **text,
                        cp_error_t *err)
{
  return io->read (t, path, file, text, err);
}

int
cp_partition_write_file (const struct cp_partition_tree *t, const char *path, const char *file, const char *value,
                         cp_error_t *err)
{
  if (refuse_root (t, path, err) < 0)
    return -1;
  return io->write (t, path, file, value, err);
}

int
cp_partition_open_mount (const char *mount, cp_error_t *err)
{
  return open_mount (&(const struct cp_partition_tree) { .mount = mount, .mountfd = -1 }, err);
}

int
cp_partition_read_cpus (const struct cp_partition_tree *t, const char *path, const char *file, hwloc_bitmap_t out,
                        cp_error_t *err)
{
  cleanup_free char *text = NULL;
  if (io->read (t, path, file, &text, err) < 0)
    return -1;
  cleanup_error cp_error_t bad = NULL;
  if (cp_cpulist_parse (text, CP_CPULIST_ALLOW_EMPTY | CP_CPULIST_ALLOW_NEWLINE, out, &bad) < 0)
    {
      cleanup_free char *name = full_name (t, path, file);
      return cp_fail_runtime (err, "%s: %s", name, cp_error_message (bad));
    }
  return 0;
}

int
cp_partition_write_exclusive (const struct cp_partition_tree *t, const char *path, hwloc_const_bitmap_t cpus,
                              cp_error_t *err)
{
  if (refuse_root (t, path, err) < 0)
    return -1;
  if (hwloc_bitmap_weight (cpus) < 0)
    return cp_fail_input (err, "refusing to write an infinite cpuset.cpus.exclusive");
  /* An empty list clears it: the kernel wants a line, "" alone writes nothing. */
  cleanup_free char *text = hwloc_bitmap_iszero (cpus) ? cp_xstrdup ("\n") : cp_cpulist_format (cpus);
  return io->write (t, path, CP_PARTITION_EXCLUSIVE, text, err);
}

int
cp_partition_read_state (const struct cp_partition_tree *t, const char *path, struct cp_partition_state *out,
                         cp_error_t *err)
{
  cleanup_free char *text = NULL;
  if (io->read (t, path, CP_PARTITION_FILE, &text, err) < 0)
    return -1;
  if (cp_partition_parse (text, out, err) < 0)
    {
      cleanup_free char *name = full_name (t, path, "");
      return cp_error_wrap (err, "%s", name);
    }
  return 0;
}

int
cp_partition_write_state (const struct cp_partition_tree *t, const char *path, enum cp_partition_kind kind,
                          cp_error_t *err)
{
  if (refuse_root (t, path, err) < 0)
    return -1;
  if (kind != CP_PARTITION_MEMBER && kind != CP_PARTITION_ROOT)
    return cp_fail_input (err, "cachepin writes only `member` or `root` into %s", CP_PARTITION_FILE);
  return io->write (t, path, CP_PARTITION_FILE, kind == CP_PARTITION_ROOT ? "root" : "member", err);
}

/* ---- support -------------------------------------------------------------------------- */

/* 1: FILE of PATH is there; 0: it is not (ENOENT); -1: could not tell. */
static int
has_file (const struct cp_partition_tree *t, const char *path, const char *file, cp_error_t *err)
{
  cleanup_free char *text = NULL;
  cleanup_error cp_error_t local = NULL;
  if (io->read (t, path, file, &text, &local) == 0)
    return 1;
  if (cp_error_errno (local) == ENOENT)
    return 0;
  cp_error_free (err);
  *err = local;
  local = NULL;
  return -1;
}

int
cp_partition_supported_host (char **mount_out, char **why, cp_error_t *err)
{
  *why = NULL;
  if (mount_out)
    *mount_out = NULL;
  cleanup_free char *mount = NULL, *path = NULL;
  /* A relative path names the cpuset hierarchy's mount; nothing is opened below it. */
  if (cp_cgroup_locate_path ("cachepin", &mount, &path, err) < 0)
    return -1;
  bool v2 = false;
  cleanup_close int fd = open_mount_dir (mount, &v2, err);
  if (fd < 0)
    return -1;
  if (!v2)
    {
      *why = cp_xstrdup ("cgroup v1");
      return 0;
    }
  const struct cp_partition_tree t = { .mount = mount, .mountfd = fd };
  int r = has_file (&t, "/", "cpuset.cpus.isolated", err);
  if (r == 0)
    *why = cp_xstrdup ("kernel has no cpuset.cpus.exclusive (Linux 6.7+)");
  if (r == 1 && mount_out)
    *mount_out = cp_steal_pointer (&mount);
  return r;
}

int
cp_partition_supported (const struct cp_cgroup *cg, char **why, cp_error_t *err)
{
  *why = NULL;
  if (cg->version != 2)
    {
      *why = cp_xstrdup ("cgroup v1");
      return 0;
    }
  const struct cp_partition_tree t = { .mount = cg->mount, .mountfd = cg->mountfd };
  cleanup_free char *path = cp_xstrdup (cg->path);
  /* From the cgroup up: the first with the controller's files decides. */
  for (;;)
    {
      int r = strcmp (path, "/") == 0 ? has_file (&t, "/", "cpuset.cpus.isolated", err)
                                      : has_file (&t, path, "cpuset.cpus", err);
      if (r < 0)
        return -1;
      if (r == 1 && strcmp (path, "/") == 0)
        return 1;
      if (r == 1)
        {
          r = has_file (&t, path, CP_PARTITION_EXCLUSIVE, err);
          if (r < 0)
            return -1;
          if (r == 1)
            return 1;
          break;
        }
      if (strcmp (path, "/") == 0)
        break;
      char *slash = strrchr (path, '/');
      if (slash == path)
        slash[1] = '\0';
      else
        *slash = '\0';
    }
  *why = cp_xstrdup ("kernel has no cpuset.cpus.exclusive (Linux 6.7+)");
  return 0;
}
