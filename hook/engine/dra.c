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
  if (r == 0)
    {
      struct cp_dra_inputs in = {
        .topo = pv.topo, .level = hc->defaults.align, .usable = pv.cpus, .held = pv.held,
        .isolate_allowed = hc->isolate == CP_ISOLATE_ALLOW,
      };
      r = cp_dra_model_build (&in, out, err);
    }
  if (r == 0 && held_entries)
    {
      *held_entries = 0;
      for (size_t i = 0; i < cp_ledger_count (pv.ledger); i++)
        *held_entries += cp_ledger_at (pv.ledger, i)->mode == CP_MODE_EXCLUSIVE;
    }
  cp_preview_clear (&pv);
  return r;
}
