/* hook/host/manager.c: the managers' table.  Each entry's detect() on fake inputs
 * (no cgroup, a cgroup systemd does not own, kubelet state files), and a dummy
 * manager added to a copy of the table, which cp_managers_attach(), _fd(),
 * _apply(), _clear(), _status() and _close() then call like the real ones: adding
 * a manager is one file and one entry (manager.h). */
#define _GNU_SOURCE
#include "testutil.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpulist.h"
#include "log.h"
#include "manager.h"
#include "util.h"

/* ---- capturing what is logged ---------------------------------------------------- */

static int capture_fd = -1, saved_stderr = -1;

static void
capture_begin (void)
{
  char path[] = "/tmp/cachepin-test-log.XXXXXX";
  capture_fd = mkstemp (path);
  assert_true (capture_fd >= 0);
  unlink (path);
  fflush (stderr);
  saved_stderr = dup (STDERR_FILENO);
  assert_true (saved_stderr >= 0 && dup2 (capture_fd, STDERR_FILENO) == STDERR_FILENO);
  cp_log_init ("cachepin-test", true);
  cp_log_set_level (CP_LOG_DEBUG);
}

/* What was logged since capture_begin() (caller frees). */
static char *
capture_end (void)
{
  fflush (stderr);
  assert_true (dup2 (saved_stderr, STDERR_FILENO) == STDERR_FILENO);
  close (saved_stderr);
  char buf[8192];
  ssize_t n = pread (capture_fd, buf, sizeof buf - 1, 0);
  close (capture_fd);
  assert_true (n >= 0);
  buf[n] = '\0';
  return cp_xstrdup (buf);
}

/* ---- the table ---------------------------------------------------------------------- */

static size_t
table_len (const struct cp_manager *const *table)
{
  size_t n = 0;
  while (table[n])
    n++;
  return n;
}

/* cgroupfs first and the only required one (the others are told after the direct
   write); every entry named once, with a detect(). */
static void
test_table (void **state)
{
  (void) state;
  size_t n = table_len (cp_manager_table);
  assert_true (n >= 3);
  assert_ptr_equal (cp_manager_table[0], &cp_manager_cgroupfs);
  bool systemd = false, kubelet = false;
  for (size_t i = 0; i < n; i++)
    {
      const struct cp_manager *m = cp_manager_table[i];
      assert_non_null (m->name);
      assert_non_null (m->detect);
      assert_int_equal (m->required, i == 0);
      for (size_t j = 0; j < i; j++)
        assert_string_not_equal (m->name, cp_manager_table[j]->name);
      systemd = systemd || m == &cp_manager_systemd;
      kubelet = kubelet || m == &cp_manager_kubelet;
    }
  assert_true (systemd && kubelet);
  assert_true (n <= CP_MANAGERS_MAX);
}

/* detect() of ENTRY for CTX: its answer, the handle closed. */
static int
detect (const struct cp_manager *m, const struct cp_manager_ctx *ctx, const char **why, char **error)
{
  void *handle = NULL;
  cp_error_t err = NULL;
  *why = NULL;
  int r = m->detect (ctx, &handle, why, &err);
  *error = err ? cp_xstrdup (cp_error_message (err)) : NULL;
  cp_error_free (&err);
  if (r <= 0)
    assert_null (handle);
  if (r == 0)
    assert_non_null (*why);
  if (r < 0)
    assert_non_null (*error);
  if (handle && m->close)
    m->close (handle);
  return r;
}

static void
test_detect_cgroupfs (void **state)
{
  (void) state;
  struct cp_cgroup cg = { .version = 2, .mount = (char *) "/sys/fs/cgroup", .path = (char *) "/cachepin/c1",
                          .dirfd = -1, .mountfd = -1 };
  const char *why;
  char *error;
  struct cp_manager_ctx none = { .step = CP_MANAGER_STATUS };
  assert_int_equal (detect (&cp_manager_cgroupfs, &none, &why, &error), 0);
  struct cp_manager_ctx place = { .step = CP_MANAGER_PLACE, .cgroup = &cg };
  assert_int_equal (detect (&cp_manager_cgroupfs, &place, &why, &error), 1);
}

