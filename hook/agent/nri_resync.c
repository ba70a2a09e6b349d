/* `cachepin nri`: Synchronize, what is placed rebuilt from the runtime's containers
 * and the ledger when the plugin (re)connects.
 *
 * The plugin may have been away (killed, restarted, the runtime restarted) while
 * containers came and went: a container removed meanwhile still holds its entry,
 * one created meanwhile was never placed, one whose answer came too late runs
 * without its placement.  At Synchronize the runtime lists every pod and container
 * it has (in parts when there are many: `more`); on the whole list, a container
 * listed twice counted once:
 *   1. the plugin's own entries (owner.h: this plugin's front end and runtime; never
 *      the hook's, `apply`'s or another runtime's plugin's) are settled by the
 *      engine's rule, cp_owner_settle(): released when the runtime says the
 *      container stopped, or when a pending entry's container is no longer listed
 *      (it can never start); given the cgroup and its inode
 *      (cp_placer_adopt_cgroup()) when the container runs on its placement; told
 *      the runtime again as an update when it runs without it (the answer never
 *      arrived); kept as they are otherwise: created and not started yet, listed
 *      CONTAINER_UNKNOWN (a restarted runtime that cannot read a task), or judged
 *      by their cgroup already (reconcile drops them when it goes);
 *   2. a running container that asks (its pod's and its annotations, as
 *      CreateContainer reads them) and has no entry is placed as CreateContainer
 *      places (decided and recorded, no cgroup written), strict ones first, the
 *      runtime told in the answer (a ContainerUpdate of cpus and mems, which
 *      containerd applies to the cgroup, the spec and the process); its cgroup is
 *      adopted as in 1 at its next event or Synchronize.
 * A running container whose entry wants a core-scheduling cookie (nri_start.c) and
 * has none (the plugin was away at its StartContainer, or placed it just now in 2)
 * gets it on the pid the runtime lists: its init's thread group, not the processes
 * it started before.
 * Everything goes through the engine's steps (placer.h), as the events do; the
 * placements of 2 in one batch (one lock, one commit, told once committed).
 * The runtime waits for the answer at most 2 s: the work stops after
 * CP_NRI_RESYNC_BUDGET_MS (each step's wait for the ledger's lock cut to what is
 * left of it) and what is left is logged (a release left is done by the next
 * Synchronize or, once its cgroup is gone, by reconcile; a placement left waits for
 * the next Synchronize). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nri_plugin.h"
#include "nri_rpc.h"
#include "front.h"
#include "bitmap.h"
#include "cpulist.h"
#include "dra_prepare.h"
#include "entries.h"
#include "log.h"
#include "util.h"

typedef Nri__Pkg__Api__V1alpha1__Container nri_container;
typedef Nri__Pkg__Api__V1alpha1__PodSandbox nri_pod;
typedef Nri__Pkg__Api__V1alpha1__SynchronizeRequest sync_req;

/* The runtime's containers, each id once, valid ids only, sorted by id for the
   lookups (the runtime's order kept in LIST for the placements). */
struct listing
{
  nri_container **list;   /* in the runtime's order */
  nri_container **sorted; /* by id */
  size_t n;
};

static int
cmp_ctr (const void *a, const void *b)
{
  const nri_container *x = *(nri_container *const *) a, *y = *(nri_container *const *) b;
  int r = strcmp (x->id, y->id);
  return r ? r : (x < y ? -1 : x > y); /* one of two of an id is kept below */
}

