/* cachepin.io/isolate (issue 23): the kernel's text (hook/host/partition.c), the
 * ledger's partition records (hook/state/ledger_partition.c), and the engine's
 * steps (hook/engine/isolation.c) on a fake cgroup v2 tree: the order of the
 * writes, a partition made after the placement (the NRI plugin's), two isolated
 * containers under one parent (a union), a release that
 * removes only what cachepin added, the repair of a run cut short, a refusal
 * undone.  The fake tree (partition.h's io table) behaves as the kernel does for
 * these files: a sibling's exclusive CPUs refused, `root` read back as `root
 * invalid (REASON)` when told to, the CPUs of a valid partition taken from every
 * other cgroup's cpuset.cpus.effective.  This host's cpuset is on cgroup v1: the
 * real kernel's side is tests/vm's. */
#define _GNU_SOURCE
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cpulist.h"
#include "util.h"
#include "cgroup.h"
#include "isolate.h"
#include "isolation.h"
#include "ledger.h"
#include "ledger_codec_dom.h"
#include "partition.h"
#include "placer.h"

/* ---- the fake tree ------------------------------------------------------------------ */

#define ALL "0-7"

struct fcg
{
  const char *path;
  char exclusive[64];
  char partition[128];
};

static struct
{
  struct fcg cg[8];
  size_t n;
  char log[4096];          /* "PATH FILE=VALUE;" per write, in order */
  const char *invalid_why; /* `root` reads `root invalid (this)` */
} K;

static void
k_reset (void)
{
  memset (&K, 0, sizeof K);
  const char *paths[] = { "/xa", "/xa/ctr", "/xa/c2", "/xb" };
  for (size_t i = 0; i < CP_ARRAY_SIZE (paths); i++)
    {
      K.cg[i].path = paths[i];
      strcpy (K.cg[i].partition, "member");
    }
  K.n = CP_ARRAY_SIZE (paths);
}

static struct fcg *
k_find (const char *path)
{
  for (size_t i = 0; i < K.n; i++)
    if (strcmp (K.cg[i].path, path) == 0)
      return &K.cg[i];
  return NULL;
}

static bool
parent_of (const char *a, const char *b) /* a is b's parent */
{
  const char *slash = strrchr (b, '/');
  return strlen (a) == (size_t) (slash - b) && strncmp (a, b, strlen (a)) == 0;
}

/* What a valid partition other than PATH's takes from PATH. */
static hwloc_bitmap_t
k_effective (const char *path)
{
  hwloc_bitmap_t s = tu_set (ALL);
  for (size_t i = 0; i < K.n; i++)
    if (strcmp (K.cg[i].partition, "root") == 0 && strcmp (K.cg[i].path, path) != 0)
      {
        cleanup_bitmap hwloc_bitmap_t x = tu_set (K.cg[i].exclusive);
        hwloc_bitmap_andnot (s, s, x);
      }
  return s;
}

static int
k_read (const struct cp_partition_tree *t, const char *path, const char *file, char **text, cp_error_t *err)
{
  (void) t;
  struct fcg *c = k_find (path);
  if (c == NULL && strcmp (path, "/") != 0)
    return cp_fail_errno (err, ENOENT, "open %s", path);
  if (strcmp (file, CP_PARTITION_EXCLUSIVE) == 0 && c)
    *text = cp_xasprintf ("%s\n", c->exclusive);
  else if (strcmp (file, CP_PARTITION_FILE) == 0 && c)
    *text = cp_xasprintf ("%s\n", c->partition);
  else if (strcmp (file, CP_PARTITION_EXCLUSIVE_EFFECTIVE) == 0 && c)
    *text = cp_xasprintf ("%s\n", strcmp (c->partition, "root") == 0 ? c->exclusive : "");
  else if (strcmp (file, CP_PARTITION_CPUS_EFFECTIVE) == 0 || strcmp (file, "cpuset.cpus") == 0)
    {
      cleanup_bitmap hwloc_bitmap_t s = k_effective (path);
      cleanup_free char *l = cp_cpulist_format (s);
      *text = cp_xasprintf ("%s\n", l);
    }
  else
    return cp_fail_errno (err, ENOENT, "open %s/%s", path, file);
  return 0;
}

