/* `cachepin nri`'s Synchronize (hook/agent/nri_resync.c) on messages built here, with
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
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "cli.h"
#include "cpulist.h"
#include "dra.h"
#include "dra_prepare.h"
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
  struct cp_nri_plugin plugin;
};

#define RUNTIME "/run/test-nri/nri.sock"

static int
setup (void **state)
{
  struct fixture *fx = cp_xmalloc0 (sizeof *fx);
  fx->dir = tu_tmpdir ("nri-resync");
  tu_hostconfig (&fx->hc, fx->dir, NULL);
  fx->plugin = (struct cp_nri_plugin) { .hc = &fx->hc,
                                        .owner = { .origin = CP_ORIGIN_NRI, .runtime = RUNTIME },
                                        .request_timeout_ms = 2000 };
  cp_log_set_level (CP_LOG_ERROR);
  cp_front_stay_unsandboxed ();
  *state = fx;
  return 0;
}

static int
teardown (void **state)
{
  struct fixture *fx = *state;
  tu_rmtree (fx->dir);
  cp_nri_sync_clear (&fx->plugin.sync);
  cp_hostconfig_free (&fx->hc);
  free (fx->dir);
  free (fx);
  return 0;
}

/* A running container ID asking for 1 CPU, shared (so that any number of them fit
   on any host), its cgroup /cp-nri-unit/ID (never made). */
struct ctr
{
  nri_container c;
  Nri__Pkg__Api__V1alpha1__LinuxContainer linux_;
  ctr_kv_t kv, mode;
  ctr_kv_t *kvp[2];
  char path[64];
  Nri__Pkg__Api__V1alpha1__LinuxResources res;
  Nri__Pkg__Api__V1alpha1__LinuxCPU cpu;
  char *cpus;
};

/* M's spec as the runtime has it once it applied the placement the ledger holds for
   it (the container's linux.resources.cpu.cpus, which Synchronize lists). */
static void
applied (struct ctr *m, char *cpus)
{
  m->cpus = cpus;
  m->cpu = (Nri__Pkg__Api__V1alpha1__LinuxCPU) NRI__PKG__API__V1ALPHA1__LINUX_CPU__INIT;
  m->cpu.cpus = cpus;
  m->res = (Nri__Pkg__Api__V1alpha1__LinuxResources) NRI__PKG__API__V1ALPHA1__LINUX_RESOURCES__INIT;
  m->res.cpu = &m->cpu;
  m->linux_.resources = &m->res;
}

static void
build (struct ctr *m, const char *id)
{
  *m = (struct ctr) { .c = NRI__PKG__API__V1ALPHA1__CONTAINER__INIT,
                      .linux_ = NRI__PKG__API__V1ALPHA1__LINUX_CONTAINER__INIT,
                      .kv = NRI__PKG__API__V1ALPHA1__CONTAINER__ANNOTATIONS_ENTRY__INIT,
                      .mode = NRI__PKG__API__V1ALPHA1__CONTAINER__ANNOTATIONS_ENTRY__INIT };
  m->c.id = (char *) id;
  m->c.pod_sandbox_id = (char *) "pod";
  m->c.state = NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_RUNNING;
  snprintf (m->path, sizeof m->path, "/cp-nri-unit/%s", id);
  m->linux_.cgroups_path = m->path;
  m->c.linux = &m->linux_;
  m->kv.key = (char *) "cachepin.io/cpus";
  m->kv.value = (char *) "1";
  m->mode.key = (char *) "cachepin.io/mode";
  m->mode.value = (char *) "shared";
  m->kvp[0] = &m->kv;
  m->kvp[1] = &m->mode;
  m->c.annotations = m->kvp;
  m->c.n_annotations = 2;
}

/* ID placed by CreateContainer of plugin P, as the plugin records it (pid 0, no
   inode yet). */
static void
created_by (struct cp_nri_plugin *p, const char *id)
{
  struct ctr m;
  build (&m, id);
  Nri__Pkg__Api__V1alpha1__CreateContainerRequest req = NRI__PKG__API__V1ALPHA1__CREATE_CONTAINER_REQUEST__INIT;
  req.container = &m.c;
  struct cp_buf out = { 0 };
  struct cp_nri_call call = { .stream = 7, .out = &out };
  cp_error_t err = NULL;
  if (cp_nri_create_container (p, &req, &call, &err) < 0)
    fail_msg ("create: %s", cp_error_message (err));
  cp_buf_free (&out);
}

static void
created (struct fixture *fx, const char *id)
{
  created_by (&fx->plugin, id);
}

