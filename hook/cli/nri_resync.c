/* `cachepin nri`: Synchronize, what is placed rebuilt from the runtime's containers
 * and the ledger when the plugin (re)connects.
 *
 * The plugin may have been away (killed, restarted, the runtime restarted) while
 * containers came and went: a container removed meanwhile still holds its entry,
 * one created meanwhile was never placed.  At Synchronize the runtime lists every
 * pod and container it has (in parts when there are many: `more`); on the whole
 * list:
 *   1. the plugin's entries (cp_nri_owns_entry()) whose container is not running
 *      (not listed, or stopped) are released as StopContainer releases them (the
 *      kernel switch's reference count with them);
 *   2. those whose container runs get its cgroup and that cgroup's inode
 *      (cp_placer_adopt_cgroup()): the entry is then judged by that very cgroup,
 *      no longer as pending (CP_LEDGER_PENDING_SECONDS);
 *   3. a running container that asks (its pod's and its annotations, as
 *      CreateContainer reads them) and has no entry is placed as CreateContainer
 *      places (decided and recorded, no cgroup written), the runtime told in the
 *      answer (a ContainerUpdate of cpus and mems, which containerd applies to the
 *      cgroup, the spec and the process); its cgroup is adopted as in 2 at the
 *      next Synchronize, as a created container's is.
 * A running container whose entry wants a core-scheduling cookie (nri_start.c) and
 * has none (the plugin was away at its StartContainer, or placed it just now in 3)
 * gets it on the pid the runtime lists: its init's thread group, not the processes
 * it started before.
 * Everything goes through the engine's steps (placer.h), as the events do: the
 * ledger changes only under its lock, after reconcile, with the placement's checks.
 * The runtime waits for the answer at most 2 s: the work stops after
 * CP_NRI_RESYNC_BUDGET_MS (each step's wait for the ledger's lock cut to what is
 * left of it) and what is left is logged (a release left is done by
 * the next reconcile once its cgroup is gone; a placement left waits for the next
 * Synchronize). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nri_plugin.h"
#include "nri_rpc.h"
#include "cpulist.h"
#include "ledger.h"
#include "log.h"
#include "util.h"

typedef Nri__Pkg__Api__V1alpha1__Container nri_container;
typedef Nri__Pkg__Api__V1alpha1__PodSandbox nri_pod;
typedef Nri__Pkg__Api__V1alpha1__SynchronizeRequest sync_req;

/* The rule, in this one place.  The ledger has the entries of three front ends:
   the hook records the container's init process (oci/state.c: a state that is not
   stopped names a pid of 1 or more, and a stopped one is never placed: cp_admit()
   finds the cgroup from /proc/<pid>); `cachepin apply` records no pid, under the id
   "apply:<cgroup>" (cmd_apply.c); the plugin records no pid either (at
   CreateContainer the container has no process yet), under the container's id. */
bool
cp_nri_owns_entry (const struct cp_ledger_entry *e)
{
  return e->pid == 0 && strncmp (e->id, "apply:", 6) != 0;
}

/* The ledger as the resync needs it: every id, and which are the plugin's. */
struct entry_view
{
  char *id;
  char *cgroup; /* below the mount, for the release's identity */
  bool owned;
  bool has_ino; /* its cgroup's inode is recorded */
  bool core_sched; /* it has its core-scheduling cookie */
  bool isolated;   /* its partition is made */
};

struct ledger_view
{
  struct entry_view *e;
  size_t n;
};

static void
view_free (struct ledger_view *v)
{
  for (size_t i = 0; i < v->n; i++)
    {
      free (v->e[i].id);
      free (v->e[i].cgroup);
    }
  free (v->e);
  *v = (struct ledger_view) { 0 };
}

/* Read under the lock (reconciled: the gone ones are dropped), then unlocked: each
   step below takes it again, as an event would. */
static int
view_read (const struct cp_hostconfig *hc, struct ledger_view *v, cp_error_t *err)
{
  struct cp_ledger *l = NULL;
  if (cp_placer_open_ledger (hc, &l, err) < 0)
    return -1;
  v->n = cp_ledger_count (l);
  v->e = cp_xcalloc (v->n + 1, sizeof *v->e);
  for (size_t i = 0; i < v->n; i++)
    {
      const struct cp_ledger_entry *e = cp_ledger_at (l, i);
      v->e[i] = (struct entry_view) { .id = cp_xstrdup (e->id), .cgroup = cp_xstrdup (e->cgroup),
                                      .owned = cp_nri_owns_entry (e), .has_ino = e->cgroup_ino != 0,
                                      .core_sched = e->core_sched, .isolated = e->isolated };
    }
  cp_ledger_close (l);
  return 0;
}

