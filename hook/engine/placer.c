#define _GNU_SOURCE
#include "placer.h"
#include "bitmap.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "cpulist.h"
#include "topo.h"
#include "util.h"
#include "fault.h"
#include "placer_limits.h"
#include "ledger.h"
#include "log.h"
#include "manager.h"
#include "proc.h"
#include "schedctl.h"
#include "events.h"
#include "topocache.h"
#include "recheck.h"
#include "isolate.h"
#include "isolation.h"
#include "placer_internal.h"
#include "unitpin.h"

CP_FAULT_HOOK (cp_placer_set_fault_hook, cp_placer_fault_fn);

#ifdef CACHEPIN_FAULT_INJECTION
void
cp_placer_fault (enum cp_placer_fault_point point)
{
  FAULT (point);
}
#endif

static int
record (struct cp_ledger *l, const struct cp_target *t, const struct cp_container_request *creq,
        const struct cp_plan *plan, hwloc_const_bitmap_t mems, cp_error_t *err)
{
  struct cp_ledger_entry e = {
    .id = (char *) t->id,
    .name = (char *) t->name,
    .cgroup_mount = (char *) t->cgroup_mount,
    .cgroup = (char *) t->cgroup_path,
    .cgroup_ino = t->cgroup_ino <= (unsigned long long) CP_LEDGER_MAX_INT ? t->cgroup_ino : 0,
    .pid = t->pid,
    .mode = plan->mode,
    .cpus = plan->cpus,
    .held = plan->held,
    .mems = (hwloc_bitmap_t) mems,
    .placed_at = (long long) time (NULL),
    .sched_cache = creq->sched_cache,
    .core_sched = t->core_sched,
    .runtime = t->pid > 0 ? NULL : (char *) t->runtime,
  };
  if (t->pid > 0)
    {
      bool zombie = false;
      if (cp_proc_start_time (t->pid, &e.start_time, &zombie, err) < 0)
        return cp_error_wrap (err, "container process %d", (int) t->pid);
      if (zombie)
        return cp_fail_errno (err, ESRCH, "container process %d has exited", (int) t->pid);
    }
  if (cp_ledger_put (l, &e, err) < 0)
    return -1;
  FAULT (CP_PLACER_FAULT_RECORDED);
  return cp_ledger_commit (l, err);
}

static bool
same_cgroup (const struct cp_ledger_entry *e, const struct cp_target *t)
{
  return strcmp (e->cgroup_mount, t->cgroup_mount) == 0 && strcmp (e->cgroup, t->cgroup_path) == 0;
}

/* One cgroup, one holder, and one cgroup per id.  A target whose cgroup another
 * entry holds is not what it says it is (a state naming another container's
 * process, an apply of a placed container's cgroup): its placement would rewrite
 * the other's cpuset.  A target whose id a live entry holds for ANOTHER cgroup is
 * a second container claiming a running one's id: replacing the entry would leave
 * the first container on CPUs the ledger no longer counts.  (Reconcile has
 * already dropped the entries whose container is gone, so a reused id of a dead
 * container is not refused.)  Neither refusal touches the existing entry. */
int
cp_placer_check_unclaimed (const struct cp_ledger *l, const struct cp_target *t, cp_error_t *err)
{
  if (t->cgroup_mount == NULL || t->cgroup_path == NULL)
    return 0;
  for (size_t i = 0; i < cp_ledger_count (l); i++)
    {
      const struct cp_ledger_entry *e = cp_ledger_at (l, i);
      bool same_id = strcmp (e->id, t->id) == 0;
      if (!same_id && same_cgroup (e, t))
        return cp_fail_runtime (err, "cgroup %s%s is already placed, for `%.128s`", t->cgroup_mount,
                                t->cgroup_path, e->id);
      if (same_id && !same_cgroup (e, t))
        return cp_fail_runtime (err, "`%.128s` is already placed in cgroup %s%s; refusing to place the same id in %s%s",
                                e->id, e->cgroup_mount, e->cgroup, t->cgroup_mount, t->cgroup_path);
    }
  return 0;
}

