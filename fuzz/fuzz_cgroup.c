/* Fuzz the cgroup locators (hook/host/cgroup_parse.h): cp_cgroup_locate_from_text()
 * on /proc/self/mountinfo and /proc/<pid>/cgroup texts, and
 * cp_cgroup_resolve_from_text() on those and the user's --cgroup path.  What they
 * return is what a root process then opens and writes CPUs into.
 *
 * Input: one byte choosing the controller (its value mod 4: cpuset, hugetlb, cpu,
 * memory), then MOUNTINFO NUL PROC_CGROUP NUL PATH (missing parts are empty).
 *
 * Invariants on a located or resolved cgroup:
 *   - version 1 or 2; the mount point is absolute, at most CP_CGROUP_MAX_PATH
 *     bytes, with no empty, "." or ".." component; so is the path below it,
 *     which starts with "/": mount + path lies below the mount;
 *   - located: the mount's root is such a path too, the path does not carry the
 *     kernel's " (deleted)" mark, and resolving the hierarchy path (mount root +
 *     path, relative) gives the very same place (the hook and `cachepin apply`
 *     agree on where a cgroup is);
 *   - resolved: never the mount's root, and it is what the user named: mount +
 *     path (an absolute path under the mount) or mount root + path (a path in
 *     the hierarchy);
 *   - cp_cgroup_path_problem() finds a problem in the user's path exactly when a
 *     reference split on '/' does.
 * On failure: the output untouched, an error without errno (nothing was read),
 * one printable line; runtime for the kernel's texts, and for resolve input or
 * runtime.  No crash, no leak, no UB on any input. */
#include "common.h"
#include "cgroup_parse.h"
#include "util.h"

static const char *const CONTROLLERS[] = { "cpuset", "hugetlb", "cpu", "memory" };

/* The reference for cp_cgroup_path_problem(): every '/'-separated component of P
 * (no leading '/') is non-empty, not "." nor "..", at most 255 bytes. */