/* Cgroups systemd does not own are decided without a bus (test_systemd.c has the
   unit-name rules). */
static void
test_detect_systemd (void **state)
{
  (void) state;
  struct cp_cgroup v1 = { .version = 1, .mount = (char *) "/sys/fs/cgroup/cpuset",
                          .path = (char *) "/system.slice/x.scope", .dirfd = -1, .mountfd = -1 };
  struct cp_cgroup plain = { .version = 2, .mount = (char *) "/sys/fs/cgroup", .path = (char *) "/cachepin/c1",
                             .dirfd = -1, .mountfd = -1 };
  const struct cp_cgroup *cases[] = { NULL, &v1, &plain };
  for (size_t i = 0; i < CP_ARRAY_SIZE (cases); i++)
    {
      struct cp_manager_ctx ctx = { .step = CP_MANAGER_PLACE, .cgroup = cases[i] };
      const char *why;
      char *error;
      assert_int_equal (detect (&cp_manager_systemd, &ctx, &why, &error), 0);
      assert_null (error);
    }
}

/* A kubelet state file in a fresh directory (caller frees; DIR too). */
static char *
state_file (char *dir, const char *text)
{
  char *path = cp_xasprintf ("%s/cpu_manager_state", dir);
  if (text)
    {
      FILE *f = fopen (path, "w");
      assert_non_null (f);
      fputs (text, f);
      assert_int_equal (fclose (f), 0);
    }
  else
    unlink (path);
  return path;
}

static void
test_detect_kubelet (void **state)
{
  (void) state;
  char dir[] = "/tmp/cachepin-test-kubelet.XXXXXX";
  assert_non_null (mkdtemp (dir));
  const char *why;
  char *error;
  struct
  {
    const char *text; /* NULL: no file */
    enum cp_manager_step step;
    int expected;
    const char *error; /* a part of the error */
  } cases[] = {
    { "{\"policyName\":\"static\",\"defaultCpuSet\":\"0-3\",\"checksum\":1}", CP_MANAGER_PLACE, 1, NULL },
    { "{\"policyName\":\"static\"}", CP_MANAGER_STATUS, 1, NULL },
    /* A release hands nothing out: the file is not even read. */
    { "{\"policyName\":\"static\"}", CP_MANAGER_RELEASE, 0, NULL },
    { "{\"policyName\":\"none\",\"defaultCpuSet\":\"\"}", CP_MANAGER_PLACE, 0, NULL },
    { NULL, CP_MANAGER_PLACE, 0, NULL },
    { "not json", CP_MANAGER_PLACE, -1, "cpu_manager_state" },
    { "{\"defaultCpuSet\":\"0\"}", CP_MANAGER_PLACE, -1, "policyName" },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (cases); i++)
    {
      cleanup_free char *path = state_file (dir, cases[i].text);
      struct cp_manager_ctx ctx = { .step = cases[i].step, .kubelet_state = path };
      int r = detect (&cp_manager_kubelet, &ctx, &why, &error);
      if (r != cases[i].expected)
        fail_msg ("case %zu: %d, expected %d (%s)", i, r, cases[i].expected, error ? error : why);
      if (cases[i].error)
        tu_assert_contains (error, cases[i].error);
      free (error);
    }
  /* "" and NULL: never looked at, even where a file exists. */
  const char *never[] = { "", NULL };
  for (size_t i = 0; i < CP_ARRAY_SIZE (never); i++)
    {
      struct cp_manager_ctx ctx = { .step = CP_MANAGER_PLACE, .kubelet_state = never[i] };
      assert_int_equal (detect (&cp_manager_kubelet, &ctx, &why, &error), 0);
    }
  cleanup_free char *path = state_file (dir, NULL);
  rmdir (dir);
}

