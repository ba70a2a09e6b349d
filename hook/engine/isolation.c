/* cachepin: cachepin.io/isolate, the steps (see isolation.h; the kernel's files are
 * hook/host/partition.c, the records ledger_partition.h, the rule policy/isolate.h). */
#define _GNU_SOURCE
#include "isolation.h"

#include <errno.h>
#include <string.h>

#include "bitmap.h"
#include "cpulist.h"
#include "fault.h"
#include "isolate.h"
#include "ledger.h"
#include "log.h"
#include "util.h"

CP_FAULT_HOOK (cp_isolate_set_fault_hook, cp_isolate_fault_fn);

#ifdef CACHEPIN_FAULT_INJECTION
const char *
cp_isolate_fault_name (enum cp_isolate_fault_point point)
{
  static const char *const names[CP_ISOLATE_FAULT_COUNT] = {
    "recorded", "ancestor", "exclusive", "root", "unflagged", "member", "undo-ancestor",
  };
  return point < CP_ISOLATE_FAULT_COUNT ? names[point] : NULL;
}
#endif

static bool repairs = true;
static const char *later = "no cgroup yet"; /* why a target without a cgroup is not isolated (NULL: it is, later) */

void
cp_isolate_later (const char *why_not)
{
  later = why_not;
}

void
cp_isolate_repairs (bool on)
{
  repairs = on;
}

/* ---- open and decide --------------------------------------------------------------- */

/* Not to be had (WHY): a warning and no isolation, or a strict request refused. */
static int
without (struct cp_isolate *iso, const char *id, const char *why, bool strict, cp_error_t *err)
{
  iso->granted = false;
  if (strict)
    return cp_fail_unsatisfiable (err, "cachepin.io/isolate: %s", why);
  cp_log_tell (CP_LOG_WARNING, "%s: cachepin.io/isolate: %s: placed without isolation", id, why);
  return 0;
}

int
cp_isolate_open (const struct cp_hostconfig *hc, const struct cp_target *t, const struct cp_container_request *creq,
                 struct cp_isolate *iso, cp_error_t *err)
{
  *iso = (struct cp_isolate) { .asked = creq->isolate };
  if (!iso->asked)
    return 0;
  bool strict = creq->req.strict;
  if (hc->isolate == CP_ISOLATE_DENY)
    return without (iso, t->id, "host setting isolate is deny", strict, err);
  if (t->cgroup == NULL && later)
    {
      cleanup_free char *why = cp_xasprintf ("unsupported here (%s)", later);
      return without (iso, t->id, why, strict, err);
    }
  if (t->cgroup == NULL)
    {
      iso->granted = true; /* judged by the front end at its start; made by cp_placer_isolate_started() */
      return 0;
    }
  cleanup_free char *missing = NULL;
  cleanup_error cp_error_t probe = NULL;
  int r = cp_partition_supported (t->cgroup, &missing, &probe);
  if (r < 0)
    missing = cp_xasprintf ("could not tell: %s", cp_error_message (probe));
  if (r != 1)
    {
      cleanup_free char *why = cp_xasprintf ("unsupported here (%s)", missing);
      return without (iso, t->id, why, strict, err);
    }
  iso->granted = true;
  return 0;
}

int
cp_isolate_decide (struct cp_isolate *iso, const struct cp_topo *topo, const char *id, hwloc_const_bitmap_t cpus,
                   bool strict, cp_error_t *err)
{
  if (!iso->granted)
    return 0;
  cleanup_error cp_error_t no = NULL;
  if (cp_isolate_check (topo, cpus, &no) == 0)
    return 0;
  iso->granted = false;
  if (strict)
    return cp_fail_unsatisfiable (err, "%s", cp_error_message (no));
  cp_log_tell (CP_LOG_WARNING, "%s: %s: placed without isolation", id, cp_error_message (no));
  return 0;
}

/* ---- undo ------------------------------------------------------------------------------ */

static size_t
depth (const char *path)
{
  size_t n = 0;
  for (const char *p = path; *p; p++)
    n += *p == '/';
  return n;
}

static bool
gone (cp_error_t e)
{
  return cp_error_errno (e) == ENOENT;
}

/* The tree of mount MOUNT: HINT's fd when it is that mount (the sandbox may
   forbid opening it again), else opened by name. */
