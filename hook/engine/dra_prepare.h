/* cachepin: a DRA claim prepared on this node (issue 34 stage 2, docs/dra.md "Prepare").
 *
 * The scheduler allocated the claim a device of this node's pool (an L3, `l3-2`)
 * and a count of its CPUs (consumedCapacity.cpus; none: the whole device).  Prepare
 * chooses those CPUs inside that device with the placement engine (PE0 first, the
 * rules of every route, strict: the claim's device or nothing), records them in the
 * ledger as entries "dra:claim:<uid>:<i>" (origin dra: no cgroup behind them,
 * reconcile keeps them), all the claim's results in one commit or none, and
 * writes the claim's CDI spec (hook/host/cdi.h) whose devices (the claim's, and one
 * per result) tag the containers given them (a mount of the spec at
 * CP_DRA_CLAIM_MOUNT_DIR/<uid>/<result>); the NRI plugin answers such a container
 * with those results' CPUs (cp_dra_container_cpus()).  Unprepare removes both.
 *
 * Prepare is idempotent: a claim prepared already (the kubelet retries, the agent
 * restarted) gets the CPUs it has, the ledger is not written (its CDI spec is
 * written again, the same, should it have gone).  A device lacking the CPUs now
 * (taken outside DRA since the scheduler last saw the slice) is refused,
 * CP_ERR_UNSATISFIABLE: the pod is scheduled again rather than run split. */
#ifndef CP_DRA_PREPARE_H
#define CP_DRA_PREPARE_H

#include <hwloc.h>
#include <stdbool.h>
#include <stddef.h>

#include "cdi.h"
#include "dra_claim.h"
#include "error.h"
#include "hostconfig.h"

/* One result prepared. */
struct cp_dra_prepared_result
{
  unsigned index;                   /* its position in the claim's results */
  char device[CP_DRA_MAX_NAME + 1]; /* the device ("l3-2") */
  char *cdi_device;                 /* its own CDI device ("cachepin.io/claim=<uid>-<index>") */
  hwloc_bitmap_t cpus, mems;        /* its CPUs and their NUMA nodes */
};

struct cp_dra_prepared
{
  char uid[CP_DRA_CLAIM_MAX_UID + 1];
  char *cdi_device;                       /* "cachepin.io/claim=<uid>": every result */
  char *cdi_spec;                         /* the spec's path */
  hwloc_bitmap_t cpus, mems;              /* the union of the results' */
  struct cp_dra_prepared_result *results; /* in the claim's order */
  size_t n_results;
  bool already;                           /* prepared before: found, the ledger not written */
};
void cp_dra_prepared_clear (struct cp_dra_prepared *p);
#define cleanup_dra_prepared __attribute__ ((cleanup (cp_dra_prepared_clear)))

/* The ledger id of CLAIM_UID's result INDEX, and the prefix of all of them. */
char *cp_dra_entry_id (const char *claim_uid, unsigned index);
char *cp_dra_entry_prefix (const char *claim_uid);

/* Prepare CLAIM (parsed for this node: dra_claim.h) on HC's host, as above.  A claim
 * with no result for this node is refused (CP_ERR_INPUT: not this node's to prepare).
 * A claim prepared already with other results (another allocation under the same
 * uid) is refused (CP_ERR_RUNTIME): unprepare it first. */
int cp_dra_claim_prepare (const struct cp_hostconfig *hc, const struct cp_dra_claim *claim,
                          struct cp_dra_prepared *out, cp_error_t *err);

/* Unprepare the claim CLAIM_UID: its entries removed in one commit, then its CDI
 * spec.  *RELEASED (may be NULL): how many entries went (0: none had that uid, which
 * is no error: the kubelet retries). */
int cp_dra_claim_unprepare (const struct cp_hostconfig *hc, const char *claim_uid, unsigned *released,
                            cp_error_t *err);

/* HC's CDI spec directory opened (made when missing) and held for the process's
 * life (cdi.h: cp_cdi_hold_dir()), for a front end that prepares claims in its
 * sandbox: the descriptor, or -1. */
int cp_dra_hold_cdi_dir (const struct cp_hostconfig *hc, cp_error_t *err);

/* A container's tag: result INDEX of claim UID (cdi.h: the mount its CDI device adds). */
struct cp_dra_tag
{
  char uid[CP_DRA_CLAIM_MAX_UID + 1];
  unsigned index;
};

/* Where a container given a claim's device finds its tags (cdi.h's mounts). */
#define CP_DRA_CLAIM_MOUNT_DIR CP_CDI_MOUNT_DIR

/* A mount of a container (SOURCE on the host, DESTINATION in it) read as a claim's
   tag, HC's cdi_dir being the spec directory: 1 it is one (*TAG filled), 0 it is not
   below CP_DRA_CLAIM_MOUNT_DIR, -1 it is below it but not a spec's mount (*ERR:
   forged, or a spec of another directory). */
int cp_dra_mount_tag (const struct cp_hostconfig *hc, const char *source, const char *destination,
                      struct cp_dra_tag *tag, cp_error_t *err);

/* The CPUs and NUMA nodes of the claims' results TAGS (N), the union of their
 * entries, for a container given them: 1 found; 0 one of them is not prepared (*ERR
 * says which; nothing is filled) or N is 0; < 0 the ledger could not be read.  Only
 * the ledger is read (under its lock, reconciled): nothing of the network, for the
 * NRI plugin's path. */
int cp_dra_container_cpus (const struct cp_hostconfig *hc, const struct cp_dra_tag *tags, size_t n,
                           hwloc_bitmap_t cpus, hwloc_bitmap_t mems, cp_error_t *err);

#endif
