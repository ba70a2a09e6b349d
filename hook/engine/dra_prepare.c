/* cachepin: a DRA claim prepared on this node (dra_prepare.h). */
#define _GNU_SOURCE
#include "dra_prepare.h"

#include <stdlib.h>
#include <string.h>

#include "bitmap.h"
#include "cdi.h"
#include "cpulist.h"
#include "dra.h"
#include "ledger.h"
#include "log.h"
#include "placer.h"
#include "placer_internal.h"
#include "placer_limits.h"
#include "text.h"
#include "topocache.h"
#include "util.h"

_Static_assert (sizeof CP_CDI_ENV == sizeof CP_DRA_CLAIM_ENV, "the CDI spec's tag is the one the plugin reads");
_Static_assert (CP_CDI_MAX_RESULTS == CP_DRA_CLAIM_MAX_RESULTS, "every result of a claim can be a tag");

void
cp_dra_prepared_clear (struct cp_dra_prepared *p)
{
  free (p->cdi_device);
  free (p->cdi_spec);
  if (p->cpus)
    hwloc_bitmap_free (p->cpus);
  if (p->mems)
    hwloc_bitmap_free (p->mems);
  for (size_t i = 0; i < p->n_results; i++)
    {
      free (p->results[i].cdi_device);
      hwloc_bitmap_free (p->results[i].cpus);
      hwloc_bitmap_free (p->results[i].mems);
    }
  free (p->results);
  memset (p, 0, sizeof *p);
}

char *
cp_dra_entry_prefix (const char *claim_uid)
{
  return cp_xasprintf ("%s%s:", CP_LEDGER_DRA_PREFIX, claim_uid);
}

char *
cp_dra_entry_id (const char *claim_uid, unsigned index)
{
  return cp_xasprintf ("%s%s:%u", CP_LEDGER_DRA_PREFIX, claim_uid, index);
}

static bool
has_prefix (const char *s, const char *prefix)
{
  return strncmp (s, prefix, strlen (prefix)) == 0;
}

/* Result I of OUT: its device, CPUs and nodes, and both in the union. */
static void
add_result (struct cp_dra_prepared *out, unsigned index, const char *device, hwloc_const_bitmap_t cpus,
            hwloc_const_bitmap_t mems)
{
  struct cp_dra_prepared_result *r = &out->results[out->n_results++];
  r->index = index;
  snprintf (r->device, sizeof r->device, "%s", device);
  r->cdi_device = cp_cdi_result_device_name (out->uid, index);
  r->cpus = cp_bitmap_dup (cpus);
  r->mems = cp_bitmap_dup (mems);
  hwloc_bitmap_or (out->cpus, out->cpus, cpus);
  hwloc_bitmap_or (out->mems, out->mems, mems);
}

static void
prepared_init (struct cp_dra_prepared *out, const struct cp_dra_claim *claim)
{
  memset (out, 0, sizeof *out);
  out->cpus = cp_bitmap_new ();
  out->mems = cp_bitmap_new ();
  out->results = cp_xcalloc (claim->n_results ? claim->n_results : 1, sizeof *out->results);
  out->cdi_device = cp_cdi_device_name (claim->uid);
  snprintf (out->uid, sizeof out->uid, "%s", claim->uid);
}

/* The claim prepared already: 1 with OUT filled from its entries (the same
   results), 0 when the ledger has none of it, -1 when it has others. */
static int
find_prepared (const struct cp_ledger *l, const struct cp_dra_claim *claim, struct cp_dra_prepared *out,
               cp_error_t *err)
{
  cleanup_free char *prefix = cp_dra_entry_prefix (claim->uid);
  size_t found = 0;
  for (size_t i = 0; i < cp_ledger_count (l); i++)
    found += has_prefix (cp_ledger_at (l, i)->id, prefix);
  if (found == 0)
    return 0;
  bool same = found == claim->n_results;
  for (size_t i = 0; same && i < claim->n_results; i++)
    {
      cleanup_free char *id = cp_dra_entry_id (claim->uid, claim->results[i].index);
      const struct cp_ledger_entry *e = cp_ledger_find (l, id);
      if (e == NULL)
        same = false;
      else
        add_result (out, claim->results[i].index, claim->results[i].device, e->cpus, e->mems);
    }
  if (!same)
    return cp_fail_runtime (err, "claim %s is prepared already with other results (%zu %s in the ledger): "
                                 "unprepare it first",
                            claim->uid, found, found == 1 ? "entry" : "entries");
  out->already = true;
  return 1;
}

/* The device NAME of M, or NULL. */
static const struct cp_dra_device *
device_named (const struct cp_dra_model *m, const char *name)
{
  for (size_t i = 0; i < m->n_devices; i++)
    if (strcmp (m->devices[i].name, name) == 0)
      return &m->devices[i];
  return NULL;
}

