/* bench: a flat view of a cachepin topology model, and the placements the
 * benchmark compares cachepin's engine with (docs/benchmarks.md says where
 * each one comes from and what it simplifies).
 *
 * Not part of cachepin: nothing here is linked into the hook. */
#ifndef BM_BASELINES_H
#define BM_BASELINES_H

#include <stdbool.h>

#include "topo.h"

/* The topology as arrays indexed by Linux CPU number (PU), built once.  Only the
 * PUs the source allows are usable: the same set cp_place() works within. */
struct bm_model
{
  const struct cp_topo *topo;
  unsigned npu;                          /* topo->pu_limit */
  bool *usable;                          /* [npu] online, allowed */
  int *core;                             /* [npu] position in topo->cores, -1 if none */
  unsigned *dom[CP_LEVEL_COUNT];         /* [npu] domain index per level */
  unsigned ndom[CP_LEVEL_COUNT];
  unsigned *dom_size[CP_LEVEL_COUNT];    /* usable PUs per domain */
  unsigned ncores;
  unsigned *core_size;                   /* usable PUs per core */
  unsigned *core_id;                     /* kubelet's core id: the core's lowest PU */
  unsigned n_usable;                     /* usable PUs */
  unsigned n_usable_cores;               /* cores with at least one usable PU */
};

int bm_model_init (struct bm_model *m, const struct cp_topo *topo);
void bm_model_release (struct bm_model *m);

/* Each baseline chooses N PUs among the usable ones with OWNER[pu] < 0 and marks
 * them in OUT[npu] (cleared first).  0 on success, -1 when it cannot. */

/* The lowest-numbered free PUs. */
int bm_first_fit (const struct bm_model *m, const int *owner, unsigned n, bool *out);

/* The kubelet CPU manager's static policy, takeByTopologyNUMAPacked() with the
 * packed CPU sorting strategy; UNCORE: with prefer-align-cpus-by-uncorecache. */
int bm_kubelet_static (const struct bm_model *m, const int *owner, unsigned n, bool uncore, bool *out);

#endif