/* A placement on a host whose kubelet runs the static policy: attached, and its
   warning is the one line said; a release says nothing of it. */
static void
test_kubelet_report (void **state)
{
  (void) state;
  char dir[] = "/tmp/cachepin-test-kubelet.XXXXXX";
  assert_non_null (mkdtemp (dir));
  cleanup_free char *path = state_file (dir, "{\"policyName\":\"static\"}");
  const enum cp_manager_step steps[] = { CP_MANAGER_PLACE, CP_MANAGER_RELEASE };
  for (size_t i = 0; i < CP_ARRAY_SIZE (steps); i++)
    {
      struct cp_manager_ctx ctx = { .step = steps[i], .kubelet_state = path };
      capture_begin ();
      cleanup_managers struct cp_managers set;
      cp_managers_attach (NULL, &ctx, &set);
      cleanup_free char *log = capture_end ();
      if (steps[i] == CP_MANAGER_PLACE)
        {
          assert_int_equal (set.n, 1);
          assert_ptr_equal (set.on[0].m, &cp_manager_kubelet);
          tu_assert_contains (log, "the kubelet's CPU manager policy is `static`");
          tu_assert_contains (log, path);
          assert_ptr_equal (strchr (log, '\n'), log + strlen (log) - 1);
        }
      else
        {
          assert_int_equal (set.n, 0);
          assert_string_equal (log, "");
        }
    }
  unlink (path);
  rmdir (dir);
}

/* ---- a dummy manager, added to a copy of the table ---------------------------------- */

struct dummy
{
  const char *name;
  int fd;            /* what fd() answers */
  bool fail;         /* apply() and clear() fail */
  int detected;      /* calls, in order */
  int reported;
  int applied;
  int cleared;
  int closed;
  char applied_cpus[32];
  bool applied_mems; /* MEMS given */
  int *order;        /* the shared call counter */
  int applied_at;    /* when apply() was called (*order then) */
};

/* Each dummy entry finds its state by its name. */
static struct dummy dummies[3];

static struct dummy *
dummy_of (const char *name)
{
  for (size_t i = 0; i < CP_ARRAY_SIZE (dummies); i++)
    if (dummies[i].name && strcmp (dummies[i].name, name) == 0)
      return &dummies[i];
  fail_msg ("no dummy %s", name);
  return NULL;
}

/* The handle is the dummy itself: it manages every cgroup, and the host. */
#define DUMMY_DETECT(n)                                                                                          \
  static int dummy_detect_##n (const struct cp_manager_ctx *ctx, void **handle, const char **why, cp_error_t *err) \
  {                                                                                                              \
    (void) ctx, (void) why, (void) err;                                                                          \
    dummies[n].detected++;                                                                                       \
    *handle = &dummies[n];                                                                                       \
    return 1;                                                                                                    \
  }
DUMMY_DETECT (0)
DUMMY_DETECT (1)
DUMMY_DETECT (2)

static void
dummy_report (const struct cp_manager_ctx *ctx, int r, const void *handle, const char *why, cp_error_t err)
{
  (void) ctx, (void) why, (void) err;
  assert_int_equal (r, 1);
  ((struct dummy *) handle)->reported++;
}

static int
dummy_apply (void *handle, const struct cp_manager_ctx *ctx, hwloc_const_bitmap_t cpus, hwloc_const_bitmap_t mems,
             cp_error_t *err)
{
  (void) ctx;
  struct dummy *d = handle;
  d->applied++;
  d->applied_at = ++*d->order;
  cleanup_free char *list = cp_cpulist_format (cpus);
  snprintf (d->applied_cpus, sizeof d->applied_cpus, "%s", list);
  d->applied_mems = mems != NULL;
  if (d->fail)
    return cp_fail_runtime (err, "%s refuses", d->name);
  return 0;
}