static bool
has_entry (const struct ledger_view *v, const char *id)
{
  for (size_t i = 0; i < v->n; i++)
    if (strcmp (v->e[i].id, id) == 0)
      return true;
  return false;
}

/* Running: its cgroup exists and its process may use the CPUs (created, started or
   paused).  A stopped container holds nothing (StopContainer would have released it). */
static bool
running (const nri_container *c)
{
  return c->state == NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_CREATED
         || c->state == NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_RUNNING
         || c->state == NRI__PKG__API__V1ALPHA1__CONTAINER_STATE__CONTAINER_PAUSED;
}

static const nri_container *
find_running (nri_container **ctrs, size_t n, const char *id)
{
  for (size_t i = 0; i < n; i++)
    if (ctrs[i]->id && strcmp (ctrs[i]->id, id) == 0)
      return running (ctrs[i]) ? ctrs[i] : NULL;
  return NULL;
}

static const nri_pod *
find_pod (nri_pod **pods, size_t n, const char *id)
{
  for (size_t i = 0; id && i < n; i++)
    if (pods[i]->id && strcmp (pods[i]->id, id) == 0)
      return pods[i];
  return NULL;
}

/* C's cgroup, as the hook resolves config.json's linux.cgroupsPath (cgroupfs, or
   systemd's slice:prefix:name), opened: it exists once the container is created. */
static int
cgroup_of (const nri_container *c, const struct cp_oci_config *cfg, struct cp_cgroup **cg, cp_error_t *err)
{
  const char *path = cfg->cgroupfs_path ? cfg->cgroupfs_path : cfg->systemd_path;
  if (path == NULL)
    return cp_fail_runtime (err, "container %s: its linux.cgroupsPath (`%s`) names no cgroup", c->id,
                            cfg->cgroups_path ? cfg->cgroups_path : "");
  if (cp_cgroup_from_path (path, cg, err) < 0)
    return cp_error_wrap (err, "container %s", c->id);
  return 0;
}

/* Step 2: the plugin's entry of C, which runs, gets C's cgroup and inode. */
static void
adopt (const struct cp_hostconfig *hc, const nri_container *c)
{
  struct cp_oci_config cfg = { 0 };
  cleanup_cgroup struct cp_cgroup *cg = NULL;
  cleanup_error cp_error_t why = NULL;
  int r = -1;
  if (cp_nri_config_of (c, &cfg, &why) == 0 && cgroup_of (c, &cfg, &cg, &why) == 0)
    r = cp_placer_adopt_cgroup (hc, c->id, cg, &why);
  if (r < 0)
    cp_log (CP_LOG_WARNING, "resync: the cgroup of %s is not recorded: %s", c->id, cp_error_message (why));
  else if (r == 1)
    cp_log (CP_LOG_INFO, "resync: %s is in cgroup %s%s", c->id, cg->mount, cg->path);
  cp_oci_config_free (&cfg);
}

static char *
keep_string (struct cp_nri_updates *out, char *s)
{
  out->strings[out->n_strings++] = s;
  return s;
}

/* Step 3: C, running, unplaced: placed in its cgroup if it asks, its update added
   to OUT.  It runs already: nothing fails it now, a refusal is logged. */
static void
place_missed (const struct cp_hostconfig *hc, const nri_pod *pod, const nri_container *c, struct cp_nri_updates *out)
{
  struct cp_annotations ann = { 0 };
  cleanup_error cp_error_t why = NULL;
  if (cp_nri_annotations_of (pod, c, &ann, &why) < 0)
    {
      cp_log (CP_LOG_WARNING, "resync: %s left unplaced: %s", c->id, cp_error_message (why));
      return;
    }
  if (!cp_annotations_wants_cachepin (&ann))
    {
      cp_annotations_free (&ann);
      return; /* not ours */
    }
  struct cp_oci_config cfg = { 0 };
  struct cp_limits limits;
  struct cp_container_request creq;
  cleanup_plan struct cp_plan *plan = NULL;
  int r = -1;
  /* Decided and recorded as CreateContainer does, without writing the cgroup: the
     runtime applies the update (containerd 2.x writes the cgroup, the spec and the
     affinity), and the plugin's sandbox keeps /sys read-only.  Its cgroup is adopted
     at the next Synchronize, as a created container's is: adopted now, before the
     runtime applies the update, its cpuset would read as a drift. */
  if (cp_nri_config_of (c, &cfg, &why) == 0
      && cp_annotations_to_request (&ann, &hc->defaults, cp_oci_config_limits (&cfg, &limits), &creq, &why) == 0)
    r = cp_nri_place (hc, c->id, &cfg, &creq, &plan, &why);
  if (r < 0)
    cp_log (CP_LOG_WARNING, "resync: %s left unplaced: %s", c->id, cp_error_message (why));
  else if (r == 0)
    {
      char *cpus = keep_string (out, cp_cpulist_format (plan->cpus));
      char *mems = keep_string (out, cp_cpulist_format (plan->mems));
      char *id = keep_string (out, cp_xstrdup (c->id));
      cp_log (CP_LOG_INFO, "placed %s (pod %s) at resync: cpus %s mems %s (cpus from %s); %s", id,
              pod && pod->name ? pod->name : "?", cpus, mems, creq.cpus_source, plan->reason);
      out->p[out->n] = cp_nri_update_of (&out->u[out->n], id, cpus, mems);
      out->n++;
      cp_nri_core_sched_start (hc, pod, c); /* it runs: its pid is known */
      cp_nri_isolate_start (hc, pod, c);
    }
  cp_oci_config_free (&cfg);
  cp_annotations_free (&ann);
}