/* A refused re-placement: the error says that the placement T already has
   stands, so that nobody reads the refusal as "unplaced". */
static int
kept_placement (const struct cp_ledger *l, const struct cp_target *t, cp_error_t *err)
{
  const struct cp_ledger_entry *e = cp_ledger_find (l, t->id);
  if (e == NULL)
    return -1;
  cleanup_free char *cpus = cp_cpulist_format (e->cpus);
  cleanup_free char *why = cp_xstrdup (cp_error_message (*err));
  return cp_error_set (err, cp_error_kind (*err), cp_error_errno (*err),
                       "%s; the earlier placement stands: %s%s keeps %s %s", why, e->cgroup_mount, e->cgroup,
                       hwloc_bitmap_weight (e->cpus) == 1 ? "CPU" : "CPUs", cpus);
}

int
cp_placer_plan_in (const struct cp_ledger *l, const struct cp_topo *topo, hwloc_const_bitmap_t cpus,
                   hwloc_const_bitmap_t mems, const struct cp_target *t, const struct cp_container_request *creq,
                   hwloc_const_bitmap_t occupied, hwloc_const_bitmap_t avoid, struct cp_plan **plan_out,
                   cp_error_t *err)
{
  struct cp_ledger_usage usage;
  cp_ledger_usage (l, t->id, &usage);
  if (occupied)
    hwloc_bitmap_or (usage.held, usage.held, occupied);
  int ret = cp_place (topo, cpus, mems, &usage.usage, &creq->req, plan_out, err);
  if (ret == 0 && avoid && hwloc_bitmap_intersects ((*plan_out)->cpus, avoid))
    {
      /* Again without AVOID.  That placement is taken unless it splits where the
         first did not: the alignment asked for comes first, and the caller's
         verdict then says why the CPUs are not isolated. */
      cleanup_bitmap hwloc_bitmap_t rest = cp_bitmap_dup (cpus);
      hwloc_bitmap_andnot (rest, rest, avoid);
      cleanup_plan struct cp_plan *off = NULL;
      cleanup_error cp_error_t narrowed = NULL;
      if (!hwloc_bitmap_iszero (rest) && cp_place (topo, rest, mems, &usage.usage, &creq->req, &off, &narrowed) == 0
          && (!off->split || (*plan_out)->split))
        {
          cp_plan_free (*plan_out);
          *plan_out = cp_steal_pointer (&off);
        }
    }
  cp_ledger_usage_release (&usage);
  return ret;
}

/* cp_placer_decide_in(), with TOO_MANY (when not NULL) the refusal of a
   request for more CPUs than CPUS holds, naming what set the limit, in place of
   cp_place()'s, which knows only the count. */
int
cp_placer_decide_with (struct cp_ledger *l, const struct cp_topo *topo, hwloc_const_bitmap_t cpus,
                       hwloc_const_bitmap_t mems, const struct cp_target *t, const struct cp_container_request *creq,
                       hwloc_const_bitmap_t kept_mems, const char *too_many, struct cp_isolate *iso,
                       struct cp_plan **plan_out, cp_error_t *err)
{
  cleanup_plan struct cp_plan *plan = NULL;
  if (cp_placer_check_unclaimed (l, t, err) < 0)
    return -1;
  cleanup_bitmap hwloc_bitmap_t kept = NULL; /* the host's own cores, for an isolated request */
  if (iso && iso->granted)
    {
      kept = cp_bitmap_new ();
      cp_isolate_kept (topo, kept);
    }
  int ret = cp_placer_take_over (l, t, cpus, mems, &plan) > 0 || cp_unitpin_keep (l, t, cpus, mems, creq, &plan) > 0
              ? 0
            : too_many ? cp_fail_unsatisfiable (err, "%s", too_many)
                       : cp_placer_plan_in (l, topo, cpus, mems, t, creq, NULL, kept, &plan, err);
  if (ret == 0 && iso) /* the host keeps CPUs of its own: before anything is recorded */
    ret = cp_isolate_decide (iso, topo, t->id, plan->cpus, creq->req.strict, err);
  if (ret < 0)
    {
      /* Keep what reconcile dropped.  An earlier placement of this id stays as it
         is: its cgroup still has that cpuset (nothing was written), so its CPUs
         stay held until it is released or gone. */
      cp_error_t ignored = NULL;
      cp_ledger_commit (l, &ignored);
      cp_error_free (&ignored);
      return kept_placement (l, t, err);
    }
  if (record (l, t, creq, plan, kept_mems ? kept_mems : plan->mems, err) < 0)
    return cp_error_wrap (err, "ledger");
  *plan_out = cp_steal_pointer (&plan);
  return 0;
}

