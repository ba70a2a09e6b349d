/* cachepin: placing a cgroup and releasing it, with the ledger, shared by
 * `cachepin hook` (containers) and `cachepin apply`/`release` (any cgroup). */
#ifndef CP_PLACER_H
#define CP_PLACER_H

#include <stdbool.h>
#include <sys/types.h>

#include "../oci/annotations.h"
#include "../policy/error.h"
#include "../policy/placement.h"
#include "cgroup.h"
#include "hostconfig.h"

struct cp_ledger;
struct cp_topo;

/* What is being placed. */
struct cp_target
{
  const char *id;           /* ledger id: the container id, or "apply:<cgroup dir>" */
  struct cp_cgroup *cgroup; /* its cpuset cgroup, written by cp_placer_place() */
  const char *cgroup_mount; /* where the ledger says it is: cgroup->mount ... */
  const char *cgroup_path;  /* ... and cgroup->path */
  pid_t pid;                /* its init process, 0 for none (liveness by cgroup only) */
  bool core_sched;          /* it got a core-scheduling cookie (recorded in the ledger) */
};

/* Place TARGET: compute the plan against the ledger (after dropping entries whose
 * container is gone), record it, then write the cgroup.  Everything is read
 * first (topology, the parent's limits, the ledger, locked); then, unless
 * HC->sandbox is false, the process enters its sandbox (sandbox.h) before it
 * decides and writes: the sandbox stays after the call returns, and allows
 * only writes into the ledger's directory and TARGET's cgroup hierarchy.  The ledger is committed
 * before the cgroup is written, so a kill in between leaves CPUs held for a
 * container that may not use them (freed when it goes) rather than a container
 * on CPUs nobody knows are taken; a failed cgroup write takes the entry back.
 * Errors: CP_ERR_UNSATISFIABLE when the host cannot meet the request, else as
 * they come.  *PLAN_OUT is the plan written. */
int cp_placer_place (const struct cp_hostconfig *hc, const struct cp_target *target,
                     const struct cp_container_request *creq, struct cp_plan **plan_out, cp_error_t *err);

/* The ledger, locked, with the entries whose container is gone dropped (logged). */
int cp_placer_open_ledger (const struct cp_hostconfig *hc, struct cp_ledger **out, cp_error_t *err);

/* The decision under the ledger lock: plan TARGET within CPUS and MEMS against the
 * other holders in L (refused, CP_ERR_RUNTIME, when another id already holds
 * TARGET's cgroup or TARGET's id holds another cgroup), then record and commit it (KEPT_MEMS, when not NULL, is
 * recorded as its mems: mems=keep).  On a refusal an earlier entry of the same
 * id is kept as it was (its cgroup still has that placement; the error says so),
 * and only what reconcile dropped is committed.  cp_placer_place() is this plus
 * loading the topology, reading the parent cgroup's limits and writing the cgroup. */
int cp_placer_decide (struct cp_ledger *l, const struct cp_topo *topo, hwloc_const_bitmap_t cpus,
                      hwloc_const_bitmap_t mems, const struct cp_target *target,
                      const struct cp_container_request *creq, hwloc_const_bitmap_t kept_mems,
                      struct cp_plan **plan_out, cp_error_t *err);

/* Forget ID in the ledger.  Only the entries that asked for cache-aware
 * scheduling are reconciled (dropped when gone, their drift judged): whether the
 * switch goes back is all a release decides; the next placement reconciles the
 * rest before it hands anything out.  *FOUND
 * says whether ID was there.  WIDEN (may be NULL): when ID was there, this cgroup
 * is widened back to what its parent allows while the ledger is still locked, so
 * that no placement of it can come in between (`cachepin release`); the entry is
 * removed only once that write succeeded. */
int cp_placer_release (const struct cp_hostconfig *hc, const char *id, const struct cp_cgroup *widen, bool *found,
                       cp_error_t *err);

#ifdef CACHEPIN_FAULT_INJECTION
/* Test builds only (-DCACHEPIN_FAULT_INJECTION): a function called at the steps
 * of a placement before the ledger's own commit steps (cp_ledger_set_fault_hook).
 * It may raise(SIGKILL) or _exit() to simulate a kill there; it cannot fail them. */
enum cp_placer_fault_point
{
  CP_PLACER_FAULT_LOCKED,     /* cp_placer_open_ledger: ledger locked and read, not reconciled */
  CP_PLACER_FAULT_RECONCILED, /* cp_placer_open_ledger: reconciled, nothing written */
  CP_PLACER_FAULT_RECORDED,   /* cp_placer_decide: entry put in memory, commit not started */
  CP_PLACER_FAULT_WIDENING,   /* cp_placer_release: about to widen the released cgroup */
};
typedef void (*cp_placer_fault_fn) (enum cp_placer_fault_point point, void *data);
void cp_placer_set_fault_hook (cp_placer_fault_fn fn, void *data);
#endif

#endif