static int
k_write (const struct cp_partition_tree *t, const char *path, const char *file, const char *value, cp_error_t *err)
{
  (void) t;
  struct fcg *c = k_find (path);
  if (c == NULL)
    return cp_fail_errno (err, ENOENT, "open %s", path);
  size_t n = strlen (K.log);
  snprintf (K.log + n, sizeof K.log - n, "%s %s=%s;", path, file, strcmp (value, "\n") == 0 ? "" : value);
  if (strcmp (file, CP_PARTITION_EXCLUSIVE) == 0)
    {
      cleanup_bitmap hwloc_bitmap_t want = tu_set (strcmp (value, "\n") == 0 ? "" : value);
      for (size_t i = 0; i < K.n; i++) /* siblings' exclusive CPUs do not overlap */
        {
          cleanup_bitmap hwloc_bitmap_t other = tu_set (K.cg[i].exclusive);
          const char *slash = strrchr (path, '/');
          cleanup_free char *parent = cp_xstrndup (path, (size_t) (slash - path));
          bool sibling = K.cg[i].path != c->path && (*parent ? parent_of (parent, K.cg[i].path)
                                                              : strrchr (K.cg[i].path, '/') == K.cg[i].path);
          if (sibling && hwloc_bitmap_intersects (want, other))
            return cp_fail_errno (err, EINVAL, "write %s/%s", path, file);
        }
      snprintf (c->exclusive, sizeof c->exclusive, "%s", strcmp (value, "\n") == 0 ? "" : value);
    }
  else if (strcmp (file, CP_PARTITION_FILE) == 0)
    {
      if (strcmp (value, "root") == 0 && K.invalid_why)
        snprintf (c->partition, sizeof c->partition, "root invalid (%s)", K.invalid_why);
      else
        snprintf (c->partition, sizeof c->partition, "%s", value);
    }
  else
    return cp_fail_errno (err, EACCES, "write %s/%s: not a partition file", path, file);
  return 0;
}

static const struct cp_partition_io fake_io = { .read = k_read, .write = k_write };

/* ---- the fixture: a ledger in a state directory of its own, entries placed ---------- */

struct fx
{
  char *dir;
  struct cp_ledger *l;
};

static int
setup (void **state)
{
  struct fx *fx = cp_xmalloc0 (sizeof *fx);
  fx->dir = tu_tmpdir ("isolation");
  cp_error_t err = NULL;
  if (cp_ledger_open (fx->dir, 1000, &fx->l, &err) < 0)
    fail_msg ("open: %s", cp_error_message (err));
  k_reset ();
  cp_partition_set_io (&fake_io);
  *state = fx;
  return 0;
}

static int
teardown (void **state)
{
  struct fx *fx = *state;
  cp_partition_set_io (NULL);
  cp_ledger_close (fx->l);
  tu_rmtree (fx->dir);
  free (fx->dir);
  free (fx);
  return 0;
}

/* NAME ("ctr") placed exclusive on CPUS under /xa, in the ledger. */
static void
place (struct fx *fx, const char *name, const char *cpus)
{
  cleanup_free char *id = cp_xasprintf ("id-%s", name);
  cleanup_free char *cg = cp_xasprintf ("/xa/%s", name);
  cleanup_bitmap hwloc_bitmap_t set = tu_set (cpus);
  cleanup_bitmap hwloc_bitmap_t mems = tu_set ("0");
  struct cp_ledger_entry e = { .id = id, .cgroup_mount = (char *) "/sys/fs/cgroup", .cgroup = cg,
                               .mode = CP_MODE_EXCLUSIVE, .cpus = set, .held = set, .mems = mems };
  cp_error_t err = NULL;
  if (cp_ledger_put (fx->l, &e, &err) < 0 || cp_ledger_commit (fx->l, &err) < 0)
    fail_msg ("put: %s", cp_error_message (err));
}

