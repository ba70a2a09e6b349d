/* cachepin: placing a cgroup and releasing it, with the ledger, shared by
 * `cachepin hook` (containers) and `cachepin apply`/`release` (any cgroup). */
#ifndef CP_PLACER_H
#define CP_PLACER_H

#include <stdbool.h>
#include <sys/types.h>

#include "request.h"
#include "error.h"
#include "placement.h"
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
  unsigned long long cgroup_ino; /* its cgroup directory's inode, recorded (0: not known);
                                    cp_placer_place() fills it from CGROUP */
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

/* Who asks a release, so that it removes only its own entry: two containers may
 * share an id (two runtimes' state roots), and the placement of the second is
 * refused; its poststop must not free the first one's CPUs. */
struct cp_release
{
  const char *id;                /* the ledger id */
  pid_t pid;                     /* the releasing container's process, 0: not known */
  const char *cgroup;            /* the cgroup it was given, below the hierarchy's mount (config.json's
                                    absolute linux.cgroupsPath); NULL: not known */
  const struct cp_cgroup *widen; /* `cachepin release`: the cgroup, widened back (see below); NULL: none */
};

/* What a release did. */
enum cp_release_result
{
  CP_RELEASE_NONE,     /* no entry has the id */
  CP_RELEASE_DONE,     /* the entry is removed (and the cgroup widened) */
  CP_RELEASE_NOT_ITS,  /* the entry is another container's (pid or cgroup differ): kept, logged */
  CP_RELEASE_RECREATED /* WIDEN is not the cgroup the entry placed (removed and made again since):
                          the entry is removed, WIDEN left as it is */
};

/* Forget REL->id in the ledger, if the entry is REL's: when REL->pid is known, the
 * entry's pid must be it; when REL->cgroup is known, the entry's cgroup must be it
 * or below it (a runtime may put the process in a child).  Only the entries that
 * asked for cache-aware scheduling are reconciled (dropped when gone, their drift
 * judged): whether the switch goes back is all a release decides; the next
 * placement reconciles the rest before it hands anything out.  REL->widen (may be
 * NULL): when the entry is there and placed that very cgroup (its inode), the
 * cgroup is widened back to what its parent allows while the ledger is still
 * locked, so that no placement of it can come in between (`cachepin release`); the
 * entry is removed only once that write succeeded. */
int cp_placer_release (const struct cp_hostconfig *hc, const struct cp_release *rel, enum cp_release_result *result,
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
