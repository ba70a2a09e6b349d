/* `cachepin nri`'s handlers (hook/agent/nri_events.c) on NRI messages built here, with
   a state directory of the test's and the host's topology: what CreateContainer,
   UpdateContainer and StopContainer answer (decoded from the frames they write, as
   containerd reads them) and what the ledger then holds.  The container's cgroup is
   never made: the plugin decides before the runtime makes it. */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
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
#include "started.h"
#include "nri_rpc.h"
#include "sched.h"
#include "topo.h"
#include "util.h"

typedef Nri__Pkg__Api__V1alpha1__PodSandbox__AnnotationsEntry pod_kv_t;
typedef Nri__Pkg__Api__V1alpha1__Container__AnnotationsEntry ctr_kv_t;

struct fixture
{
  char *dir;
  struct cp_hostconfig hc;
  struct cp_nri_plugin plugin;
};

static int
setup (void **state)
{
  struct fixture *fx = cp_xmalloc0 (sizeof *fx);
  fx->dir = tu_tmpdir ("nri");
  tu_hostconfig (&fx->hc, fx->dir, NULL);
  fx->plugin = (struct cp_nri_plugin) { .hc = &fx->hc,
                                        .owner = { .origin = CP_ORIGIN_NRI, .runtime = "/run/test-nri/nri.sock" },
                                        .request_timeout_ms = 2000 };
  cp_log_set_level (CP_LOG_ERROR);
  cp_front_stay_unsandboxed (); /* the test goes on after a placement */
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

/* The response OUT holds (one message on connection 1, stream 7): its status code,
   message and payload decoded as DESC (NULL when not OK). */
static ProtobufCMessage *
answer (struct cp_buf *out, const ProtobufCMessageDescriptor *desc, int32_t *code, char **message)
{
  struct cp_nri_wire w;
  cp_nri_wire_init (&w);
  cp_error_t err = NULL;
  assert_int_equal (cp_nri_wire_feed (&w, out->p, out->len, &err), 0);
  struct cp_ttrpc_msg m;
  assert_int_equal (cp_nri_wire_next (&w, CP_MUX_CONN_PLUGIN, &m, &err), 1);
  assert_int_equal (m.type, CP_TTRPC_RESPONSE);
  assert_int_equal (m.stream, 7);
  Ttrpc__Response *resp = ttrpc__response__unpack (NULL, m.len, m.payload);
  assert_non_null (resp);
  *code = resp->status ? resp->status->code : 0;
  *message = resp->status && resp->status->message ? cp_xstrdup (resp->status->message) : NULL;
  ProtobufCMessage *msg = NULL;
  if (*code == 0)
    {
      msg = protobuf_c_message_unpack (desc, NULL, resp->payload.len, resp->payload.data);
      assert_non_null (msg);
    }
  ttrpc__response__free_unpacked (resp, NULL);
  cp_ttrpc_msg_clear (&m);
  cp_nri_wire_clear (&w);
  out->len = 0;
  return msg;
}

static char *
held (const struct fixture *fx, const char *id)
{
  return tu_ledger_cpus (fx->dir, id);
}

/* A container ID of a pod, with the pod's annotation POD_CPUS and its own CTR_CPUS
   and CTR_SMT (NULL: none), its cgroup /cp-nri-unit/ID. */
struct msg
{
  Nri__Pkg__Api__V1alpha1__PodSandbox pod;
  Nri__Pkg__Api__V1alpha1__Container ctr;
  Nri__Pkg__Api__V1alpha1__LinuxContainer linux_;
  pod_kv_t pod_kv[1];
  ctr_kv_t ctr_kv[4];
  pod_kv_t *pod_p[1];
  ctr_kv_t *ctr_p[4];
  char path[64];
  Nri__Pkg__Api__V1alpha1__LinuxResources res;
  Nri__Pkg__Api__V1alpha1__LinuxCPU cpu;
  char cpus[64];
};

/* M's spec as the runtime has it once it applied an answer of CPUS: the container's
   linux.resources.cpu.cpus, which its later events carry. */
static void
applied (struct msg *m, const char *cpus)
{
  snprintf (m->cpus, sizeof m->cpus, "%s", cpus);
  m->cpu = (Nri__Pkg__Api__V1alpha1__LinuxCPU) NRI__PKG__API__V1ALPHA1__LINUX_CPU__INIT;
  m->cpu.cpus = m->cpus;
  m->res = (Nri__Pkg__Api__V1alpha1__LinuxResources) NRI__PKG__API__V1ALPHA1__LINUX_RESOURCES__INIT;
  m->res.cpu = &m->cpu;
  m->linux_.resources = &m->res;
}

static void
build (struct msg *m, const char *id, const char *pod_cpus, const char *ctr_cpus, const char *ctr_smt)
{
  *m = (struct msg) { .pod = NRI__PKG__API__V1ALPHA1__POD_SANDBOX__INIT,
                      .ctr = NRI__PKG__API__V1ALPHA1__CONTAINER__INIT,
                      .linux_ = NRI__PKG__API__V1ALPHA1__LINUX_CONTAINER__INIT };
  m->pod.id = (char *) "pod";
  m->pod.name = (char *) "pod";
  m->ctr.id = (char *) id;
  snprintf (m->path, sizeof m->path, "/cp-nri-unit/%s", id);
  m->linux_.cgroups_path = m->path;
  m->ctr.linux = &m->linux_;
  m->pod_kv[0] = (pod_kv_t) NRI__PKG__API__V1ALPHA1__POD_SANDBOX__ANNOTATIONS_ENTRY__INIT;
  for (size_t i = 0; i < 4; i++)
    m->ctr_kv[i] = (ctr_kv_t) NRI__PKG__API__V1ALPHA1__CONTAINER__ANNOTATIONS_ENTRY__INIT;
  if (pod_cpus)
    {
      m->pod_kv[0].key = (char *) "cachepin.io/cpus";
      m->pod_kv[0].value = (char *) pod_cpus;
      m->pod_p[0] = &m->pod_kv[0];
      m->pod.annotations = m->pod_p;
      m->pod.n_annotations = 1;
    }
  size_t n = 0;
  if (ctr_cpus)
    {
      m->ctr_kv[n].key = (char *) "cachepin.io/cpus";
      m->ctr_kv[n].value = (char *) ctr_cpus;
      m->ctr_p[n] = &m->ctr_kv[n];
      n++;
    }
  if (ctr_smt)
    {
      m->ctr_kv[n].key = (char *) "cachepin.io/smt";
      m->ctr_kv[n].value = (char *) ctr_smt;
      m->ctr_p[n] = &m->ctr_kv[n];
      n++;
    }
  m->ctr.annotations = m->ctr_p;
  m->ctr.n_annotations = n;
}

static Nri__Pkg__Api__V1alpha1__CreateContainerResponse *
create (struct fixture *fx, struct msg *m, int32_t *code, char **message)
{
  Nri__Pkg__Api__V1alpha1__CreateContainerRequest req = NRI__PKG__API__V1ALPHA1__CREATE_CONTAINER_REQUEST__INIT;
  req.pod = &m->pod;
  req.container = &m->ctr;
  struct cp_buf out = { 0 };
  struct cp_nri_call call = { .stream = 7, .out = &out };
  cp_error_t err = NULL;
  if (cp_nri_create_container (&fx->plugin, &req, &call, &err) < 0)
    fail_msg ("create: %s", cp_error_message (err));
  void *r = answer (&out, &nri__pkg__api__v1alpha1__create_container_response__descriptor, code, message);
  cp_buf_free (&out);
  return r;
}

/* The pod asks for every CPU, the container for 1: the container's key wins; the
   answer is an adjustment of cpus (1 CPU the topology allows) and mems, and the
   ledger holds that CPU under the container's id.  An update asking for every CPU
   is answered with the placed cpuset; the stop releases it. */
static void
test_create_update_stop (void **state)
{
  struct fixture *fx = *state;
  struct cp_topo *topo = tu_topo ("host");
  cleanup_free char *all = cp_cpulist_format (topo->allowed);
  char many[16];
  snprintf (many, sizeof many, "%d", hwloc_bitmap_weight (topo->allowed));
  struct msg m;
  build (&m, "ctr", many, "1", NULL);
  int32_t code;
  cleanup_free char *message = NULL;
  Nri__Pkg__Api__V1alpha1__CreateContainerResponse *r = create (fx, &m, &code, &message);
  assert_int_equal (code, 0);
  assert_non_null (r->adjust);
  assert_non_null (r->adjust->linux);
  assert_non_null (r->adjust->linux->resources);
  const Nri__Pkg__Api__V1alpha1__LinuxCPU *cpu = r->adjust->linux->resources->cpu;
  assert_non_null (cpu);
  hwloc_bitmap_t set = tu_set (cpu->cpus);
  assert_int_equal (hwloc_bitmap_weight (set), 1);
  assert_true (hwloc_bitmap_isincluded (set, topo->allowed));
  assert_true (cpu->mems && cpu->mems[0]);
  cleanup_free char *h = held (fx, "ctr");
  assert_non_null (h);
  assert_string_equal (h, cpu->cpus);
  protobuf_c_message_free_unpacked (&r->base, NULL);
  hwloc_bitmap_free (set);

  /* UpdateContainer with every CPU: the answer keeps the placed one. */
  Nri__Pkg__Api__V1alpha1__LinuxCPU asked = NRI__PKG__API__V1ALPHA1__LINUX_CPU__INIT;
  asked.cpus = all;
  Nri__Pkg__Api__V1alpha1__LinuxResources res = NRI__PKG__API__V1ALPHA1__LINUX_RESOURCES__INIT;
  res.cpu = &asked;
  Nri__Pkg__Api__V1alpha1__UpdateContainerRequest up = NRI__PKG__API__V1ALPHA1__UPDATE_CONTAINER_REQUEST__INIT;
  up.pod = &m.pod;
  up.container = &m.ctr;
  up.linux_resources = &res;
  struct cp_buf out = { 0 };
  struct cp_nri_call call = { .stream = 7, .out = &out };
  cp_error_t err = NULL;
  assert_int_equal (cp_nri_update_container (&fx->plugin, &up, &call, &err), 0);
  cleanup_free char *msg2 = NULL;
  Nri__Pkg__Api__V1alpha1__UpdateContainerResponse *ur = (void *) answer (
      &out, &nri__pkg__api__v1alpha1__update_container_response__descriptor, &code, &msg2);
  assert_int_equal (code, 0);
  assert_int_equal (ur->n_update, 1);
  assert_string_equal (ur->update[0]->container_id, "ctr");
  assert_string_equal (ur->update[0]->linux->resources->cpu->cpus, h);
  assert_null (ur->update[0]->linux->resources->cpu->quota); /* the rest passes through */
  protobuf_c_message_free_unpacked (&ur->base, NULL);

  /* StopContainer: released. */
  Nri__Pkg__Api__V1alpha1__StopContainerRequest stop = NRI__PKG__API__V1ALPHA1__STOP_CONTAINER_REQUEST__INIT;
  stop.pod = &m.pod;
  stop.container = &m.ctr;
  assert_int_equal (cp_nri_stop_container (&fx->plugin, &stop, &call, &err), 0);
  cleanup_free char *msg3 = NULL;
  ProtobufCMessage *sr = answer (&out, &nri__pkg__api__v1alpha1__stop_container_response__descriptor, &code, &msg3);
  assert_int_equal (code, 0);
  protobuf_c_message_free_unpacked (sr, NULL);
  cleanup_free char *after = held (fx, "ctr");
  assert_null (after);
  cp_buf_free (&out);
  cp_topo_free (topo);
}

/* No cachepin.io/ annotation: an empty answer, nothing recorded.  An invalid one: the
   creation fails with one line naming the annotation. */
static void
test_not_ours_and_invalid (void **state)
{
  struct fixture *fx = *state;
  struct msg m;
  build (&m, "plain", NULL, NULL, NULL);
  int32_t code;
  cleanup_free char *message = NULL;
  Nri__Pkg__Api__V1alpha1__CreateContainerResponse *r = create (fx, &m, &code, &message);
  assert_int_equal (code, 0);
  assert_null (r->adjust);
  protobuf_c_message_free_unpacked (&r->base, NULL);
  cleanup_free char *h = held (fx, "plain");
  assert_null (h);

  build (&m, "bad", NULL, "1", "pe1");
  cleanup_free char *why = NULL;
  r = create (fx, &m, &code, &why);
  assert_null (r);
  assert_int_equal (code, CP_RPC_FAILED_PRECONDITION);
  assert_non_null (why);
  assert_true (strncmp (why, "cachepin: ", 10) == 0);
  tu_assert_contains (why, "cachepin.io/smt");
  assert_null (strchr (why, '\n'));
  cleanup_free char *h2 = held (fx, "bad");
  assert_null (h2);
}

/* One more annotation of the container's (M has room for four). */
static void
add_ctr_kv (struct msg *m, const char *key, const char *value)
{
  size_t n = m->ctr.n_annotations;
  assert_true (n < 4);
  m->ctr_kv[n].key = (char *) key;
  m->ctr_kv[n].value = (char *) value;
  m->ctr_p[n] = &m->ctr_kv[n];
  m->ctr.n_annotations = n + 1;
}

/* The entry of ID: present, and its core_sched. */
static bool
entry_core_sched (const struct fixture *fx, const char *id)
{
  struct cp_ledger *l = NULL;
  cp_error_t err = NULL;
  if (cp_ledger_open (fx->dir, 1000, &l, &err) < 0)
    fail_msg ("ledger: %s", cp_error_message (err));
  const struct cp_ledger_entry *e = cp_ledger_find (l, id);
  assert_non_null (e);
  bool got = e->core_sched;
  cp_ledger_close (l);
  return got;
}

/* The state change EVENT of M's container, answered Empty. */
static void
state_change (struct fixture *fx, struct msg *m, int event)
{
  Nri__Pkg__Api__V1alpha1__StateChangeEvent ev = NRI__PKG__API__V1ALPHA1__STATE_CHANGE_EVENT__INIT;
  ev.event = event;
  ev.pod = &m->pod;
  ev.container = &m->ctr;
  struct cp_buf out = { 0 };
  struct cp_nri_call call = { .stream = 7, .out = &out };
  cp_error_t err = NULL;
  assert_int_equal (cp_nri_state_change (&fx->plugin, &ev, &call, &err), 0);
  int32_t code;
  cleanup_free char *message = NULL;
  ProtobufCMessage *r = answer (&out, &nri__pkg__api__v1alpha1__empty__descriptor, &code, &message);
  assert_int_equal (code, 0);
  protobuf_c_message_free_unpacked (r, NULL);
  cp_buf_free (&out);
}

/* Core scheduling unavailable (the probe pinned to what this host's kernel and
   Debian's answer: EINVAL, no CONFIG_SCHED_CORE): asked, not strict, the container
   is placed without a cookie (the entry says core_sched: false); strict, the
   creation fails with the hook's one line, nothing recorded. */
static void
test_core_sched_unavailable (void **state)
{
  struct fixture *fx = *state;
  struct cp_sched_core none = { .avail = CP_SCHED_CORE_NO_CONFIG, .errnum = EINVAL, .smt_active = -1 };
  cp_started_core_sched_pin (&none);
  struct msg m;
  build (&m, "loose", NULL, "1", NULL);
  add_ctr_kv (&m, "cachepin.io/core-sched", "true");
  int32_t code;
  cleanup_free char *message = NULL;
  Nri__Pkg__Api__V1alpha1__CreateContainerResponse *r = create (fx, &m, &code, &message);
  assert_int_equal (code, 0);
  assert_non_null (r->adjust);
  protobuf_c_message_free_unpacked (&r->base, NULL);
  assert_false (entry_core_sched (fx, "loose"));

  build (&m, "tight", NULL, "1", NULL);
  add_ctr_kv (&m, "cachepin.io/core-sched", "true");
  add_ctr_kv (&m, "cachepin.io/strict", "true");
  cleanup_free char *why = NULL;
  r = create (fx, &m, &code, &why);
  assert_null (r);
  assert_int_equal (code, CP_RPC_FAILED_PRECONDITION);
  assert_non_null (why);
  assert_string_equal (why, "cachepin: cachepin.io/core-sched: this kernel has no core scheduling (CONFIG_SCHED_CORE)");
  cleanup_free char *h = held (fx, "tight");
  assert_null (h);
}

/* Core scheduling pinned as available: the creation is placed with the cookie
   wanted (core_sched: false, nothing made yet); StartContainer without a pid makes
   nothing; with the pid of a real process, the real prctl is asked, and the entry
   says what it answered: on this host's kernel (no CONFIG_SCHED_CORE: EINVAL) it
   fails, the container runs on (the answer is Empty, OK) and the entry keeps
   core_sched: false.  Only a kernel whose probe says supported records true. */
static void
test_core_sched_at_start (void **state)
{
  struct fixture *fx = *state;
  struct cp_sched_core real;
  cp_error_t err = NULL;
  assert_int_equal (cp_sched_core_probe ("/", &real, &err), 0);
  struct cp_sched_core there = { .avail = CP_SCHED_CORE_SUPPORTED, .smt_active = 1 };
  cp_started_core_sched_pin (&there);
  struct msg m;
  build (&m, "cookie", NULL, "1", NULL);
  add_ctr_kv (&m, "cachepin.io/core-sched", "true");
  add_ctr_kv (&m, "cachepin.io/strict", "true"); /* wanted, so not refused at create */
  int32_t code;
  cleanup_free char *message = NULL;
  Nri__Pkg__Api__V1alpha1__CreateContainerResponse *r = create (fx, &m, &code, &message);
  assert_int_equal (code, 0);
  assert_non_null (r->adjust);
  applied (&m, r->adjust->linux->resources->cpu->cpus);
  protobuf_c_message_free_unpacked (&r->base, NULL);
  assert_false (entry_core_sched (fx, "cookie"));

  m.ctr.pid = 0; /* containerd at PostCreateContainer: no task yet */
  state_change (fx, &m, NRI__PKG__API__V1ALPHA1__EVENT__POST_CREATE_CONTAINER);
  assert_false (entry_core_sched (fx, "cookie"));

  pid_t child = tu_sleeper ();
  m.ctr.pid = (uint32_t) child;
  state_change (fx, &m, NRI__PKG__API__V1ALPHA1__EVENT__START_CONTAINER);
  bool made = real.avail == CP_SCHED_CORE_SUPPORTED;
  assert_int_equal (entry_core_sched (fx, "cookie"), made);
  tu_reap (child);
}

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
  cp_log_set_level (CP_LOG_WARNING);
}