static void
listing_make (nri_container **ctrs, size_t n, struct listing *out)
{
  *out = (struct listing) { .list = cp_xcalloc (n + 1, sizeof *out->list),
                            .sorted = cp_xcalloc (n + 1, sizeof *out->sorted) };
  size_t m = 0;
  unsigned invalid = 0;
  for (size_t i = 0; i < n; i++)
    {
      cleanup_error cp_error_t why = NULL;
      if (ctrs[i]->id == NULL || cp_nri_id_check (ctrs[i], &why) < 0)
        invalid++;
      else
        out->sorted[m++] = ctrs[i];
    }
  qsort (out->sorted, m, sizeof *out->sorted, cmp_ctr);
  size_t kept = 0, twice = 0;
  for (size_t i = 0; i < m; i++)
    if (kept && strcmp (out->sorted[kept - 1]->id, out->sorted[i]->id) == 0)
      twice++;
    else
      out->sorted[kept++] = out->sorted[i];
  out->n = kept;
  /* The runtime's order, each kept container once (a listed pointer is kept when
     it is the one the sorted array holds). */
  size_t k = 0;
  for (size_t i = 0; i < n && k < kept; i++)
    {
      nri_container *c = ctrs[i];
      if (c->id == NULL)
        continue;
      nri_container **hit = bsearch (&c, out->sorted, kept, sizeof *out->sorted, cmp_ctr);
      if (hit && *hit == c)
        out->list[k++] = c;
    }
  if (invalid || twice)
    cp_log (CP_LOG_WARNING, "resync: %u listed containers with an id cachepin does not take left alone, %zu listed "
                            "twice counted once", invalid, twice);
}

static int
cmp_id_ctr (const void *key, const void *elem)
{
  return strcmp (key, (*(nri_container *const *) elem)->id);
}

static const nri_container *
listed (const struct listing *ls, const char *id)
{
  nri_container **hit = bsearch (id, ls->sorted, ls->n, sizeof *ls->sorted, cmp_id_ctr);
  return hit ? *hit : NULL;
}

static void
listing_free (struct listing *ls)
{
  free (ls->list);
  free (ls->sorted);
}

static const nri_pod *
find_pod (nri_pod **pods, size_t n, const char *id)
{
  for (size_t i = 0; id && i < n; i++)
    if (pods[i]->id && strcmp (pods[i]->id, id) == 0)
      return pods[i];
  return NULL;
}

/* The plugin's entry of C, which runs on its placement, gets C's cgroup and inode. */
static void
adopt (const struct cp_nri_plugin *p, const struct cp_hostconfig *hc, const nri_container *c)
{
  cleanup_cgroup struct cp_cgroup *cg = NULL;
  cleanup_error cp_error_t why = NULL;
  int r = cp_nri_cgroup_open (c, &cg, &why);
  if (r == 0)
    r = cp_placer_adopt_cgroup (hc, &p->owner, c->id, cg, &why);
  if (r < 0)
    cp_log (CP_LOG_WARNING, "resync: the cgroup of %s is not recorded: %s", c->id, cp_error_message (why));
  else if (r == 1)
    cp_log (CP_LOG_INFO, "resync: %s is in cgroup %s%s", c->id, cg->mount, cg->path);
}

static char *
keep_string (struct cp_nri_updates *out, char *s)
{
  out->strings[out->n_strings++] = s;
  return s;
}

/* An update of container ID to CPUS and MEMS (formatted), kept in OUT. */
static void
add_update (struct cp_nri_updates *out, const char *id, hwloc_const_bitmap_t cpus, hwloc_const_bitmap_t mems)
{
  char *c = keep_string (out, cp_cpulist_format (cpus));
  char *m = keep_string (out, cp_cpulist_format (mems));
  char *i = keep_string (out, cp_xstrdup (id));
  out->p[out->n] = cp_nri_update_of (&out->u[out->n], i, c, m);
  out->n++;
}

/* A placement made at resync, told once its batch is committed. */
struct missed
{
  const nri_pod *pod;
  const nri_container *c;
  struct cp_plan *plan;
  const char *cpus_source;
};

/* Step 2: C, running, unplaced: placed in BATCH if it asks (and, in pass 0, only
   if it is strict; in pass 1 only if not), kept in *M.  It runs already: nothing
   fails it now, a refusal is logged. */