/* Isolate NAME on CPUS (placed first); the result of cp_isolate_apply(). */
static int
isolate (struct fx *fx, const char *name, const char *cpus, bool strict, cp_error_t *err)
{
  place (fx, name, cpus);
  cleanup_free char *id = cp_xasprintf ("id-%s", name);
  cleanup_free char *path = cp_xasprintf ("/xa/%s", name);
  struct cp_cgroup cg = { .version = 2, .mount = (char *) "/sys/fs/cgroup", .path = path, .dirfd = -1, .mountfd = -1 };
  struct cp_target t = { .id = id, .cgroup = &cg, .cgroup_mount = cg.mount, .cgroup_path = path };
  struct cp_isolate iso = { .asked = true, .granted = true };
  cleanup_bitmap hwloc_bitmap_t set = tu_set (cpus);
  return cp_isolate_apply (&iso, fx->l, &t, set, strict, err);
}

static bool
isolated (struct fx *fx, const char *name)
{
  cleanup_free char *id = cp_xasprintf ("id-%s", name);
  const struct cp_ledger_entry *e = cp_ledger_find (fx->l, id);
  return e && e->isolated;
}

/* The records as "ID CGROUP ADDED[*];" (* the root), in ledger order. */
static char *
records (struct fx *fx)
{
  char *s = cp_xstrdup ("");
  for (size_t i = 0; i < cp_ledger_partition_count (fx->l); i++)
    {
      const struct cp_ledger_partition *p = cp_ledger_partition_at (fx->l, i);
      cleanup_free char *a = cp_cpulist_format (p->added);
      char *n = cp_xasprintf ("%s%s %s %s%s;", s, p->id, p->cgroup, a, p->root ? "*" : "");
      free (s);
      s = n;
    }
  return s;
}

/* ---- the tests --------------------------------------------------------------------------- */

static void
test_parse (void **state)
{
  (void) state;
  struct cp_partition_state st;
  cp_error_t err = NULL;
  assert_int_equal (cp_partition_parse ("root\n", &st, &err), 0);
  assert_true (st.kind == CP_PARTITION_ROOT && !st.invalid && st.reason[0] == '\0');
  assert_int_equal (cp_partition_parse ("member", &st, &err), 0);
  assert_true (st.kind == CP_PARTITION_MEMBER && !st.invalid);
  assert_int_equal (cp_partition_parse ("isolated\n", &st, &err), 0);
  assert_true (st.kind == CP_PARTITION_ISOLATED);
  assert_int_equal (cp_partition_parse ("root invalid (Cpu list in cpuset.cpus not exclusive)\n", &st, &err), 0);
  assert_true (st.kind == CP_PARTITION_ROOT && st.invalid);
  assert_string_equal (st.reason, "Cpu list in cpuset.cpus not exclusive");
  assert_int_equal (cp_partition_parse ("isolated invalid\n", &st, &err), 0);
  assert_true (st.kind == CP_PARTITION_ISOLATED && st.invalid && st.reason[0] == '\0');
  const char *bad[] = { "", "rooted", "root valid", "root invalid (x", "root invalid x)", "member\nroot\n", "Root" };
  for (size_t i = 0; i < CP_ARRAY_SIZE (bad); i++)
    {
      assert_int_equal (cp_partition_parse (bad[i], &st, &err), -1);
      tu_assert_contains (cp_error_message (err), "cpuset.cpus.partition: ");
      cp_error_free (&err);
    }
}

/* The order the contract names: ancestors top down, the container's exclusive, root. */
static void
test_write_order (void **state)
{
  struct fx *fx = *state;
  cp_error_t err = NULL;
  assert_int_equal (isolate (fx, "ctr", "2-3", false, &err), 0);
  assert_string_equal (K.log, "/xa cpuset.cpus.exclusive=2-3;/xa/ctr cpuset.cpus.exclusive=2-3;"
                              "/xa/ctr cpuset.cpus.partition=root;");
  assert_true (isolated (fx, "ctr"));
  cleanup_free char *r = records (fx);
  assert_string_equal (r, "id-ctr /xa 2-3;id-ctr /xa/ctr 2-3*;");
  /* as the next run finds them */
  cp_ledger_close (fx->l);
  fx->l = NULL;
  if (cp_ledger_open (fx->dir, 1000, &fx->l, &err) < 0)
    fail_msg ("open: %s", cp_error_message (err));
  cleanup_free char *again = records (fx);
  assert_string_equal (again, r);
  assert_true (isolated (fx, "ctr"));
  /* The release: member, the exclusive cleared, the ancestor bottom up. */
  K.log[0] = '\0';
  assert_int_equal (cp_isolate_release (fx->l, "id-ctr", &err), 0);
  assert_string_equal (K.log, "/xa/ctr cpuset.cpus.partition=member;/xa/ctr cpuset.cpus.exclusive=;"
                              "/xa cpuset.cpus.exclusive=;");
  assert_false (isolated (fx, "ctr"));
  assert_int_equal (cp_ledger_partition_count (fx->l), 0);
}

