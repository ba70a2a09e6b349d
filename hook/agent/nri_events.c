/* `cachepin nri`: the container events, through the same engine as the hook.
 *
 * CreateContainer is the hook's createRuntime with what NRI knows before the
 * container exists: the pod's and the container's annotations (the container's
 * win on a key both set) make the request, the container's linux.resources.cpu and
 * linux.cgroupsPath its bounds and its cgroup, read with the rules of config.json
 * the hook uses (oci's cp_oci_config_from_values(), no JSON in between); the decision is recorded in the shared ledger under
 * its lock with the container id as the entry's id (what the hook would use), and
 * answered as an adjustment of linux.resources.cpu.cpus and .mems, which the runtime
 * writes into the spec and so into the cgroup it makes.  The failure policy is the
 * hook's (engine/admission.h): a container that did not ask is answered with no
 * adjustment; one whose annotations are wrong, or that asked for strict and cannot
 * be met, fails with one line; anything else leaves it unplaced. */
#define _GNU_SOURCE
#include <string.h>

#include "nri_plugin.h"
#include "nri_rpc.h"
#include "admission.h"
#include "annotations.h"
#include "front.h"
#include "config.h"
#include "bitmap.h"
#include "cpulist.h"
#include "entries.h"
#include "started.h"
#include "locate.h"
#include "log.h"
#include "placer.h"
#include "state.h"
#include "util.h"

typedef Nri__Pkg__Api__V1alpha1__Container nri_container;
typedef Nri__Pkg__Api__V1alpha1__PodSandbox nri_pod;

static int
reply (struct cp_nri_call *call, const ProtobufCMessage *msg, cp_error_t *err)
{
  return cp_rpc_response_encode (CP_MUX_CONN_PLUGIN, call->stream, CP_RPC_OK, NULL, msg, call->out, err);
}

/* The container fails: ERR's line, which containerd puts in the CreateContainer error. */
static int
fail (struct cp_nri_call *call, cp_error_t *why, cp_error_t *err)
{
  cleanup_free char *line = cp_xasprintf ("cachepin: %s", cp_error_message (*why));
  cp_error_free (why);
  return cp_rpc_response_encode (CP_MUX_CONN_PLUGIN, call->stream, CP_RPC_FAILED_PRECONDITION, line, NULL,
                                 call->out, err);
}

/* The pod's annotations, then the container's: a key the container's map has
   replaces the pod's (every copy of it); a key given twice within one map is
   passed on as given, and cp_annotations_from_map() refuses a cachepin.io/ one
   as the hook's route does (the OCI route's line, through the admission policy). */
static bool
has_key (const nri_container *c, const char *k)
{
  for (size_t i = 0; i < c->n_annotations; i++)
    if (c->annotations[i]->key && strcmp (c->annotations[i]->key, k) == 0)
      return true;
  return false;
}

int
cp_nri_annotations_of (const nri_pod *pod, const nri_container *c, struct cp_annotations *out, cp_error_t *err)
{
  size_t max = (pod ? pod->n_annotations : 0) + c->n_annotations, n = 0;
  cleanup_free const char **keys = cp_xcalloc (max + 1, sizeof *keys);
  cleanup_free const char **values = cp_xcalloc (max + 1, sizeof *values);
  for (size_t i = 0; pod && i < pod->n_annotations; i++)
    {
      const char *k = pod->annotations[i]->key, *v = pod->annotations[i]->value;
      if (k && v && !has_key (c, k))
        keys[n] = k, values[n++] = v;
    }
  for (size_t i = 0; i < c->n_annotations; i++)
    {
      const char *k = c->annotations[i]->key, *v = c->annotations[i]->value;
      if (k && v)
        keys[n] = k, values[n++] = v;
    }
  return cp_annotations_from_map (keys, values, n, "annotations", out, err);
}

int
cp_nri_id_check (const nri_container *c, cp_error_t *err)
{
  if (cp_oci_id_check (c->id, err) < 0)
    return cp_error_wrap (err, "container");
  return 0;
}

/* The container's linux.cgroupsPath and linux.resources.cpu, read with config.json's
   rules (cp_oci_config_from_values()): the same bounds and cgroup path as the hook
   gets from the runtime's spec. */