static struct cp_partition_tree
tree_for (const char *mount, const struct cp_partition_tree *hint)
{
  if (hint && strcmp (hint->mount, mount) == 0)
    return *hint;
  return (struct cp_partition_tree) { .mount = mount, .mountfd = -1 };
}

/* The writes undoing R (see undo_one()). */
static int
undo_writes (const struct cp_ledger_partition *r, const struct cp_partition_tree *tree, cp_error_t *err)
{
  if (r->root)
    {
      if (cp_partition_write_state (tree, r->cgroup, CP_PARTITION_MEMBER, err) < 0)
        return -1;
      FAULT (CP_ISOLATE_FAULT_MEMBER);
      cleanup_bitmap hwloc_bitmap_t none = cp_bitmap_new ();
      return cp_partition_write_exclusive (tree, r->cgroup, none, err);
    }
  cleanup_bitmap hwloc_bitmap_t cur = cp_bitmap_new ();
  if (cp_partition_read_cpus (tree, r->cgroup, CP_PARTITION_EXCLUSIVE, cur, err) < 0)
    return -1;
  if (hwloc_bitmap_intersects (cur, r->added))
    {
      hwloc_bitmap_andnot (cur, cur, r->added);
      if (cp_partition_write_exclusive (tree, r->cgroup, cur, err) < 0)
        return -1;
    }
  FAULT (CP_ISOLATE_FAULT_UNDO_ANCESTOR);
  return 0;
}

/* Undo one record R.  A cgroup that is gone has nothing left to undo. */
static int
undo_one (const struct cp_ledger_partition *r, const struct cp_partition_tree *hint, cp_error_t *err)
{
  struct cp_partition_tree tree = tree_for (r->cgroup_mount, hint);
  cleanup_error cp_error_t e = NULL;
  if (undo_writes (r, &tree, &e) == 0 || gone (e))
    return 0;
  cp_error_free (err);
  *err = cp_steal_pointer (&e);
  return -1;
}

/* Undo ID's records, deepest first (the partition before its ancestors), then
   drop them (in L, not committed).  On a failure they are all kept. */
static int
undo (struct cp_ledger *l, const char *id, const struct cp_partition_tree *hint, cp_error_t *err)
{
  size_t n = cp_ledger_partition_count (l);
  size_t max_depth = 0;
  for (size_t i = 0; i < n; i++)
    if (strcmp (cp_ledger_partition_at (l, i)->id, id) == 0)
      {
        size_t d = depth (cp_ledger_partition_at (l, i)->cgroup);
        max_depth = d > max_depth ? d : max_depth;
      }
  for (size_t d = max_depth; d > 0; d--)
    for (size_t i = 0; i < n; i++)
      {
        const struct cp_ledger_partition *r = cp_ledger_partition_at (l, i);
        if (strcmp (r->id, id) == 0 && depth (r->cgroup) == d && undo_one (r, hint, err) < 0)
          return -1;
      }
  return cp_ledger_partition_set (l, id, NULL, 0, err);
}

static bool
backed (const struct cp_ledger *l, const struct cp_ledger_partition *root)
{
  const struct cp_ledger_entry *e = cp_ledger_find (l, root->id);
  return e && e->isolated && strcmp (e->cgroup_mount, root->cgroup_mount) == 0
         && strcmp (e->cgroup, root->cgroup) == 0;
}

static void
commit_logged (struct cp_ledger *l, const char *what)
{
  cleanup_error cp_error_t e = NULL;
  if (cp_ledger_commit (l, &e) < 0)
    cp_log (CP_LOG_WARNING, "%s: %s", what, cp_error_message (e));
}

/* A partition that turned invalid since it was made (an ancestor's exclusive CPUs
   taken away, a sibling's cpuset.cpus): said once, as drift is, and once more
   when it is valid again.  Its CPUs stay held: it is still the container's. */
static bool
judge_validity (struct cp_ledger *l, const struct cp_ledger_partition *r, const struct cp_partition_tree *hint)
{
  struct cp_partition_tree tree = tree_for (r->cgroup_mount, hint);
  struct cp_partition_state st;
  cleanup_error cp_error_t e = NULL;
  if (cp_partition_read_state (&tree, r->cgroup, &st, &e) < 0)
    return false; /* gone or unreadable: reconcile judges the entry */
  bool invalid = st.invalid || st.kind != CP_PARTITION_ROOT;
  if (invalid == r->invalid)
    return false;
  cleanup_free char *cpus = cp_cpulist_format (r->added);
  if (invalid)
    cp_log (CP_LOG_WARNING, "the partition of %s (CPUs %s) is no longer valid (%s): other cgroups may run on its "
                            "CPUs again; its CPUs stay held until it is released", r->id, cpus,
            st.reason[0] ? st.reason : st.kind == CP_PARTITION_MEMBER ? "it reads member" : "it reads invalid");
  else
    cp_log (CP_LOG_INFO, "the partition of %s (CPUs %s) is valid again", r->id, cpus);
  cp_ledger_partition_mark (l, r->id, invalid);
  return true;
}