int
cp_placer_decide_in (struct cp_ledger *l, const struct cp_topo *topo, hwloc_const_bitmap_t cpus,
                  hwloc_const_bitmap_t mems, const struct cp_target *t, const struct cp_container_request *creq,
                  hwloc_const_bitmap_t kept_mems, struct cp_plan **plan_out, cp_error_t *err)
{
  return cp_placer_decide_with (l, topo, cpus, mems, t, creq, kept_mems, NULL, NULL, plan_out, err);
}

/* The kernel's cache-aware scheduling switch, before the sandbox (schedctl.h).
 * A probe that fails is logged and the switch left alone: the kernel features
 * never stand in the way of a placement, except that a strict container asking
 * for one is refused when it cannot have it (cp_schedctl_check_request()). */
void
cp_placer_schedctl_open (const struct cp_hostconfig *hc, struct cp_schedctl *sc)
{
  cleanup_error cp_error_t e = NULL;
  if (cp_schedctl_open (hc, sc, &e) < 0)
    {
      cp_log (CP_LOG_WARNING, "%s; left as it is", cp_error_message (e)); /* prefixed by sched_cas.c */
      cp_schedctl_close (sc);
      *sc = (struct cp_schedctl) { .setting = hc->sched_cache, .handle = { .fd = -1 },
                                   .cas = { .avail = CP_SCHED_UNSUPPORTED, .enabled = -1 } };
    }
}

/* The switch where the ledger's final entries want it; a failure is only logged
 * (the placement stands, and the next run tries again). */
void
cp_placer_schedctl_sync (struct cp_schedctl *sc, struct cp_ledger *l)
{
  cleanup_error cp_error_t e = NULL;
  if (cp_schedctl_sync (sc, l, &e) < 0)
    cp_log (CP_LOG_WARNING, "%s", cp_error_message (e));
}

/* Drop T's entry after a failure past the decision, and still bring the switch
 * where the remaining entries want it. */
static void
take_back (struct cp_ledger *l, const struct cp_target *t, struct cp_schedctl *sc)
{
  cp_error_t ignored = NULL;
  cp_ledger_remove (l, t->id);
  cp_ledger_commit (l, &ignored);
  cp_error_free (&ignored);
  cp_placer_schedctl_sync (sc, l);
}

/* One run of the engine on the ledger, through its steps: a placement
   (cp_placer_open() ... cp_placer_apply()) or a release (cp_placer_open_release(),
   cp_placer_release_commit()). */
struct cp_placer
{
  const struct cp_hostconfig *hc;
  struct cp_target target;                 /* the caller's, with its cgroup's inode */
  const struct cp_container_request *creq; /* a placement's request; NULL for a release */
  const struct cp_release *rel;            /* a release's; NULL for a placement */
  struct cp_schedctl sc;
  struct cp_topo *topo;
  hwloc_bitmap_t cpus, mems; /* what the target may get */
  hwloc_bitmap_t kept_mems;  /* mems=keep: what it has (NULL otherwise) */
  struct cp_managers mgrs; /* the cgroup's managers (manager.h), attached at open */
  struct cp_ledger *l;
  struct cp_plan *plan; /* once decided */
  char *too_many;       /* the refusal of a request for more CPUs than cpus holds (NULL: it fits) */
  struct cp_isolate iso; /* cachepin.io/isolate (isolation.h) */
};