static long
ms_since (const struct timespec *t0)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return (long) ((t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000);
}

/* What was not done in time, said once. */
struct left
{
  unsigned release, adopt, place;
};

/* HC for the next step: its lock wait cut to what is left of the budget (at least
   1 ms), so that a step started in time ends within it too, a held lock included. */
static const struct cp_hostconfig *
step_config (const struct cp_hostconfig *hc, struct cp_hostconfig *step, long left_ms)
{
  *step = *hc; /* shallow: HC keeps what it points at */
  if (left_ms < (long) step->lock_timeout_ms)
    step->lock_timeout_ms = left_ms > 0 ? (unsigned) left_ms : 1;
  return step;
}

void
cp_nri_resync (const struct cp_hostconfig *hc0, nri_pod **pods, size_t n_pods, nri_container **ctrs, size_t n_ctrs,
               long budget_ms, struct cp_nri_updates *out)
{
  struct cp_hostconfig step;
  const struct cp_hostconfig *hc = hc0;
  *out = (struct cp_nri_updates) { .u = cp_xcalloc (n_ctrs + 1, sizeof *out->u),
                                   .p = cp_xcalloc (n_ctrs + 1, sizeof *out->p),
                                   .strings = cp_xcalloc (3 * n_ctrs + 1, sizeof *out->strings) };
  struct timespec t0;
  clock_gettime (CLOCK_MONOTONIC, &t0);
  struct ledger_view v = { 0 };
  cleanup_error cp_error_t why = NULL;
  if (view_read (step_config (hc0, &step, budget_ms), &v, &why) < 0)
    {
      cp_log (CP_LOG_WARNING, "resync: nothing rebuilt, the ledger could not be read: %s", cp_error_message (why));
      return;
    }
  struct left left = { 0 };
  for (size_t i = 0; i < v.n; i++)
    {
      if (!v.e[i].owned)
        continue;
      const nri_container *c = find_running (ctrs, n_ctrs, v.e[i].id);
      bool late = ms_since (&t0) >= budget_ms;
      hc = step_config (hc0, &step, budget_ms - ms_since (&t0));
      if (c && !late && !v.e[i].core_sched)
        cp_nri_core_sched_start (hc, find_pod (pods, n_pods, c->pod_sandbox_id), c); /* asked, not made */
      if (c && !late && !v.e[i].isolated)
        cp_nri_isolate_start (hc, find_pod (pods, n_pods, c->pod_sandbox_id), c); /* asked, not made */
      if (c == NULL && late)
        left.release++;
      else if (c == NULL)
        cp_nri_release (hc, v.e[i].id, v.e[i].cgroup);
      else if (v.e[i].has_ino)
        continue; /* judged by its cgroup already */
      else if (late)
        left.adopt++;
      else
        adopt (hc, c);
    }
  for (size_t i = 0; i < n_ctrs; i++)
    {
      const nri_container *c = ctrs[i];
      if (c->id == NULL || c->id[0] == '\0' || !running (c) || has_entry (&v, c->id))
        continue;
      hc = step_config (hc0, &step, budget_ms - ms_since (&t0));
      if (ms_since (&t0) >= budget_ms)
        left.place++; /* may not ask: said as "to look at" */
      else
        place_missed (hc, find_pod (pods, n_pods, c->pod_sandbox_id), c, out);
    }
  if (left.release || left.adopt || left.place)
    cp_log (CP_LOG_WARNING,
            "resync: stopped after %ld ms (the runtime waits 2 s): left %u releases (done by a later reconcile), "
            "%u cgroups to record, %u unplaced containers to look at (at the next Synchronize)",
            budget_ms, left.release, left.adopt, left.place);
  view_free (&v);
}