int
cp_nri_config_of (const nri_container *c, struct cp_oci_config *cfg, cp_error_t *err)
{
  const Nri__Pkg__Api__V1alpha1__LinuxContainer *l = c->linux;
  const Nri__Pkg__Api__V1alpha1__LinuxCPU *cpu = l && l->resources ? l->resources->cpu : NULL;
  struct cp_oci_values v = {
    .cgroups_path = l && l->cgroups_path && l->cgroups_path[0] ? l->cgroups_path : NULL,
    .cpus = cpu ? cpu->cpus : NULL,
    .mems = cpu ? cpu->mems : NULL,
    .quota = cpu && cpu->quota ? &cpu->quota->value : NULL,
    .period = cpu && cpu->period ? &cpu->period->value : NULL,
  };
  if (cp_oci_config_from_values (&v, cfg, err) < 0)
    return cp_error_wrap (err, "container %s", c->id);
  return 0;
}

Nri__Pkg__Api__V1alpha1__LinuxResources *
cp_nri_cpuset (struct cp_nri_cpuset *s, char *cpus, char *mems)
{
  s->cpu = (Nri__Pkg__Api__V1alpha1__LinuxCPU) NRI__PKG__API__V1ALPHA1__LINUX_CPU__INIT;
  s->cpu.cpus = cpus;
  if (mems && mems[0])
    s->cpu.mems = mems; /* none known: the runtime's stay */
  s->res = (Nri__Pkg__Api__V1alpha1__LinuxResources) NRI__PKG__API__V1ALPHA1__LINUX_RESOURCES__INIT;
  s->res.cpu = &s->cpu;
  return &s->res;
}

Nri__Pkg__Api__V1alpha1__ContainerUpdate *
cp_nri_update_of (struct cp_nri_update *u, char *id, char *cpus, char *mems)
{
  u->linux_ = (Nri__Pkg__Api__V1alpha1__LinuxContainerUpdate) NRI__PKG__API__V1ALPHA1__LINUX_CONTAINER_UPDATE__INIT;
  u->linux_.resources = cp_nri_cpuset (&u->set, cpus, mems);
  u->upd = (Nri__Pkg__Api__V1alpha1__ContainerUpdate) NRI__PKG__API__V1ALPHA1__CONTAINER_UPDATE__INIT;
  u->upd.container_id = id;
  u->upd.linux = &u->linux_;
  return &u->upd;
}

static int
adjustment_of (struct cp_nri_call *call, char *cpus, char *mems, cp_error_t *err)
{
  struct cp_nri_cpuset set;
  Nri__Pkg__Api__V1alpha1__LinuxContainerAdjustment linux_ = NRI__PKG__API__V1ALPHA1__LINUX_CONTAINER_ADJUSTMENT__INIT;
  linux_.resources = cp_nri_cpuset (&set, cpus, mems);
  Nri__Pkg__Api__V1alpha1__ContainerAdjustment adj = NRI__PKG__API__V1ALPHA1__CONTAINER_ADJUSTMENT__INIT;
  adj.linux = &linux_;
  Nri__Pkg__Api__V1alpha1__CreateContainerResponse resp = NRI__PKG__API__V1ALPHA1__CREATE_CONTAINER_RESPONSE__INIT;
  resp.adjust = &adj;
  return reply (call, &resp.base, err);
}

static int
adjustment (struct cp_nri_call *call, const struct cp_plan *plan, cp_error_t *err)
{
  cleanup_free char *cpus = cp_cpulist_format (plan->cpus);
  cleanup_free char *mems = cp_cpulist_format (plan->mems);
  return adjustment_of (call, cpus, mems, err);
}

/* A container tagged with a DRA claim (nri_claim.c): the claim's CPUs, no entry of
   its own.  A claim that cannot be given: the host's on_error (deny: it fails with
   the line; allow: it starts unplaced, and that is said).  1: not such a container. */
static int
claim_answer (struct cp_nri_plugin *p, const nri_container *c, struct cp_nri_call *call, cp_error_t *err)
{
  cleanup_free char *cpus = NULL;
  cleanup_free char *mems = NULL;
  cleanup_error cp_error_t why = NULL;
  int r = cp_nri_claim_cpus (p, c, &cpus, &mems, &why);
  if (r > 0)
    return adjustment_of (call, cpus, mems, err);
  if (r == 0)
    return 1;
  if (p->hc->on_error == CP_ON_ERROR_DENY)
    {
      cp_log (CP_LOG_ERROR, "%s; refused (on_error deny)", cp_error_message (why));
      return fail (call, &why, err);
    }
  cp_log (CP_LOG_WARNING, "%s; it starts unplaced (on_error allow)", cp_error_message (why));
  Nri__Pkg__Api__V1alpha1__CreateContainerResponse none = NRI__PKG__API__V1ALPHA1__CREATE_CONTAINER_RESPONSE__INIT;
  return reply (call, &none.base, err);
}