static struct cp_placer *
placer_new (const struct cp_hostconfig *hc)
{
  struct cp_placer *p = cp_xcalloc (1, sizeof *p);
  p->hc = hc;
  p->sc = (struct cp_schedctl) { .handle = { .fd = -1 } };
  return p;
}

void
cp_placer_close (struct cp_placer *p)
{
  if (p == NULL)
    return;
  cp_managers_close (&p->mgrs);
  cp_plan_free (p->plan);
  cp_ledger_close (p->l); /* the lock goes with it */
  cp_schedctl_close (&p->sc);
  hwloc_bitmap_free (p->kept_mems);
  hwloc_bitmap_free (p->mems);
  hwloc_bitmap_free (p->cpus);
  cp_topo_free (p->topo);
  free (p->too_many);
  free (p);
}

/* mems=keep: the ledger records what the cgroup has, which is what stays; a
   cgroup not made yet will inherit what its parent allows (the limits). */
static int
read_kept_mems (struct cp_placer *p, cp_error_t *err)
{
  const struct cp_target *t = &p->target;
  p->kept_mems = cp_bitmap_new ();
  if (t->cgroup == NULL)
    {
      hwloc_bitmap_copy (p->kept_mems, p->mems);
      return 0;
    }
  if (cp_cgroup_read_cpuset (t->cgroup, NULL, p->kept_mems, err) < 0)
    return cp_error_wrap (err, "cgroup %s%s", t->cgroup->mount, t->cgroup->path);
  return 0;
}

int
cp_placer_open (const struct cp_hostconfig *hc, const struct cp_target *target,
                const struct cp_container_request *creq, struct cp_placer **out, cp_error_t *err)
{
  cleanup_placer struct cp_placer *p = placer_new (hc);
  p->target = *target;
  p->creq = creq;
  p->cpus = cp_bitmap_new ();
  p->mems = cp_bitmap_new ();
  struct cp_target *t = &p->target;
  if (t->cgroup_mount == NULL || t->cgroup_path == NULL)
    return cp_fail_input (err, "%s: no cgroup to record (cgroup_mount and cgroup_path)", t->id);

  /* The cgroup's inode goes into the entry: the same path made again later is
     another cgroup (reconcile, `cachepin release`). */
  if (t->cgroup && cp_cgroup_ino (t->cgroup, &t->cgroup_ino, err) < 0)
    return -1;
  /* The other managers of the cgroup (manager.h): the kubelet's warning first, as
     before anything can fail; systemd's bus opened before the lock, so that its
     round trips do not lengthen anyone's wait for it. */
  struct cp_manager_ctx mctx = { .step = CP_MANAGER_PLACE, .cgroup = t->cgroup, .kubelet_state = hc->kubelet_state };
  cp_managers_attach (NULL, &mctx, &p->mgrs);
  if (cp_topocache_load (hc, 0, &p->topo, err) < 0)
    return cp_error_wrap (err, "topology");
  if (cp_placer_target_limits (hc, t, creq, p->topo, p->cpus, p->mems, &p->too_many, err) < 0)
    return -1;
  if (creq->mems_keep && read_kept_mems (p, err) < 0)
    return -1;
  cp_placer_schedctl_open (hc, &p->sc);
  if (cp_schedctl_check_request (&p->sc, t->id, creq->sched_cache, creq->req.strict, err) < 0
      || cp_isolate_open (hc, t, creq, &p->iso, err) < 0)
    return -1;
  if (cp_placer_open_ledger (hc, &p->l, err) < 0)
    return -1;
  cp_schedctl_ledger_opened (&p->sc, p->l);
  *out = cp_steal_pointer (&p);
  return 0;
}

