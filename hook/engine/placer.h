/* cachepin: placing a cgroup and releasing it, with the ledger, in steps that any
 * front end calls: `cachepin hook` (containers), `cachepin apply`/`release` (any
 * cgroup), and a long-running one that decides before the cgroup exists. */
#ifndef CP_PLACER_H
#define CP_PLACER_H

#include <stdbool.h>
#include <sys/types.h>

#include "request.h"
#include "error.h"
#include "placement.h"
#include "cgroup.h"
#include "hostconfig.h"
#include "owner.h"
#include "sandbox.h"

struct cp_ledger;
struct cp_topo;

/* What is being placed. */
struct cp_target
{
  const char *id;           /* ledger id: the container id, or "apply:<cgroup dir>" */
  const char *name;         /* its name for people (ledger.h: bounded, clean), NULL: none known */
  struct cp_cgroup *cgroup; /* its cpuset cgroup, written by cp_placer_apply(); NULL: not made
                               yet (cp_placer_decide() records the placement all the same) */
  const char *cgroup_mount; /* where the ledger says it is: cgroup->mount ... */
  const char *cgroup_path;  /* ... and cgroup->path (required, with or without CGROUP) */
  pid_t pid;                /* its init process, 0 for none (liveness by cgroup only) */
  bool core_sched;          /* it got a core-scheduling cookie (recorded in the ledger) */
  unsigned long long cgroup_ino; /* its cgroup directory's inode, recorded (0: not known);
                                    cp_placer_open() fills it from CGROUP */
  const char *runtime;      /* the NRI plugin's: the runtime it serves (ledger.h), recorded;
                               NULL for the other front ends */
};

/* ---- The engine's steps ------------------------------------------------------------
 *
 * A placement: cp_placer_open() reads everything and locks the ledger; the front
 * end then enters its sandbox (sandbox.h) with what cp_placer_sandbox() says it
 * must keep, unless the host config says `sandbox: false`; cp_placer_decide()
 * decides and commits the ledger; cp_placer_apply() writes the cgroup, the kernel
 * switches and systemd; cp_placer_close() unlocks.  A release: cp_placer_open_release(),
 * the sandbox, cp_placer_release_commit(), cp_placer_close().
 *
 * The crash-safety order: the ledger is committed (decide) before the cgroup is
 * written (apply), so a kill in between leaves CPUs held for a container that may
 * not use them (freed when it goes) rather than a container on CPUs nobody knows
 * are taken; a failed cgroup write takes the entry back.  The ledger stays locked
 * from open to close, so nothing another run does comes between decide and apply. */
struct cp_placer;

/* Open a placement of TARGET for CREQ (both must outlive *OUT): the cgroup's inode,
 * the topology, the target's limits (its parent cgroup's, or without a cgroup the
 * topology's allowed CPUs and nodes; within the host's hand-out set and the
 * spec's bounds), mems=keep's nodes, the kernel switches (a strict request for one
 * this kernel cannot give is refused here), systemd's unit, then the ledger,
 * locked, with the entries whose container is gone dropped.  Reads only: nothing
 * of the container's cgroup is written. */
int cp_placer_open (const struct cp_hostconfig *hc, const struct cp_target *target,
                    const struct cp_container_request *creq, struct cp_placer **out, cp_error_t *err);

/* What the rest of the run (decide and apply, or the release's commit) still
 * needs, for the front end's cp_sandbox_enter(): the ledger's directory, the
 * target cgroup's hierarchy, /proc/<pid>, a manager's bus (manager.h: fails when two
 * managers each want one). */
int cp_placer_sandbox (const struct cp_placer *p, struct cp_sandbox *sb, cp_error_t *err);

/* The ledger's directory fd (the one the sandbox keeps), P's until it closes:
 * for the front end's journal (journal.h), opened on it before the sandbox. */
int cp_placer_state_dirfd (const struct cp_placer *p);

/* Decide: cp_placer_decide_in() with what cp_placer_open() read.  Writes the
 * ledger only; the container's cgroup is not touched.  Errors:
 * CP_ERR_UNSATISFIABLE when the host cannot meet the request, else as they come. */
int cp_placer_decide (struct cp_placer *p, cp_error_t *err);

/* The plan decided (NULL before cp_placer_decide() succeeds), now the caller's. */
struct cp_plan *cp_placer_take_plan (struct cp_placer *p);