int
cp_nri_place (const struct cp_nri_plugin *p, struct cp_front_batch *batch, const char *id,
              const struct cp_oci_config *cfg, struct cp_container_request *creq, struct cp_plan **plan,
              cp_error_t *why)
{
  const struct cp_hostconfig *hc = p->hc;
  cleanup_free char *mount = NULL;
  cleanup_free char *cgroup = NULL;
  if (cp_locate_cgroup (id, cfg, batch ? cp_front_batch_mounts (batch) : NULL, &mount, &cgroup, why) == 0)
    {
      if (cp_started_core_sched_admit (hc, id, creq, why) < 0)
        return -1;
      struct cp_target target
          = { .id = id, .cgroup_mount = mount, .cgroup_path = cgroup, .runtime = p->owner.runtime };
      int r = batch ? cp_front_batch_place (batch, &target, creq, cp_admission_host_failure, plan, why)
                    : cp_front_place (hc, CP_JOURNAL_NRI, &target, creq, cp_admission_host_failure, plan, why);
      return r < 0 ? -1 : r;
    }
  return cp_admission_host_failure (hc, creq->req.strict, id, why) < 0 ? -1 : 1;
}

int
cp_nri_create_container (struct cp_nri_plugin *p, const Nri__Pkg__Api__V1alpha1__CreateContainerRequest *req,
                         struct cp_nri_call *call, cp_error_t *err)
{
  const struct cp_hostconfig *hc = p->hc;
  Nri__Pkg__Api__V1alpha1__CreateContainerResponse none = NRI__PKG__API__V1ALPHA1__CREATE_CONTAINER_RESPONSE__INIT;
  const nri_container *c = req->container;
  if (c == NULL || c->id == NULL || c->id[0] == '\0')
    return reply (call, &none.base, err); /* nothing to place, nothing of ours to fail */
  cleanup_error cp_error_t why = NULL;
  if (cp_nri_claim_of (p, c))
    {
      if (cp_nri_id_check (c, &why) < 0)
        {
          cp_admission_refuse ("(invalid id)", &why);
          return fail (call, &why, err);
        }
      return claim_answer (p, c, call, err) < 0 ? -1 : 0; /* the claim decides, not annotations */
    }
  struct cp_annotations ann = { 0 };
  if (cp_nri_annotations_of (req->pod, c, &ann, &why) < 0)
    {
      cp_admission_refuse (c->id, &why);
      return fail (call, &why, err);
    }
  if (!cp_annotations_wants_cachepin (&ann))
    {
      cp_annotations_free (&ann);
      return reply (call, &none.base, err); /* not ours: nothing judged, nothing written */
    }
  if (cp_nri_id_check (c, &why) < 0)
    {
      cp_annotations_free (&ann);
      cp_admission_refuse ("(invalid id)", &why);
      return fail (call, &why, err);
    }
  struct cp_oci_config cfg = { 0 };
  struct cp_limits limits;
  struct cp_container_request creq;
  int r;
  if (cp_nri_config_of (c, &cfg, &why) < 0
      || cp_annotations_to_request (&ann, &hc->defaults, cp_oci_config_limits (&cfg, &limits), &creq, &why) < 0)
    {
      cp_admission_refuse (c->id, &why);
      r = -1;
    }
  else
    {
      cleanup_plan struct cp_plan *plan = NULL;
      r = cp_nri_place (p, NULL, c->id, &cfg, &creq, &plan, &why);
      if (r == 0)
        {
          cleanup_free char *cpus = cp_cpulist_format (plan->cpus);
          cleanup_free char *mems = cp_cpulist_format (plan->mems);
          cp_log (CP_LOG_INFO, "placed %s (pod %s): cpus %s mems %s (cpus from %s); %s", c->id,
                  req->pod && req->pod->name ? req->pod->name : "?", cpus, mems, creq.cpus_source, plan->reason);
          r = adjustment (call, plan, err) < 0 ? -2 : 0;
        }
    }
  cp_oci_config_free (&cfg);
  cp_annotations_free (&ann);
  if (r == -2)
    return -1;
  if (r < 0)
    return fail (call, &why, err);
  return r == 0 ? 0 : reply (call, &none.base, err);
}

