/* cachepin: placements decided in a batch, under one lock, committed once.
 *
 * A long-running front end may have many containers to place at once (the NRI
 * plugin's Synchronize: containers that started while it was away), each of them
 * decided as cp_placer_open() and cp_placer_decide() decide a target without a
 * cgroup (no cgroup is written: the runtime applies the answer), against the
 * entries decided before it in the same batch.  One placement at a time would
 * lock, read, reconcile and commit the ledger once per container: with a thousand
 * containers that is a thousand rewrites of a growing file, past the runtime's
 * deadline.  Here the ledger is locked and reconciled once, its commits deferred
 * (cp_ledger_defer_commits()), and written once at the end, all or none, before the
 * front end tells anyone of any of them. */
#define _GNU_SOURCE
#include "placer.h"

#include <stdlib.h>

#include "bitmap.h"
#include "ledger.h"
#include "ledger_store.h"
#include "placer_internal.h"
#include "placer_limits.h"
#include "topocache.h"
#include "util.h"

struct cp_placer_batch
{
  const struct cp_hostconfig *hc;
  struct cp_topo *topo;
  struct cp_schedctl sc;
  struct cp_ledger *l;
  size_t decided; /* placements recorded and not committed yet */
};

int
cp_placer_batch_open (const struct cp_hostconfig *hc, struct cp_placer_batch **out, cp_error_t *err)
{
  cleanup_placer_batch struct cp_placer_batch *b = cp_xcalloc (1, sizeof *b);
  b->hc = hc;
  b->sc = (struct cp_schedctl) { .handle = { .fd = -1 } };
  if (cp_topocache_load (hc, 0, &b->topo, err) < 0)
    return cp_error_wrap (err, "topology");
  cp_placer_schedctl_open (hc, &b->sc);
  if (cp_placer_open_ledger (hc, &b->l, err) < 0)
    return -1;
  cp_schedctl_ledger_opened (&b->sc, b->l);
  cp_ledger_defer_commits (b->l, true);
  *out = cp_steal_pointer (&b);
  return 0;
}

int
cp_placer_batch_decide (struct cp_placer_batch *b, const struct cp_target *t, const struct cp_container_request *creq,
                        struct cp_plan **plan_out, cp_error_t *err)
{
  *plan_out = NULL;
  if (t->cgroup || t->pid > 0 || t->cgroup_mount == NULL || t->cgroup_path == NULL)
    return cp_fail_input (err, "%s: a batch places targets whose cgroup is named and not made yet", t->id);
  cleanup_bitmap hwloc_bitmap_t cpus = cp_bitmap_new ();
  cleanup_bitmap hwloc_bitmap_t mems = cp_bitmap_new ();
  cleanup_free char *too_many = NULL;
  struct cp_isolate iso = { 0 };
  if (cp_placer_target_limits (b->hc, t, creq, b->topo, cpus, mems, &too_many, err) < 0
      || cp_schedctl_check_request (&b->sc, t->id, creq->sched_cache, creq->req.strict, err) < 0
      || cp_isolate_open (b->hc, t, creq, &iso, err) < 0)
    return -1;
  /* mems=keep without a cgroup: it will inherit what its parent allows, MEMS. */
  if (cp_placer_decide_with (b->l, b->topo, cpus, mems, t, creq, creq->mems_keep ? mems : NULL, too_many, &iso,
                             plan_out, err)
      < 0)
    return -1;
  b->decided++;
  return 0;
}

int
cp_placer_batch_commit (struct cp_placer_batch *b, cp_error_t *err)
{
  cp_ledger_defer_commits (b->l, false);
  int r = cp_ledger_commit (b->l, err);
  if (r < 0)
    r = cp_error_wrap (err, "ledger: %zu placements not recorded", b->decided);
  else
    cp_placer_schedctl_sync (&b->sc, b->l);
  b->decided = 0;
  cp_ledger_defer_commits (b->l, true);
  return r;
}

void
cp_placer_batch_close (struct cp_placer_batch *b)
{
  if (b == NULL)
    return;
  cp_ledger_close (b->l); /* uncommitted decisions are dropped with the lock */
  cp_schedctl_close (&b->sc);
  cp_topo_free (b->topo);
  free (b);
}