static int
dummy_clear (void *handle, const struct cp_manager_ctx *ctx, cp_error_t *err)
{
  (void) ctx;
  struct dummy *d = handle;
  d->cleared++;
  if (d->fail)
    return cp_fail_runtime (err, "%s refuses to clear", d->name);
  return 0;
}

static int
dummy_fd (const void *handle)
{
  return ((const struct dummy *) handle)->fd;
}

static json_object *
dummy_status (const struct cp_manager_ctx *ctx)
{
  (void) ctx;
  json_object *o = json_object_new_object ();
  json_object_object_add (o, "seen", json_object_new_boolean (true));
  return o;
}

static void
dummy_close (void *handle)
{
  ((struct dummy *) handle)->closed++;
}

#define DUMMY_ENTRY(n, req)                                                                                      \
  {                                                                                                              \
    .name = "dummy" #n, .required = req, .on_failure = "dummy" #n " may undo the placement",                     \
    .detect = dummy_detect_##n, .report = dummy_report, .apply = dummy_apply, .clear = dummy_clear,            \
    .fd = dummy_fd, .status = dummy_status, .close = dummy_close,                                               \
  }
static const struct cp_manager dummy_managers[] = { DUMMY_ENTRY (0, false), DUMMY_ENTRY (1, false),
                                                    DUMMY_ENTRY (2, true) };

static int order;

static void
dummies_reset (void)
{
  order = 0;
  for (size_t i = 0; i < CP_ARRAY_SIZE (dummies); i++)
    dummies[i] = (struct dummy){ .name = dummy_managers[i].name, .fd = -1, .order = &order };
}

/* The real table, then the dummies named (indexes into dummy_managers, -1 ends). */
static void
table_with (const struct cp_manager **table, size_t size, const int *extra)
{
  size_t n = 0;
  for (; cp_manager_table[n]; n++)
    table[n] = cp_manager_table[n];
  for (; *extra >= 0; extra++)
    table[n++] = &dummy_managers[*extra];
  assert_true (n < size);
  table[n] = NULL;
}

/* One file and one entry: a manager in the table is detected, reported, told the
   placement after the direct write (with the sets as given), cleared at a release,
   its fd kept for the sandbox, its status part shown under its name, and closed. */
static void
test_dummy_manager (void **state)
{
  (void) state;
  dummies_reset ();
  const struct cp_manager *table[16];
  table_with (table, CP_ARRAY_SIZE (table), (const int[]){ 0, -1 });
  assert_int_equal (dummy_of ("dummy0")->detected, 0);

  /* No cgroup (cgroupfs and systemd stay out), no kubelet file: the dummy alone. */
  struct cp_manager_ctx ctx = { .step = CP_MANAGER_PLACE };
  {
    cleanup_managers struct cp_managers set;
    cp_managers_attach (table, &ctx, &set);
    struct dummy *d = dummy_of ("dummy0");
    assert_int_equal (d->detected, 1);
    assert_int_equal (d->reported, 1);
    assert_int_equal (set.n, 1);
    assert_ptr_equal (set.on[0].m, &dummy_managers[0]);

    int fd = 0;
    cp_error_t err = NULL;
    assert_int_equal (cp_managers_fd (&set, &fd, &err), 0);
    assert_int_equal (fd, -1);
    d->fd = 42;
    assert_int_equal (cp_managers_fd (&set, &fd, &err), 0);
    assert_int_equal (fd, 42);

    cleanup_bitmap hwloc_bitmap_t cpus = tu_set ("2-3");
    cleanup_bitmap hwloc_bitmap_t mems = tu_set ("0");
    assert_int_equal (cp_managers_apply (&set, cpus, mems, &err), 0);
    assert_int_equal (d->applied, 1);
    assert_string_equal (d->applied_cpus, "2-3");
    assert_true (d->applied_mems);
    assert_int_equal (cp_managers_apply (&set, cpus, NULL, &err), 0); /* mems=keep */
    assert_false (d->applied_mems);
    assert_int_equal (cp_managers_clear (&set, &err), 0);
    assert_int_equal (d->cleared, 1);
    assert_int_equal (d->closed, 0);
  }
  assert_int_equal (dummy_of ("dummy0")->closed, 1);

  /* Status: its part under its name, beside the kubelet's. */
  json_object *root = json_object_new_object ();
  struct cp_manager_ctx status = { .step = CP_MANAGER_STATUS, .kubelet_state = "" };
  cp_managers_status (table, &status, root);
  json_object *part = NULL, *seen = NULL;
  assert_true (json_object_object_get_ex (root, "dummy0", &part));
  assert_true (json_object_object_get_ex (part, "seen", &seen) && json_object_get_boolean (seen));
  assert_true (json_object_object_get_ex (root, "kubelet", &part));
  assert_false (json_object_object_get_ex (root, "cgroupfs", &part)); /* no part */
  json_object_put (root);
  /* The real table has no dummy part. */
  root = json_object_new_object ();
  cp_managers_status (NULL, &status, root);
  assert_false (json_object_object_get_ex (root, "dummy0", &part));
  json_object_put (root);
}