/* The cgroup C's config names, below its mount (NULL: none named, or unreadable). */
static char *
cgroup_named (const nri_container *c)
{
  struct cp_oci_config cfg = { 0 };
  cleanup_error cp_error_t ignored = NULL;
  char *mount = NULL, *cgroup = NULL;
  if (cp_nri_config_of (c, &cfg, &ignored) == 0 && cfg.cgroups_path)
    cp_locate_cgroup (c->id, &cfg, NULL, &mount, &cgroup, &ignored);
  cp_oci_config_free (&cfg);
  free (mount);
  return cgroup;
}

/* The placed CPUs and nodes of C, as cpulists (*CPUS NULL: not placed by P, in the
   cgroup C names when it names one). */
static int
placed_of (const struct cp_nri_plugin *p, const nri_container *c, char **cpus, char **mems, cp_error_t *err)
{
  *cpus = *mems = NULL;
  cleanup_free char *cgroup = cgroup_named (c); /* NULL: by id and owner */
  cleanup_bitmap hwloc_bitmap_t set = cp_bitmap_new ();
  cleanup_bitmap hwloc_bitmap_t nodes = cp_bitmap_new ();
  int r = cp_placer_owned_of (p->hc, &p->owner, c->id, cgroup, set, nodes, err);
  if (r > 0)
    {
      *cpus = cp_cpulist_format (set);
      *mems = cp_cpulist_format (nodes);
    }
  return r < 0 ? -1 : 0;
}

/* UpdateContainer: a placed container keeps its cpuset, unless its count is its
   limit's and the limit changed (nri_resize.c).  The update's other resources pass
   through: the answer is an update of this very container naming
   only cpus and mems, which the runtime merges into the update it was asked. */
int
cp_nri_update_container (struct cp_nri_plugin *p, const Nri__Pkg__Api__V1alpha1__UpdateContainerRequest *req,
                         struct cp_nri_call *call, cp_error_t *err)
{
  Nri__Pkg__Api__V1alpha1__UpdateContainerResponse resp = NRI__PKG__API__V1ALPHA1__UPDATE_CONTAINER_RESPONSE__INIT;
  const nri_container *c = req->container;
  if (c == NULL || c->id == NULL || c->id[0] == '\0')
    return reply (call, &resp.base, err);
  cleanup_free char *cpus = NULL;
  cleanup_free char *mems = NULL;
  cleanup_error cp_error_t why = NULL;
  if (placed_of (p, c, &cpus, &mems, &why) < 0)
    {
      /* Never fails an update: it goes through as asked, and that is said. */
      cp_log (CP_LOG_WARNING, "update of %s: its placement could not be read, the update goes through: %s", c->id,
              cp_error_message (why));
      return reply (call, &resp.base, err);
    }
  if (cpus == NULL && cp_nri_claim_of (p, c))
    {
      /* A claim's container keeps the claim's CPUs, whatever the update asks. */
      if (cp_nri_claim_cpus (p, c, &cpus, &mems, &why) <= 0)
        {
          cp_log (CP_LOG_WARNING, "update of %s: the update goes through: %s", c->id, cp_error_message (why));
          return reply (call, &resp.base, err);
        }
      struct cp_nri_update u;
      Nri__Pkg__Api__V1alpha1__ContainerUpdate *updates[1] = { cp_nri_update_of (&u, c->id, cpus, mems) };
      resp.n_update = 1;
      resp.update = updates;
      return reply (call, &resp.base, err);
    }
  if (cpus == NULL)
    return reply (call, &resp.base, err); /* not placed by us, or not in this cgroup: not ours */
  cleanup_free char *new_cpus = NULL;
  cleanup_free char *new_mems = NULL;
  int r = cp_nri_resize (p, req->pod, c, req->linux_resources, cpus, &new_cpus, &new_mems, &why);
  if (r < 0)
    return fail (call, &why, err);
  if (r > 0)
    {
      free (cpus), free (mems);
      cpus = cp_steal_pointer (&new_cpus);
      mems = cp_steal_pointer (&new_mems);
    }
  const Nri__Pkg__Api__V1alpha1__LinuxCPU *asked
      = req->linux_resources && req->linux_resources->cpu ? req->linux_resources->cpu : NULL;
  if (r == 0 && asked && asked->cpus && asked->cpus[0] && strcmp (asked->cpus, cpus) != 0)
    cp_log (CP_LOG_INFO, "update of %s: cpuset %s asked, its placement %s kept", c->id, asked->cpus, cpus);
  struct cp_nri_update u;
  Nri__Pkg__Api__V1alpha1__ContainerUpdate *updates[1] = { cp_nri_update_of (&u, c->id, cpus, mems) };
  resp.n_update = 1;
  resp.update = updates;
  return reply (call, &resp.base, err);
}

