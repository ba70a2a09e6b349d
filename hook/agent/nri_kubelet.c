/* cachepin: the NRI agent as a kubelet plugin (nri_kubelet.h). */
#define _GNU_SOURCE
#include "nri_kubelet.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "util.h"

/* ---- what the calls do ---------------------------------------------------------------- */

/* The claim engine's place (issue 34 item 2: the claim fetched, its allocation
   read, CPUs chosen in its L3 and recorded in the ledger, a CDI device written):
   until it lands, every claim is answered with this error. */
void
cp_nri_kubelet_prepare_claim (const struct cp_grpc_claim *claim, struct cp_grpc_prepared *out)
{
  (void) claim;
  out->error = cp_xstrdup (CP_NRI_KUBELET_NOT_WIRED);
}

char *
cp_nri_kubelet_unprepare_claim (const struct cp_grpc_claim *claim)
{
  (void) claim; /* nothing was prepared, nothing is held */
  return NULL;
}

static void
prepare (void *ctx, const struct cp_grpc_claim *claims, size_t n, struct cp_grpc_prepared *out)
{
  (void) ctx;
  for (size_t i = 0; i < n; i++)
    cp_nri_kubelet_prepare_claim (&claims[i], &out[i]);
}

static void
unprepare (void *ctx, const struct cp_grpc_claim *claims, size_t n, char **errors)
{
  (void) ctx;
  for (size_t i = 0; i < n; i++)
    errors[i] = cp_nri_kubelet_unprepare_claim (&claims[i]);
}

static void
notified (void *ctx, bool registered, const char *error)
{
  (void) error; /* logged by the registration service */
  struct cp_nri_kubelet *k = ctx;
  k->registered = registered;
}

/* ---- the sockets ------------------------------------------------------------------------ */

/* DIR made where missing (0750: the kubelet, root, alone reads it). */
static int
make_dir (const char *dir, cp_error_t *err)
{
  if (mkdir (dir, 0750) == 0 || errno == EEXIST)
    {
      struct stat st;
      if (stat (dir, &st) == 0 && S_ISDIR (st.st_mode))
        return 0;
      return cp_fail_runtime (err, "--kubelet-root: %s is not a directory", dir);
    }
  return cp_fail_errno (err, errno, "--kubelet-root: mkdir %s", dir);
}

int
cp_nri_kubelet_open (struct cp_nri_kubelet *k, const struct cp_nri_kubelet_options *o, cp_error_t *err)
{
  *k = (struct cp_nri_kubelet) { 0 };
  const char *root = o->root ? o->root : CP_NRI_KUBELET_DEFAULT_ROOT;
  struct stat st;
  if (stat (root, &st) < 0 || !S_ISDIR (st.st_mode))
    return cp_fail_runtime (err, "--kubelet-root %.200s: not a directory (the kubelet's root, where its "
                               "plugins_registry is)",
                          root);
  k->reg_path = cp_xasprintf ("%s/" CP_NRI_KUBELET_REG_SOCKET, root);
  k->dra_path = cp_xasprintf ("%s/" CP_NRI_KUBELET_DRA_SOCKET, root);
  k->reg_dir = cp_xasprintf ("%s/plugins_registry", root);
  k->dra_dir = cp_xasprintf ("%s/" CP_NRI_KUBELET_PLUGIN_DIR, root);
  cleanup_free char *plugins = cp_xasprintf ("%s/plugins", root);
  if (make_dir (k->reg_dir, err) < 0 || make_dir (plugins, err) < 0 || make_dir (k->dra_dir, err) < 0)
    goto fail;
  k->reg = (struct cp_grpc_kubelet) { .endpoint = k->dra_path, .notified = notified, .ctx = k };
  k->dra = (struct cp_grpc_dra) { .ops = { .ctx = k, .prepare = prepare, .unprepare = unprepare } };
  size_t nk, nd;
  const struct cp_grpc_method *km = cp_grpc_kubelet_methods (&k->reg, &nk);
  const struct cp_grpc_method *dm = cp_grpc_dra_methods (&k->dra, &nd);
  /* The DRA socket first: the kubelet may call GetInfo, and then dial the
     endpoint it names, as soon as the registration socket appears. */
  if (cp_grpc_server_new (&k->server, err) < 0 || cp_grpc_server_listen (k->server, k->dra_path, dm, nd, err) < 0
      || cp_grpc_server_listen (k->server, k->reg_path, km, nk, err) < 0)
    {
      cp_error_wrap (err, "--kubelet-plugin");
      goto fail;
    }
  cp_log (CP_LOG_INFO, "nri: kubelet plugin %s: registration on %s, DRA (v1, v1beta1) on %s", CP_GRPC_KUBELET_NAME,
          k->reg_path, k->dra_path);
  return 0;
fail:
  cp_nri_kubelet_close (k);
  return -1;
}

void
cp_nri_kubelet_close (struct cp_nri_kubelet *k)
{
  cp_grpc_server_free (k->server);
  k->server = NULL;
  free (k->reg_path);
  free (k->dra_path);
  free (k->reg_dir);
  free (k->dra_dir);
  k->reg_path = k->dra_path = k->reg_dir = k->dra_dir = NULL;
}

static void
ready (void *ctx, int fd)
{
  (void) fd;
  struct cp_nri_kubelet *k = ctx;
  cp_grpc_server_run (k->server);
}

struct cp_nri_side
cp_nri_kubelet_side (struct cp_nri_kubelet *k)
{
  return (struct cp_nri_side) { .fd = cp_grpc_server_fd (k->server), .ready = ready, .ctx = k };
}