static bool
listed (const char *id, char *const *ids, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp (ids[i], id) == 0)
      return true;
  return false;
}

void
cp_isolate_reconcile (struct cp_ledger *l, const struct cp_partition_tree *hint, char *const *gone, size_t n)
{
  if (!repairs || cp_ledger_partition_count (l) == 0)
    return;
  bool changed = false;
  /* One id at a time: an undo changes the records. */
  for (size_t i = 0; i < cp_ledger_partition_count (l);)
    {
      const struct cp_ledger_partition *r = cp_ledger_partition_at (l, i);
      if (r->root && backed (l, r) && judge_validity (l, r, hint))
        changed = true;
      if (!r->root || backed (l, r))
        {
          i++;
          continue;
        }
      cleanup_free char *id = cp_xstrdup (r->id);
      cleanup_free char *cpus = cp_cpulist_format (r->added);
      cleanup_error cp_error_t e = NULL;
      if (undo (l, id, hint, &e) < 0)
        {
          cp_log (CP_LOG_WARNING, "the partition of %s (CPUs %s) could not be undone: %s; the next run tries again",
                  id, cpus, cp_error_message (e));
          i++;
          continue;
        }
      cp_log (CP_LOG_INFO, "%s the partition of %s (CPUs %s)", listed (id, gone, n) ? "released" : "repaired", id,
              cpus);
      changed = true;
      i = 0;
    }
  if (changed)
    commit_logged (l, "partitions repaired or judged, but the ledger");
}

int
cp_isolate_release (struct cp_ledger *l, const char *id, cp_error_t *err)
{
  const struct cp_ledger_entry *e = cp_ledger_find (l, id);
  const struct cp_ledger_partition *root = cp_ledger_partition_root (l, id);
  if (e == NULL || !e->isolated || root == NULL)
    return 0;
  /* Unflagged first: a kill during the undo leaves records nothing backs, which
     the next run undoes. */
  struct cp_ledger_entry copy = *e;
  copy.isolated = false;
  if (cp_ledger_put (l, &copy, err) < 0 || cp_ledger_commit (l, err) < 0)
    return cp_error_wrap (err, "release of the partition of %s", id);
  FAULT (CP_ISOLATE_FAULT_UNFLAGGED);
  cleanup_free char *cpus = cp_cpulist_format (cp_ledger_partition_root (l, id)->added);
  cleanup_error cp_error_t u = NULL;
  if (undo (l, id, NULL, &u) < 0)
    {
      cp_log (CP_LOG_WARNING, "the partition of %s (CPUs %s) could not be released: %s; the next run tries again", id,
              cpus, cp_error_message (u));
      return 0;
    }
  cp_log (CP_LOG_INFO, "released the partition of %s (CPUs %s)", id, cpus);
  return cp_ledger_commit (l, err);
}

/* ---- apply ------------------------------------------------------------------------------ */

/* The ancestors of PATH below the root, top down ("/a", "/a/b" for "/a/b/c"). */
static char **
ancestors_of (const char *path, size_t *n)
{
  size_t d = depth (path);
  char **a = cp_xcalloc (d, sizeof *a);
  *n = 0;
  for (const char *p = strchr (path + 1, '/'); p; p = strchr (p + 1, '/'))
    a[(*n)++] = cp_xstrndup (path, (size_t) (p - path));
  return a;
}

static void
free_ancestors (char **a, size_t n)
{
  for (size_t i = 0; i < n; i++)
    free (a[i]);
  free (a);
}

