/* cachepin: the kubelet's plugin registration service (pluginregistration.Registration,
 * hook/grpc/proto/pluginregistration_v1.proto) on a socket in the kubelet's
 * plugins_registry directory: the kubelet's plugin watcher sees the socket, calls
 * GetInfo (what the plugin is, where its own service listens, which versions of
 * it), then NotifyRegistrationStatus (whether it took it). */
#ifndef CP_GRPC_KUBELET_H
#define CP_GRPC_KUBELET_H

#include <stdbool.h>

#include "grpc_server.h"

#define CP_GRPC_KUBELET_TYPE "DRAPlugin"
#define CP_GRPC_KUBELET_NAME "cachepin.io"

#define CP_GRPC_KUBELET_GET_INFO "/pluginregistration.Registration/GetInfo"
#define CP_GRPC_KUBELET_NOTIFY "/pluginregistration.Registration/NotifyRegistrationStatus"

struct cp_grpc_kubelet
{
  const char *endpoint; /* the DRA service's socket (grpc_dra.h) */
  /* The kubelet's word on the registration: REGISTERED, and its ERROR (may be
     empty); may be NULL. */
  void (*notified) (void *ctx, bool registered, const char *error);
  void *ctx;
  struct cp_grpc_method methods[2]; /* filled by cp_grpc_kubelet_methods() */
};

/* K's two methods, for cp_grpc_server_listen() (K must outlive the server). */
const struct cp_grpc_method *cp_grpc_kubelet_methods (struct cp_grpc_kubelet *k, size_t *n);

#endif