/* Apply the decided plan: the cgroup's cpuset (enabled in its parents, then
 * written; its entry taken back from the ledger when that fails), the kernel's
 * cache-aware scheduling switch where the ledger's entries want it, then the
 * systemd unit (logged, never a failure).  Without a cgroup: the switch alone. */
int cp_placer_apply (struct cp_placer *p, cp_error_t *err);

/* Unlock the ledger and free P (NULL: nothing). */
void cp_placer_close (struct cp_placer *p);
static inline void
cp_placer_closep (struct cp_placer **p)
{
  cp_placer_close (*p);
}
#define cleanup_placer __attribute__ ((cleanup (cp_placer_closep)))

/* The ledger, locked, with the entries whose container is gone dropped (logged). */
int cp_placer_open_ledger (const struct cp_hostconfig *hc, struct cp_ledger **out, cp_error_t *err);

/* The decision under the ledger lock: plan TARGET within CPUS and MEMS against the
 * other holders in L (refused, CP_ERR_RUNTIME, when another id already holds
 * TARGET's cgroup or TARGET's id holds another cgroup), then record and commit it (KEPT_MEMS, when not NULL, is
 * recorded as its mems: mems=keep).  On a refusal an earlier entry of the same
 * id is kept as it was (its cgroup still has that placement; the error says so),
 * and only what reconcile dropped is committed. */
int cp_placer_decide_in (struct cp_ledger *l, const struct cp_topo *topo, hwloc_const_bitmap_t cpus,
                         hwloc_const_bitmap_t mems, const struct cp_target *target,
                         const struct cp_container_request *creq, hwloc_const_bitmap_t kept_mems,
                         struct cp_plan **plan_out, cp_error_t *err);

/* Refused (CP_ERR_RUNTIME) when another id holds TARGET's cgroup in L, or
 * TARGET's id holds another cgroup: a placement would rewrite another's cpuset. */
int cp_placer_check_unclaimed (const struct cp_ledger *l, const struct cp_target *target, cp_error_t *err);

/* The choice itself, the one rule for a placement and its preview: cp_place()
 * within CPUS and MEMS against what L's entries other than TARGET's take
 * (cp_ledger_usage()), and OCCUPIED (may be NULL: `plan --occupied`) as held.
 * AVOID (may be NULL; an isolated request's cores the host keeps, cp_isolate_kept()):
 * a placement that takes some of them is made again without them, and that one
 * is the choice unless it cannot be made or splits across domains where the first
 * did not (the alignment comes first). */
int cp_placer_plan_in (const struct cp_ledger *l, const struct cp_topo *topo, hwloc_const_bitmap_t cpus,
                       hwloc_const_bitmap_t mems, const struct cp_target *target,
                       const struct cp_container_request *creq, hwloc_const_bitmap_t occupied,
                       hwloc_const_bitmap_t avoid, struct cp_plan **plan_out, cp_error_t *err);

/* The hook route meeting the plugin's placement of the same container (a pod on
 * the `cachepin` runtime handler while the NRI plugin runs): when TARGET has a pid
 * and L's entry of its id has none, is not an `apply:` one, and records TARGET's
 * cgroup (its inode, or none yet), and that entry's CPUs lie within CPUS (what
 * TARGET may get, the spec's cpuset included), *PLAN_OUT is a plan of the entry's
 * mode, CPUs, held CPUs and nodes (MEMS when the entry's do not fit): the decision
 * records it with TARGET's pid and inode and the apply writes it, so the container
 * stays on the CPUs containerd applied and the entry becomes the hook's.  1: taken
 * over; 0: not (the caller places as usual, replacing the entry of the id). */
int cp_placer_take_over (const struct cp_ledger *l, const struct cp_target *target, hwloc_const_bitmap_t cpus,
                         hwloc_const_bitmap_t mems, struct cp_plan **plan_out);

/* A placement decided before its cgroup existed (the NRI plugin's, at
 * CreateContainer: no pid, no inode), once the cgroup exists: ID's entry, if it has
 * no inode yet, is given CG's mount, path and inode, so that reconcile judges it by
 * that cgroup (made again: gone) and no longer as pending (cp_ledger_entry_pending(),
 * ledger.h); only OWNER's entry (owner.h).  Refused as a placement would be (cp_placer_check_unclaimed()) when
 * another id holds CG or ID holds another cgroup.  Locks the ledger, reconciles,
 * commits, unlocks.  1: recorded; 0: nothing to record (no such entry, or its inode
 * is known). */