/* The CPUs the ledger holds for ID (the caller frees; NULL: no entry). */
static char *
cpus_of (const struct fixture *fx, const char *id)
{
  return tu_ledger_cpus (fx->dir, id);
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

/* The one response OUT holds (connection 1), decoded; the caller frees it. */
static Ttrpc__Response *
response_of (const struct cp_buf *out)
{
  cp_error_t err = NULL;
  struct cp_nri_wire w;
  cp_nri_wire_init (&w);
  assert_int_equal (cp_nri_wire_feed (&w, out->p, out->len, &err), 0);
  struct cp_ttrpc_msg m;
  assert_int_equal (cp_nri_wire_next (&w, CP_MUX_CONN_PLUGIN, &m, &err), 1);
  Ttrpc__Response *resp = ttrpc__response__unpack (NULL, m.len, m.payload);
  assert_non_null (resp);
  cp_ttrpc_msg_clear (&m);
  cp_nri_wire_clear (&w);
  return resp;
}

/* Synchronize with CTRS (N), MORE as given: the answer's `more` and update count. */
static void
synchronize (struct fixture *fx, nri_container **ctrs, size_t n, bool more, bool *more_out, size_t *n_update)
{
  Nri__Pkg__Api__V1alpha1__SynchronizeRequest req = NRI__PKG__API__V1ALPHA1__SYNCHRONIZE_REQUEST__INIT;
  req.containers = ctrs;
  req.n_containers = n;
  req.more = more;
  struct cp_buf out = { 0 };
  struct cp_nri_call call = { .stream = 7, .out = &out };
  cp_error_t err = NULL;
  if (cp_nri_synchronize (&fx->plugin, &req, &call, &err) < 0)
    fail_msg ("synchronize: %s", cp_error_message (err));
  Ttrpc__Response *resp = response_of (&out);
  assert_true (resp->status == NULL || resp->status->code == 0);
  Nri__Pkg__Api__V1alpha1__SynchronizeResponse *sr
      = nri__pkg__api__v1alpha1__synchronize_response__unpack (NULL, resp->payload.len, resp->payload.data);
  assert_non_null (sr);
  *more_out = sr->more;
  *n_update = sr->n_update;
  nri__pkg__api__v1alpha1__synchronize_response__free_unpacked (sr, NULL);
  ttrpc__response__free_unpacked (resp, NULL);
  cp_buf_free (&out);
}

/* The rule (owner.h): an entry is the plugin's when it has no pid and an id that is
   not apply:'s, and then this plugin's when it records this plugin's runtime or
   none (an older cachepin's).  The hook's entries have the container's process,
   apply's the "apply:" id. */
static void
test_ownership_rule (void **state)
{
  (void) state;
  struct cp_owner me = { .origin = CP_ORIGIN_NRI, .runtime = RUNTIME };
  struct cp_ledger_entry plugin = { .id = (char *) "0123abcd", .runtime = (char *) RUNTIME };
  struct cp_ledger_entry legacy = { .id = (char *) "0123abcd" };
  struct cp_ledger_entry other = { .id = (char *) "0123abcd", .runtime = (char *) "/run/other/nri.sock" };
  struct cp_ledger_entry hook = { .id = (char *) "0123abcd", .pid = 4242 };
  struct cp_ledger_entry apply = { .id = (char *) "apply:/sys/fs/cgroup/cpuset/job", .pid = 0 };
  assert_true (cp_owner_owns (&me, &plugin));
  assert_true (cp_owner_owns (&me, &legacy));
  assert_false (cp_owner_owns (&me, &other));
  assert_false (cp_owner_owns (&me, &hook));
  assert_false (cp_owner_owns (&me, &apply));
  assert_int_equal (cp_ledger_entry_origin (&hook), CP_ORIGIN_HOOK);
  assert_int_equal (cp_ledger_entry_origin (&apply), CP_ORIGIN_APPLY);
  assert_int_equal (cp_ledger_entry_origin (&plugin), CP_ORIGIN_NRI);
}

/* The settle rule, every state the runtime may report: a pending entry of ours is
   released when the runtime says stopped or no longer lists it, kept while it is
   created or UNKNOWN; one judged by its cgroup (an inode) is never released for
   not being listed; a running container is adopted on its placement and told
   again off it; another runtime's entry is never touched. */
static void
test_settle_rule (void **state)
{
  (void) state;
  struct cp_owner me = { .origin = CP_ORIGIN_NRI, .runtime = RUNTIME };
  cleanup_bitmap hwloc_bitmap_t cpus = tu_set ("1"), other_cpus = tu_set ("2-3"), none = hwloc_bitmap_alloc ();
  struct cp_ledger_entry pending = { .id = (char *) "p", .runtime = (char *) RUNTIME, .cpus = cpus };
  struct cp_ledger_entry adopted = { .id = (char *) "a", .runtime = (char *) RUNTIME, .cpus = cpus, .cgroup_ino = 42 };
  struct cp_ledger_entry theirs = { .id = (char *) "t", .runtime = (char *) "/run/other/nri.sock", .cpus = cpus };
  assert_int_equal (cp_owner_settle (&me, &pending, CP_SEEN_STOPPED, NULL), CP_SETTLE_RELEASE);
  assert_int_equal (cp_owner_settle (&me, &pending, CP_SEEN_ABSENT, NULL), CP_SETTLE_RELEASE);
  assert_int_equal (cp_owner_settle (&me, &pending, CP_SEEN_CREATED, NULL), CP_SETTLE_KEEP);
  assert_int_equal (cp_owner_settle (&me, &pending, CP_SEEN_UNKNOWN, NULL), CP_SETTLE_KEEP);
  assert_int_equal (cp_owner_settle (&me, &pending, CP_SEEN_RUNNING, cpus), CP_SETTLE_ADOPT);
  assert_int_equal (cp_owner_settle (&me, &pending, CP_SEEN_RUNNING, NULL), CP_SETTLE_ADOPT);
  assert_int_equal (cp_owner_settle (&me, &pending, CP_SEEN_RUNNING, none), CP_SETTLE_UNAPPLIED);
  assert_int_equal (cp_owner_settle (&me, &pending, CP_SEEN_RUNNING, other_cpus), CP_SETTLE_UNAPPLIED);
  assert_int_equal (cp_owner_settle (&me, &adopted, CP_SEEN_ABSENT, NULL), CP_SETTLE_KEEP);
  assert_int_equal (cp_owner_settle (&me, &adopted, CP_SEEN_UNKNOWN, NULL), CP_SETTLE_KEEP);
  assert_int_equal (cp_owner_settle (&me, &adopted, CP_SEEN_RUNNING, other_cpus), CP_SETTLE_KEEP);
  assert_int_equal (cp_owner_settle (&me, &adopted, CP_SEEN_STOPPED, NULL), CP_SETTLE_RELEASE);
  assert_int_equal (cp_owner_settle (&me, &theirs, CP_SEEN_ABSENT, NULL), CP_SETTLE_KEEP);
  assert_int_equal (cp_owner_settle (&me, &theirs, CP_SEEN_STOPPED, NULL), CP_SETTLE_KEEP);
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
  cleanup_free char *keep_cpus = cpus_of (fx, "keep");
  applied (&keep, keep_cpus);
  nri_container *part1[] = { &keep.c };
  bool more;
  size_t n_update;
  synchronize (fx, part1, 1, true, &more, &n_update);
  assert_true (more);
  assert_int_equal (n_update, 0);
  assert_true (has (fx, "gone")); /* nothing done before the last part */

  synchronize (fx, NULL, 0, false, &more, &n_update);
  assert_false (more);
  assert_int_equal (n_update, 0); /* "keep" has its entry: nothing to place */
  assert_false (has (fx, "gone"));
  assert_true (has (fx, "keep"));
  assert_true (has (fx, "hookctr"));
  assert_true (has (fx, "apply:/job"));
  assert_int_equal (fx->plugin.sync.n, 0); /* the collection starts again */
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
  bool more;
  size_t n_update;
  synchronize (fx, list, 1, false, &more, &n_update);
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
  cp_nri_resync (&fx->plugin, NULL, 0, list, 1, 0, &u);
  assert_int_equal (u.n, 0);
  assert_true (has (fx, "late"));
  assert_false (has (fx, "new"));
  cp_nri_updates_free (&u);
}

/* What the runtime cannot tell (CONTAINER_UNKNOWN, after a containerd restart)
   and a container created, not started: kept.  Another runtime's plugin's pending
   entry, not listed by ours: kept (finding 2: a second plugin's first Synchronize
   released the first's entries). */
static void
test_unknown_and_theirs_kept (void **state)
{
  struct fixture *fx = *state;
  struct cp_nri_plugin other = fx->plugin;
  other.owner.runtime = "/run/other/nri.sock";
  created (fx, "unknown");
  created (fx, "made");
  created_by (&other, "theirs");
  struct ctr u, m;
  build (&u, "unknown");
  u.c.state = NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_UNKNOWN;
  build (&m, "made");
  m.c.state = NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_CREATED;
  nri_container *list[] = { &u.c, &m.c };
  bool more;
  size_t n_update;
  synchronize (fx, list, 2, false, &more, &n_update);
  assert_int_equal (n_update, 0);
  assert_true (has (fx, "unknown"));
  assert_true (has (fx, "made"));
  assert_true (has (fx, "theirs"));
  /* Its own runtime's Synchronize, which lists it no longer: released. */
  fx->plugin.owner.runtime = other.owner.runtime;
  synchronize (fx, list, 2, false, &more, &n_update);
  assert_false (has (fx, "theirs"));
}

/* A container listed twice counts once: one placement, one update. */
static void
test_listed_twice (void **state)
{
  struct fixture *fx = *state;
  struct ctr a, b;
  build (&a, "twice");
  build (&b, "twice");
  nri_container *list[] = { &a.c, &b.c };
  bool more;
  size_t n_update;
  synchronize (fx, list, 2, false, &more, &n_update);
  assert_int_equal (n_update, 1);
  assert_true (has (fx, "twice"));
}

/* Finding 5: CreateContainer answered, but the runtime never applied it (it gave up
   waiting): the container runs on other CPUs.  The resync tells the runtime the
   entry's CPUs, held for it, and never adopts the cgroup as it is (its cpuset would
   read as a drift and withhold the CPUs it runs on). */
static void
test_unapplied_told_again (void **state)
{
  struct fixture *fx = *state;
  created (fx, "late");
  cleanup_free char *held = cpus_of (fx, "late");
  assert_non_null (held);
  struct ctr m;
  build (&m, "late");
  Nri__Pkg__Api__V1alpha1__LinuxCPU cpu = NRI__PKG__API__V1ALPHA1__LINUX_CPU__INIT;
  Nri__Pkg__Api__V1alpha1__LinuxResources res = NRI__PKG__API__V1ALPHA1__LINUX_RESOURCES__INIT;
  cpu.cpus = (char *) "4000";
  res.cpu = &cpu;
  m.linux_.resources = &res;
  nri_container *list[] = { &m.c };
  struct cp_nri_updates u;
  cp_nri_resync (&fx->plugin, NULL, 0, list, 1, CP_NRI_RESYNC_BUDGET_MS, &u);
  assert_int_equal (u.n, 1);
  assert_string_equal (u.p[0]->container_id, "late");
  assert_string_equal (u.p[0]->linux->resources->cpu->cpus, held);
  cp_nri_updates_free (&u);
  cleanup_free char *still = cpus_of (fx, "late");
  assert_string_equal (still, held);
}

/* A `more` chain past CP_NRI_SYNC_MAX_PARTS: refused with RESOURCE_EXHAUSTED and
   the plugin told to close the connection; nothing kept. */
static void
test_more_bounded (void **state)
{
  struct fixture *fx = *state;
  Nri__Pkg__Api__V1alpha1__SynchronizeRequest req = NRI__PKG__API__V1ALPHA1__SYNCHRONIZE_REQUEST__INIT;
  req.more = true;
  struct cp_buf out = { 0 };
  struct cp_nri_call call = { .stream = 7, .out = &out };
  cp_error_t err = NULL;
  int r = 0;
  for (int i = 0; i <= CP_NRI_SYNC_MAX_PARTS && r == 0; i++)
    {
      out.len = 0;
      r = cp_nri_synchronize (&fx->plugin, &req, &call, &err);
    }
  assert_int_equal (r, CP_NRI_SYNC_TOO_LONG);
  assert_int_equal (fx->plugin.sync.n, 0);
  Ttrpc__Response *resp = response_of (&out);
  assert_non_null (resp->status);
  assert_int_equal (resp->status->code, CP_RPC_RESOURCE_EXHAUSTED);
  assert_non_null (strstr (resp->status->message, "Synchronize past"));
  ttrpc__response__free_unpacked (resp, NULL);
  cp_buf_free (&out);
}


/* ST's mount of claim UID's result INDEX as its CDI device makes it (FX's cdi_dir). */
static void
claim_mount (Nri__Pkg__Api__V1alpha1__Mount *m, char *src, size_t n_src, char *dst, size_t n_dst,
             const struct fixture *fx, const char *uid, unsigned index)
{
  *m = (Nri__Pkg__Api__V1alpha1__Mount) NRI__PKG__API__V1ALPHA1__MOUNT__INIT;
  snprintf (src, n_src, "%s/cachepin.io-claim_%s.json", fx->hc.cdi_dir, uid);
  snprintf (dst, n_dst, "%s/%s/%u", CP_DRA_CLAIM_MOUNT_DIR, uid, index);
  m->source = src;
  m->destination = dst;
}

/* Containers given a prepared DRA claim's devices, started while the plugin was away
   (and asking cachepin.io/ keys too): an update to the CPUs of the results they were
   given (one result, or both), no entry of their own; one given a claim not prepared
   here, and one whose environment alone says a claim: nothing. */
static void
test_claim_containers (void **state)
{
  struct fixture *fx = *state;
  cleanup_dra_model struct cp_dra_model *mdl = NULL;
  cp_error_t err = NULL;
  if (cp_dra_gather (&fx->hc, NULL, false, &mdl, NULL, &err) < 0)
    fail_msg ("gather: %s", cp_error_message (err));
  struct cp_dra_claim_result res[2] = { { .index = 0, .request = "r", .cpus = 1 },
                                        { .index = 1, .request = "s/fast", .cpus = 1 } };
  for (size_t i = 0; i < 2; i++)
    snprintf (res[i].device, sizeof res[i].device, "%s", mdl->devices[i % mdl->n_devices].name);
  const char *uid = "33333333-0000-4000-8000-00000000c1a1";
  struct cp_dra_claim claim = { .name = "c", .namespace_ = "ns", .results = res, .n_results = 2 };
  snprintf (claim.uid, sizeof claim.uid, "%s", uid);
  cleanup_dra_prepared struct cp_dra_prepared prep = { 0 };
  if (cp_dra_claim_prepare (&fx->hc, &claim, &prep, &err) < 0)
    fail_msg ("prepare: %s", cp_error_message (err));
  assert_int_equal (prep.n_results, 2);
  cleanup_free char *want0 = cp_cpulist_format (prep.results[0].cpus);
  cleanup_free char *want_both = cp_cpulist_format (prep.cpus);
  assert_int_equal (hwloc_bitmap_weight (prep.cpus), 2);

  char src[4][PATH_MAX], dst[4][160];
  Nri__Pkg__Api__V1alpha1__Mount m[4];
  claim_mount (&m[0], src[0], sizeof src[0], dst[0], sizeof dst[0], fx, uid, 0);
  claim_mount (&m[1], src[1], sizeof src[1], dst[1], sizeof dst[1], fx, uid, 1);
  claim_mount (&m[2], src[2], sizeof src[2], dst[2], sizeof dst[2], fx, "44444444-0000-4000-8000-00000000c1a1", 0);
  Nri__Pkg__Api__V1alpha1__Mount *only0[] = { &m[0] }, *both[] = { &m[1], &m[0] }, *unknown[] = { &m[2] };
  char *env[] = { (char *) "CACHEPIN_DRA_CLAIM=33333333-0000-4000-8000-00000000c1a1" };
  struct ctr a, b, c, d;
  build (&a, "claimed");
  a.c.mounts = only0;
  a.c.n_mounts = 1;
  a.c.env = env;
  a.c.n_env = 1;
  build (&b, "both-results");
  b.c.mounts = both;
  b.c.n_mounts = 2;
  build (&c, "unknown-claim");
  c.c.mounts = unknown;
  c.c.n_mounts = 1;
  build (&d, "env-alone");
  d.c.env = env;
  d.c.n_env = 1;
  nri_container *list[] = { &a.c, &b.c, &c.c, &d.c };
  struct cp_nri_updates u;
  cp_nri_resync (&fx->plugin, NULL, 0, list, 4, 2000, &u);
  assert_int_equal (u.n, 2);
  for (size_t i = 0; i < u.n; i++)
    if (strcmp (u.p[i]->container_id, "claimed") == 0)
      assert_string_equal (u.p[i]->linux->resources->cpu->cpus, want0);
    else
      {
        assert_string_equal (u.p[i]->container_id, "both-results");
        assert_string_equal (u.p[i]->linux->resources->cpu->cpus, want_both);
      }
  for (size_t i = 0; i < 4; i++)
    assert_false (has (fx, list[i]->id));
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
    cmocka_unit_test (test_settle_rule),
    cmocka_unit_test_setup_teardown (test_more_then_release, setup, teardown),
    cmocka_unit_test_setup_teardown (test_stopped_released, setup, teardown),
    cmocka_unit_test_setup_teardown (test_no_time_left, setup, teardown),
    cmocka_unit_test_setup_teardown (test_unknown_and_theirs_kept, setup, teardown),
    cmocka_unit_test_setup_teardown (test_listed_twice, setup, teardown),
    cmocka_unit_test_setup_teardown (test_unapplied_told_again, setup, teardown),
    cmocka_unit_test_setup_teardown (test_more_bounded, setup, teardown),
    cmocka_unit_test_setup_teardown (test_claim_containers, setup, teardown),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