/* A front end that places before the cgroup exists (the NRI plugin): open grants an
   isolated request when it said it isolates later (cp_isolate_later(NULL)), else gives
   its reason (placed without, or a strict request refused); the partition is made
   afterwards on the mount the target names, as the hook's. */
static void
test_later (void **state)
{
  struct fx *fx = *state;
  struct cp_hostconfig hc = { .isolate = CP_ISOLATE_ALLOW };
  struct cp_target t = { .id = "id-ctr", .cgroup_mount = "/sys/fs/cgroup", .cgroup_path = "/xa/ctr" };
  struct cp_container_request creq = { .req = tu_req (2, CP_LEVEL_LLC, CP_SMT_ANY, CP_MODE_EXCLUSIVE, false),
                                       .isolate = true };
  struct cp_isolate iso;
  cp_error_t err = NULL;
  cp_isolate_later ("cgroup v1");
  assert_int_equal (cp_isolate_open (&hc, &t, &creq, &iso, &err), 0);
  assert_true (iso.asked);
  assert_false (iso.granted);
  creq.req.strict = true;
  assert_int_equal (cp_isolate_open (&hc, &t, &creq, &iso, &err), -1);
  assert_string_equal (cp_error_message (err), "cachepin.io/isolate: unsupported here (cgroup v1)");
  assert_int_equal (cp_error_kind (err), CP_ERR_UNSATISFIABLE);
  cp_error_free (&err);
  cp_isolate_later (NULL);
  assert_int_equal (cp_isolate_open (&hc, &t, &creq, &iso, &err), 0);
  assert_true (iso.granted);
  hc.isolate = CP_ISOLATE_DENY; /* the host setting first, as for the hook */
  assert_int_equal (cp_isolate_open (&hc, &t, &creq, &iso, &err), -1);
  assert_string_equal (cp_error_message (err), "cachepin.io/isolate: host setting isolate is deny");
  cp_error_free (&err);
  cp_isolate_later ("no cgroup yet");
  /* Made later, without a cgroup handle: the same writes on the target's mount. */
  place (fx, "ctr", "2-3");
  iso = (struct cp_isolate) { .asked = true, .granted = true };
  cleanup_bitmap hwloc_bitmap_t set = tu_set ("2-3");
  assert_int_equal (cp_isolate_apply (&iso, fx->l, &t, set, false, &err), 0);
  assert_string_equal (K.log, "/xa cpuset.cpus.exclusive=2-3;/xa/ctr cpuset.cpus.exclusive=2-3;"
                              "/xa/ctr cpuset.cpus.partition=root;");
  assert_true (isolated (fx, "ctr"));
}

/* Two under one parent: the parent holds the union; a release takes only its own
   CPUs, and never what was there before cachepin (an admin's 6). */
static void
test_union_and_release_only_added (void **state)
{
  struct fx *fx = *state;
  cp_error_t err = NULL;
  strcpy (k_find ("/xa")->exclusive, "6");
  assert_int_equal (isolate (fx, "ctr", "2-3", false, &err), 0);
  assert_int_equal (isolate (fx, "c2", "4-5", false, &err), 0);
  assert_string_equal (k_find ("/xa")->exclusive, "2-6");
  cleanup_free char *r = records (fx);
  assert_string_equal (r, "id-ctr /xa 2-3;id-ctr /xa/ctr 2-3*;id-c2 /xa 4-5;id-c2 /xa/c2 4-5*;");
  assert_int_equal (cp_isolate_release (fx->l, "id-ctr", &err), 0);
  assert_string_equal (k_find ("/xa")->exclusive, "4-6");
  assert_string_equal (k_find ("/xa/c2")->partition, "root");
  assert_int_equal (cp_isolate_release (fx->l, "id-c2", &err), 0);
  assert_string_equal (k_find ("/xa")->exclusive, "6");
  assert_int_equal (cp_ledger_partition_count (fx->l), 0);
}