void
cp_nri_release (const struct cp_nri_plugin *p, const char *id, const char *cgroup, const char *why)
{
  struct cp_release rel = { .id = id, .cgroup = cgroup, .owner = &p->owner };
  enum cp_release_result result;
  cleanup_error cp_error_t e = NULL;
  if (cp_front_release (p->hc, CP_JOURNAL_NRI, &rel, &result, &e) < 0)
    cp_log (CP_LOG_WARNING, "release of %s: %s", id, cp_error_message (e));
  else if (result == CP_RELEASE_DONE)
    cp_log (CP_LOG_INFO, "released %s (%s)", id, why);
}

/* The hook's poststop: the entry of C, if it is ours and C's (the cgroup its config
   names, when it names one), released. */
static void
release (const struct cp_nri_plugin *p, const nri_container *c, const char *why)
{
  if (c == NULL || c->id == NULL)
    return;
  cleanup_error cp_error_t bad = NULL;
  if (cp_nri_id_check (c, &bad) < 0)
    {
      cp_log (CP_LOG_DEBUG, "nri: an event of a container not ours to release: %s", cp_error_message (bad));
      return; /* never placed: no entry has that id */
    }
  cleanup_free char *cgroup = cgroup_named (c);
  cp_nri_release (p, c->id, cgroup, why);
}

int
cp_nri_stop_container (struct cp_nri_plugin *p, const Nri__Pkg__Api__V1alpha1__StopContainerRequest *req,
                       struct cp_nri_call *call, cp_error_t *err)
{
  release (p, req->container, "stopped");
  Nri__Pkg__Api__V1alpha1__StopContainerResponse resp = NRI__PKG__API__V1ALPHA1__STOP_CONTAINER_RESPONSE__INIT;
  return reply (call, &resp.base, err);
}

int
cp_nri_cgroup_open (const nri_container *c, struct cp_cgroup **cg, cp_error_t *err)
{
  struct cp_oci_config cfg = { 0 };
  int r = cp_nri_config_of (c, &cfg, err);
  if (r == 0)
    r = cp_locate_cgroup_open (c->id, &cfg, cg, err);
  cp_oci_config_free (&cfg);
  return r;
}

enum cp_seen
cp_nri_seen (const nri_container *c)
{
  switch (c->state)
    {
    case NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_CREATED:
      return CP_SEEN_CREATED;
    case NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_RUNNING:
    case NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_PAUSED:
      return CP_SEEN_RUNNING;
    case NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_STOPPED:
      return CP_SEEN_STOPPED;
    default:
      return CP_SEEN_UNKNOWN;
    }
}

bool
cp_nri_spec_cpus (const nri_container *c, hwloc_bitmap_t cpus)
{
  hwloc_bitmap_zero (cpus);
  /* containerd and CRI-O send the spec's linux part; without a cpu in its resources
     the spec has no cpuset, which an answer of ours would have put there. */
  if (c->linux == NULL)
    return false;
  const Nri__Pkg__Api__V1alpha1__LinuxCPU *cpu = c->linux->resources ? c->linux->resources->cpu : NULL;
  cleanup_error cp_error_t ignored = NULL;
  if (cpu && cpu->cpus && cpu->cpus[0] && cp_cpulist_parse (cpu->cpus, 0, cpus, &ignored) < 0)
    return false; /* not one we read: not said */
  return true;
}

/* C has started (StartContainer, PostCreateContainer: its cgroup exists): its
   pending entry settled from what it really runs with (cp_owner_settle()).  On the
   placement: the cgroup recorded, the entry judged by it from now on.  Not on it
   (our answer never reached the runtime: it gave up waiting, or the connection
   closed first): released, and said; the next Synchronize places it as a container
   started while the plugin was away. */
