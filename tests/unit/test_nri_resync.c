/* `cachepin nri`'s Synchronize (hook/cli/nri_resync.c) on messages built here, with
   a state directory of the test's and the host's topology: a split synchronization
   is answered with no updates until its last part, and only then rebuilds; the
   plugin's entries are told from the hook's and `apply`'s by the ownership rule;
   the plugin's entry of a container the runtime no longer lists is released, the
   one of a container it lists is kept; a resync with no time left does nothing.
   The containers' cgroups are never made (placing a running container in its
   cgroup is tests/cri/nri.sh's, with containerd). */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "cli.h"
#include "cpulist.h"
#include "hostconfig.h"
#include "ledger.h"
#include "log.h"
#include "nri_plugin.h"
#include "nri_rpc.h"
#include "proc.h"
#include "util.h"

typedef Nri__Pkg__Api__V1alpha1__Container__AnnotationsEntry ctr_kv_t;
typedef Nri__Pkg__Api__V1alpha1__Container nri_container;

struct fixture
{
  char *dir;
  struct cp_hostconfig hc;
};

static int
setup (void **state)
{
  struct fixture *fx = cp_xmalloc0 (sizeof *fx);
  fx->dir = tu_tmpdir ("nri-resync");
  tu_hostconfig (&fx->hc, fx->dir, NULL);
  cp_log_set_level (CP_LOG_ERROR);
  cp_cli_stay_unsandboxed ();
  *state = fx;
  return 0;
}

static int
teardown (void **state)
{
  struct fixture *fx = *state;
  tu_rmtree (fx->dir);
  cp_hostconfig_free (&fx->hc);
  free (fx->dir);
  free (fx);
  return 0;
}

/* A running container ID asking for 1 CPU, its cgroup /cp-nri-unit/ID (never made). */
struct ctr
{
  nri_container c;
  Nri__Pkg__Api__V1alpha1__LinuxContainer linux_;
  ctr_kv_t kv;
  ctr_kv_t *kvp[1];
  char path[64];
};

static void
build (struct ctr *m, const char *id)
{
  *m = (struct ctr) { .c = NRI__PKG__API__V1ALPHA1__CONTAINER__INIT,
                      .linux_ = NRI__PKG__API__V1ALPHA1__LINUX_CONTAINER__INIT,
                      .kv = NRI__PKG__API__V1ALPHA1__CONTAINER__ANNOTATIONS_ENTRY__INIT };
  m->c.id = (char *) id;
  m->c.pod_sandbox_id = (char *) "pod";
  m->c.state = NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_RUNNING;
  snprintf (m->path, sizeof m->path, "/cp-nri-unit/%s", id);
  m->linux_.cgroups_path = m->path;
  m->c.linux = &m->linux_;
  m->kv.key = (char *) "cachepin.io/cpus";
  m->kv.value = (char *) "1";
  m->kvp[0] = &m->kv;
  m->c.annotations = m->kvp;
  m->c.n_annotations = 1;
}

/* ID placed by CreateContainer, as the plugin records it (pid 0, no inode yet). */
static void
created (struct fixture *fx, const char *id)
{
  struct ctr m;
  build (&m, id);
  Nri__Pkg__Api__V1alpha1__CreateContainerRequest req = NRI__PKG__API__V1ALPHA1__CREATE_CONTAINER_REQUEST__INIT;
  req.container = &m.c;
  struct cp_buf out = { 0 };
  struct cp_nri_call call = { .stream = 7, .out = &out };
  cp_error_t err = NULL;
  if (cp_nri_create_container (&fx->hc, &req, &call, &err) < 0)
    fail_msg ("create: %s", cp_error_message (err));
  cp_buf_free (&out);
}

static bool
has (const struct fixture *fx, const char *id)
{
  struct cp_ledger *l = NULL;
  cp_error_t err = NULL;
  if (cp_ledger_open (fx->dir, 1000, &l, &err) < 0)
    fail_msg ("ledger: %s", cp_error_message (err));
  bool found = cp_ledger_find (l, id) != NULL;
  cp_ledger_close (l);
  return found;
}