/* Failures: a manager that is not required is one warning line and the next one
   is still told; a required one's failure is returned at once, the ones after it
   untold; two fds for the one the sandbox keeps are refused. */
static void
test_dummy_failures (void **state)
{
  (void) state;
  dummies_reset ();
  const struct cp_manager *table[16];
  table_with (table, CP_ARRAY_SIZE (table), (const int[]){ 0, 1, -1 });
  struct cp_manager_ctx ctx = { .step = CP_MANAGER_PLACE };
  cleanup_managers struct cp_managers set;
  cp_managers_attach (table, &ctx, &set);
  assert_int_equal (set.n, 2);
  struct dummy *d0 = dummy_of ("dummy0"), *d1 = dummy_of ("dummy1");
  d0->fail = true;
  cleanup_bitmap hwloc_bitmap_t cpus = tu_set ("1");
  cp_error_t err = NULL;
  capture_begin ();
  int r = cp_managers_apply (&set, cpus, cpus, &err);
  cleanup_free char *log = capture_end ();
  assert_int_equal (r, 0);
  assert_null (err);
  assert_int_equal (d1->applied, 1);
  assert_true (d0->applied_at < d1->applied_at); /* table order */
  tu_assert_contains (log, "dummy0 may undo the placement: dummy0 refuses");
  assert_ptr_equal (strchr (log, '\n'), log + strlen (log) - 1);

  d0->fd = 5;
  d1->fd = 6;
  int fd;
  assert_int_equal (cp_managers_fd (&set, &fd, &err), -1);
  tu_assert_contains (cp_error_message (err), "dummy0 and dummy1");
  cp_error_free (&err);

  /* Required first (as cgroupfs is): its failure stops the others. */
  dummies_reset ();
  table_with (table, CP_ARRAY_SIZE (table), (const int[]){ 2, 0, -1 });
  cleanup_managers struct cp_managers req;
  cp_managers_attach (table, &ctx, &req);
  struct dummy *d2 = dummy_of ("dummy2");
  d2->fail = true;
  assert_int_equal (cp_managers_apply (&req, cpus, NULL, &err), -1);
  assert_string_equal (cp_error_message (err), "dummy2 refuses");
  cp_error_free (&err);
  assert_int_equal (dummy_of ("dummy0")->applied, 0);
  assert_int_equal (cp_managers_clear (&req, &err), -1);
  assert_int_equal (dummy_of ("dummy0")->cleared, 0);
  cp_error_free (&err);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_table),          cmocka_unit_test (test_detect_cgroupfs),
    cmocka_unit_test (test_detect_systemd), cmocka_unit_test (test_detect_kubelet),
    cmocka_unit_test (test_kubelet_report), cmocka_unit_test (test_dummy_manager),
    cmocka_unit_test (test_dummy_failures),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