/* A run cut short after the records (the entry not flagged yet), and a release
   cut short after its unflagging: the next run's reconcile finishes both. */
static void
test_repair (void **state)
{
  struct fx *fx = *state;
  cp_error_t err = NULL;
  assert_int_equal (isolate (fx, "ctr", "2-3", false, &err), 0);
  assert_int_equal (isolate (fx, "c2", "4-5", false, &err), 0);
  /* ctr as a kill before the flag leaves it */
  struct cp_ledger_entry copy = *cp_ledger_find (fx->l, "id-ctr");
  copy.isolated = false;
  assert_int_equal (cp_ledger_put (fx->l, &copy, &err), 0);
  cp_isolate_reconcile (fx->l, NULL, NULL, 0);
  assert_string_equal (k_find ("/xa/ctr")->partition, "member");
  assert_string_equal (k_find ("/xa/ctr")->exclusive, "");
  assert_string_equal (k_find ("/xa")->exclusive, "4-5");
  assert_string_equal (k_find ("/xa/c2")->partition, "root"); /* backed: left alone */
  /* c2's entry dropped (its container gone): its records are undone too */
  assert_true (cp_ledger_remove (fx->l, "id-c2"));
  cp_isolate_reconcile (fx->l, NULL, NULL, 0);
  assert_string_equal (k_find ("/xa/c2")->partition, "member");
  assert_string_equal (k_find ("/xa")->exclusive, "");
  assert_int_equal (cp_ledger_partition_count (fx->l), 0);
  /* and what was repaired is committed */
  cleanup_ledger struct cp_ledger *again = NULL;
  const char *st;
  assert_int_equal (cp_ledger_read (fx->dir, &st, &again, &err), 0);
  assert_int_equal (cp_ledger_partition_count (again), 0);
}

/* A partition that turns invalid later is marked (logged) once; valid again, unmarked. */
static void
test_invalid_later (void **state)
{
  struct fx *fx = *state;
  cp_error_t err = NULL;
  assert_int_equal (isolate (fx, "ctr", "2-3", false, &err), 0);
  assert_false (cp_ledger_partition_root (fx->l, "id-ctr")->invalid);
  strcpy (k_find ("/xa/ctr")->partition, "root invalid (Parent is not a partition root)");
  cp_isolate_reconcile (fx->l, NULL, NULL, 0);
  assert_true (cp_ledger_partition_root (fx->l, "id-ctr")->invalid);
  assert_true (isolated (fx, "ctr")); /* still its: held, released as usual */
  cleanup_free char *text = cp_ledger_serialize (fx->l);
  tu_assert_contains (text, "\"root\":true,\"invalid\":true}");
  strcpy (k_find ("/xa/ctr")->partition, "root");
  cp_isolate_reconcile (fx->l, NULL, NULL, 0);
  assert_false (cp_ledger_partition_root (fx->l, "id-ctr")->invalid);
}

/* Until undone, a partition's CPUs count as held. */
static void
test_records_held (void **state)
{
  struct fx *fx = *state;
  cp_error_t err = NULL;
  assert_int_equal (isolate (fx, "ctr", "2-3", false, &err), 0);
  assert_true (cp_ledger_remove (fx->l, "id-ctr")); /* gone, not repaired yet */
  struct cp_ledger_usage u;
  cp_ledger_usage (fx->l, NULL, &u);
  tu_assert_set (u.held, "2-3");
  cp_ledger_usage_release (&u);
}

