/* cachepin: a systemd service kept placed across its restarts (unitpin.h). */
#define _GNU_SOURCE
#include "unitpin.h"

#include "bitmap.h"
#include "util.h"

char *
cp_unitpin_id (const char *unit)
{
  return cp_xasprintf ("%s%s", CP_LEDGER_UNIT_PREFIX, unit);
}

/* What CREQ asks is what E holds: the same mode and, when it says, the same count. */
static bool
same_request (const struct cp_ledger_entry *e, const struct cp_container_request *creq)
{
  if (e->mode != creq->req.mode)
    return false;
  return creq->req.cpus == 0 || (unsigned) hwloc_bitmap_weight (e->cpus) == creq->req.cpus;
}

int
cp_unitpin_keep (const struct cp_ledger *l, const struct cp_target *t, hwloc_const_bitmap_t cpus,
                 hwloc_const_bitmap_t mems, const struct cp_container_request *creq, struct cp_plan **plan_out)
{
  const struct cp_ledger_entry *e = cp_ledger_find (l, t->id);
  if (e == NULL || !cp_ledger_entry_unit (e) || (e->cgroup_ino != 0 && e->cgroup_ino != t->cgroup_ino))
    return 0;
  /* The host config or the slice may have narrowed what the unit may get since:
     then it is placed anew within that, as `apply` again would. */
  if (!same_request (e, creq) || hwloc_bitmap_iszero (e->cpus) || !hwloc_bitmap_isincluded (e->cpus, cpus))
    return 0;
  bool mems_fit = e->mems && !hwloc_bitmap_iszero (e->mems) && hwloc_bitmap_isincluded (e->mems, mems);
  struct cp_plan *plan = cp_xcalloc (1, sizeof *plan);
  plan->mode = e->mode;
  plan->cpus = cp_bitmap_dup (e->cpus);
  plan->held = e->held ? cp_bitmap_dup (e->held) : cp_bitmap_new ();
  plan->mems = cp_bitmap_dup (mems_fit ? e->mems : mems);
  plan->reason = cp_xstrdup ("kept: the CPUs this unit held since it last ran (`cachepin apply --unit`), still "
                             "its own");
  *plan_out = plan;
  return 1;
}

int
cp_unitpin_hold (const struct cp_hostconfig *hc, const char *id, cp_error_t *err)
{
  cleanup_ledger struct cp_ledger *l = NULL;
  if (cp_placer_open_ledger (hc, &l, err) < 0)
    return -1;
  const struct cp_ledger_entry *e = cp_ledger_find (l, id);
  int r = 0;
  if (e && cp_ledger_entry_unit (e))
    {
      /* The drift was the stopping cgroup's: the next one starts on the entry's CPUs. */
      struct cp_ledger_entry copy = *e;
      copy.cgroup_ino = 0;
      copy.drift = NULL;
      if (cp_ledger_put (l, &copy, err) < 0)
        return cp_error_wrap (err, "ledger");
      r = 1;
    }
  /* Committed even with nothing held: what reconcile dropped stays dropped. */
  if (cp_ledger_commit (l, err) < 0)
    return cp_error_wrap (err, "ledger %s", hc->state_dir);
  return r;
}