void
cp_nri_updates_free (struct cp_nri_updates *u)
{
  for (size_t i = 0; i < u->n_strings; i++)
    free (u->strings[i]);
  free (u->strings);
  free (u->p);
  free (u->u);
  *u = (struct cp_nri_updates) { 0 };
}

void
cp_nri_sync_clear (struct cp_nri_sync *s)
{
  for (size_t i = 0; i < s->n; i++)
    cp_buf_free (&s->parts[i]);
  free (s->parts);
  *s = (struct cp_nri_sync) { 0 };
}

static void
keep_part (struct cp_nri_sync *s, const sync_req *req)
{
  s->parts = realloc (s->parts, (s->n + 1) * sizeof *s->parts);
  if (s->parts == NULL)
    abort ();
  struct cp_buf *b = &s->parts[s->n++];
  *b = (struct cp_buf) { 0 };
  size_t len = protobuf_c_message_get_packed_size (&req->base);
  b->p = cp_xmalloc0 (len + 1);
  b->len = b->cap = protobuf_c_message_pack (&req->base, b->p);
}

/* Every part's pods and containers, in the order sent; PARTS[i] owns what they
   point at. */
struct whole
{
  sync_req **parts;
  nri_pod **pods;
  nri_container **ctrs;
  size_t n_parts, n_pods, n_ctrs;
};

static void
whole_free (struct whole *w)
{
  for (size_t i = 0; i < w->n_parts; i++)
    if (w->parts[i])
      protobuf_c_message_free_unpacked (&w->parts[i]->base, NULL);
  free (w->parts);
  free (w->pods);
  free (w->ctrs);
}

static void
gather (const struct cp_nri_sync *s, struct whole *w)
{
  *w = (struct whole) { .parts = cp_xcalloc (s->n + 1, sizeof *w->parts) };
  size_t pods = 0, ctrs = 0;
  for (size_t i = 0; i < s->n; i++)
    {
      /* Packed by us from what was decoded: it decodes again. */
      w->parts[i] = nri__pkg__api__v1alpha1__synchronize_request__unpack (NULL, s->parts[i].len, s->parts[i].p);
      if (w->parts[i] == NULL)
        abort ();
      w->n_parts++;
      pods += w->parts[i]->n_pods;
      ctrs += w->parts[i]->n_containers;
    }
  w->pods = cp_xcalloc (pods + 1, sizeof *w->pods);
  w->ctrs = cp_xcalloc (ctrs + 1, sizeof *w->ctrs);
  for (size_t i = 0; i < w->n_parts; i++)
    {
      for (size_t j = 0; j < w->parts[i]->n_pods; j++)
        w->pods[w->n_pods++] = w->parts[i]->pods[j];
      for (size_t j = 0; j < w->parts[i]->n_containers; j++)
        w->ctrs[w->n_ctrs++] = w->parts[i]->containers[j];
    }
}

int
cp_nri_synchronize (const struct cp_hostconfig *hc, struct cp_nri_sync *s, const sync_req *req,
                    struct cp_nri_call *call, cp_error_t *err)
{
  Nri__Pkg__Api__V1alpha1__SynchronizeResponse resp = NRI__PKG__API__V1ALPHA1__SYNCHRONIZE_RESPONSE__INIT;
  keep_part (s, req);
  if (req->more)
    {
      cp_log (CP_LOG_DEBUG, "nri: synchronization part %zu: %zu pods, %zu containers, more to come", s->n,
              req->n_pods, req->n_containers);
      resp.more = true; /* the runtime sends the rest only when we say we take it */
      return cp_rpc_response_encode (CP_MUX_CONN_PLUGIN, call->stream, CP_RPC_OK, NULL, &resp.base, call->out, err);
    }
  struct whole w;
  gather (s, &w);
  cp_log (CP_LOG_INFO, "nri: synchronized: %zu pods, %zu containers (%zu %s)", w.n_pods, w.n_ctrs, w.n_parts,
          w.n_parts == 1 ? "part" : "parts");
  struct cp_nri_updates u;
  cp_nri_resync (hc, w.pods, w.n_pods, w.ctrs, w.n_ctrs, CP_NRI_RESYNC_BUDGET_MS, &u);
  resp.update = u.p;
  resp.n_update = u.n;
  int r = cp_rpc_response_encode (CP_MUX_CONN_PLUGIN, call->stream, CP_RPC_OK, NULL, &resp.base, call->out, err);
  cp_nri_updates_free (&u);
  whole_free (&w);
  cp_nri_sync_clear (s);
  return r;
}