/* The kernel refuses: undone, reported with its reason; strict fails. */
static void
test_refused (void **state)
{
  struct fx *fx = *state;
  cp_error_t err = NULL;
  K.invalid_why = "Cpu list in cpuset.cpus not exclusive";
  assert_int_equal (isolate (fx, "ctr", "2-3", false, &err), 0);
  assert_false (isolated (fx, "ctr"));
  assert_string_equal (k_find ("/xa/ctr")->partition, "member");
  assert_string_equal (k_find ("/xa")->exclusive, "");
  assert_int_equal (cp_ledger_partition_count (fx->l), 0);
  assert_int_equal (isolate (fx, "c2", "4-5", true, &err), -1);
  assert_int_equal (cp_error_kind (err), CP_ERR_UNSATISFIABLE);
  tu_assert_contains (cp_error_message (err), "the kernel refused the partition (Cpu list in cpuset.cpus not exclusive)");
  cp_error_free (&err);
  /* a sibling's exclusive CPUs: the write fails, undone the same way */
  K.invalid_why = NULL;
  strcpy (k_find ("/xb")->exclusive, "6");
  assert_int_equal (isolate (fx, "c2", "6-7", true, &err), -1);
  tu_assert_contains (cp_error_message (err), "write /xa/cpuset.cpus.exclusive");
  cp_error_free (&err);
  assert_string_equal (k_find ("/xa")->exclusive, "");
  assert_int_equal (cp_ledger_partition_count (fx->l), 0);
}

/* The records in ledger.json: both readers agree, and refuse what the rules refuse. */
static void
test_codec (void **state)
{
  struct fx *fx = *state;
  cp_error_t err = NULL;
  assert_int_equal (isolate (fx, "ctr", "2-3", false, &err), 0);
  cleanup_free char *text = cp_ledger_serialize (fx->l);
  tu_assert_contains (text, "\"partitions\":[\n {\"id\":\"id-ctr\",\"cgroup_mount\":\"/sys/fs/cgroup\",\"cgroup\":\"/xa\","
                            "\"added\":\"2-3\",\"root\":false},");
  tu_assert_contains (text, "\"isolated\":true}");
  cleanup_ledger struct cp_ledger *a = NULL, *b = NULL;
  assert_int_equal (cp_ledger_parse (text, strlen (text), &a, &err), 0);
  assert_int_equal (cp_ledger_parse_dom (text, strlen (text), &b, &err), 0);
  cleanup_free char *ta = cp_ledger_serialize (a), *tb = cp_ledger_serialize (b);
  assert_string_equal (ta, text);
  assert_string_equal (tb, text);
  static const struct
  {
    const char *from, *to, *msg;
  } bad[] = {
    { "\"cgroup\":\"/xa\",", "\"cgroup\":\"/xb\",", "is not an ancestor of its root" },
    { "\"root\":false", "\"root\":true", "has two root records" },
    { "\"added\":\"2-3\",\"root\":false", "\"added\":\"2-3\",\"root\":false,\"x\":1", "unknown key `x`" },
    { "\"cgroup\":\"/xa\",", "\"cgroup\":\"/\",", "the root cgroup" },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (bad); i++)
    {
      const char *at = strstr (text, bad[i].from);
      assert_non_null (at);
      cleanup_free char *t = cp_xasprintf ("%.*s%s%s", (int) (at - text), text, bad[i].to, at + strlen (bad[i].from));
      cleanup_ledger struct cp_ledger *x = NULL, *y = NULL;
      cp_error_t e1 = NULL, e2 = NULL;
      assert_int_equal (cp_ledger_parse (t, strlen (t), &x, &e1), -1);
      assert_int_equal (cp_ledger_parse_dom (t, strlen (t), &y, &e2), -1);
      tu_assert_contains (cp_error_message (e1), bad[i].msg);
      assert_string_equal (cp_error_message (e1), cp_error_message (e2));
      cp_error_free (&e1);
      cp_error_free (&e2);
    }
  /* released: the file is what a cachepin before issue 23 writes */
  assert_int_equal (cp_isolate_release (fx->l, "id-ctr", &err), 0);
  cleanup_free char *after = cp_ledger_serialize (fx->l);
  assert_null (strstr (after, "partitions"));
  assert_null (strstr (after, "isolated"));
}

/* The host's kept cores (policy/isolate.h) in the engine: an isolated request is
   placed off them when the rest can hold it (cp_placer_plan_in()'s AVOID), on them
   when nothing else can, and then decide refuses the isolation: a strict request
   fails, any other is placed without it. */