int
cp_placer_sandbox (const struct cp_placer *p, struct cp_sandbox *sb, cp_error_t *err)
{
  const struct cp_cgroup *cg = p->rel ? p->rel->widen : p->target.cgroup;
  int bus_fd = -1;
  if (cp_managers_fd (&p->mgrs, &bus_fd, err) < 0)
    return -1;
  *sb = (struct cp_sandbox) {
    .state_dirfd = cp_ledger_dirfd (p->l),
    .cgroup_mountfd = cg ? cg->mountfd : -1,
    .pid = p->rel ? 0 : p->target.pid,
    .bus = bus_fd >= 0,
    .bus_fd = bus_fd,
  };
  return 0;
}

int
cp_placer_state_dirfd (const struct cp_placer *p)
{
  return cp_ledger_dirfd (p->l);
}

int
cp_placer_decide (struct cp_placer *p, cp_error_t *err)
{
  if (cp_placer_decide_with (p->l, p->topo, p->cpus, p->mems, &p->target, p->creq, p->kept_mems, p->too_many,
                             &p->iso, &p->plan, err)
      == 0)
    return 0;
  cp_placer_schedctl_sync (&p->sc, p->l); /* reconcile may have dropped the last container asking */
  return -1;
}

struct cp_plan *
cp_placer_take_plan (struct cp_placer *p)
{
  return cp_steal_pointer (&p->plan);
}

int
cp_placer_apply (struct cp_placer *p, cp_error_t *err)
{
  const struct cp_target *t = &p->target;
  const struct cp_plan *plan = p->plan;
  bool mems_keep = p->creq->mems_keep;
  /* An earlier partition of this id (placed again: the decision replaced its
     isolated entry) goes before its cgroup is written again. */
  char *self[] = { (char *) t->id };
  if (t->cgroup)
    cp_isolate_reconcile (p->l, &(struct cp_partition_tree) { .mount = t->cgroup->mount,
                                                              .mountfd = t->cgroup->mountfd },
                          self, 1);
  /* The direct write (cgroupfs), then the others, told after it: it stands
     whatever they answer.  Without a cgroup no manager is attached for it. */
  if (cp_managers_apply (&p->mgrs, plan->cpus, mems_keep ? NULL : plan->mems, err) < 0)
    {
      take_back (p->l, t, &p->sc);
      if (t->cgroup)
        return cp_error_wrap (err, "cgroup %s%s", t->cgroup->mount, t->cgroup->path);
      return -1;
    }
  if (t->cgroup && cp_isolate_apply (&p->iso, p->l, t, plan->cpus, p->creq->req.strict, err) < 0)
    {
      take_back (p->l, t, &p->sc);
      return -1;
    }
  cp_placer_schedctl_sync (&p->sc, p->l);
  return 0;
}

/* Why E is not REL's entry (another container with the same id), or NULL.  When
   both name a process, it decides (two live containers never share a pid; a
   config.json cgroupsPath the runtime read otherwise than we do must not keep a
   container's own entry); else the cgroup config.json names does. */
static char *
not_its (const struct cp_ledger_entry *e, const struct cp_release *rel)
{
  if (rel->owner)
    {
      char *why = cp_owner_not_owned (rel->owner, e);
      if (why || rel->cgroup == NULL || strcmp (e->cgroup, rel->cgroup) == 0)
        return why;
      return cp_xasprintf ("it is in cgroup %s%s, this release's container in %.256s", e->cgroup_mount, e->cgroup,
                           rel->cgroup);
    }
  if (rel->pid > 0 && e->pid > 0)
    return rel->pid == e->pid
               ? NULL
               : cp_xasprintf ("it is process %d's, this release is process %d's", (int) e->pid, (int) rel->pid);
  if (rel->cgroup && !cp_cgroup_path_within (e->cgroup, rel->cgroup))
    return cp_xasprintf ("it is in cgroup %s%s, this release's container in %s", e->cgroup_mount, e->cgroup,
                         rel->cgroup);
  return NULL;
}

/* Whether CG is another cgroup than the one E placed (removed and made again
   since: its inode differs).  Not known (no inode recorded, none read): false. */