static void
place_missed (const struct cp_nri_plugin *p, struct cp_front_batch *batch, int pass, const nri_pod *pod,
              const nri_container *c, struct missed *m)
{
  const struct cp_hostconfig *hc = p->hc;
  struct cp_annotations ann = { 0 };
  cleanup_error cp_error_t why = NULL;
  if (cp_nri_annotations_of (pod, c, &ann, &why) < 0)
    {
      if (pass == 1)
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
     at its next event or Synchronize: adopted now, before the runtime applies the
     update, its cpuset would read as a drift. */
  if (cp_nri_config_of (c, &cfg, &why) == 0
      && cp_annotations_to_request (&ann, &hc->defaults, cp_oci_config_limits (&cfg, &limits), &creq, &why) == 0)
    {
      if (creq.req.strict != (pass == 0))
        r = 1; /* the other pass's */
      else
        r = cp_nri_place (p, batch, c->id, &cfg, &creq, &plan, &why);
    }
  if (r < 0)
    cp_log (CP_LOG_WARNING, "resync: %s left unplaced: %s", c->id, cp_error_message (why));
  else if (r == 0)
    *m = (struct missed) { .pod = pod, .c = c, .plan = cp_steal_pointer (&plan), .cpus_source = creq.cpus_source };
  cp_oci_config_free (&cfg);
  cp_annotations_free (&ann);
}

/* The placements of M, committed: each an update in OUT, said, and what it asked of
   the kernel made (it runs: its pid is known). */
static void
tell_placed (const struct cp_nri_plugin *p, struct missed *m, size_t n, struct cp_nri_updates *out)
{
  for (size_t i = 0; i < n; i++)
    {
      add_update (out, m[i].c->id, m[i].plan->cpus, m[i].plan->mems);
      const Nri__Pkg__Api__V1alpha1__LinuxCPU *cpu = out->p[out->n - 1]->linux->resources->cpu;
      cp_log (CP_LOG_INFO, "placed %s (pod %s) at resync: cpus %s mems %s (cpus from %s); %s", m[i].c->id,
              m[i].pod && m[i].pod->name ? m[i].pod->name : "?", cpu->cpus, cpu->mems ? cpu->mems : "",
              m[i].cpus_source, m[i].plan->reason);
      cp_nri_core_sched_start (p, m[i].pod, m[i].c);
      cp_nri_isolate_start (p->hc, m[i].pod, m[i].c);
    }
}

static void
missed_free (struct missed *m, size_t n)
{
  for (size_t i = 0; i < n; i++)
    cp_plan_free (m[i].plan);
  free (m);
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

/* P for the next step: its lock wait cut to what is left of the budget (at least
   1 ms), so that a step started in time ends within it too, a held lock included. */
static const struct cp_nri_plugin *
step_plugin (const struct cp_nri_plugin *p, struct cp_nri_plugin *sp, struct cp_hostconfig *step, long left_ms)
{
  *step = *p->hc; /* shallow: HC keeps what it points at */
  if (left_ms < (long) step->lock_timeout_ms)
    step->lock_timeout_ms = left_ms > 0 ? (unsigned) left_ms : 1;
  *sp = *p;
  sp->hc = step;
  return sp;
}

/* Step 1 for the plugin's entry V (LATE: no time left, only counted). */
static void
settle (const struct cp_nri_plugin *p, const struct cp_entry_view *v, const struct listing *ls, nri_pod **pods,
        size_t n_pods, bool late, struct left *left, struct cp_nri_updates *out)
{
  const nri_container *c = listed (ls, v->e.id);
  enum cp_seen seen = c ? cp_nri_seen (c) : CP_SEEN_ABSENT;
  cleanup_bitmap hwloc_bitmap_t spec = cp_bitmap_new ();
  bool said = c && cp_nri_spec_cpus (c, spec);
  enum cp_settle what = cp_owner_settle (&p->owner, &v->e, seen, said ? spec : NULL);
  const nri_pod *pod = c ? find_pod (pods, n_pods, c->pod_sandbox_id) : NULL;
  if (seen == CP_SEEN_RUNNING && !late && what != CP_SETTLE_UNAPPLIED)
    {
      if (!v->e.core_sched)
        cp_nri_core_sched_start (p, pod, c); /* asked, not made */
      if (!v->e.isolated)
        cp_nri_isolate_start (p->hc, pod, c); /* asked, not made */
    }
  switch (what)
    {
    case CP_SETTLE_RELEASE:
      if (late)
        left->release++;
      else
        cp_nri_release (p, v->e.id, v->e.cgroup, cp_settle_reason (seen));
      break;
    case CP_SETTLE_ADOPT:
      if (late)
        left->adopt++;
      else
        adopt (p, p->hc, c);
      break;
    case CP_SETTLE_UNAPPLIED:
      {
        cleanup_free char *got
            = hwloc_bitmap_iszero (spec) ? cp_xstrdup ("(its parent's)") : cp_cpulist_format (spec);
        cleanup_free char *held = cp_cpulist_format (v->e.cpus);
        cp_log (CP_LOG_WARNING, "resync: %s runs on CPUs %s, not on its placement %s (the runtime did not apply "
                                "the answer): updated to it",
                v->e.id, got, held);
        add_update (out, v->e.id, v->e.cpus, v->e.mems);
        break;
      }
    case CP_SETTLE_KEEP:
    default:
      break;
    }
}

/* Step 2 for every listed container without an entry, in one batch (cli.h: one
   lock, one commit, told only once committed).  Strict containers first: when CPUs
   are short, those that asked never to run split get them. */
static void
place_all (const struct cp_nri_plugin *p0, const struct cp_entries *v, const struct listing *ls, nri_pod **pods,
           size_t n_pods, const struct timespec *t0, long budget_ms, struct left *left, struct cp_nri_updates *out)
{
  struct cp_hostconfig step;
  struct cp_nri_plugin sp;
  const struct cp_nri_plugin *p = step_plugin (p0, &sp, &step, budget_ms - ms_since (t0));
  struct missed *m = cp_xcalloc (ls->n + 1, sizeof *m);
  size_t n = 0;
  struct cp_front_batch *batch = NULL;
  cleanup_error cp_error_t why = NULL;
  bool open = false; /* the lock taken once, when there is something to place */
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < ls->n; i++)
      {
        const nri_container *c = ls->list[i];
        if (cp_nri_seen (c) != CP_SEEN_RUNNING && cp_nri_seen (c) != CP_SEEN_CREATED)
          continue;
        if (cp_entries_find (v, c->id) || cp_nri_claim_of (p, c))
          continue; /* placed, or a claim's (resync_claims()) */
        if (!open && ms_since (t0) < budget_ms)
          {
            open = true;
            if (cp_front_batch_open (p->hc, CP_JOURNAL_NRI, &batch, &why) < 0)
              cp_log (CP_LOG_WARNING, "resync: nothing placed, the ledger could not be opened: %s",
                      cp_error_message (why));
          }
        if (batch == NULL || ms_since (t0) >= budget_ms)
          left->place += pass == 1; /* may not ask: said as "to look at" */
        else
          {
            place_missed (p, batch, pass, find_pod (pods, n_pods, c->pod_sandbox_id), c, &m[n]);
            n += m[n].plan != NULL;
          }
      }
  if (batch && n && cp_front_batch_commit (batch, &why) < 0)
    {
      cp_log (CP_LOG_WARNING, "resync: %zu placements not made: %s", n, cp_error_message (why));
      left->place += (unsigned) n;
      missed_free (m, n);
      m = NULL;
      n = 0;
    }
  cp_front_batch_close (batch); /* before tell_placed(), which takes the lock again */
  tell_placed (p0, m, n, out);
  missed_free (m, n);
}

/* The containers tagged with a prepared DRA claim (nri_claim.c), created or started
   while the plugin was away: an update to their claims' CPUs and nodes, from the
   entries read (V), none of their own.  A claim not prepared here is said. */
static void
resync_claims (const struct cp_nri_plugin *p, const struct cp_entries *v, const struct listing *ls,
               struct cp_nri_updates *out)
{
  cleanup_bitmap hwloc_bitmap_t cpus = cp_bitmap_new ();
  cleanup_bitmap hwloc_bitmap_t mems = cp_bitmap_new ();
  struct cp_dra_tag tags[CP_NRI_MAX_CLAIM_TAGS];
  for (size_t i = 0; i < ls->n; i++)
    {
      const nri_container *c = ls->list[i];
      if ((cp_nri_seen (c) != CP_SEEN_RUNNING && cp_nri_seen (c) != CP_SEEN_CREATED) || cp_entries_find (v, c->id))
        continue; /* gone, or settled by its own entry (one update a container) */
      size_t n = cp_nri_claim_tags (p, c, tags, CP_ARRAY_SIZE (tags));
      if (n == 0)
        continue; /* not a claim's */
      hwloc_bitmap_zero (cpus);
      hwloc_bitmap_zero (mems);
      const char *missing = NULL;
      unsigned missing_index = 0;
      for (size_t k = 0; k < n && missing == NULL; k++)
        {
          cleanup_free char *id = cp_dra_entry_id (tags[k].uid, tags[k].index);
          const struct cp_entry_view *e = cp_entries_find (v, id);
          if (e == NULL)
            {
              missing = tags[k].uid;
              missing_index = tags[k].index;
              continue;
            }
          hwloc_bitmap_or (cpus, cpus, e->e.cpus);
          if (e->e.mems)
            hwloc_bitmap_or (mems, mems, e->e.mems);
        }
      if (missing)
        cp_log (CP_LOG_WARNING, "resync: %s has DRA claim %.128s, result %u, not prepared on this node: left as it is",
                c->id, missing, missing_index);
      else
        add_update (out, c->id, cpus, mems);
    }
}

void
cp_nri_resync (const struct cp_nri_plugin *p0, nri_pod **pods, size_t n_pods, nri_container **ctrs, size_t n_ctrs,
               long budget_ms, struct cp_nri_updates *out)
{
  struct cp_hostconfig step;
  struct cp_nri_plugin sp;
  *out = (struct cp_nri_updates) { .u = cp_xcalloc (n_ctrs + 1, sizeof *out->u),
                                   .p = cp_xcalloc (n_ctrs + 1, sizeof *out->p),
                                   .strings = cp_xcalloc (3 * n_ctrs + 1, sizeof *out->strings) };
  struct timespec t0;
  clock_gettime (CLOCK_MONOTONIC, &t0);
  struct cp_entries v = { 0 };
  cleanup_error cp_error_t why = NULL;
  if (cp_entries_read (step_plugin (p0, &sp, &step, budget_ms)->hc, &p0->owner, &v, &why) < 0)
    {
      cp_log (CP_LOG_WARNING, "resync: nothing rebuilt, the ledger could not be read: %s", cp_error_message (why));
      return;
    }
  struct listing ls;
  listing_make (ctrs, n_ctrs, &ls);
  struct left left = { 0 };
  for (size_t i = 0; i < v.n; i++)
    if (v.v[i].owned)
      settle (step_plugin (p0, &sp, &step, budget_ms - ms_since (&t0)), &v.v[i], &ls, pods, n_pods,
              ms_since (&t0) >= budget_ms, &left, out);
  resync_claims (p0, &v, &ls, out);
  place_all (p0, &v, &ls, pods, n_pods, &t0, budget_ms, &left, out);
  if (left.release || left.adopt || left.place)
    cp_log (CP_LOG_WARNING,
            "resync: stopped after %ld ms (the runtime waits 2 s): left %u releases (at the next Synchronize), "
            "%u cgroups to record, %u unplaced containers to look at (at the next Synchronize)",
            budget_ms, left.release, left.adopt, left.place);
  listing_free (&ls);
  cp_entries_clear (&v);
}