/* What the read-back finds wrong (NULL: the partition is as written). */
static char *
read_back (const struct cp_partition_tree *tree, const char *path, const char *parent, hwloc_const_bitmap_t cpus)
{
  struct cp_partition_state st;
  cleanup_error cp_error_t e = NULL;
  if (cp_partition_read_state (tree, path, &st, &e) < 0)
    return cp_xstrdup (cp_error_message (e));
  if (st.invalid)
    return cp_xstrdup (st.reason[0] ? st.reason : "the partition reads invalid, no reason given");
  if (st.kind != CP_PARTITION_ROOT)
    return cp_xasprintf ("%s reads %s, not root", CP_PARTITION_FILE,
                         st.kind == CP_PARTITION_MEMBER ? "member" : "isolated");
  cleanup_bitmap hwloc_bitmap_t got = cp_bitmap_new ();
  if (cp_partition_read_cpus (tree, path, CP_PARTITION_EXCLUSIVE_EFFECTIVE, got, &e) < 0)
    return cp_xstrdup (cp_error_message (e));
  if (!hwloc_bitmap_isequal (got, cpus))
    {
      cleanup_free char *g = cp_cpulist_format (got);
      return cp_xasprintf ("%s is `%s`", CP_PARTITION_EXCLUSIVE_EFFECTIVE, g);
    }
  if (cp_partition_read_cpus (tree, parent, CP_PARTITION_CPUS_EFFECTIVE, got, &e) < 0)
    return cp_xstrdup (cp_error_message (e));
  if (hwloc_bitmap_intersects (got, cpus))
    {
      cleanup_free char *g = cp_cpulist_format (got);
      return cp_xasprintf ("the parent's %s still has them (`%s`)", CP_PARTITION_CPUS_EFFECTIVE, g);
    }
  return NULL;
}

/* The records of T's partition on CPUS: the ancestors' CPUs read into CUR. */
static int
record (struct cp_ledger *l, const struct cp_target *t, const struct cp_partition_tree *tree, char **anc, size_t n,
        hwloc_bitmap_t *cur, hwloc_const_bitmap_t cpus, cp_error_t *err)
{
  struct cp_ledger_partition *recs = cp_xcalloc (n + 1, sizeof *recs);
  size_t k = 0;
  int r = 0;
  for (size_t i = 0; i < n && r == 0; i++)
    {
      r = cp_partition_read_cpus (tree, anc[i], CP_PARTITION_EXCLUSIVE, cur[i], err);
      if (r == 0 && !hwloc_bitmap_isincluded (cpus, cur[i]))
        {
          recs[k] = (struct cp_ledger_partition) { .id = (char *) t->id, .cgroup_mount = (char *) t->cgroup_mount,
                                                   .cgroup = anc[i], .added = cp_bitmap_new () };
          hwloc_bitmap_andnot (recs[k++].added, cpus, cur[i]);
        }
    }
  recs[k++] = (struct cp_ledger_partition) { .id = (char *) t->id, .cgroup_mount = (char *) t->cgroup_mount,
                                             .cgroup = (char *) t->cgroup_path, .added = (hwloc_bitmap_t) cpus,
                                             .root = true };
  if (r == 0)
    r = cp_ledger_partition_set (l, t->id, recs, k, err);
  for (size_t i = 0; i + 1 < k; i++)
    hwloc_bitmap_free (recs[i].added);
  free (recs);
  return r;
}

/* The writes, top down; the first failure's message is the reason. */
static int
write_all (const struct cp_partition_tree *tree, const char *path, char **anc, size_t n, hwloc_bitmap_t *cur,
           hwloc_const_bitmap_t cpus, cp_error_t *err)
{
  for (size_t i = 0; i < n; i++)
    {
      if (hwloc_bitmap_isincluded (cpus, cur[i]))
        continue;
      hwloc_bitmap_or (cur[i], cur[i], cpus);
      if (cp_partition_write_exclusive (tree, anc[i], cur[i], err) < 0)
        return -1;
      FAULT (CP_ISOLATE_FAULT_ANCESTOR);
    }
  if (cp_partition_write_exclusive (tree, path, cpus, err) < 0)
    return -1;
  FAULT (CP_ISOLATE_FAULT_EXCLUSIVE);
  if (cp_partition_write_state (tree, path, CP_PARTITION_ROOT, err) < 0)
    return -1;
  FAULT (CP_ISOLATE_FAULT_ROOT);
  return 0;
}