static bool
recreated (const struct cp_ledger_entry *e, const struct cp_cgroup *cg)
{
  unsigned long long ino = 0;
  cleanup_error cp_error_t ignored = NULL;
  return e->cgroup_ino && cp_cgroup_ino (cg, &ino, &ignored) == 0 && ino != e->cgroup_ino;
}

/* Widen REL->widen, the cgroup E placed, under the lock, before the entry goes: a
   placement of the same cgroup waiting for the lock then writes after us, never
   before (which would leave the ledger saying it holds what the cgroup no longer
   is).  A failed write keeps the entry, and its CPUs held, so that a retry can
   find it. */
static int
widen_placed (struct cp_managers *mgrs, cp_error_t *err)
{
  FAULT (CP_PLACER_FAULT_WIDENING);
  /* cgroupfs widens the cgroup to what its parent allows; systemd's properties
     go back to empty, no restriction, as before the placement. */
  return cp_managers_clear (mgrs, err);
}

int
cp_placer_open_release (const struct cp_hostconfig *hc, const struct cp_release *rel, struct cp_placer **out,
                        cp_error_t *err)
{
  cleanup_placer struct cp_placer *p = placer_new (hc);
  p->rel = rel;
  cp_placer_schedctl_open (hc, &p->sc);
  struct cp_manager_ctx mctx = { .step = CP_MANAGER_RELEASE, .cgroup = rel->widen, .kubelet_state = hc->kubelet_state };
  cp_managers_attach (NULL, &mctx, &p->mgrs);
  if (cp_placer_open_ledger_in (hc, CP_RECONCILE_CAS_ASKERS, &p->l, err) < 0)
    return -1;
  /* Its partition, before the sandbox (a poststop's keeps no cgroup) and before
     the cgroup is widened: only when the entry is this release's. */
  const struct cp_ledger_entry *e = cp_ledger_find (p->l, rel->id);
  cleanup_free char *why = e ? not_its (e, rel) : NULL;
  if (e && why == NULL && cp_isolate_release (p->l, rel->id, err) < 0)
    return -1;
  cp_schedctl_ledger_opened (&p->sc, p->l);
  *out = cp_steal_pointer (&p);
  return 0;
}

int
cp_placer_release_commit (struct cp_placer *p, enum cp_release_result *result, cp_error_t *err)
{
  const struct cp_release *rel = p->rel;
  struct cp_ledger *l = p->l;
  const struct cp_ledger_entry *e = cp_ledger_find (l, rel->id);
  *result = e ? CP_RELEASE_DONE : CP_RELEASE_NONE;
  cleanup_free char *why = e ? not_its (e, rel) : NULL;
  if (why)
    {
      /* The placement path refused the second container of an id; its release
         must not undo that by freeing the first one's CPUs. */
      cp_log (CP_LOG_WARNING, "release of %s: its entry is kept, %s (another container with the same id)",
              rel->id, why);
      *result = CP_RELEASE_NOT_ITS;
    }
  else if (e && rel->widen && recreated (e, rel->widen))
    *result = CP_RELEASE_RECREATED; /* nobody placed this one: left as it is */
  else if (e && rel->widen && widen_placed (&p->mgrs, err) < 0)
    return -1;
  if (e && *result != CP_RELEASE_NOT_ITS)
    cp_event_emit_on_commit (l, &(struct cp_event) {
        .kind = CP_EVENT_RELEASED, .id = e->id, .name = e->name, .cgroup = e->cgroup, .cpus = e->cpus,
        .what = *result == CP_RELEASE_RECREATED ? "its cgroup was made again since: left as it is" : "" });
  if (*result != CP_RELEASE_NOT_ITS)
    cp_ledger_remove (l, rel->id);
  if (cp_ledger_commit (l, err) < 0)
    return cp_error_wrap (err, "ledger %s", p->hc->state_dir);
  cp_placer_schedctl_sync (&p->sc, l);
  return 0;
}
