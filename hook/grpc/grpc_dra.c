/* cachepin: the kubelet's DRA service (grpc_dra.h). */
#include "grpc_dra.h"

#include <stdlib.h>
#include <string.h>

#include "dra_v1.pb-c.h"
#include "grpc_reply.h"
#include "log.h"
#include "util.h"

typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Claim Claim;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesResponse PrepareResponse;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesResponse__ClaimsEntry PrepareEntry;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourceResponse PrepareOne;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Device Device;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesResponse UnprepareResponse;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesResponse__ClaimsEntry UnprepareEntry;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourceResponse UnprepareOne;

/* The claims of a request, checked: every reference there (the kubelet's
   REQUIRED fields).  NULL with *REPLY set when one is missing. */
static struct cp_grpc_claim *
claims_of (Claim **in, size_t n, const char *what, struct cp_grpc_reply *reply)
{
  struct cp_grpc_claim *c = cp_xcalloc (n ? n : 1, sizeof *c);
  for (size_t i = 0; i < n; i++)
    {
      const char *missing = !in[i]->uid || !*in[i]->uid               ? "uid"
                            : !in[i]->namespace_ || !*in[i]->namespace_ ? "namespace"
                            : !in[i]->name || !*in[i]->name             ? "name"
                                                                        : NULL;
      if (missing)
        {
          cp_grpc_reply_fail (reply, CP_GRPC_INVALID_ARGUMENT, "%s: claim %zu has no %s", what, i + 1, missing);
          free (c);
          return NULL;
        }
      c[i] = (struct cp_grpc_claim) { .uid = in[i]->uid, .namespace = in[i]->namespace_, .name = in[i]->name };
    }
  return c;
}

/* A call's start: its request unpacked as DESC's message (*MSG, the caller frees
   it), its claims checked and logged (*K of them).  NULL with *REPLY set, and *MSG
   freed, when the request is refused. */
static struct cp_grpc_claim *
begin (const struct cp_grpc_dra_version *m, const ProtobufCMessageDescriptor *desc, const char *what,
       const uint8_t *req, size_t n, struct cp_grpc_reply *reply, ProtobufCMessage **msg, size_t *k)
{
  *msg = cp_grpc_unpack (desc, req, n, what, reply);
  if (*msg == NULL)
    return NULL;
  /* Both requests are `repeated Claim claims = 1` and nothing else: read through
     the descriptor's offsets. */
  const ProtobufCFieldDescriptor *f = &desc->fields[0];
  *k = *(const size_t *) (const void *) ((const char *) *msg + f->quantifier_offset);
  Claim **in = *(Claim **const *) (const void *) ((const char *) *msg + f->offset);
  struct cp_grpc_claim *claims = claims_of (in, *k, what, reply);
  if (claims == NULL)
    {
      protobuf_c_message_free_unpacked (*msg, NULL);
      *msg = NULL;
      return NULL;
    }
  cp_log (CP_LOG_INFO, "grpc: %s %s: %zu claim%s", m->name, what, *k, *k == 1 ? "" : "s");
  return claims;
}

/* A prepare call: what it holds until each claim is answered. */
struct cp_grpc_dra_call
{
  ProtobufCMessage *in; /* the request: CLAIMS point into it */
  struct cp_grpc_claim *claims;
  struct cp_grpc_prepared *ans;
  size_t k, pending;
  struct cp_grpc_call *deferred; /* NULL: answered at once */
};

/* The request a device answers as the kubelet matches it: a subrequest's result
   ("req/sub", a prioritized list's) stands for its request ("req"), which is what a
   container names. */
static char *
base_request (const char *request)
{
  const char *slash = strchr (request, '/');
  return slash ? cp_xstrndup (request, (size_t) (slash - request)) : cp_xstrdup (request);
}

/* ANS's devices as the response's, into DEVICES and PTRS (ANS->n_devices each);
   REQUESTS (as many) keeps the strings the response points at. */