/* What was logged since capture_begin() (caller frees). */
static char *
capture_end (void)
{
  fflush (stderr);
  assert_true (dup2 (saved_stderr, STDERR_FILENO) == STDERR_FILENO);
  close (saved_stderr);
  cp_log_set_level (CP_LOG_ERROR);
  char buf[8192];
  ssize_t n = pread (capture_fd, buf, sizeof buf - 1, 0);
  close (capture_fd);
  assert_true (n >= 0);
  buf[n] = '\0';
  return cp_xstrdup (buf);
}

/* cachepin.io/isolate comes through the plugin's annotations as through the hook's:
   in exclusive mode the container is placed, with a warning that the plugin does
   not isolate (yet); in shared mode the creation fails naming the key. */
static void
test_isolate (void **state)
{
  struct fixture *fx = *state;
  struct msg m;
  build (&m, "iso", NULL, "1", NULL);
  m.ctr_kv[1].key = (char *) "cachepin.io/isolate";
  m.ctr_kv[1].value = (char *) "true";
  m.ctr_p[1] = &m.ctr_kv[1];
  m.ctr.n_annotations = 2;
  int32_t code;
  cleanup_free char *message = NULL;
  capture_begin ();
  Nri__Pkg__Api__V1alpha1__CreateContainerResponse *r = create (fx, &m, &code, &message);
  cleanup_free char *logged = capture_end ();
  assert_int_equal (code, 0);
  assert_non_null (r->adjust);
  protobuf_c_message_free_unpacked (&r->base, NULL);
  cleanup_free char *h = held (fx, "iso");
  assert_non_null (h);
  /* The words are the plugin's until the engine says it (branch iso: "iso:
     cachepin.io/isolate: unsupported here (...): placed without isolation"). */
  tu_assert_contains (logged, "cachepin: warning: ");
  tu_assert_contains (logged, "iso: cachepin.io/isolate");
  tu_assert_contains (logged, ": placed without isolation\n");

  build (&m, "iso-shared", "1", NULL, NULL);
  m.pod_kv[0].key = (char *) "cachepin.io/mode";
  m.pod_kv[0].value = (char *) "shared";
  m.ctr_kv[0].key = (char *) "cachepin.io/isolate";
  m.ctr_kv[0].value = (char *) "true";
  m.ctr_p[0] = &m.ctr_kv[0];
  m.ctr.n_annotations = 1;
  cleanup_free char *why = NULL;
  r = create (fx, &m, &code, &why);
  assert_null (r);
  assert_int_equal (code, CP_RPC_FAILED_PRECONDITION);
  tu_assert_contains (why, "annotation cachepin.io/isolate: needs cachepin.io/mode=exclusive (mode is shared)");
  cleanup_free char *h2 = held (fx, "iso-shared");
  assert_null (h2);
}