/* Decide result R on device D into L (deferred: nothing written yet). */
static int
decide_result (const struct cp_hostconfig *hc, struct cp_ledger *l, const struct cp_topo *topo,
               const struct cp_dra_claim *claim, const struct cp_dra_claim_result *r, const struct cp_dra_device *d,
               struct cp_dra_prepared *out, cp_error_t *err)
{
  unsigned want = r->cpus ? r->cpus : d->usable;
  if (want > d->usable)
    return cp_fail_unsatisfiable (err, "device %s has %u usable %s, the claim consumes %u", d->name, d->usable,
                                  d->usable == 1 ? "CPU" : "CPUs", want);
  cleanup_free char *id = cp_dra_entry_id (claim->uid, r->index);
  cleanup_free char *path = cp_xasprintf ("/%s/%u", claim->uid, r->index);
  cleanup_free char *name = cp_xasprintf ("%s/%s", claim->namespace_, claim->name);
  cleanup_free char *clean = cp_text_clean_copy (name, CP_LEDGER_MAX_NAME);
  struct cp_target t = { .id = id, .name = clean, .cgroup_mount = CP_LEDGER_DRA_MOUNT, .cgroup_path = path };
  /* The request: the device's CPUs and no others, strict; the host's smt rule,
     save that smt=pe0 holds idle siblings the scheduler does not count. */
  struct cp_container_request creq = { .req = hc->defaults, .cpus_source = "DRA claim", .bound_cpus = d->cpus };
  creq.req.cpus = want;
  creq.req.align = d->level;
  creq.req.mode = CP_MODE_EXCLUSIVE;
  creq.req.strict = true;
  if (creq.req.smt == CP_SMT_PE0)
    creq.req.smt = CP_SMT_PE0_FIRST;
  cleanup_bitmap hwloc_bitmap_t cpus = cp_bitmap_new ();
  cleanup_bitmap hwloc_bitmap_t mems = cp_bitmap_new ();
  cleanup_free char *too_many = NULL;
  cleanup_plan struct cp_plan *plan = NULL;
  if (cp_placer_target_limits (hc, &t, &creq, topo, cpus, mems, &too_many, err) < 0
      || cp_placer_decide_with (l, topo, cpus, mems, &t, &creq, NULL, too_many, NULL, &plan, err) < 0)
    return -1;
  if (plan->split)
    return cp_fail_unsatisfiable (err, "device %s: the claim's %u CPUs would span domains", d->name, want);
  add_result (out, r->index, d->name, plan->cpus, plan->mems);
  return 0;
}

/* CLAIM's CDI spec, a device for each of its results (OUT's, in its order). */
static int
write_spec (const struct cp_hostconfig *hc, const struct cp_dra_claim *claim, struct cp_dra_prepared *out,
            cp_error_t *err)
{
  unsigned indexes[CP_DRA_CLAIM_MAX_RESULTS];
  for (size_t i = 0; i < out->n_results; i++)
    indexes[i] = out->results[i].index;
  return cp_cdi_write (hc->cdi_dir, claim->uid, indexes, out->n_results, &out->cdi_spec, err);
}

int
cp_dra_claim_prepare (const struct cp_hostconfig *hc, const struct cp_dra_claim *claim, struct cp_dra_prepared *out,
                      cp_error_t *err)
{
  prepared_init (out, claim);
  if (claim->n_results == 0)
    return cp_fail_input (err, "claim %s: no device of driver %s on this node's pool to prepare", claim->uid,
                          CP_DRA_DRIVER);
  /* The devices by name: every domain with usable CPUs, whatever is held (a name
     does not move when CPUs are taken). */
  cleanup_dra_model struct cp_dra_model *m = NULL;
  if (cp_dra_gather (hc, NULL, false, &m, NULL, err) < 0)
    return -1;
  cleanup_ledger struct cp_ledger *l = NULL;
  if (cp_placer_open_ledger (hc, &l, err) < 0)
    return -1;
  int found = find_prepared (l, claim, out, err);
  if (found < 0)
    return -1;
  if (found > 0) /* its spec again, the same, should it be gone (a cleaned CDI directory) */
    return write_spec (hc, claim, out, err);
  struct cp_topo *topo = NULL;
  if (cp_topocache_load (hc, 0, &topo, err) < 0)
    return cp_error_wrap (err, "topology");
  cp_ledger_defer_commits (l, true); /* all the results, or none */
  int r = 0;
  for (size_t i = 0; r == 0 && i < claim->n_results; i++)
    {
      const struct cp_dra_claim_result *res = &claim->results[i];
      const struct cp_dra_device *d = device_named (m, res->device);
      r = d ? decide_result (hc, l, topo, claim, res, d, out, err)
            : cp_fail_unsatisfiable (err, "device %s is not one of this node's", res->device);
      if (r < 0)
        r = cp_error_wrap (err, "claim %s, result %u (request %s, device %s)", claim->uid, res->index, res->request,
                           res->device);
    }
  cp_topo_free (topo);
  if (r < 0)
    return -1; /* the ledger closes uncommitted: nothing was recorded */
  cp_ledger_defer_commits (l, false);
  if (cp_ledger_commit (l, err) < 0)
    return cp_error_wrap (err, "ledger %s", hc->state_dir);
  if (write_spec (hc, claim, out, err) < 0)
    {
      /* No spec, no claim: its entries go again, under the same lock. */
      cleanup_free char *prefix = cp_dra_entry_prefix (claim->uid);
      for (size_t i = 0; i < claim->n_results; i++)
        {
          cleanup_free char *id = cp_dra_entry_id (claim->uid, claim->results[i].index);
          cp_ledger_remove (l, id);
        }
      cleanup_error cp_error_t ignored = NULL;
      cp_ledger_commit (l, &ignored);
      return -1;
    }
  cleanup_free char *list = cp_cpulist_format (out->cpus);
  cp_log (CP_LOG_INFO, "prepared claim %s (%s/%s): CPUs %s, CDI device %s", claim->uid, claim->namespace_,
          claim->name, list, out->cdi_device);
  return 0;
}

