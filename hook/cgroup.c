/* cachepin: the container's cpuset cgroup (see cgroup.h).
 *
 * Why not libcgroup.  The project guide asks for libcgroup (2.0.2 here) for mount
 * discovery and the pid-to-path lookup where it serves.  Tried on a hybrid host
 * (v1 cpuset at /sys/fs/cgroup/cpuset, controller-less cgroup2 at
 * /sys/fs/cgroup/unified), it serves only the plain case, and we write around it:
 *
 *  - cgroup_get_current_controller_path() reads /proc/<pid>/cgroup with
 *    fscanf("%d:%[^:]:%s\n") into FILENAME_MAX stack buffers: the path stops at
 *    the first blank, so a cgroup "a b" comes back as "a", and the kernel's
 *    " (deleted)" mark on a removed v2 cgroup is silently dropped (the removed
 *    cgroup reads as a live one); the unified line "0::/..." has an empty
 *    controller field that %[^:] cannot match, so any controller on v2 fails with
 *    ECGOTHER and errno 0 ("Success"; seen for hugetlb here), i.e. a pure v2 host
 *    cannot be served at all; the reads are bounded only by those stack buffers.
 *  - cgroup_init() caches the mount table in process-global state that can be
 *    neither refreshed nor freed, reading /proc/mounts, which carries no mount
 *    root: with a mount of a subtree (bind mount, cgroup namespace) it returns that
 *    mount point for the whole hierarchy, so mount point + controller path names a
 *    directory that does not exist (seen here with a bind mount of
 *    /sys/fs/cgroup/cpuset/x listed before the full mount: it returned the bind).
 *    It also gives no device number to check what we open against.
 *
 * So both come from our own bounded parsers of /proc/self/mountinfo and
 * /proc/<pid>/cgroup below, which are what ships and what tests/unit/test_cgroup.c
 * exercises on the real cgroupfs (that test also cross-checks libcgroup where it
 * does serve, and shows where it does not). */
#define _GNU_SOURCE
#include "cgroup.h"
#include "../policy/bitmap.h"

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

#include "../policy/cpulist.h"
#include "../policy/util.h"

#ifndef SYS_openat2
#define SYS_openat2 437 /* the same number on every architecture */
#endif

#define OPEN_DIR_FLAGS (O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* ---- small helpers ----------------------------------------------------------- */

static bool
has_token (const char *list, size_t len, const char *token, char sep)
{
  size_t tlen = strlen (token);
  const char *p = list, *end = list + len;
  while (p < end)
    {
      const char *q = memchr (p, sep, (size_t) (end - p));
      if (q == NULL)
        q = end;
      if ((size_t) (q - p) == tlen && memcmp (p, token, tlen) == 0)
        return true;
      p = q + 1;
    }
  return false;
}

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

/* P is a path or component-wise prefix of PREFIX?  "/a" is a prefix of "/a" and
 * "/a/b", not of "/ab"; "/" is a prefix of every absolute path. */
