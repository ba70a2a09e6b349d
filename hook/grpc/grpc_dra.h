/* cachepin: the kubelet's DRA service (k8s.io.kubelet.pkg.apis.dra.{v1,v1beta1}.DRAPlugin,
 * hook/grpc/proto/dra_v1*.proto) on the plugin's own socket: NodePrepareResources
 * and NodeUnprepareResources, for kubelets of 1.34 and later (v1) and of 1.32 and
 * 1.33 (v1beta1).  The two versions' messages are the same fields with the same
 * numbers and types (test_grpc_kubelet compares their descriptors), so one codec
 * serves both; the path names the version.
 *
 * The calls reach the front end through struct cp_grpc_dra_ops: this layer knows
 * claims by their references only (uid, namespace, name), and answers what the
 * front end says of each. */
#ifndef CP_GRPC_DRA_H
#define CP_GRPC_DRA_H

#include <stdbool.h>
#include <stddef.h>

#include "grpc_server.h"

#define CP_GRPC_DRA_V1 "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/"
#define CP_GRPC_DRA_V1BETA1 "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/"
#define CP_GRPC_DRA_PREPARE "NodePrepareResources"
#define CP_GRPC_DRA_UNPREPARE "NodeUnprepareResources"

/* The versions GetInfo lists, the kubelet's choice first (it takes the first it
   supports). */
#define CP_GRPC_DRA_VERSIONS { "v1.DRAPlugin", "v1beta1.DRAPlugin" }

/* A claim as the kubelet names it (every field non-empty, checked). */
struct cp_grpc_claim
{
  const char *uid, *namespace, *name;
};

struct cp_grpc_dra_call;

/* What the front end answers of one claim: an ERROR (malloc()ed), or its one
   device: POOL and DEVICE (malloc()ed) and N_CDI CDI device ids (malloc()ed, as
   is the array).  The grpc layer frees them.
   Or PENDING: the answer comes later, by cp_grpc_dra_answer (CALL, INDEX, ...)
   (CALL and INDEX are the grpc layer's, set before the prepare callback); the
   call's answer is deferred until each of its pending claims is answered
   (grpc_server.h: cp_grpc_reply_defer(), bounded by CP_GRPC_DEFER_MS). */
/* One device of a prepared claim: the claim's request it answers (REQUEST: the
   kubelet gives its CDI device to the containers that name that request, or the
   claim), where it is, and its CDI device. */
struct cp_grpc_device
{
  char *request, *pool, *device, *cdi_id;
};
#define CP_GRPC_MAX_DEVICES 32 /* a claim's devices in an answer (the API's results) */

struct cp_grpc_prepared
{
  char *error;
  struct cp_grpc_device *devices;
  size_t n_devices;
  bool pending;
  struct cp_grpc_dra_call *call;
  size_t index;
};

/* What ANS holds freed, and its error and devices emptied. */
void cp_grpc_prepared_clear (struct cp_grpc_prepared *ans);

/* Claim INDEX of CALL, left pending, answered with ANS (taken: its strings are the
   grpc layer's now; ANS->pending false).  The last pending claim answered sends
   the call's answer and frees CALL. */
void cp_grpc_dra_answer (struct cp_grpc_dra_call *call, size_t index, struct cp_grpc_prepared *ans);

struct cp_grpc_dra_ops
{
  void *ctx;
  /* Each of CLAIMS (N) prepared: OUT[i] filled (zeroed before but for CALL and
     INDEX), or left PENDING.  CLAIMS stay valid until the call is answered. */
  void (*prepare) (void *ctx, const struct cp_grpc_claim *claims, size_t n, struct cp_grpc_prepared *out);
  /* Each of CLAIMS (N) released: ERRORS[i] set (malloc()ed) where it failed. */
  void (*unprepare) (void *ctx, const struct cp_grpc_claim *claims, size_t n, char **errors);
};

/* The service: its OPS, and what cp_grpc_dra_methods() fills. */
struct cp_grpc_dra_version
{
  const struct cp_grpc_dra_ops *ops;
  const char *name; /* "v1", "v1beta1" */
};
#define CP_GRPC_DRA_N_METHODS 4
struct cp_grpc_dra
{
  struct cp_grpc_dra_ops ops;
  struct cp_grpc_dra_version versions[2];
  struct cp_grpc_method methods[CP_GRPC_DRA_N_METHODS];
};

/* D's four methods (both versions), for cp_grpc_server_listen() (D must outlive
   the server). */
const struct cp_grpc_method *cp_grpc_dra_methods (struct cp_grpc_dra *d, size_t *n);

#endif