static void
fill_devices (const struct cp_grpc_prepared *ans, Device *devices, Device **ptrs, char **requests)
{
  for (size_t j = 0; j < ans->n_devices; j++)
    {
      const struct cp_grpc_device *d = &ans->devices[j];
      k8s__io__kubelet__pkg__apis__dra__v1__device__init (&devices[j]);
      requests[j] = d->request ? base_request (d->request) : NULL;
      devices[j].n_request_names = requests[j] ? 1 : 0;
      devices[j].request_names = requests[j] ? &requests[j] : NULL;
      devices[j].pool_name = d->pool ? d->pool : (char *) "";
      devices[j].device_name = d->device ? d->device : (char *) "";
      devices[j].n_cdi_device_ids = d->cdi_id ? 1 : 0;
      devices[j].cdi_device_ids = d->cdi_id ? (char **) &d->cdi_id : NULL;
      ptrs[j] = &devices[j];
    }
}

void
cp_grpc_prepared_clear (struct cp_grpc_prepared *ans)
{
  free (ans->error);
  for (size_t j = 0; j < ans->n_devices; j++)
    {
      free (ans->devices[j].request);
      free (ans->devices[j].pool);
      free (ans->devices[j].device);
      free (ans->devices[j].cdi_id);
    }
  free (ans->devices);
  ans->error = NULL;
  ans->devices = NULL;
  ans->n_devices = 0;
}

/* Every claim answered: the response packed into *REPLY, CALL freed. */
static void
finish (struct cp_grpc_dra_call *call, struct cp_grpc_reply *reply)
{
  size_t k = call->k, total = 0;
  struct cp_grpc_claim *claims = call->claims;
  struct cp_grpc_prepared *ans = call->ans;
  for (size_t i = 0; i < k; i++)
    total += ans[i].error ? 0 : ans[i].n_devices;
  PrepareEntry *entries = cp_xcalloc (k ? k : 1, sizeof *entries);
  PrepareEntry **entry_ptrs = cp_xcalloc (k ? k : 1, sizeof *entry_ptrs);
  PrepareOne *ones = cp_xcalloc (k ? k : 1, sizeof *ones);
  Device *devices = cp_xcalloc (total ? total : 1, sizeof *devices);
  Device **device_ptrs = cp_xcalloc (total ? total : 1, sizeof *device_ptrs);
  char **requests = cp_xcalloc (total ? total : 1, sizeof *requests);
  size_t used = 0;
  for (size_t i = 0; i < k; i++)
    {
      k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_response__claims_entry__init (&entries[i]);
      k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resource_response__init (&ones[i]);
      entries[i].key = (char *) claims[i].uid;
      entries[i].value = &ones[i];
      entry_ptrs[i] = &entries[i];
      if (ans[i].error)
        {
          ones[i].error = ans[i].error;
          cp_log (CP_LOG_INFO, "grpc: claim %.64s/%.64s (%.64s): %s", claims[i].namespace, claims[i].name,
                  claims[i].uid, ans[i].error);
        }
      else
        {
          fill_devices (&ans[i], &devices[used], &device_ptrs[used], &requests[used]);
          ones[i].n_devices = ans[i].n_devices;
          ones[i].devices = ans[i].n_devices ? &device_ptrs[used] : NULL;
          used += ans[i].n_devices;
        }
    }
  PrepareResponse out = K8S__IO__KUBELET__PKG__APIS__DRA__V1__NODE_PREPARE_RESOURCES_RESPONSE__INIT;
  out.n_claims = k;
  out.claims = entry_ptrs;
  cp_grpc_reply_pack (reply, &out.base);
  for (size_t i = 0; i < k; i++)
    cp_grpc_prepared_clear (&ans[i]);
  for (size_t j = 0; j < used; j++)
    free (requests[j]);
  free (requests);
  free (ans);
  free (entries);
  free (entry_ptrs);
  free (ones);
  free (devices);
  free (device_ptrs);
  free (claims);
  protobuf_c_message_free_unpacked (call->in, NULL);
  free (call);
}

void
cp_grpc_dra_answer (struct cp_grpc_dra_call *call, size_t index, struct cp_grpc_prepared *ans)
{
  if (index >= call->k || !call->ans[index].pending)
    abort (); /* the front end's bug: a claim answered twice */
  ans->pending = false;
  ans->call = call;
  ans->index = index;
  call->ans[index] = *ans;
  if (--call->pending > 0 || call->deferred == NULL)
    return;
  struct cp_grpc_call *deferred = call->deferred;
  struct cp_grpc_reply reply = { .code = CP_GRPC_OK };
  finish (call, &reply);
  cp_grpc_call_answer (deferred, &reply);
}