/* Synchronize with CTRS (N), MORE as given: the answer's `more` and update count. */
static void
synchronize (struct fixture *fx, struct cp_nri_sync *s, nri_container **ctrs, size_t n, bool more, bool *more_out,
             size_t *n_update)
{
  Nri__Pkg__Api__V1alpha1__SynchronizeRequest req = NRI__PKG__API__V1ALPHA1__SYNCHRONIZE_REQUEST__INIT;
  req.containers = ctrs;
  req.n_containers = n;
  req.more = more;
  struct cp_buf out = { 0 };
  struct cp_nri_call call = { .stream = 7, .out = &out };
  cp_error_t err = NULL;
  if (cp_nri_synchronize (&fx->hc, s, &req, &call, &err) < 0)
    fail_msg ("synchronize: %s", cp_error_message (err));
  struct cp_nri_wire w;
  cp_nri_wire_init (&w);
  assert_int_equal (cp_nri_wire_feed (&w, out.p, out.len, &err), 0);
  struct cp_ttrpc_msg m;
  assert_int_equal (cp_nri_wire_next (&w, CP_MUX_CONN_PLUGIN, &m, &err), 1);
  Ttrpc__Response *resp = ttrpc__response__unpack (NULL, m.len, m.payload);
  assert_non_null (resp);
  assert_true (resp->status == NULL || resp->status->code == 0);
  Nri__Pkg__Api__V1alpha1__SynchronizeResponse *sr
      = nri__pkg__api__v1alpha1__synchronize_response__unpack (NULL, resp->payload.len, resp->payload.data);
  assert_non_null (sr);
  *more_out = sr->more;
  *n_update = sr->n_update;
  nri__pkg__api__v1alpha1__synchronize_response__free_unpacked (sr, NULL);
  ttrpc__response__free_unpacked (resp, NULL);
  cp_ttrpc_msg_clear (&m);
  cp_nri_wire_clear (&w);
  cp_buf_free (&out);
}

/* The rule: no pid and an id that is not apply:'s.  The hook's entries have the
   container's process, apply's the "apply:" id. */
static void
test_ownership_rule (void **state)
{
  (void) state;
  struct cp_ledger_entry plugin = { .id = (char *) "0123abcd", .pid = 0 };
  struct cp_ledger_entry hook = { .id = (char *) "0123abcd", .pid = 4242 };
  struct cp_ledger_entry apply = { .id = (char *) "apply:/sys/fs/cgroup/cpuset/job", .pid = 0 };
  assert_true (cp_nri_owns_entry (&plugin));
  assert_false (cp_nri_owns_entry (&hook));
  assert_false (cp_nri_owns_entry (&apply));
}

/* An entry as the hook (PID) or `apply` (pid 0, apply: id) records it, in a
   directory of the test's that is no cgroup (reconcile cannot tell it gone). */
static void
put_foreign (struct fixture *fx, const char *id, const char *sub, pid_t pid)
{
  cleanup_free char *dir = cp_xasprintf ("%s/%s", fx->dir, sub);
  assert_int_equal (mkdir (dir, 0700), 0);
  cleanup_free char *cgroup = cp_xasprintf ("/%s", sub);
  hwloc_bitmap_t cpus = tu_set ("0"), held = hwloc_bitmap_alloc (), mems = tu_set ("0");
  struct cp_ledger_entry e = { .id = (char *) id, .cgroup_mount = fx->dir, .cgroup = cgroup, .pid = pid,
                               .mode = CP_MODE_SHARED, .cpus = cpus, .held = held, .mems = mems,
                               .placed_at = (long long) time (NULL) };
  cp_error_t err = NULL;
  bool zombie;
  if (pid > 0)
    assert_int_equal (cp_proc_start_time (pid, &e.start_time, &zombie, &err), 0);
  struct cp_ledger *l = NULL;
  assert_int_equal (cp_ledger_open (fx->dir, 1000, &l, &err), 0);
  if (cp_ledger_put (l, &e, &err) < 0 || cp_ledger_commit (l, &err) < 0)
    fail_msg ("put %s: %s", id, cp_error_message (err));
  cp_ledger_close (l);
  hwloc_bitmap_free (cpus);
  hwloc_bitmap_free (held);
  hwloc_bitmap_free (mems);
}