int cp_placer_adopt_cgroup (const struct cp_hostconfig *hc, const struct cp_owner *owner, const char *id,
                            const struct cp_cgroup *cg, cp_error_t *err);

/* The placement of OWNER's entry ID (owner.h), when it is in CGROUP (below the
 * mount; NULL: any): its CPUs and nodes into CPUS and MEMS.  1: found; 0: no such
 * entry of OWNER's in that cgroup (another front end's, another runtime's, another
 * container's with the same id).  The ledger is locked only while it is read. */
int cp_placer_owned_of (const struct cp_hostconfig *hc, const struct cp_owner *owner, const char *id,
                        const char *cgroup, hwloc_bitmap_t cpus, hwloc_bitmap_t mems, cp_error_t *err);

/* ID's entry records that its container got a core-scheduling cookie (the ledger's
 * core_sched: asked and got), made by the front end once the process existed (the
 * NRI plugin: at StartContainer, after the decision).  Under the ledger's lock,
 * after reconcile; commits, unlocks.  1: recorded; 0: no such entry, or it says so
 * already. */
int cp_placer_record_core_sched (const struct cp_hostconfig *hc, const char *id, cp_error_t *err);

/* ID's partition (cachepin.io/isolate), made once its cgroup exists, for an entry
 * placed before it did (the NRI plugin: granted at CreateContainer by
 * cp_isolate_open(), made at StartContainer).  T names the container's cgroup as
 * the front end found it (T->cgroup NULL); only an entry recorded on that cgroup,
 * not isolated yet and with no partition records, is made one, after the host's
 * rule (cp_isolate_decide()) and by cp_isolate_apply() (never strict here: the
 * container runs already, a refusal is undone and said).  Under the ledger's
 * lock.  1: isolated; 0: not (said, or nothing to do); -1: ERR. */
int cp_placer_isolate_started (const struct cp_hostconfig *hc, const struct cp_target *t, cp_error_t *err);

/* ---- A batch: many placements under one lock, committed once ---------------------
 *
 * For a long-running front end with many targets at once (the NRI plugin's
 * Synchronize), each a target whose cgroup is named and not made yet (no pid, no
 * cgroup: nothing is written but the ledger): cp_placer_batch_open() loads the
 * topology and locks and reconciles the ledger; cp_placer_batch_decide() decides
 * one as cp_placer_open() and cp_placer_decide() would (its limits, the kernel
 * switch's and isolation's checks, the choice against every entry, the batch's own
 * included), recorded in memory only; cp_placer_batch_commit() writes them all
 * once (none when it fails) and brings the kernel switch where the entries want
 * it; cp_placer_batch_close() unlocks, dropping what was not committed.  The front
 * end tells nobody of a decision before its commit succeeded. */
struct cp_placer_batch;
int cp_placer_batch_open (const struct cp_hostconfig *hc, struct cp_placer_batch **out, cp_error_t *err);
int cp_placer_batch_decide (struct cp_placer_batch *b, const struct cp_target *t,
                            const struct cp_container_request *creq, struct cp_plan **plan_out, cp_error_t *err);
int cp_placer_batch_commit (struct cp_placer_batch *b, cp_error_t *err);
void cp_placer_batch_close (struct cp_placer_batch *b);
static inline void
cp_placer_batch_closep (struct cp_placer_batch **b)
{
  cp_placer_batch_close (*b);
}
#define cleanup_placer_batch __attribute__ ((cleanup (cp_placer_batch_closep)))

/* ---- A preview: what a placement would get now, placing nothing -------------------
 *
 * `cachepin plan` on this host and `cachepin apply --dry-run`: the steps of
 * cp_placer_open() and cp_placer_decide() (the limits, the ledger reconciled, the
 * choice), with the ledger read once without its lock (cp_ledger_read()) and
 * reconciled in memory only; nothing is logged as a decision, nothing is written:
 * no state directory is created, no topology cache saved, no cgroup touched. */
