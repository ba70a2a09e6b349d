/* cachepin: where a cgroup is, from /proc/self/mountinfo and /proc/<pid>/cgroup
 * (see cgroup_parse.h).
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
 * /proc/<pid>/cgroup below, which are what ships, what fuzz/fuzz_cgroup.c fuzzes and
 * what tests/unit/test_cgroup.c
 * exercises on the real cgroupfs (that test also cross-checks libcgroup where it
 * does serve, and shows where it does not). */
#define _GNU_SOURCE
#include "cgroup_parse.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "util.h"

#define STR_(x) #x
#define STR(x) STR_ (x)

/* ---- paths ---------------------------------------------------------------------- */

bool
cp_cgroup_has_token (const char *list, size_t len, const char *token, char sep)
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

/* PREFIX is P or a component-wise prefix of it?  "/a" is a prefix of "/a" and
 * "/a/b", not of "/ab"; "/" is a prefix of every absolute path; a PREFIX that is
 * not absolute (an empty mountinfo field) is a prefix of nothing. */
static bool
path_has_prefix (const char *p, const char *prefix)
{
  if (prefix[0] != '/')
    return false;
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

const char *
cp_cgroup_path_problem (const char *p)
{
  if (*p == '\0')
    return NULL;
  for (;;)
    {
      const char *slash = strchr (p, '/');
      size_t n = slash ? (size_t) (slash - p) : strlen (p);
      if (n == 0)
        return "empty path component (`//` or a trailing `/`)";
      if (n == 1 && p[0] == '.')
        return "`.` component refused";
      if (n == 2 && p[0] == '.' && p[1] == '.')
        return "`..` component refused";
      if (n > NAME_MAX)
        return "path component longer than " STR (NAME_MAX) " bytes";
      if (slash == NULL)
        return NULL;
      p = slash + 1;
    }
}

/* A mount point we can use: absolute, not too long, no empty, "." or ".." component. */
static bool
usable_mount_point (const char *m)
{
  return m[0] == '/' && strlen (m) <= CP_CGROUP_MAX_PATH && cp_cgroup_path_problem (m + 1) == NULL;
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
        return cp_fail_runtime (err, "/proc/self/mountinfo line %u: too few fields", lineno);
    }
  char *f;
  while ((f = strsep (&p, " ")) != NULL && strcmp (f, "-") != 0)
    ;
  char *fstype = p ? strsep (&p, " ") : NULL;
  char *source = p ? strsep (&p, " ") : NULL;
  char *super_opts = p ? strsep (&p, " ") : NULL;
  if (f == NULL || fstype == NULL || source == NULL || super_opts == NULL)
    return cp_fail_runtime (err, "/proc/self/mountinfo line %u: no `-` separator or too few fields after it", lineno);
  const char *colon = strchr (fields[2], ':');
  unsigned maj, min;
  if (colon == NULL || !parse_uint (fields[2], colon, &maj) || !parse_uint (colon + 1, colon + strlen (colon), &min))
    return cp_fail_runtime (err, "/proc/self/mountinfo line %u: bad device `%s`", lineno, fields[2]);
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
  return strcmp (e->fstype, "cgroup") == 0
         && cp_cgroup_has_token (e->super_opts, strlen (e->super_opts), controller, ',');
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
    return cp_fail_runtime (err, "the cgroup v%d hierarchy holding %s is not mounted (no %s in /proc/self/mountinfo)",
                            version, controller, version == 1 ? "cgroup mount with that controller" : "cgroup2 mount");
  if (best == NULL)
    return cp_fail_runtime (err, "no mount of the cgroup v%d hierarchy holding %s shows `%s` (%s shows only `%s`)",
                            version, controller, hier_path, any->mount_point, any->root);
  if (version == 1 && cp_cgroup_has_token (best->super_opts, strlen (best->super_opts), "noprefix", ','))
    return cp_fail_runtime (err, "the %s hierarchy at %s is mounted with noprefix, which is not supported", controller,
                            best->mount_point);
  if (!usable_mount_point (best->mount_point))
    return cp_fail_runtime (err, "unusable mount point `%s`", best->mount_point);
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
            return cp_fail_runtime (err, "%s line %u: not `ID:CONTROLLERS:PATH`", what, lineno);
          const char *p = c2 + 1;
          if (id == 0 && c2 == c1 + 1)
            {
              if (v2)
                return cp_fail_runtime (err, "%s: two lines for the unified hierarchy", what);
              v2 = p;
              v2_len = (size_t) (end - p);
            }
          else if (cp_cgroup_has_token (c1 + 1, (size_t) (c2 - c1 - 1), controller, ','))
            {
              if (v1)
                return cp_fail_runtime (err, "%s: two lines for the %s hierarchy", what, controller);
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
    return cp_fail_runtime (err, "%s lists neither a cgroup v1 hierarchy with %s nor the unified hierarchy", what,
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
    return cp_fail_runtime (err, "cgroup `%s` has been removed (the kernel marks it `(deleted)`)", hier_path);
  if (hier_path[0] != '/')
    return cp_fail_runtime (err, "cgroup path `%s` is not absolute", hier_path);
  if (len > CP_CGROUP_MAX_PATH)
    return cp_fail_runtime (err, "cgroup path longer than %d bytes", CP_CGROUP_MAX_PATH);
  if (strncmp (hier_path, "/..", 3) == 0 && (hier_path[3] == '/' || hier_path[3] == '\0'))
    return cp_fail_runtime (err, "cgroup `%s` is outside our cgroup namespace", hier_path);
  const char *problem = cp_cgroup_path_problem (hier_path + 1);
  if (problem)
    return cp_fail_runtime (err, "`%s`: %s", hier_path, problem);

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
  const char *problem = cp_cgroup_path_problem (path[0] == '/' ? path + 1 : path);
  if (problem)
    return cp_fail_input (err, "`%s`: %s", path, problem);

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
  if (!usable_mount_point (m->mount_point))
    return cp_fail_runtime (err, "unusable mount point `%s`", m->mount_point);
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