static bool
components_ok (const char *p)
{
  if (*p == '\0')
    return true;
  for (;;)
    {
      size_t n = strcspn (p, "/");
      if (n == 0 || n > 255 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
        return false;
      if (p[n] == '\0')
        return true;
      p += n + 1;
    }
}

static void
check_clean (const char *p, bool root_ok)
{
  FUZZ_CHECK_MSG (p != NULL && p[0] == '/', "`%s` is not absolute", p ? p : "(null)");
  FUZZ_CHECK (strlen (p) <= CP_CGROUP_MAX_PATH);
  FUZZ_CHECK_MSG (components_ok (p + 1), "`%s` has an empty, `.`, `..` or too long component", p);
  if (!root_ok)
    FUZZ_CHECK_MSG (strcmp (p, "/") != 0, "the root");
}

static void
check_where (const struct cp_cgroup_where *w)
{
  FUZZ_CHECK (w->version == 1 || w->version == 2);
  check_clean (w->mount, true);
  check_clean (w->path, true);
  FUZZ_CHECK (w->mount_root != NULL);
}

static void
check_error (int r, cp_error_t err, const struct cp_cgroup_where *w, bool input_ok)
{
  FUZZ_CHECK (r < 0 && err != NULL);
  FUZZ_CHECK (fuzz_all_zero (w, sizeof *w));
  enum cp_error_kind kind = cp_error_kind (err);
  FUZZ_CHECK_MSG (kind == CP_ERR_RUNTIME || (input_ok && kind == CP_ERR_INPUT), "kind %d: %s", (int) kind,
                  cp_error_message (err));
  FUZZ_CHECK_MSG (cp_error_errno (err) == 0, "errno %d: %s", cp_error_errno (err), cp_error_message (err));
  const char *msg = cp_error_message (err);
  FUZZ_CHECK (msg[0] != '\0');
  for (const char *p = msg; *p; p++)
    FUZZ_CHECK_MSG ((unsigned char) *p >= 0x20 && *p != 0x7f, "control character in \"%s\"", msg);
}

/* A + B for two absolute paths, "/" being the empty path. */
static char *
join (const char *a, const char *b)
{
  if (strcmp (a, "/") == 0)
    return cp_xstrdup (b);
  if (strcmp (b, "/") == 0)
    return cp_xstrdup (a);
  return cp_xasprintf ("%s%s", a, b);
}

static bool
same_where (const struct cp_cgroup_where *a, const struct cp_cgroup_where *b)
{
  return a->version == b->version && strcmp (a->mount, b->mount) == 0 && strcmp (a->mount_root, b->mount_root) == 0
         && strcmp (a->path, b->path) == 0 && a->dev == b->dev;
}

static void
fuzz_locate (const char *mountinfo, const char *proc_cgroup, const char *controller)
{
  struct cp_cgroup_where w = { 0 };
  cp_error_t err = NULL;
  int r = cp_cgroup_locate_from_text (mountinfo, proc_cgroup, controller, &w, &err);
  if (r < 0)
    {
      check_error (r, err, &w, false);
      cp_error_free (&err);
      return;
    }
  FUZZ_CHECK (r == 0 && err == NULL);
  check_where (&w);
  check_clean (w.mount_root, true);
  size_t len = strlen (w.path), mark = strlen (" (deleted)");
  FUZZ_CHECK (len < mark || strcmp (w.path + len - mark, " (deleted)") != 0);

  if (strcmp (w.path, "/") != 0)
    {
      char *hier = join (w.mount_root, w.path);
      struct cp_cgroup_where again = { 0 };
      r = cp_cgroup_resolve_from_text (mountinfo, proc_cgroup, controller, hier + 1, &again, &err);
      FUZZ_CHECK_MSG (r == 0, "located `%s` at %s, resolving it: %s", hier, w.mount, cp_error_message (err));
      FUZZ_CHECK_MSG (same_where (&w, &again), "located %s + %s, resolved %s + %s", w.mount, w.path, again.mount,
                      again.path);
      cp_cgroup_where_clear (&again);
      free (hier);
    }
  cp_cgroup_where_clear (&w);
}

static void
fuzz_resolve (const char *mountinfo, const char *self_cgroup, const char *controller, const char *path)
{
  struct cp_cgroup_where w = { 0 };
  cp_error_t err = NULL;
  int r = cp_cgroup_resolve_from_text (mountinfo, self_cgroup, controller, path, &w, &err);
  if (r < 0)
    {
      check_error (r, err, &w, true);
      cp_error_free (&err);
      return;
    }
  FUZZ_CHECK (r == 0 && err == NULL);
  check_where (&w);
  check_clean (w.path, false);
  char *named = path[0] == '/' ? cp_xstrdup (path) : cp_xasprintf ("/%s", path);
  char *under_mount = join (w.mount, w.path);
  char *in_hierarchy = w.mount_root[0] == '/' ? join (w.mount_root, w.path) : cp_xstrdup ("");
  FUZZ_CHECK_MSG ((path[0] == '/' && strcmp (under_mount, named) == 0) || strcmp (in_hierarchy, named) == 0,
                  "`%s` resolved to %s + %s (root %s)", path, w.mount, w.path, w.mount_root);
  free (named);
  free (under_mount);
  free (in_hierarchy);
  cp_cgroup_where_clear (&w);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  if (size == 0)
    return 0;
  const char *controller = CONTROLLERS[data[0] % CP_ARRAY_SIZE (CONTROLLERS)];
  char *text = fuzz_cstr (data + 1, size - 1);
  const char *end = text + size - 1, *parts[3] = { "", "", "" };
  const char *p = text;
  for (size_t i = 0; i < 3 && p <= end; i++)
    {
      parts[i] = p;
      p += strlen (p) + 1;
    }
  const char *mountinfo = parts[0], *proc_cgroup = parts[1], *path = parts[2];
  const char *rel = path[0] == '/' ? path + 1 : path;
  FUZZ_CHECK_MSG ((cp_cgroup_path_problem (rel) == NULL) == components_ok (rel), "`%s`: %s", rel,
                  cp_cgroup_path_problem (rel) ? cp_cgroup_path_problem (rel) : "(no problem)");
  fuzz_locate (mountinfo, proc_cgroup, controller);
  fuzz_resolve (mountinfo, proc_cgroup, controller, path);
  free (text);
  return 0;
}