static bool
path_has_prefix (const char *p, const char *prefix)
{
  if (strcmp (prefix, "/") == 0)
    return p[0] == '/';
  size_t n = strlen (prefix);
  return strncmp (p, prefix, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

/* The rest of P below PREFIX (path_has_prefix() holds), "/" when nothing is left. */
static char *
path_below (const char *p, const char *prefix)
{
  const char *rest = strcmp (prefix, "/") == 0 ? p : p + strlen (prefix);
  return cp_xstrdup (*rest ? rest : "/");
}

/* Components of P (no leading '/'): each non-empty, not "." or "..", at most
 * NAME_MAX bytes.  "" has no component and is fine.  WHAT names P in messages. */
static int
check_components (const char *p, const char *what, enum cp_error_kind kind, cp_error_t *err)
{
  if (*p == '\0')
    return 0;
  for (;;)
    {
      const char *slash = strchr (p, '/');
      size_t n = slash ? (size_t) (slash - p) : strlen (p);
      if (n == 0)
        return cp_error_set (err, kind, 0, "`%s`: empty path component (`//` or a trailing `/`)", what);
      if (n == 1 && p[0] == '.')
        return cp_error_set (err, kind, 0, "`%s`: `.` component refused", what);
      if (n == 2 && p[0] == '.' && p[1] == '.')
        return cp_error_set (err, kind, 0, "`%s`: `..` component refused", what);
      if (n > NAME_MAX)
        return cp_error_set (err, kind, 0, "`%s`: path component longer than %d bytes", what, NAME_MAX);
      if (slash == NULL)
        return 0;
      p = slash + 1;
    }
}

/* ---- bounded reads ------------------------------------------------------------ */

/* Read all of FD (at most MAX bytes, else EFBIG) into a NUL-terminated *OUT.
 * NAME is the file in messages. */
static int
read_fd_bounded (int fd, size_t max, const char *name, char **out, cp_error_t *err)
{
  size_t cap = max + 2 < 4096 ? max + 2 : 4096, len = 0;
  cleanup_free char *buf = cp_xmalloc0 (cap);
  for (;;)
    {
      if (len + 1 == cap)
        {
          cap = cap * 2 < max + 2 ? cap * 2 : max + 2;
          buf = cp_xrealloc (buf, cap);
        }
      ssize_t n = read (fd, buf + len, cap - 1 - len);
      if (n < 0)
        {
          if (errno == EINTR)
            continue;
          return cp_fail_errno (err, errno, "read %s", name);
        }
      if (n == 0)
        break;
      len += (size_t) n;
      if (len > max)
        return cp_fail_errno (err, EFBIG, "read %s: more than %zu bytes", name, max);
    }
  buf[len] = '\0';
  if (strlen (buf) != len)
    return cp_fail_errno (err, 0, "read %s: unexpected NUL byte", name);
  *out = cp_steal_pointer (&buf);
  return 0;
}

static int
read_path_bounded (const char *path, size_t max, char **out, cp_error_t *err)
{
  cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return cp_fail_errno (err, errno, "open %s", path);
  return read_fd_bounded (fd, max, path, out, err);
}

/* Read NAME in the directory DIRFD; DIRNAME (full path) names it in messages. */
static int
read_at (int dirfd, const char *dirname, const char *name, char **out, cp_error_t *err)
{
  cleanup_free char *full = cp_xasprintf ("%s/%s", dirname, name);
  cleanup_close int fd = openat (dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return cp_fail_errno (err, errno, "open %s", full);
  return read_fd_bounded (fd, CP_CGROUP_FILE_MAX, full, out, err);
}

static int
read_cpulist_at (int dirfd, const char *dirname, const char *name, hwloc_bitmap_t out, cp_error_t *err)
{
  cleanup_free char *text = NULL;
  if (read_at (dirfd, dirname, name, &text, err) < 0)
    return -1;
  if (cp_cpulist_parse (text, CP_CPULIST_ALLOW_EMPTY | CP_CPULIST_ALLOW_NEWLINE, out, err) < 0)
    {
      if (err && *err)
        (*err)->kind = CP_ERR_RUNTIME; /* the kernel's text, not the user's */
      return cp_error_wrap (err, "%s/%s", dirname, name);
    }
  return 0;
}

/* Write VALUE into NAME in DIRFD: never created (cgroupfs files exist or the
 * controller is not there), never through a symlink.
 *
 * One write(2) of the whole value, repeated on EINTR (which means nothing was
 * written).  A short write is an error, not something to complete with a second
 * write: a cgroup control file takes each write(2) as a whole value, so writing
 * the rest of "0-15" after "0-1" would set the cpuset to "5".  (The kernel never
 * does this for the cpuset files, whose writes are atomic up to their maximum
 * length, above which it answers E2BIG; the check is there in case it ever does.) */
static int
write_at (int dirfd, const char *dirname, const char *name, const char *value, cp_error_t *err)
{
  cleanup_free char *full = cp_xasprintf ("%s/%s", dirname, name);
  cleanup_close int fd = openat (dirfd, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return cp_fail_errno (err, errno, "open %s", full);
  size_t len = strlen (value);
  ssize_t n;
  do
    n = write (fd, value, len);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    {
      int e = errno;
      if (e == EBUSY && strcmp (name, "cgroup.subtree_control") == 0)
        return cp_fail_errno (err, e,
                              "write %s (cgroup v2 enables a controller for the children only of a cgroup "
                              "without processes of its own)",
                              full);
      return cp_fail_errno (err, e, "write %s", full);
    }
  if ((size_t) n != len)
    return cp_fail_errno (err, 0, "write %s: short write, %zd of %zu bytes of `%s` taken", full, n, len, value);
  return 0;
}

/* ---- /proc/self/mountinfo ----------------------------------------------------- */

struct mount_entry
{
  const char *mount_point; /* unescaped */
  const char *root;        /* unescaped */
  const char *fstype;
  const char *super_opts;
  dev_t dev;
};

struct mount_table
{
  char *buf; /* the entries point into it */
  struct mount_entry *e;
  size_t n;
};

static void
mount_table_release (struct mount_table *t)
{
  free (t->buf);
  free (t->e);
  t->buf = NULL;
  t->e = NULL;
  t->n = 0;
}
#define cleanup_mount_table __attribute__ ((cleanup (mount_table_release)))

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void
unescape_octal (char *s)
{
  char *w = s;
  for (const char *r = s; *r;)
    {
      if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' && r[3] <= '7')
        {
          *w++ = (char) (((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
          r += 4;
        }
      else
        *w++ = *r++;
    }
  *w = '\0';
}

static bool
parse_uint (const char *s, const char *end, unsigned *out)
{
  unsigned long v = 0;
  if (s == end)
    return false;
  for (; s < end; s++)
    {
      if (*s < '0' || *s > '9')
        return false;
      v = v * 10 + (unsigned long) (*s - '0');
      if (v > UINT_MAX)
        return false;
    }
  *out = (unsigned) v;
  return true;
}

/* One line: "ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS". */
static int
parse_mountinfo_line (char *line, unsigned lineno, struct mount_entry *e, cp_error_t *err)
{
  char *fields[6];
  char *p = line;
  for (int i = 0; i < 6; i++)
    {
      fields[i] = strsep (&p, " ");
      if (fields[i] == NULL || p == NULL)
        return cp_fail_errno (err, 0, "/proc/self/mountinfo line %u: too few fields", lineno);
    }
  char *f;
  while ((f = strsep (&p, " ")) != NULL && strcmp (f, "-") != 0)
    ;
  char *fstype = p ? strsep (&p, " ") : NULL;
  char *source = p ? strsep (&p, " ") : NULL;
  char *super_opts = p ? strsep (&p, " ") : NULL;
  if (f == NULL || fstype == NULL || source == NULL || super_opts == NULL)
    return cp_fail_errno (err, 0, "/proc/self/mountinfo line %u: no `-` separator or too few fields after it", lineno);
  const char *colon = strchr (fields[2], ':');
  unsigned maj, min;
  if (colon == NULL || !parse_uint (fields[2], colon, &maj) || !parse_uint (colon + 1, colon + strlen (colon), &min))
    return cp_fail_errno (err, 0, "/proc/self/mountinfo line %u: bad device `%s`", lineno, fields[2]);
  unescape_octal (fields[3]);
  unescape_octal (fields[4]);
  e->root = fields[3];
  e->mount_point = fields[4];
  e->fstype = fstype;
  e->super_opts = super_opts;
  e->dev = makedev (maj, min);
  return 0;
}

static int
parse_mountinfo (const char *text, struct mount_table *t, cp_error_t *err)
{
  t->buf = cp_xstrdup (text);
  size_t cap = 0;
  unsigned lineno = 0;
  char *line = t->buf;
  while (line && *line)
    {
      char *nl = strchr (line, '\n');
      if (nl)
        *nl = '\0';
      lineno++;
      if (*line)
        {
          if (t->n == cap)
            {
              cap = cap ? cap * 2 : 64;
              t->e = cp_xrealloc (t->e, cap * sizeof *t->e);
            }
          if (parse_mountinfo_line (line, lineno, &t->e[t->n], err) < 0)
            return -1;
          t->n++;
        }
      line = nl ? nl + 1 : NULL;
    }
  return 0;
}

/* Is E a mount of the hierarchy holding CONTROLLER, for that hierarchy's VERSION? */
static bool
is_candidate (const struct mount_entry *e, int version, const char *controller)
{
  if (version == 2)
    return strcmp (e->fstype, "cgroup2") == 0;
  return strcmp (e->fstype, "cgroup") == 0 && has_token (e->super_opts, strlen (e->super_opts), controller, ',');
}

/* The mount of the hierarchy through which the cgroup HIER_PATH (a path in the
 * hierarchy, as /proc/<pid>/cgroup prints it) is visible: its root must be
 * HIER_PATH or above it; the one showing most of the hierarchy wins (root "/"
 * normally), the first listed on a tie. */
static int
pick_mount (const struct mount_table *t, int version, const char *controller, const char *hier_path,
            const struct mount_entry **out, cp_error_t *err)
{
  const struct mount_entry *best = NULL, *any = NULL;
  for (size_t i = 0; i < t->n; i++)
    {
      const struct mount_entry *e = &t->e[i];
      if (!is_candidate (e, version, controller))
        continue;
      if (any == NULL)
        any = e;
      if (!path_has_prefix (hier_path, e->root))
        continue;
      if (best == NULL || strlen (e->root) < strlen (best->root))
        best = e;
    }
  if (any == NULL)
    return cp_fail_errno (err, 0, "the cgroup v%d hierarchy holding %s is not mounted (no %s in /proc/self/mountinfo)",
                          version, controller, version == 1 ? "cgroup mount with that controller" : "cgroup2 mount");
  if (best == NULL)
    return cp_fail_errno (err, 0, "no mount of the cgroup v%d hierarchy holding %s shows `%s` (%s shows only `%s`)",
                          version, controller, hier_path, any->mount_point, any->root);
  if (version == 1 && has_token (best->super_opts, strlen (best->super_opts), "noprefix", ','))
    return cp_fail_errno (err, 0, "the %s hierarchy at %s is mounted with noprefix, which is not supported", controller,
                          best->mount_point);
  if (best->mount_point[0] != '/' || strlen (best->mount_point) > CP_CGROUP_MAX_PATH)
    return cp_fail_errno (err, 0, "unusable mount point `%s`", best->mount_point);
  *out = best;
  return 0;
}

/* ---- /proc/<pid>/cgroup --------------------------------------------------------- */

/* Which hierarchy holds CONTROLLER according to TEXT (a /proc/<pid>/cgroup, named
 * WHAT in messages) and the process's path in it (raw, caller frees).  A v1 line
 * "ID:ctl,ctl:PATH" listing it wins; otherwise the unified line "0::PATH".  A path
 * may hold ':' and blanks but not a newline, so a cgroup whose name has one shows
 * up as extra lines: any line that does not parse, or a second line for the same
 * hierarchy, makes the whole text refused. */
static int
find_hierarchy (const char *text, const char *what, const char *controller, int *version, char **path,
                cp_error_t *err)
{
  const char *v1 = NULL, *v2 = NULL;
  size_t v1_len = 0, v2_len = 0;
  unsigned lineno = 0;
  for (const char *line = text; *line;)
    {
      const char *nl = strchr (line, '\n');
      const char *end = nl ? nl : line + strlen (line);
      lineno++;
      if (end > line)
        {
          const char *c1 = memchr (line, ':', (size_t) (end - line));
          const char *c2 = c1 ? memchr (c1 + 1, ':', (size_t) (end - c1 - 1)) : NULL;
          unsigned id;
          if (c2 == NULL || !parse_uint (line, c1, &id))
            return cp_fail_errno (err, 0, "%s line %u: not `ID:CONTROLLERS:PATH`", what, lineno);
          const char *p = c2 + 1;
          if (id == 0 && c2 == c1 + 1)
            {
              if (v2)
                return cp_fail_errno (err, 0, "%s: two lines for the unified hierarchy", what);
              v2 = p;
              v2_len = (size_t) (end - p);
            }
          else if (has_token (c1 + 1, (size_t) (c2 - c1 - 1), controller, ','))
            {
              if (v1)
                return cp_fail_errno (err, 0, "%s: two lines for the %s hierarchy", what, controller);
              v1 = p;
              v1_len = (size_t) (end - p);
            }
        }
      line = nl ? nl + 1 : end;
    }
  if (v1)
    {
      *version = 1;
      *path = strndup (v1, v1_len);
    }
  else if (v2)
    {
      *version = 2;
      *path = strndup (v2, v2_len);
    }
  else
    return cp_fail_errno (err, 0, "%s lists neither a cgroup v1 hierarchy with %s nor the unified hierarchy", what,
                          controller);
  if (*path == NULL)
    abort ();
  return 0;
}

#define DELETED_MARK " (deleted)"

int
cp_cgroup_locate_from_text (const char *mountinfo, const char *proc_cgroup, const char *controller,
                            struct cp_cgroup_where *out, cp_error_t *err)
{
  int version;
  cleanup_free char *hier_path = NULL;
  if (find_hierarchy (proc_cgroup, "/proc/<pid>/cgroup", controller, &version, &hier_path, err) < 0)
    return -1;
  size_t len = strlen (hier_path);
  size_t mark = strlen (DELETED_MARK);
  if (len >= mark && strcmp (hier_path + len - mark, DELETED_MARK) == 0)
    return cp_fail_errno (err, 0, "cgroup `%s` has been removed (the kernel marks it `(deleted)`)", hier_path);
  if (hier_path[0] != '/')
    return cp_fail_errno (err, 0, "cgroup path `%s` is not absolute", hier_path);
  if (len > CP_CGROUP_MAX_PATH)
    return cp_fail_errno (err, 0, "cgroup path longer than %d bytes", CP_CGROUP_MAX_PATH);
  if (strncmp (hier_path, "/..", 3) == 0 && (hier_path[3] == '/' || hier_path[3] == '\0'))
    return cp_fail_errno (err, 0, "cgroup `%s` is outside our cgroup namespace", hier_path);
  if (check_components (hier_path + 1, hier_path, CP_ERR_RUNTIME, err) < 0)
    return -1;

  cleanup_mount_table struct mount_table t = { 0 };
  if (parse_mountinfo (mountinfo, &t, err) < 0)
    return -1;
  const struct mount_entry *m;
  if (pick_mount (&t, version, controller, hier_path, &m, err) < 0)
    return -1;
  out->version = version;
  out->mount = cp_xstrdup (m->mount_point);
  out->mount_root = cp_xstrdup (m->root);
  out->path = path_below (hier_path, m->root);
  out->dev = m->dev;
  return 0;
}

int
cp_cgroup_resolve_from_text (const char *mountinfo, const char *self_cgroup, const char *controller,
                             const char *path, struct cp_cgroup_where *out, cp_error_t *err)
{
  if (*path == '\0')
    return cp_fail_input (err, "empty cgroup path");
  if (strlen (path) > CP_CGROUP_MAX_PATH)
    return cp_fail_input (err, "cgroup path longer than %d bytes", CP_CGROUP_MAX_PATH);
  if (check_components (path[0] == '/' ? path + 1 : path, path, CP_ERR_INPUT, err) < 0)
    return -1;

  int version;
  cleanup_free char *own = NULL;
  if (find_hierarchy (self_cgroup, "/proc/self/cgroup", controller, &version, &own, err) < 0)
    return -1;
  cleanup_mount_table struct mount_table t = { 0 };
  if (parse_mountinfo (mountinfo, &t, err) < 0)
    return -1;

  const struct mount_entry *m = NULL;
  cleanup_free char *below = NULL;
  if (path[0] == '/')
    {
      /* Under a mount of the hierarchy: the deepest such mount point. */
      for (size_t i = 0; i < t.n; i++)
        if (is_candidate (&t.e[i], version, controller) && path_has_prefix (path, t.e[i].mount_point)
            && (m == NULL || strlen (t.e[i].mount_point) > strlen (m->mount_point)))
          m = &t.e[i];
      if (m)
        below = path_below (path, m->mount_point);
      else
        {
          /* Under any other mount but "/": not ours (another hierarchy, the tmpfs at
             /sys/fs/cgroup, /proc...).  Under "/" only: relative to the hierarchy. */
          const struct mount_entry *other = NULL;
          for (size_t i = 0; i < t.n; i++)
            if (strcmp (t.e[i].mount_point, "/") != 0 && path_has_prefix (path, t.e[i].mount_point)
                && (other == NULL || strlen (t.e[i].mount_point) > strlen (other->mount_point)))
              other = &t.e[i];
          if (other)
            return cp_fail_input (err,
                                  "`%s` is outside the cgroup v%d hierarchy holding %s: it is under the %s mount "
                                  "at %s (for a path relative to the hierarchy's root, leave out the leading `/`)",
                                  path, version, controller, other->fstype, other->mount_point);
        }
    }
  if (m == NULL)
    {
      cleanup_free char *hier_path = path[0] == '/' ? cp_xstrdup (path) : cp_xasprintf ("/%s", path);
      if (pick_mount (&t, version, controller, hier_path, &m, err) < 0)
        return -1;
      below = path_below (hier_path, m->root);
    }
  if (strcmp (below, "/") == 0)
    return cp_fail_input (err, "`%s` is the root of the %s hierarchy mounted at %s, not a container's cgroup", path,
                          controller, m->mount_point);
  if (m->mount_point[0] != '/' || strlen (m->mount_point) > CP_CGROUP_MAX_PATH)
    return cp_fail_errno (err, 0, "unusable mount point `%s`", m->mount_point);
  out->version = version;
  out->mount = cp_xstrdup (m->mount_point);
  out->mount_root = cp_xstrdup (m->root);
  out->path = cp_steal_pointer (&below);
  out->dev = m->dev;
  return 0;
}

void
cp_cgroup_where_clear (struct cp_cgroup_where *w)
{
  free (w->mount);
  free (w->mount_root);
  free (w->path);
  memset (w, 0, sizeof *w);
}

static void
where_cleanup_fn (struct cp_cgroup_where *w)
{
  cp_cgroup_where_clear (w);
}
#define cleanup_where __attribute__ ((cleanup (where_cleanup_fn)))

/* ---- opening directories -------------------------------------------------------- */

static int
open_dir_error (int e, const char *target, cp_error_t *err)
{
  if (e == ELOOP || e == ENOTDIR)
    return cp_fail_errno (err, e, "open %s (not a directory, or a symlink on the way: symlinks are not followed)",
                          target);
  if (e == EXDEV)
    return cp_fail_errno (err, e, "open %s (it leaves the cgroup filesystem)", target);
  return cp_fail_errno (err, e, "open %s", target);
}

int
cp_cgroup_open_dir (int dirfd, const char *dirname, const char *rel, unsigned flags, cp_error_t *err)
{
  bool absolute = rel[0] == '/';
  const char *comps = absolute ? rel + 1 : rel;
  const char *base = dirname ? dirname : ".";
  cleanup_free char *target = NULL;
  if (absolute || *rel == '\0')
    target = cp_xstrdup (absolute ? rel : base);
  else
    target = cp_xasprintf ("%s/%s", strcmp (base, "/") == 0 ? "" : base, rel);
  if (check_components (comps, target, CP_ERR_RUNTIME, err) < 0)
    return -1;

  if (!(flags & CP_CGROUP_OPEN_NO_OPENAT2))
    {
      struct open_how how = {
        .flags = OPEN_DIR_FLAGS,
        .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
      };
      if (!absolute)
        how.resolve |= RESOLVE_BENEATH;
      if (flags & CP_CGROUP_OPEN_SAME_MOUNT)
        how.resolve |= RESOLVE_NO_XDEV;
      const char *arg = *comps ? rel : absolute ? "/" : ".";
      int fd = (int) syscall (SYS_openat2, absolute ? AT_FDCWD : dirfd, arg, &how, sizeof how);
      if (fd >= 0)
        return fd;
      /* ENOSYS: a kernel before 5.6.  EPERM: a seccomp filter that does not know
         openat2 (O_PATH opens have no other reason to answer EPERM).  The walk
         below is as strict, one component at a time. */
      if (errno != ENOSYS && errno != EPERM)
        return open_dir_error (errno, target, err);
    }

  cleanup_close int cur = absolute ? open ("/", OPEN_DIR_FLAGS) : fcntl (dirfd, F_DUPFD_CLOEXEC, 3);
  if (cur < 0)
    return cp_fail_errno (err, errno, "open %s", absolute ? "/" : base);
  struct stat st0;
  if ((flags & CP_CGROUP_OPEN_SAME_MOUNT) && fstat (cur, &st0) < 0)
    return cp_fail_errno (err, errno, "stat %s", absolute ? "/" : base);
  const char *p = comps;
  while (*p)
    {
      const char *slash = strchr (p, '/');
      size_t n = slash ? (size_t) (slash - p) : strlen (p);
      char name[NAME_MAX + 1];
      memcpy (name, p, n);
      name[n] = '\0';
      int next = openat (cur, name, OPEN_DIR_FLAGS);
      if (next < 0)
        return open_dir_error (errno, target, err);
      close (cur);
      cur = next;
      if (flags & CP_CGROUP_OPEN_SAME_MOUNT)
        {
          struct stat st;
          if (fstat (cur, &st) < 0)
            return cp_fail_errno (err, errno, "stat %s", target);
          if (st.st_dev != st0.st_dev)
            return open_dir_error (EXDEV, target, err);
        }
      p = slash ? slash + 1 : p + n;
    }
  int fd = cur;
  cur = -1;
  return fd;
}

static bool
is_cgroup_magic (int version, long type)
{
  if (version == 1)
    return type == (long) CGROUP_SUPER_MAGIC;
  return type == (long) CGROUP2_SUPER_MAGIC;
}

int
cp_cgroup_open_where (const struct cp_cgroup_where *w, struct cp_cgroup **out, cp_error_t *err)
{
  if (w->version != 1 && w->version != 2)
    return cp_fail_errno (err, 0, "cgroup version %d is neither 1 nor 2", w->version);
  if (w->mount == NULL || w->mount[0] != '/' || strlen (w->mount) > CP_CGROUP_MAX_PATH)
    return cp_fail_errno (err, 0, "unusable mount point `%s`", w->mount ? w->mount : "");
  if (w->path == NULL || w->path[0] != '/' || strlen (w->path) > CP_CGROUP_MAX_PATH)
    return cp_fail_errno (err, 0, "unusable cgroup path `%s`", w->path ? w->path : "");
  if (strcmp (w->path, "/") == 0)
    return cp_fail_errno (err, 0, "%s is the root of the cgroup mount, not a container's cgroup", w->mount);

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
    return cp_fail_errno (err, 0,
                          "%s is not the cgroup v%d filesystem /proc/self/mountinfo lists there "
                          "(device %u:%u, expected %u:%u; mounted over?)",
                          w->mount, w->version, major (st.st_dev), minor (st.st_dev), major (w->dev), minor (w->dev));
  cleanup_close int dirfd = cp_cgroup_open_dir (mountfd, w->mount, w->path + 1, CP_CGROUP_OPEN_SAME_MOUNT, err);
  if (dirfd < 0)
    return -1;

  struct cp_cgroup *cg = cp_xmalloc0 (sizeof *cg);
  cg->version = w->version;
  cg->mount = cp_xstrdup (w->mount);
  cg->path = cp_xstrdup (w->path);
  cg->dirfd = dirfd;
  cg->mountfd = mountfd;
  dirfd = -1;
  mountfd = -1;
  *out = cg;
  return 0;
}

/* ---- finding the cgroup ----------------------------------------------------------- */

static int
read_mountinfo (char **out, cp_error_t *err)
{
  return read_path_bounded ("/proc/self/mountinfo", CP_CGROUP_MOUNTINFO_MAX, out, err);
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
  if (read_path_bounded (proc, CP_CGROUP_PROC_CGROUP_MAX, &cgroups, err) < 0)
    return -1;
  if (read_mountinfo (&mountinfo, err) < 0)
    return -1;
  cleanup_where struct cp_cgroup_where w = { 0 };
  if (cp_cgroup_locate_from_text (mountinfo, cgroups, controller, &w, err) < 0)
    return cp_error_wrap (err, "%s cgroup of pid %d", controller, (int) pid);
  if (strcmp (w.path, "/") == 0)
    return cp_fail_errno (err, 0,
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

int
cp_cgroup_from_path (const char *path, struct cp_cgroup **out, cp_error_t *err)
{
  cleanup_free char *self = NULL;
  cleanup_free char *mountinfo = NULL;
  if (read_path_bounded ("/proc/self/cgroup", CP_CGROUP_PROC_CGROUP_MAX, &self, err) < 0)
    return -1;
  if (read_mountinfo (&mountinfo, err) < 0)
    return -1;
  cleanup_where struct cp_cgroup_where w = { 0 };
  if (cp_cgroup_resolve_from_text (mountinfo, self, "cpuset", path, &w, err) < 0)
    return -1;
  if (cp_cgroup_open_where (&w, out, err) < 0)
    {
      /* The user named something that is not a cgroup directory. */
      int e = err && *err ? (*err)->errnum : 0;
      if (err && *err && (e == ENOENT || e == ENOTDIR || e == ELOOP || e == EXDEV))
        (*err)->kind = CP_ERR_INPUT;
      return cp_error_wrap (err, "cgroup `%s`", path);
    }
  return 0;
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

static int
read_pair (int fd, const char *dirname, const char *cpus_file, const char *cpus_fallback, const char *mems_file,
           const char *mems_fallback, hwloc_bitmap_t cpus, hwloc_bitmap_t mems, cp_error_t *err)
{
  if (cpus)
    {
      int r = read_cpulist_at (fd, dirname, cpus_file, cpus, err);
      if (r < 0 && cpus_fallback && err && *err && (*err)->errnum == ENOENT)
        {
          cp_error_free (err);
          r = read_cpulist_at (fd, dirname, cpus_fallback, cpus, err);
        }
      if (r < 0)
        return -1;
    }
  if (mems)
    {
      int r = read_cpulist_at (fd, dirname, mems_file, mems, err);
      if (r < 0 && mems_fallback && err && *err && (*err)->errnum == ENOENT)
        {
          cp_error_free (err);
          r = read_cpulist_at (fd, dirname, mems_fallback, mems, err);
        }
      if (r < 0)
        return -1;
    }
  return 0;
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
          if (read_at (fd, name, "cgroup.controllers", &text, err) < 0)
            return -1;
          size_t len = strcspn (text, "\n");
          if (!has_token (text, len, controller, ' '))
            return cp_fail_errno (err, 0,
                                  "%s is not in %s/cgroup.controllers (`%.*s`): it is bound to a cgroup v1 "
                                  "hierarchy, or disabled",
                                  controller, name, (int) len, text);
          free (text);
          text = NULL;
        }
      if (read_at (fd, name, "cgroup.subtree_control", &text, err) < 0)
        return -1;
      if (has_token (text, strcspn (text, "\n"), controller, ' '))
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

/* ---- existence, freeing --------------------------------------------------------------- */

static int
state_of (cp_error_t e)
{
  int n = e ? e->errnum : 0;
  return n == ENOENT || n == ENOTDIR ? 0 : -1;
}

int
cp_cgroup_dir_state (const char *mount, const char *path)
{
  if (mount == NULL || path == NULL || mount[0] != '/' || path[0] != '/' || strlen (mount) > CP_CGROUP_MAX_PATH
      || strlen (path) > CP_CGROUP_MAX_PATH)
    return 0;
  cleanup_error cp_error_t err = NULL;
  if (check_components (path + 1, path, CP_ERR_INPUT, &err) < 0)
    return 0;
  cleanup_close int mountfd = cp_cgroup_open_dir (AT_FDCWD, NULL, mount, 0, &err);
  if (mountfd < 0)
    return state_of (err);
  struct statfs sfs;
  if (fstatfs (mountfd, &sfs) < 0 || !(is_cgroup_magic (1, (long) sfs.f_type) || is_cgroup_magic (2, (long) sfs.f_type)))
    return -1;
  cleanup_close int fd = cp_cgroup_open_dir (mountfd, mount, path + 1, CP_CGROUP_OPEN_SAME_MOUNT, &err);
  if (fd < 0)
    return state_of (err);
  return 1;
}

bool
cp_cgroup_dir_exists (const char *mount, const char *path)
{
  return cp_cgroup_dir_state (mount, path) == 1;
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