static void
test_kept_cores (void **state)
{
  (void) state;
  cleanup_topo struct cp_topo *topo = tu_topo ("package:2 numa:1 l3cache:2 core:4 pu:2(indexes=core)");
  cleanup_bitmap hwloc_bitmap_t kept = cp_bitmap_new ();
  cp_isolate_kept (topo, kept);
  tu_assert_set (kept, "0,8,16,24");
  static const char empty[] = "{\"version\": 2, \"entries\": []}";
  cleanup_ledger struct cp_ledger *l = NULL;
  cp_error_t err = NULL;
  assert_int_equal (cp_ledger_parse (empty, sizeof empty - 1, &l, &err), 0);
  struct cp_target t = { .id = "id-iso" };
  struct cp_container_request creq = { .req = tu_req (1, CP_LEVEL_LLC, CP_SMT_PE0, CP_MODE_EXCLUSIVE, false),
                                       .isolate = true };
  /* Without AVOID the best fit is CPU 0; with it, the next core of the same L3. */
  cleanup_plan struct cp_plan *plain = NULL, *off = NULL, *only = NULL;
  assert_int_equal (cp_placer_plan_in (l, topo, topo->allowed, topo->allowed_nodes, &t, &creq, NULL, NULL, &plain, &err), 0);
  tu_assert_set (plain->cpus, "0");
  assert_int_equal (cp_placer_plan_in (l, topo, topo->allowed, topo->allowed_nodes, &t, &creq, NULL, kept, &off, &err), 0);
  tu_assert_set (off->cpus, "1");
  struct cp_isolate iso = { .asked = true, .granted = true };
  assert_int_equal (cp_isolate_decide (&iso, topo, t.id, off->cpus, true, &err), 0);
  assert_true (iso.granted);
  /* Only the kept core to place on: placed there, and the isolation refused. */
  cleanup_bitmap hwloc_bitmap_t core0 = tu_set ("0,16");
  assert_int_equal (cp_placer_plan_in (l, topo, core0, topo->allowed_nodes, &t, &creq, NULL, kept, &only, &err), 0);
  tu_assert_set (only->cpus, "0");
  assert_int_equal (cp_isolate_decide (&iso, topo, t.id, only->cpus, true, &err), -1);
  assert_int_equal (cp_error_kind (err), CP_ERR_UNSATISFIABLE);
  assert_string_equal (cp_error_message (err), "cachepin.io/isolate: CPUs 0 include CPU 0, in the first core of NUMA "
                                               "node 0, which the host keeps (never isolated)");
  cp_error_free (&err);
  iso.granted = true;
  assert_int_equal (cp_isolate_decide (&iso, topo, t.id, only->cpus, false, &err), 0);
  assert_false (iso.granted); /* placed without isolation, one warning */
  /* The alignment comes first: a whole node asked for (two nodes of two 2-thread
     cores) stays on node 0, kept core and all, rather than split over the other
     cores of both nodes. */
  cleanup_topo struct cp_topo *small = tu_topo ("package:1 numa:2 core:2 pu:2");
  cp_isolate_kept (small, kept);
  tu_assert_set (kept, "0-1,4-5");
  creq.req = tu_req (4, CP_LEVEL_NUMA, CP_SMT_ANY, CP_MODE_EXCLUSIVE, false);
  cleanup_plan struct cp_plan *node = NULL;
  assert_int_equal (cp_placer_plan_in (l, small, small->allowed, small->allowed_nodes, &t, &creq, NULL, kept, &node, &err), 0);
  tu_assert_set (node->cpus, "0-3");
  assert_false (node->split);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_parse),
    cmocka_unit_test (test_kept_cores),
    cmocka_unit_test_setup_teardown (test_write_order, setup, teardown),
    cmocka_unit_test_setup_teardown (test_later, setup, teardown),
    cmocka_unit_test_setup_teardown (test_union_and_release_only_added, setup, teardown),
    cmocka_unit_test_setup_teardown (test_repair, setup, teardown),
    cmocka_unit_test_setup_teardown (test_records_held, setup, teardown),
    cmocka_unit_test_setup_teardown (test_invalid_later, setup, teardown),
    cmocka_unit_test_setup_teardown (test_refused, setup, teardown),
    cmocka_unit_test_setup_teardown (test_codec, setup, teardown),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
