/* cachepin: this node's DRA devices (dra.h). */
#define _GNU_SOURCE
#include "dra.h"

#include "bitmap.h"
#include "ledger.h"
#include "placer.h"
#include "util.h"

int
cp_dra_gather (const struct cp_hostconfig *hc, struct cp_topo *topo, bool read_ledger, struct cp_dra_model **out,
               unsigned *held_entries, cp_error_t *err)
{
  /* The preview of a placement asking nothing: its limits are the CPUs any
     placement may get (the topology's allowed, within `cpus`, less `reserved`),
     its held set what the ledger's exclusive entries take (drifted CPUs and the
     idle siblings smt=pe0 holds included). */
  struct cp_container_request creq = { .req = hc->defaults, .cpus_source = "dra" };
  creq.req.cpus = 0;
  struct cp_target target = { .id = "dra:" };
  struct cp_preview pv = { 0 };
  int r = cp_preview_open (hc, topo, read_ledger, &target, &creq, &pv, err);
  cleanup_bitmap hwloc_bitmap_t outside = r == 0 ? cp_bitmap_dup (pv.held) : NULL;
  if (r == 0 && pv.ledger)
    {
      /* A prepared claim's CPUs are not held outside DRA: the scheduler counts
         them (docs/dra.md).  Those another entry takes too stay held. */
      cleanup_bitmap hwloc_bitmap_t claims = cp_bitmap_new ();
      cleanup_bitmap hwloc_bitmap_t others = cp_bitmap_new ();
      for (size_t i = 0; i < cp_ledger_count (pv.ledger); i++)
        {
          const struct cp_ledger_entry *e = cp_ledger_at (pv.ledger, i);
          cp_ledger_entry_taken (e, NULL, cp_ledger_entry_origin (e) == CP_ORIGIN_DRA ? claims : others);
        }
      hwloc_bitmap_andnot (claims, claims, others);
      hwloc_bitmap_andnot (outside, outside, claims);
    }
  if (r == 0)
    {
      struct cp_dra_inputs in = {
        .topo = pv.topo, .level = hc->defaults.align, .usable = pv.cpus, .held = outside,
        .isolate_allowed = hc->isolate == CP_ISOLATE_ALLOW,
      };
      r = cp_dra_model_build (&in, out, err);
    }
  if (r == 0 && held_entries)
    {
      *held_entries = 0;
      for (size_t i = 0; i < cp_ledger_count (pv.ledger); i++)
        *held_entries += cp_ledger_at (pv.ledger, i)->mode == CP_MODE_EXCLUSIVE
                         && cp_ledger_entry_origin (cp_ledger_at (pv.ledger, i)) != CP_ORIGIN_DRA;
    }
  cp_preview_clear (&pv);
  return r;
}
