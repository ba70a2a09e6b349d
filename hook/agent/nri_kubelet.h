/* cachepin: the NRI agent as a kubelet plugin (`cachepin nri --kubelet-plugin`): the
 * plugin registration service on KUBELET_ROOT/plugins_registry/cachepin.io-reg.sock,
 * which the kubelet's plugin watcher finds, and the DRA service on
 * KUBELET_ROOT/plugins/cachepin.io/dra.sock, which GetInfo names (grpc_kubelet.h,
 * grpc_dra.h).  Both are servers of the grpc layer joined to the agent's one loop as
 * a side descriptor (nri_conn.h), bound before the sandbox, which then allows
 * accept on their sockets, epoll on their set and the removal of the two socket
 * files at the end (front.h).
 *
 * What a prepare does is one function, cp_nri_kubelet_prepare_claim(): until the
 * claim engine and the API client land (issue 34, items 2 and 3), it answers every
 * claim with the error CP_NRI_KUBELET_NOT_WIRED, and the kubelet fails the pod's
 * start with it; an unprepare has nothing to release and succeeds. */
#ifndef CP_NRI_KUBELET_H
#define CP_NRI_KUBELET_H

#include <stdbool.h>

#include "error.h"
#include "grpc_dra.h"
#include "grpc_kubelet.h"
#include "nri_conn.h"

#define CP_NRI_KUBELET_DEFAULT_ROOT "/var/lib/kubelet"
#define CP_NRI_KUBELET_REG_SOCKET "plugins_registry/cachepin.io-reg.sock"
#define CP_NRI_KUBELET_PLUGIN_DIR "plugins/cachepin.io"
#define CP_NRI_KUBELET_DRA_SOCKET CP_NRI_KUBELET_PLUGIN_DIR "/dra.sock"

#define CP_NRI_KUBELET_NOT_WIRED "cachepin: claim preparation is not wired yet"

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
};

/* Before the sandbox: the two directories made where missing (0750), the two
   sockets bound.  < 0 (*ERR, naming --kubelet-root): the root is not a
   directory, a socket cannot be had. */
int cp_nri_kubelet_open (struct cp_nri_kubelet *k, const struct cp_nri_kubelet_options *o, cp_error_t *err);

/* Both servers closed and their sockets removed (nothing when not open). */
void cp_nri_kubelet_close (struct cp_nri_kubelet *k);

/* The loop's side descriptor for K (open). */
struct cp_nri_side cp_nri_kubelet_side (struct cp_nri_kubelet *k);

/* One claim prepared: OUT (zeroed) gets its error, or its device and CDI ids. */
void cp_nri_kubelet_prepare_claim (const struct cp_grpc_claim *claim, struct cp_grpc_prepared *out);

/* One claim released: NULL, or its error (malloc()ed). */
char *cp_nri_kubelet_unprepare_claim (const struct cp_grpc_claim *claim);

#endif