/* The kernel refused (WHY): undone, and a warning, or a strict request's error. */
static int
refused (struct cp_ledger *l, const struct cp_target *t, const struct cp_partition_tree *tree, const char *why,
         bool strict, cp_error_t *err)
{
  cleanup_error cp_error_t u = NULL;
  if (undo (l, t->id, tree, &u) < 0)
    cp_log (CP_LOG_WARNING, "%s: the partition could not be undone: %s; the next run tries again", t->id,
            cp_error_message (u));
  if (cp_ledger_commit (l, err) < 0)
    return -1;
  if (strict)
    return cp_fail_unsatisfiable (err, "cachepin.io/isolate: the kernel refused the partition (%s)", why);
  cp_log_tell (CP_LOG_WARNING, "%s: cachepin.io/isolate: the kernel refused the partition (%s): undone, placed without "
                          "isolation", t->id, why);
  return 0;
}

int
cp_isolate_apply (struct cp_isolate *iso, struct cp_ledger *l, const struct cp_target *t, hwloc_const_bitmap_t cpus,
                  bool strict, cp_error_t *err)
{
  if (!iso->granted)
    return 0;
  const struct cp_partition_tree tree = { .mount = t->cgroup ? t->cgroup->mount : t->cgroup_mount,
                                          .mountfd = t->cgroup ? t->cgroup->mountfd : -1 };
  size_t n;
  char **anc = ancestors_of (t->cgroup_path, &n);
  hwloc_bitmap_t *cur = cp_xcalloc (n + 1, sizeof *cur);
  for (size_t i = 0; i < n; i++)
    cur[i] = cp_bitmap_new ();
  cleanup_error cp_error_t e = NULL;
  cleanup_free char *why = NULL;
  int r = 0;
  /* Recorded and committed before the first write: a kill after it leaves
     records nothing backs yet, which the next run undoes. */
  if (record (l, t, &tree, anc, n, cur, cpus, &e) < 0 || cp_ledger_commit (l, &e) < 0)
    why = cp_xstrdup (cp_error_message (e));
  else
    {
      FAULT (CP_ISOLATE_FAULT_RECORDED);
      if (write_all (&tree, t->cgroup_path, anc, n, cur, cpus, &e) < 0)
        why = cp_xstrdup (cp_error_message (e));
      else
        why = read_back (&tree, t->cgroup_path, n ? anc[n - 1] : "/", cpus);
    }
  if (why)
    r = refused (l, t, &tree, why, strict, err);
  else
    {
      struct cp_ledger_entry copy = *cp_ledger_find (l, t->id);
      copy.isolated = true;
      r = cp_ledger_put (l, &copy, err) < 0 || cp_ledger_commit (l, err) < 0 ? -1 : 0;
      cleanup_free char *list = cp_cpulist_format (cpus);
      if (r == 0)
        cp_log (CP_LOG_INFO, "isolated %s on CPUs %s (partition root)", t->id, list);
    }
  for (size_t i = 0; i < n; i++)
    hwloc_bitmap_free (cur[i]);
  free (cur);
  free_ancestors (anc, n);
  return r;
}

/* ---- status ---------------------------------------------------------------------------- */

json_object *
cp_isolate_status_json (const struct cp_ledger_entry *e)
{
  if (!e->isolated)
    return NULL;
  const struct cp_partition_tree tree = { .mount = e->cgroup_mount, .mountfd = -1 };
  json_object *o = json_object_new_object ();
  struct cp_partition_state st;
  cleanup_error cp_error_t err = NULL;
  if (cp_partition_read_state (&tree, e->cgroup, &st, &err) == 0)
    {
      static const char *const kinds[] = { "member", "root", "isolated" };
      cleanup_free char *text = cp_xasprintf ("%s%s%s%s%s", kinds[st.kind], st.invalid ? " invalid" : "",
                                              st.reason[0] ? " (" : "", st.reason, st.reason[0] ? ")" : "");
      json_object_object_add (o, "partition", json_object_new_string (text));
    }
  else
    json_object_object_add (o, "partition", NULL);
  cleanup_bitmap hwloc_bitmap_t eff = cp_bitmap_new ();
  cleanup_error cp_error_t err2 = NULL;
  if (cp_partition_read_cpus (&tree, e->cgroup, CP_PARTITION_EXCLUSIVE_EFFECTIVE, eff, &err2) == 0)
    {
      cleanup_free char *s = cp_cpulist_format (eff);
      json_object_object_add (o, "exclusive_effective", json_object_new_string (s));
    }
  else
    json_object_object_add (o, "exclusive_effective", NULL);
  return o;
}