/* Two parts: the first (more) is answered `more`, no updates, nothing released yet;
   the last releases the plugin's entry of the container neither part lists, keeps
   the one the first part listed, and leaves the hook's and apply's entries (not
   listed either) alone. */
static void
test_more_then_release (void **state)
{
  struct fixture *fx = *state;
  created (fx, "keep");
  created (fx, "gone");
  put_foreign (fx, "hookctr", "hook", getpid ());
  put_foreign (fx, "apply:/job", "job", 0);
  assert_true (has (fx, "keep") && has (fx, "gone") && has (fx, "hookctr") && has (fx, "apply:/job"));

  struct ctr keep;
  build (&keep, "keep");
  nri_container *part1[] = { &keep.c };
  struct cp_nri_sync s = { 0 };
  bool more;
  size_t n_update;
  synchronize (fx, &s, part1, 1, true, &more, &n_update);
  assert_true (more);
  assert_int_equal (n_update, 0);
  assert_true (has (fx, "gone")); /* nothing done before the last part */

  synchronize (fx, &s, NULL, 0, false, &more, &n_update);
  assert_false (more);
  assert_int_equal (n_update, 0); /* "keep" has its entry: nothing to place */
  assert_false (has (fx, "gone"));
  assert_true (has (fx, "keep"));
  assert_true (has (fx, "hookctr"));
  assert_true (has (fx, "apply:/job"));
  assert_int_equal (s.n, 0); /* the collection starts again */
}

/* A container listed as stopped holds nothing: its entry is released. */
static void
test_stopped_released (void **state)
{
  struct fixture *fx = *state;
  created (fx, "stopped");
  struct ctr m;
  build (&m, "stopped");
  m.c.state = NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_STOPPED;
  nri_container *list[] = { &m.c };
  struct cp_nri_sync s = { 0 };
  bool more;
  size_t n_update;
  synchronize (fx, &s, list, 1, false, &more, &n_update);
  assert_false (has (fx, "stopped"));
}

/* No time left (the bound, CP_NRI_RESYNC_BUDGET_MS, reached at once): nothing is
   released, nothing placed. */
static void
test_no_time_left (void **state)
{
  struct fixture *fx = *state;
  created (fx, "late");
  struct ctr m;
  build (&m, "new");
  nri_container *list[] = { &m.c };
  struct cp_nri_updates u;
  cp_nri_resync (&fx->hc, NULL, 0, list, 1, 0, &u);
  assert_int_equal (u.n, 0);
  assert_true (has (fx, "late"));
  assert_false (has (fx, "new"));
  cp_nri_updates_free (&u);
}

int
main (void)
{
  /* As test_nri_events: the cgroup named must be where a cpuset hierarchy is. */
  cleanup_free char *mount = NULL, *cg = NULL;
  cp_error_t err = NULL;
  if (cp_cgroup_locate_path ("/cp-nri-unit/ctr", &mount, &cg, &err) < 0)
    {
      printf ("SKIP: no cpuset cgroup hierarchy: %s\n", cp_error_message (err));
      cp_error_free (&err);
      return 77;
    }
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_ownership_rule),
    cmocka_unit_test_setup_teardown (test_more_then_release, setup, teardown),
    cmocka_unit_test_setup_teardown (test_stopped_released, setup, teardown),
    cmocka_unit_test_setup_teardown (test_no_time_left, setup, teardown),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