static void
settle_started (const struct cp_nri_plugin *p, const nri_container *c)
{
  cleanup_error cp_error_t why = NULL;
  struct cp_entry_view v;
  int found = cp_entries_read_one (p->hc, &p->owner, c->id, &v, &why);
  if (found < 0)
    {
      cp_log (CP_LOG_WARNING, "start of %s: its entry not settled, the ledger could not be read: %s", c->id,
              cp_error_message (why));
      return;
    }
  cleanup_bitmap hwloc_bitmap_t spec = cp_bitmap_new ();
  bool said = cp_nri_spec_cpus (c, spec);
  enum cp_settle what
      = found ? cp_owner_settle (&p->owner, &v.e, CP_SEEN_RUNNING, said ? spec : NULL) : CP_SETTLE_KEEP;
  cleanup_free char *held = found ? cp_cpulist_format (v.e.cpus) : NULL;
  cleanup_free char *got = hwloc_bitmap_iszero (spec) ? cp_xstrdup ("(its parent's)") : cp_cpulist_format (spec);
  if (found)
    cp_entry_view_clear (&v);
  cp_log (CP_LOG_DEBUG, "nri: %s started: its spec's cpuset %s, %s", c->id, said ? got : "not said",
          what == CP_SETTLE_ADOPT       ? "on its placement"
          : what == CP_SETTLE_UNAPPLIED ? "not on its placement"
                                        : "not ours");
  if (what == CP_SETTLE_UNAPPLIED)
    {
      cp_log (CP_LOG_WARNING, "%s started on CPUs %s, not on its placement %s: the runtime did not apply the answer "
                              "(it gave up waiting, or the connection closed); the entry is released, and the next "
                              "Synchronize places it", c->id, got, held);
      cleanup_free char *cgroup = cgroup_named (c);
      cp_nri_release (p, c->id, cgroup, "never applied");
      return;
    }
  if (what != CP_SETTLE_ADOPT)
    return;
  cleanup_cgroup struct cp_cgroup *cg = NULL;
  int r = cp_nri_cgroup_open (c, &cg, &why);
  if (r == 0)
    r = cp_placer_adopt_cgroup (p->hc, &p->owner, c->id, cg, &why);
  if (r < 0)
    cp_log (CP_LOG_WARNING, "start of %s: its cgroup is not recorded (the next Synchronize tries again): %s", c->id,
            cp_error_message (why));
  else if (r == 1)
    cp_log (CP_LOG_DEBUG, "%s started in cgroup %s%s", c->id, cg->mount, cg->path);
}

int
cp_nri_container_event (struct cp_nri_plugin *p, int event, const nri_pod *pod, const nri_container *c)
{
  cleanup_error cp_error_t bad = NULL;
  bool valid = c && c->id && cp_nri_id_check (c, &bad) == 0;
  switch (event)
    {
    case NRI__PKG__API__V1ALPHA1__EVENT__REMOVE_CONTAINER:
      release (p, c, "removed");
      return 0;
    case NRI__PKG__API__V1ALPHA1__EVENT__START_CONTAINER:
    case NRI__PKG__API__V1ALPHA1__EVENT__POST_CREATE_CONTAINER:
      if (!valid)
        return 0;
      if (c->pid != 0)
        settle_started (p, c);
      cp_nri_core_sched_start (p, pod, c);
      cp_nri_isolate_start (p->hc, pod, c);
      return 0;
    default:
      return -1;
    }
}

/* v0.8's delivery of the events that v0.12 gives methods of their own
   (nri_agent.c's table): an event we do not serve is answered all the same. */
int
cp_nri_state_change (struct cp_nri_plugin *p, const Nri__Pkg__Api__V1alpha1__StateChangeEvent *ev,
                     struct cp_nri_call *call, cp_error_t *err)
{
  if (cp_nri_container_event (p, ev->event, ev->pod, ev->container) < 0)
    cp_log (CP_LOG_DEBUG, "nri: StateChange of event %d: not one cachepin subscribes to", (int) ev->event);
  Nri__Pkg__Api__V1alpha1__Empty resp = NRI__PKG__API__V1ALPHA1__EMPTY__INIT;
  return reply (call, &resp.base, err);
}