struct cp_preview
{
  struct cp_topo *topo;         /* the topology the choice is made on (owned) */
  hwloc_bitmap_t cpus, mems;    /* what the target may get (cp_placer_target_limits()) */
  char *too_many;               /* the refusal of a request for more CPUs than that, naming
                                   the limit (NULL: none) */
  hwloc_bitmap_t kept_back;     /* CPUs its parent (or the topology) allows that the host
                                   config keeps back: `reserved`, or outside `cpus` */
  hwloc_bitmap_t held, shared;  /* what the other entries take: exclusively, shared */
  struct cp_ledger *ledger;     /* reconciled in memory; NULL when not read */
  char *ledger_path;            /* NULL when not read */
  const char *ledger_state;     /* cp_ledger_read()'s "ok" or "missing" */
  unsigned gone;                /* entries dropped as gone (their container is) */
  hwloc_bitmap_t isolate_kept;  /* an isolated request the host allows: the cores the host
                                   keeps (cp_isolate_kept()), placed on last; else NULL */
};

/* Fill *PV for TARGET and CREQ: TOPO (taken over; NULL: HC's topology, from the
 * cache when valid, never saved), the limits, and with READ_LEDGER the ledger of
 * HC's state directory, reconciled.  A ledger that cannot be read or is invalid
 * is an error (CP_ERR_RUNTIME, errno kept): a preview on a wrong picture would
 * lie.  *PV is cleared by cp_preview_clear() whatever this returns. */
int cp_preview_open (const struct cp_hostconfig *hc, struct cp_topo *topo, bool read_ledger,
                     const struct cp_target *target, const struct cp_container_request *creq, struct cp_preview *pv,
                     cp_error_t *err);

/* The choice for TARGET within PV->cpus (a caller may narrow it: `plan
 * --allowed`), with OCCUPIED (may be NULL) held as well: cp_placer_check_unclaimed()
 * and cp_placer_plan_in(), as cp_placer_decide() makes it. */
int cp_preview_place (const struct cp_preview *pv, const struct cp_target *target,
                      const struct cp_container_request *creq, hwloc_const_bitmap_t occupied,
                      struct cp_plan **plan_out, cp_error_t *err);

void cp_preview_clear (struct cp_preview *pv);

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
  const struct cp_owner *owner;  /* the front end releasing (owner.h): the entry must be its own, and
                                    with CGROUP its cgroup exactly that one; NULL: the hook's and
                                    `cachepin release`'s rule below */
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

/* Open the release of REL->id (REL must outlive *OUT): the kernel switches,
 * systemd's unit of REL->widen, the ledger, locked, with only the entries that
 * asked for cache-aware scheduling reconciled (dropped when gone, their drift
 * judged: whether the switch goes back is all a release decides; the next
 * placement reconciles the rest before it hands anything out), and the entries
 * whose pid no longer exists dropped. */
int cp_placer_open_release (const struct cp_hostconfig *hc, const struct cp_release *rel, struct cp_placer **out,
                            cp_error_t *err);

/* Forget REL->id in the ledger, if the entry is REL's: with REL->owner, the entry
 * must be that front end's (cp_owner_owns()) and, when REL->cgroup is known, in that
 * very cgroup (the NRI plugin records the cgroup its runtime names); else when
 * REL->pid is known, the entry's pid must be it; when REL->cgroup is known, the
 * entry's cgroup must be it or below it (a runtime may put the process in a child).  REL->widen (may be
 * NULL): when the entry is there and placed that very cgroup (its inode), the
 * cgroup is widened back to what its parent allows while the ledger is still
 * locked, so that no placement of it can come in between (`cachepin release`); the
 * entry is removed only once that write succeeded.  Then the ledger is committed
 * and the switch brought where the remaining entries want it. */
int cp_placer_release_commit (struct cp_placer *p, enum cp_release_result *result, cp_error_t *err);

#ifdef CACHEPIN_FAULT_INJECTION
/* Test builds only (-DCACHEPIN_FAULT_INJECTION): a function called at the steps
 * of a placement before the ledger's own commit steps (cp_ledger_set_fault_hook).
 * It may raise(SIGKILL) or _exit() to simulate a kill there; it cannot fail them. */
enum cp_placer_fault_point
{
  CP_PLACER_FAULT_LOCKED,     /* cp_placer_open_ledger: ledger locked and read, not reconciled */
  CP_PLACER_FAULT_RECONCILED, /* cp_placer_open_ledger: reconciled, nothing written */
  CP_PLACER_FAULT_RECORDED,   /* cp_placer_decide_in: entry put in memory, commit not started */
  CP_PLACER_FAULT_WIDENING,   /* cp_placer_release_commit: about to widen the released cgroup */
};
typedef void (*cp_placer_fault_fn) (enum cp_placer_fault_point point, void *data);
void cp_placer_set_fault_hook (cp_placer_fault_fn fn, void *data);
#endif

#endif
