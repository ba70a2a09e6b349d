/* cachepin: cachepin.io/isolate, a container's CPUs kept from every other cgroup
 * by a cgroup v2 partition (issue 23; the kernel's files are hook/host/partition.h).
 *
 * The steps, in the placer's (placer.h):
 *   open     cp_isolate_open(): asked, and may it be had?  The host setting
 *            (`isolate: deny`) and the kernel (cgroup v2 with cpuset.cpus.exclusive):
 *            when not, one warning line and the placement goes on without it, or
 *            a strict request is refused here, before anything is written;
 *   decide   cp_isolate_decide(), under the lock: the host keeps CPUs of its own,
 *            each NUMA node's first core (policy/isolate.h, cp_isolate_check());
 *            the placement was made without them when it could be
 *            (cp_placer_plan_in()'s AVOID);
 *   apply    cp_isolate_apply(), after the cpuset is written: what will be added
 *            recorded and committed first, then cpuset.cpus.exclusive of each
 *            ancestor below the root (top down), the container's, `root` into its
 *            cpuset.cpus.partition, read back (the partition reads `root`, its
 *            exclusive.effective is the placed set, the parent's effective CPUs no
 *            longer have them), and only then the entry flagged `isolated`.  A
 *            refusal is undone and reported with the kernel's reason;
 *   release  cp_isolate_release(): the flag cleared (committed), then `member`,
 *            the container's exclusive cleared, its CPUs taken from each ancestor
 *            (only what cachepin added), bottom up, and the records dropped;
 *   every run, under the lock: cp_isolate_reconcile() undoes the records no
 *            isolated entry backs (a kill between the writes, a release cut
 *            short, an isolated container that died without its poststop). */
#ifndef CP_ISOLATION_H
#define CP_ISOLATION_H

#include <hwloc.h>
#include <json-c/json.h>
#include <stdbool.h>

#include "error.h"
#include "hostconfig.h"
#include "partition.h"
#include "placer.h"

struct cp_ledger;
struct cp_ledger_entry;
struct cp_topo;

struct cp_isolate
{
  bool asked;   /* the request asks for it */
  bool granted; /* open and decide let it be: apply makes the partition */
};

int cp_isolate_open (const struct cp_hostconfig *hc, const struct cp_target *t, const struct cp_container_request *creq,
                     struct cp_isolate *iso, cp_error_t *err);

/* The rule for CPUS, the placement of ID: not one of the host's kept cores.  When
 * they are, a strict request is refused (-1); any other is placed without
 * isolation, with one warning. */
int cp_isolate_decide (struct cp_isolate *iso, const struct cp_topo *topo, const char *id, hwloc_const_bitmap_t cpus,
                       bool strict, cp_error_t *err);

/* The partition of T (its cgroup written already; without T->cgroup, on the mount
 * T->cgroup_mount names) on CPUS.  -1: the ledger could
 * not be committed, or the kernel refused a strict request (undone). */
int cp_isolate_apply (struct cp_isolate *iso, struct cp_ledger *l, const struct cp_target *t,
                      hwloc_const_bitmap_t cpus, bool strict, cp_error_t *err);

/* Release ID's partition, if its entry is isolated.  A write that fails is
 * logged and left to the next run's cp_isolate_reconcile(); -1 only when the
 * ledger could not be committed. */
int cp_isolate_release (struct cp_ledger *l, const char *id, cp_error_t *err);

/* Undo (and log) every record no isolated entry backs; HINT (may be NULL): a
 * checked mount fd for records on its mount (inside the sandbox).  Logged as
 * released for the ids in GONE (N of them: isolated entries this run's reconcile
 * just dropped, their container gone), as repaired for the others (a run cut
 * short).  The backed ones' validity is judged (logged once when it changes). */
void cp_isolate_reconcile (struct cp_ledger *l, const struct cp_partition_tree *hint, char *const *gone, size_t n);

/* Whether runs repair (default true); the NRI plugin without its partition
 * helper (partition_helper.h) leaves it to the next hook or apply. */
void cp_isolate_repairs (bool on);

/* For a target without a cgroup yet (the NRI plugin's, placed at CreateContainer):
 * NULL, it is granted at open and the partition made once the cgroup exists
 * (cp_placer_isolate_started()); else WHY_NOT, the reason it is not (warned, or a
 * strict request refused).  Default: "no cgroup yet". */
void cp_isolate_later (const char *why_not);

/* `cachepin status --json`'s "isolate" of E: null, or {"partition", "exclusive_effective"}
 * as read now. */
json_object *cp_isolate_status_json (const struct cp_ledger_entry *e);

#ifdef CACHEPIN_FAULT_INJECTION
/* Test builds only: called between the writes; may raise(SIGKILL). */
enum cp_isolate_fault_point
{
  CP_ISOLATE_FAULT_RECORDED,  /* records committed, nothing written */
  CP_ISOLATE_FAULT_ANCESTOR,  /* an ancestor's cpuset.cpus.exclusive written */
  CP_ISOLATE_FAULT_EXCLUSIVE, /* the container's cpuset.cpus.exclusive written */
  CP_ISOLATE_FAULT_ROOT,      /* `root` written, not read back, the entry not flagged */
  CP_ISOLATE_FAULT_UNFLAGGED, /* release: the flag cleared and committed, nothing undone */
  CP_ISOLATE_FAULT_MEMBER,    /* undo: `member` written, the exclusive CPUs not cleared */
  CP_ISOLATE_FAULT_UNDO_ANCESTOR, /* undo: CPUs taken from an ancestor */
  CP_ISOLATE_FAULT_COUNT,
};
/* "recorded", "ancestor", ...: the names of the points (tests/vm/isolate-crash.c). */
const char *cp_isolate_fault_name (enum cp_isolate_fault_point point);
typedef void (*cp_isolate_fault_fn) (enum cp_isolate_fault_point point, void *data);
void cp_isolate_set_fault_hook (cp_isolate_fault_fn fn, void *data);
#endif

#endif