static void
prepare (void *ctx, const uint8_t *req, size_t n, struct cp_grpc_reply *reply)
{
  const struct cp_grpc_dra_version *m = ctx;
  struct cp_grpc_dra_call *call = cp_xmalloc0 (sizeof *call);
  call->claims = begin (m, &k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_request__descriptor,
                        CP_GRPC_DRA_PREPARE, req, n, reply, &call->in, &call->k);
  if (call->claims == NULL)
    {
      free (call);
      return;
    }
  size_t k = call->k;
  call->ans = cp_xcalloc (k ? k : 1, sizeof *call->ans);
  for (size_t i = 0; i < k; i++)
    call->ans[i] = (struct cp_grpc_prepared) { .call = call, .index = i };
  m->ops->prepare (m->ops->ctx, call->claims, k, call->ans);
  for (size_t i = 0; i < k; i++)
    call->pending += call->ans[i].pending;
  if (call->pending == 0)
    return finish (call, reply);
  call->deferred = cp_grpc_reply_defer (reply);
}

static void
unprepare (void *ctx, const uint8_t *req, size_t n, struct cp_grpc_reply *reply)
{
  const struct cp_grpc_dra_version *m = ctx;
  ProtobufCMessage *in;
  size_t k;
  cleanup_free struct cp_grpc_claim *claims
    = begin (m, &k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_request__descriptor,
             CP_GRPC_DRA_UNPREPARE, req, n, reply, &in, &k);
  if (claims == NULL)
    return;
  char **errors = cp_xcalloc (k ? k : 1, sizeof *errors);
  m->ops->unprepare (m->ops->ctx, claims, k, errors);
  UnprepareEntry *entries = cp_xcalloc (k ? k : 1, sizeof *entries);
  UnprepareEntry **entry_ptrs = cp_xcalloc (k ? k : 1, sizeof *entry_ptrs);
  UnprepareOne *ones = cp_xcalloc (k ? k : 1, sizeof *ones);
  for (size_t i = 0; i < k; i++)
    {
      k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_response__claims_entry__init (&entries[i]);
      k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resource_response__init (&ones[i]);
      entries[i].key = (char *) claims[i].uid;
      entries[i].value = &ones[i];
      entry_ptrs[i] = &entries[i];
      if (errors[i])
        ones[i].error = errors[i];
    }
  UnprepareResponse out = K8S__IO__KUBELET__PKG__APIS__DRA__V1__NODE_UNPREPARE_RESOURCES_RESPONSE__INIT;
  out.n_claims = k;
  out.claims = entry_ptrs;
  cp_grpc_reply_pack (reply, &out.base);
  for (size_t i = 0; i < k; i++)
    free (errors[i]);
  free (errors);
  free (entries);
  free (entry_ptrs);
  free (ones);
  protobuf_c_message_free_unpacked (in, NULL);
}

const struct cp_grpc_method *
cp_grpc_dra_methods (struct cp_grpc_dra *d, size_t *n)
{
  d->versions[0] = (struct cp_grpc_dra_version) { .ops = &d->ops, .name = "v1" };
  d->versions[1] = (struct cp_grpc_dra_version) { .ops = &d->ops, .name = "v1beta1" };
  struct cp_grpc_method *out = d->methods;
  out[0] = (struct cp_grpc_method) { CP_GRPC_DRA_V1 CP_GRPC_DRA_PREPARE, prepare, &d->versions[0] };
  out[1] = (struct cp_grpc_method) { CP_GRPC_DRA_V1 CP_GRPC_DRA_UNPREPARE, unprepare, &d->versions[0] };
  out[2] = (struct cp_grpc_method) { CP_GRPC_DRA_V1BETA1 CP_GRPC_DRA_PREPARE, prepare, &d->versions[1] };
  out[3] = (struct cp_grpc_method) { CP_GRPC_DRA_V1BETA1 CP_GRPC_DRA_UNPREPARE, unprepare, &d->versions[1] };
  *n = CP_GRPC_DRA_N_METHODS;
  return out;
}