/* A container given a prepared claim's CDI device carries its tag, the mount of the
   claim's spec at CP_DRA_CLAIM_MOUNT_DIR/<uid>/<result>: it gets the claim's CPUs and
   nodes, whatever its annotations, and no ledger entry of its own; two containers of
   the claim share them; an update keeps them.  The environment's tag alone, or a
   mount there whose source is not the spec (what a pod can write itself), gives
   nothing.  A tag of a claim not prepared here: on_error allow starts it unplaced,
   deny fails it with one line. */
static void
test_claim_tag (void **state)
{
  struct fixture *fx = *state;
  cleanup_dra_model struct cp_dra_model *m = NULL;
  cp_error_t err = NULL;
  if (cp_dra_gather (&fx->hc, NULL, false, &m, NULL, &err) < 0)
    fail_msg ("gather: %s", cp_error_message (err));
  assert_true (m->n_devices > 0);
  struct cp_dra_claim_result res = { .index = 0, .request = "r", .cpus = 1 };
  snprintf (res.device, sizeof res.device, "%s", m->devices[0].name);
  struct cp_dra_claim claim = { .uid = "11111111-0000-4000-8000-00000000c1a1", .name = "c", .namespace_ = "ns",
                                .results = &res, .n_results = 1 };
  cleanup_dra_prepared struct cp_dra_prepared prep = { 0 };
  if (cp_dra_claim_prepare (&fx->hc, &claim, &prep, &err) < 0)
    fail_msg ("prepare: %s", cp_error_message (err));
  cleanup_free char *want = cp_cpulist_format (prep.cpus);
  cleanup_free char *want_mems = cp_cpulist_format (prep.mems);
  assert_true (hwloc_bitmap_isincluded (prep.cpus, m->devices[0].cpus));

  char tag[80], dest[128], other_dest[128], other_src[PATH_MAX];
  snprintf (tag, sizeof tag, "CACHEPIN_DRA_CLAIM=%s", claim.uid);
  snprintf (dest, sizeof dest, "%s/%s/0", CP_DRA_CLAIM_MOUNT_DIR, claim.uid);
  const char *other = "22222222-0000-4000-8000-00000000c1a1";
  snprintf (other_dest, sizeof other_dest, "%s/%s/0", CP_DRA_CLAIM_MOUNT_DIR, other);
  snprintf (other_src, sizeof other_src, "%s/cachepin.io-claim_%s.json", fx->hc.cdi_dir, other);
  Nri__Pkg__Api__V1alpha1__Mount mount = NRI__PKG__API__V1ALPHA1__MOUNT__INIT;
  mount.source = prep.cdi_spec;
  mount.destination = dest;
  Nri__Pkg__Api__V1alpha1__Mount *mounts[] = { &mount };
  char *env[] = { (char *) "PATH=/bin", tag };
  const char *ids[] = { "claim-a", "claim-b" };
  struct msg msgs[2];
  for (size_t i = 0; i < 2; i++)
    {
      struct msg *msg = &msgs[i];
      build (msg, ids[i], NULL, i == 0 ? "2" : NULL, NULL); /* an annotation, which the claim overrides */
      msg->ctr.env = env;
      msg->ctr.n_env = 2;
      msg->ctr.mounts = mounts;
      msg->ctr.n_mounts = 1;
      int32_t code;
      cleanup_free char *message = NULL;
      Nri__Pkg__Api__V1alpha1__CreateContainerResponse *r = create (fx, msg, &code, &message);
      assert_int_equal (code, 0);
      assert_non_null (r->adjust);
      assert_string_equal (r->adjust->linux->resources->cpu->cpus, want);
      assert_string_equal (r->adjust->linux->resources->cpu->mems, want_mems);
      protobuf_c_message_free_unpacked (&r->base, NULL);
      cleanup_free char *h = held (fx, ids[i]);
      assert_null (h); /* no entry of its own: the claim's hold the CPUs */
    }

  /* Forged: the environment's tag alone, then with a mount there of a file of the
     pod's own: no claim's CPUs, under deny too (not a claim's container at all). */
  Nri__Pkg__Api__V1alpha1__Mount forged = NRI__PKG__API__V1ALPHA1__MOUNT__INIT;
  forged.source = (char *) "/var/lib/kubelet/pods/x/volumes/kubernetes.io~empty-dir/tag";
  forged.destination = dest;
  Nri__Pkg__Api__V1alpha1__Mount *forged_mounts[] = { &forged };
  fx->hc.on_error = CP_ON_ERROR_DENY;
  for (size_t k = 0; k < 2; k++)
    {
      struct msg f;
      build (&f, k ? "forged-mount" : "forged-env", NULL, NULL, NULL);
      f.ctr.env = env;
      f.ctr.n_env = 2;
      f.ctr.mounts = k ? forged_mounts : NULL;
      f.ctr.n_mounts = k;
      int32_t code;
      cleanup_free char *message = NULL;
      Nri__Pkg__Api__V1alpha1__CreateContainerResponse *r = create (fx, &f, &code, &message);
      assert_int_equal (code, 0);
      assert_null (r->adjust);
      protobuf_c_message_free_unpacked (&r->base, NULL);
    }
  fx->hc.on_error = CP_ON_ERROR_ALLOW;

  /* An update asking every CPU: answered with the claim's. */
  struct cp_topo *topo = tu_topo ("host");
  cleanup_free char *all = cp_cpulist_format (topo->allowed);
  Nri__Pkg__Api__V1alpha1__LinuxCPU asked = NRI__PKG__API__V1ALPHA1__LINUX_CPU__INIT;
  asked.cpus = all;
  Nri__Pkg__Api__V1alpha1__LinuxResources lr = NRI__PKG__API__V1ALPHA1__LINUX_RESOURCES__INIT;
  lr.cpu = &asked;
  Nri__Pkg__Api__V1alpha1__UpdateContainerRequest up = NRI__PKG__API__V1ALPHA1__UPDATE_CONTAINER_REQUEST__INIT;
  up.pod = &msgs[0].pod;
  up.container = &msgs[0].ctr;
  up.linux_resources = &lr;
  struct cp_buf out = { 0 };
  struct cp_nri_call call = { .stream = 7, .out = &out };
  assert_int_equal (cp_nri_update_container (&fx->plugin, &up, &call, &err), 0);
  int32_t code;
  cleanup_free char *msg2 = NULL;
  Nri__Pkg__Api__V1alpha1__UpdateContainerResponse *ur = (void *) answer (
      &out, &nri__pkg__api__v1alpha1__update_container_response__descriptor, &code, &msg2);
  assert_int_equal (code, 0);
  assert_int_equal (ur->n_update, 1);
  assert_string_equal (ur->update[0]->linux->resources->cpu->cpus, want);
  protobuf_c_message_free_unpacked (&ur->base, NULL);
  cp_buf_free (&out);
  cp_topo_free (topo);

  /* A claim not prepared here: allow starts it unplaced, deny refuses it. */
  Nri__Pkg__Api__V1alpha1__Mount unknown = NRI__PKG__API__V1ALPHA1__MOUNT__INIT;
  unknown.source = other_src;
  unknown.destination = other_dest;
  Nri__Pkg__Api__V1alpha1__Mount *unknown_mounts[] = { &unknown };
  struct msg u;
  build (&u, "claim-unknown", NULL, NULL, NULL);
  u.ctr.mounts = unknown_mounts;
  u.ctr.n_mounts = 1;
  cleanup_free char *m1 = NULL;
  Nri__Pkg__Api__V1alpha1__CreateContainerResponse *r = create (fx, &u, &code, &m1);
  assert_int_equal (code, 0);
  assert_null (r->adjust);
  protobuf_c_message_free_unpacked (&r->base, NULL);
  fx->hc.on_error = CP_ON_ERROR_DENY;
  cleanup_free char *m2 = NULL;
  r = create (fx, &u, &code, &m2);
  assert_int_not_equal (code, 0);
  assert_null (r);
  tu_assert_contains (m2, "DRA claim 22222222-0000-4000-8000-00000000c1a1, result 0: not prepared on this node");
  assert_null (strchr (m2, '\n'));

  /* Unprepared, the claim's containers find nothing. */
  unsigned n = 0;
  assert_int_equal (cp_dra_claim_unprepare (&fx->hc, claim.uid, &n, &err), 0);
  assert_int_equal (n, 1);
  cleanup_free char *m3 = NULL;
  r = create (fx, &msgs[1], &code, &m3);
  assert_int_not_equal (code, 0);
}

int
main (void)
{
  /* The cgroup the container would get must be where a cpuset hierarchy is (it is
     never made): without one, skipped (77, tests/CMakeLists.txt). */
  cleanup_free char *mount = NULL, *cg = NULL;
  cp_error_t err = NULL;
  if (cp_cgroup_locate_path ("/cp-nri-unit/ctr", &mount, &cg, &err) < 0)
    {
      printf ("SKIP: no cpuset cgroup hierarchy: %s\n", cp_error_message (err));
      cp_error_free (&err);
      return 77;
    }
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown (test_create_update_stop, setup, teardown),
    cmocka_unit_test_setup_teardown (test_not_ours_and_invalid, setup, teardown),
    cmocka_unit_test_setup_teardown (test_core_sched_unavailable, setup, teardown),
    cmocka_unit_test_setup_teardown (test_core_sched_at_start, setup, teardown),
    cmocka_unit_test_setup_teardown (test_isolate, setup, teardown),
    cmocka_unit_test_setup_teardown (test_claim_tag, setup, teardown),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