/* The ledger, locked and reconciled, for claim UID (checked, WHAT naming it), and
   the prefix of the claim's entries' ids. */
static int
open_claim (const struct cp_hostconfig *hc, const char *what, const char *uid, struct cp_ledger **l, char **prefix,
            cp_error_t *err)
{
  if (cp_dra_claim_check_uid (what, uid, err) < 0 || cp_placer_open_ledger (hc, l, err) < 0)
    return -1;
  *prefix = cp_dra_entry_prefix (uid);
  return 0;
}

int
cp_dra_claim_unprepare (const struct cp_hostconfig *hc, const char *claim_uid, unsigned *released, cp_error_t *err)
{
  if (released)
    *released = 0;
  cleanup_ledger struct cp_ledger *l = NULL;
  cleanup_free char *prefix = NULL;
  if (open_claim (hc, "claim uid", claim_uid, &l, &prefix, err) < 0)
    return -1;
  unsigned n = 0;
  for (size_t i = cp_ledger_count (l); i-- > 0;)
    {
      const struct cp_ledger_entry *e = cp_ledger_at (l, i);
      if (has_prefix (e->id, prefix))
        {
          cleanup_free char *id = cp_xstrdup (e->id);
          n += cp_ledger_remove (l, id);
        }
    }
  if (cp_ledger_commit (l, err) < 0)
    return cp_error_wrap (err, "ledger %s", hc->state_dir);
  /* The spec after the entries: a container given the device meanwhile finds no
     claim (the plugin's on_error), never CPUs that are no longer the claim's. */
  if (cp_cdi_remove (hc->cdi_dir, claim_uid, err) < 0)
    return -1;
  if (n)
    cp_log (CP_LOG_INFO, "unprepared claim %s: %u %s released", claim_uid, n, n == 1 ? "entry" : "entries");
  if (released)
    *released = n;
  return 0;
}

int
cp_dra_mount_tag (const struct cp_hostconfig *hc, const char *source, const char *destination, struct cp_dra_tag *tag,
                  cp_error_t *err)
{
  return cp_cdi_mount_tag (hc->cdi_dir, source, destination, tag->uid, sizeof tag->uid, &tag->index, err);
}

int
cp_dra_container_cpus (const struct cp_hostconfig *hc, const struct cp_dra_tag *tags, size_t n, hwloc_bitmap_t cpus,
                       hwloc_bitmap_t mems, cp_error_t *err)
{
  hwloc_bitmap_zero (cpus);
  hwloc_bitmap_zero (mems);
  for (size_t i = 0; i < n; i++)
    if (cp_dra_claim_check_uid ("claim uid", tags[i].uid, err) < 0)
      return -1;
  cleanup_ledger struct cp_ledger *l = NULL;
  if (cp_placer_open_ledger (hc, &l, err) < 0)
    return -1;
  for (size_t i = 0; i < n; i++)
    {
      cleanup_free char *id = cp_dra_entry_id (tags[i].uid, tags[i].index);
      const struct cp_ledger_entry *e = cp_ledger_find (l, id);
      if (e == NULL)
        {
          hwloc_bitmap_zero (cpus);
          hwloc_bitmap_zero (mems);
          cp_fail_runtime (err, "DRA claim %s, result %u: not prepared on this node", tags[i].uid, tags[i].index);
          return 0;
        }
      hwloc_bitmap_or (cpus, cpus, e->cpus);
      if (e->mems)
        hwloc_bitmap_or (mems, mems, e->mems);
    }
  return n > 0;
}

int
cp_dra_hold_cdi_dir (const struct cp_hostconfig *hc, cp_error_t *err)
{
  return cp_cdi_hold_dir (hc->cdi_dir, err);
}
