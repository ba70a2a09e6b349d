/* cachepin: a ResourceClaim as the kubelet plugin's prepare step reads it (issue 34
 * stage 2): which of this node's devices (dra_model.h) it was allocated and how
 * many CPUs of each.
 *
 * The claim is the API server's JSON (resource.k8s.io/v1, v1beta2 or v1beta1: their
 * allocation results have one shape), untrusted: read strictly (policy/base/json.h)
 * within caps, and every refusal is one line naming the field, as
 * "status.allocation.devices.results[2].consumedCapacity.cpus: not a whole quantity".
 * Pure: JSON in, a plain struct out. */
#ifndef CP_DRA_CLAIM_H
#define CP_DRA_CLAIM_H

#include <stdbool.h>
#include <stddef.h>

#include "dra_model.h"
#include "error.h"

/* The environment tag a prepared claim's CDI device gives its containers
   ("CACHEPIN_DRA_CLAIM=<uid>", hook/host/cdi.h writes it), by which the NRI plugin
   finds the claim. */
#define CP_DRA_CLAIM_ENV "CACHEPIN_DRA_CLAIM"

/* Caps on what is read. */
#define CP_DRA_CLAIM_MAX_BYTES (1024u * 1024u) /* the claim's JSON */
#define CP_DRA_CLAIM_MAX_RESULTS 32u           /* status.allocation.devices.results (the API's own cap) */
#define CP_DRA_CLAIM_MAX_RESERVED 256u         /* status.reservedFor (ResourceClaimReservedForMaxSize) */
#define CP_DRA_CLAIM_MAX_UID 128u              /* metadata.uid (a UUID is 36) */
#define CP_DRA_CLAIM_MAX_NAME 253u             /* metadata.name, namespace; a request's name */
#define CP_DRA_CLAIM_MAX_CPUS 65536u           /* a consumed capacity beyond this is no CPU count */

/* One allocation result of this node's driver and pool, kept. */
struct cp_dra_claim_result
{
  unsigned index;                            /* its position in status.allocation.devices.results */
  char request[CP_DRA_CLAIM_MAX_NAME + 1];   /* the claim's request it answers ("req" or "req/sub") */
  char device[CP_DRA_MAX_NAME + 1];          /* the device's name in the pool ("l3-2") */
  unsigned cpus;                             /* consumedCapacity.cpus; 0: none said, the whole device */
};

struct cp_dra_claim
{
  char api_version[32]; /* "resource.k8s.io/v1", ".../v1beta2" or ".../v1beta1" */
  char uid[CP_DRA_CLAIM_MAX_UID + 1];
  char name[CP_DRA_CLAIM_MAX_NAME + 1];
  char namespace_[CP_DRA_CLAIM_MAX_NAME + 1];
  struct cp_dra_claim_result *results; /* kept: driver cachepin.io, pool the node, not adminAccess */
  size_t n_results;
  unsigned skipped_other;  /* results of another driver or another node's pool */
  unsigned skipped_admin;  /* this node's results with adminAccess: true (they hold nothing) */
  char **reserved_for;     /* status.reservedFor[].uid, in order */
  size_t n_reserved;
};

/* Parse JSON (LEN bytes, at most CP_DRA_CLAIM_MAX_BYTES) as an allocated ResourceClaim
 * for NODE (a node name, dra_model.h's rule).  Every input error is CP_ERR_INPUT and
 * names its field.  A claim with no result for NODE is not an error (n_results 0).
 * *OUT is filled (cp_dra_claim_clear() frees it, whatever this returns). */
int cp_dra_claim_parse (const char *json, size_t len, const char *node, struct cp_dra_claim *out, cp_error_t *err);

/* Free what C holds and zero it. */
void cp_dra_claim_clear (struct cp_dra_claim *c);
#define cleanup_dra_claim __attribute__ ((cleanup (cp_dra_claim_clear)))

/* A claim uid as cachepin takes it (the ledger ids and CDI names made of it): 1 to
 * CP_DRA_CLAIM_MAX_UID of [A-Za-z0-9-] (a UUID is that).  WHAT names it in the error. */
int cp_dra_claim_check_uid (const char *what, const char *uid, cp_error_t *err);

#endif
