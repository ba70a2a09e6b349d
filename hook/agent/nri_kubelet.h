/* cachepin: the NRI agent as a kubelet plugin (`cachepin nri --kubelet-plugin`): the
 * plugin registration service on KUBELET_ROOT/plugins_registry/cachepin.io-reg.sock,
 * which the kubelet's plugin watcher finds, and the DRA service on
 * KUBELET_ROOT/plugins/cachepin.io/dra.sock, which GetInfo names (grpc_kubelet.h,
 * grpc_dra.h).  Both are servers of the grpc layer joined to the agent's one loop as
 * a side descriptor (nri_conn.h), bound before the sandbox, which then allows
 * accept on their sockets, epoll on their set and the removal of the two socket
 * files at the end (front.h).
 *
 * A prepare never blocks the loop (NRI's path): the claim is fetched from the API
 * server by the DRA publisher, the process that holds the API connection
 * (dra_publisher.h: cp_dra_publisher_fetch()), and the kubelet's call is answered
 * when its reply comes (grpc_dra.h: a pending claim), within CP_GRPC_DEFER_MS.
 * The reply is parsed for this node (--dra-node, dra_claim.h), its uid checked
 * against the kubelet's, and the claim prepared here, in the agent, which writes
 * the ledger and the CDI spec as every NRI placement (dra_prepare.h); the answer
 * names, for each result, the pool (the node), the device and its CDI device
 * cachepin.io/claim=<uid>-<i>, whose spec's mount tags the container (nri_claim.h).
 * Unprepare releases (cp_dra_claim_unprepare(): idempotent). */
#ifndef CP_NRI_KUBELET_H
#define CP_NRI_KUBELET_H

#include <stdbool.h>
#include <stdint.h>

#include "dra_publisher.h"
#include "error.h"
#include "grpc_dra.h"
#include "grpc_kubelet.h"
#include "nri_conn.h"

#define CP_NRI_KUBELET_DEFAULT_ROOT "/var/lib/kubelet"
#define CP_NRI_KUBELET_REG_SOCKET "plugins_registry/cachepin.io-reg.sock"
#define CP_NRI_KUBELET_PLUGIN_DIR "plugins/cachepin.io"
#define CP_NRI_KUBELET_DRA_SOCKET CP_NRI_KUBELET_PLUGIN_DIR "/dra.sock"

#define CP_NRI_KUBELET_MAX_PENDING 64 /* claims waiting for the API server at once */

/* What the command line asks of it. */
struct cp_nri_kubelet_options
{
  bool enabled;     /* --kubelet-plugin */
  const char *root; /* --kubelet-root (NULL: the default) */
};

struct cp_nri_kubelet
{
  struct cp_grpc_server *server; /* NULL: not serving */
  struct cp_grpc_kubelet reg;
  struct cp_grpc_dra dra;
  char *reg_path, *dra_path;
  char *reg_dir, *dra_dir; /* where the sockets are: the sandbox lets them be removed */
  bool registered;         /* the kubelet's last word */
  /* Claims of the kubelet's calls, by outcome (the metrics): [0] prepared or
     released, [1] answered with an error. */
  uint64_t prepares[2], unprepares[2];
  /* What prepares (cp_nri_kubelet_wire()); PUB NULL: nothing can be fetched. */
  const struct cp_hostconfig *hc;
  const char *node;
  struct cp_dra_publisher *pub;
  uint32_t next_id;
  int cdi_dirfd; /* the CDI spec directory, held (cdi.h; -1: none) */
  struct cp_nri_kubelet_pending
  {
    uint32_t id;                   /* the fetch's */
    struct cp_grpc_dra_call *call; /* NULL: a free slot */
    size_t index;
    char *uid, *namespace, *name;
  } pending[CP_NRI_KUBELET_MAX_PENDING];
};

/* Before the sandbox: the two directories made where missing (0750), the two
   sockets bound.  < 0 (*ERR, naming --kubelet-root): the root is not a
   directory, a socket cannot be had. */
int cp_nri_kubelet_open (struct cp_nri_kubelet *k, const struct cp_nri_kubelet_options *o, cp_error_t *err);

/* Both servers closed and their sockets removed (nothing when not open). */
void cp_nri_kubelet_close (struct cp_nri_kubelet *k);

/* K's families in Prometheus' text format (docs/metrics.md), allocated. */
char *cp_nri_kubelet_metrics (const struct cp_nri_kubelet *k);

/* The loop's side descriptor for K (open). */
struct cp_nri_side cp_nri_kubelet_side (struct cp_nri_kubelet *k);

/* K (open) wired to the claim engine: HC's host, this NODE's pool, claims
   fetched through PUB (its answers then come to K). */
void cp_nri_kubelet_wire (struct cp_nri_kubelet *k, const struct cp_hostconfig *hc, const char *node,
                          struct cp_dra_publisher *pub);

/* One claim prepared: OUT gets its error, or is left pending (its fetch asked). */
void cp_nri_kubelet_prepare_claim (struct cp_nri_kubelet *k, const struct cp_grpc_claim *claim,
                                   struct cp_grpc_prepared *out);

/* One claim released: NULL, or its error (malloc()ed). */
char *cp_nri_kubelet_unprepare_claim (struct cp_nri_kubelet *k, const struct cp_grpc_claim *claim);

#endif
