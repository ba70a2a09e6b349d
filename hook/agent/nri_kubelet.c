/* cachepin: the NRI agent as a kubelet plugin (nri_kubelet.h). */
#define _GNU_SOURCE
#include "nri_kubelet.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dra_prepare.h"
#include "log.h"
#include "util.h"

/* ---- what the calls do ---------------------------------------------------------------- */

/* A name the API server could have given (a namespace, a claim's name): what goes
   into the fetch's path. */
static bool
api_name (const char *s)
{
  size_t n = strlen (s);
  if (n == 0 || n > CP_DRA_CLAIM_MAX_NAME)
    return false;
  for (const char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '.'))
      return false;
  return true;
}

static void
fail (struct cp_grpc_prepared *out, const struct cp_grpc_claim *c, const char *why)
{
  out->error = cp_xasprintf ("cachepin: claim %.64s/%.64s (%.64s): %s", c->namespace, c->name, c->uid, why);
}

/* The claim's JSON come: parsed for this node, its uid the kubelet's, prepared. */
static void
prepare_json (struct cp_nri_kubelet *k, const struct cp_grpc_claim *ref, const char *json, size_t len,
              struct cp_grpc_prepared *out)
{
  cleanup_error cp_error_t e = NULL;
  cleanup_dra_claim struct cp_dra_claim c = { 0 };
  if (cp_dra_claim_parse (json, len, k->node, &c, &e) < 0)
    return fail (out, ref, cp_error_message (e));
  if (strcmp (c.uid, ref->uid) != 0)
    {
      cleanup_free char *why = cp_xasprintf ("the API server's claim has uid %.128s, the kubelet's is %.128s "
                                             "(deleted and made again?): not prepared",
                                             c.uid, ref->uid);
      return fail (out, ref, why);
    }
  if (c.n_results == 0)
    {
      cleanup_free char *why = cp_xasprintf ("no allocation result of driver %s for node %s: not prepared",
                                             CP_GRPC_KUBELET_NAME, k->node);
      return fail (out, ref, why);
    }
  cleanup_dra_prepared struct cp_dra_prepared p = { 0 };
  if (cp_dra_claim_prepare (k->hc, &c, &p, &e) < 0)
    return fail (out, ref, cp_error_message (e));
  /* A device per result, with its own CDI device: the kubelet gives it to the
     containers that name its request (or the whole claim), and each gets the CPUs
     of the results it is given (nri_claim.c). */
  out->devices = cp_xcalloc (p.n_results, sizeof *out->devices);
  for (size_t i = 0; i < p.n_results; i++)
    out->devices[i] = (struct cp_grpc_device) { .request = cp_xstrdup (c.results[i].request),
                                                .pool = cp_xstrdup (k->node),
                                                .device = cp_xstrdup (p.results[i].device),
                                                .cdi_id = cp_xstrdup (p.results[i].cdi_device) };
  out->n_devices = p.n_results;
}

/* The publisher's answer to fetch ID (0: every fetch, it exited), or (UID not NULL)
   the fetches of claim UID answered with ERROR. */
static void
answer_pending (struct cp_nri_kubelet *k, uint32_t id, const char *uid, const char *json, size_t len,
                const char *error)
{
  for (size_t i = 0; i < CP_NRI_KUBELET_MAX_PENDING; i++)
    {
      struct cp_nri_kubelet_pending *p = &k->pending[i];
      if (p->call == NULL || (uid ? strcmp (p->uid, uid) != 0 : id != 0 && p->id != id))
        continue;
      struct cp_grpc_claim ref = { .uid = p->uid, .namespace = p->namespace, .name = p->name };
      struct cp_grpc_prepared ans = { 0 };
      if (error)
        fail (&ans, &ref, error);
      else
        prepare_json (k, &ref, json, len, &ans);
      k->prepares[ans.error != NULL]++;
      struct cp_grpc_dra_call *call = p->call;
      size_t index = p->index;
      free (p->uid);
      free (p->namespace);
      free (p->name);
      *p = (struct cp_nri_kubelet_pending) { 0 };
      cp_grpc_dra_answer (call, index, &ans);
    }
}

static void
fetched (void *ctx, uint32_t id, const char *json, size_t len, const char *error)
{
  answer_pending (ctx, id, NULL, json, len, error);
}

void
cp_nri_kubelet_prepare_claim (struct cp_nri_kubelet *k, const struct cp_grpc_claim *claim,
                              struct cp_grpc_prepared *out)
{
  if (k->pub == NULL)
    return fail (out, claim, "no API client (--kubelet-plugin needs --dra-node)");
  if (!api_name (claim->namespace) || !api_name (claim->name))
    return fail (out, claim, "the namespace or the name is not a name the API server gives");
  cleanup_error cp_error_t e = NULL;
  if (cp_dra_claim_check_uid ("the claim's uid", claim->uid, &e) < 0)
    return fail (out, claim, cp_error_message (e));
  struct cp_nri_kubelet_pending *p = NULL;
  for (size_t i = 0; i < CP_NRI_KUBELET_MAX_PENDING && p == NULL; i++)
    if (k->pending[i].call == NULL)
      p = &k->pending[i];
  if (p == NULL)
    return fail (out, claim, "too many claims waiting for the API server at once");
  uint32_t id = ++k->next_id ? k->next_id : ++k->next_id;
  if (cp_dra_publisher_fetch (k->pub, id, claim->namespace, claim->name, &e) < 0)
    return fail (out, claim, cp_error_message (e));
  *p = (struct cp_nri_kubelet_pending) { .id = id, .call = out->call, .index = out->index,
                                         .uid = cp_xstrdup (claim->uid), .namespace = cp_xstrdup (claim->namespace),
                                         .name = cp_xstrdup (claim->name) };
  out->pending = true;
}

char *
cp_nri_kubelet_unprepare_claim (struct cp_nri_kubelet *k, const struct cp_grpc_claim *claim)
{
  cleanup_error cp_error_t e = NULL;
  unsigned released = 0;
  if (k->hc == NULL)
    return NULL; /* nothing can have been prepared */
  /* A prepare of it still waiting for the API server: failed now, so that its
     reply prepares nothing after this release (the kubelet calls again). */
  answer_pending (k, 0, claim->uid, NULL, 0, "unprepared while its claim was being fetched: not prepared");
  if (cp_dra_claim_unprepare (k->hc, claim->uid, &released, &e) < 0)
    return cp_xasprintf ("cachepin: claim %.64s/%.64s (%.64s): %s", claim->namespace, claim->name, claim->uid,
                         cp_error_message (e));
  cp_log (CP_LOG_INFO, "nri: claim %s/%s (%s) unprepared: %u entr%s released", claim->namespace, claim->name,
          claim->uid, released, released == 1 ? "y" : "ies");
  return NULL;
}

static void
prepare (void *ctx, const struct cp_grpc_claim *claims, size_t n, struct cp_grpc_prepared *out)
{
  struct cp_nri_kubelet *k = ctx;
  for (size_t i = 0; i < n; i++)
    {
      cp_nri_kubelet_prepare_claim (k, &claims[i], &out[i]);
      if (!out[i].pending) /* a pending one is counted when its answer comes */
        k->prepares[out[i].error != NULL]++;
    }
}

static void
unprepare (void *ctx, const struct cp_grpc_claim *claims, size_t n, char **errors)
{
  struct cp_nri_kubelet *k = ctx;
  for (size_t i = 0; i < n; i++)
    {
      errors[i] = cp_nri_kubelet_unprepare_claim (k, &claims[i]);
      k->unprepares[errors[i] != NULL]++;
    }
}

void
cp_nri_kubelet_wire (struct cp_nri_kubelet *k, const struct cp_hostconfig *hc, const char *node,
                     struct cp_dra_publisher *pub)
{
  k->hc = hc;
  k->node = node;
  k->pub = pub;
  pub->claim = fetched;
  pub->claim_ctx = k;
  /* Before the sandbox: the CDI spec directory, which it lets the agent write in. */
  cleanup_error cp_error_t e = NULL;
  k->cdi_dirfd = cp_dra_hold_cdi_dir (hc, &e);
  if (k->cdi_dirfd < 0)
    cp_log (CP_LOG_WARNING, "nri: kubelet plugin: %s (claims cannot be prepared)", cp_error_message (e));
  cp_log (CP_LOG_INFO, "nri: kubelet plugin: claims fetched for node %s, CDI specs in %s", node, hc->cdi_dir);
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
  *k = (struct cp_nri_kubelet) { .cdi_dirfd = -1 };
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
  fetched (k, 0, NULL, 0, "the agent is stopping");
  cp_grpc_server_free (k->server);
  k->server = NULL;
  free (k->reg_path);
  free (k->dra_path);
  free (k->reg_dir);
  free (k->dra_dir);
  k->reg_path = k->dra_path = k->reg_dir = k->dra_dir = NULL;
}

char *
cp_nri_kubelet_metrics (const struct cp_nri_kubelet *k)
{
  size_t waiting = 0;
  for (size_t i = 0; i < CP_NRI_KUBELET_MAX_PENDING; i++)
    waiting += k->pending[i].call != NULL;
  return cp_xasprintf (
    "# HELP cachepin_dra_kubelet_registered Whether the kubelet registered the DRA plugin (its last "
    "NotifyRegistrationStatus).\n"
    "# TYPE cachepin_dra_kubelet_registered gauge\n"
    "cachepin_dra_kubelet_registered %d\n"
    "# HELP cachepin_dra_prepares_total Claims the kubelet asked to prepare, by outcome.\n"
    "# TYPE cachepin_dra_prepares_total counter\n"
    "cachepin_dra_prepares_total{outcome=\"ok\"} %" PRIu64 "\n"
    "cachepin_dra_prepares_total{outcome=\"failed\"} %" PRIu64 "\n"
    "# HELP cachepin_dra_unprepares_total Claims the kubelet asked to unprepare, by outcome.\n"
    "# TYPE cachepin_dra_unprepares_total counter\n"
    "cachepin_dra_unprepares_total{outcome=\"ok\"} %" PRIu64 "\n"
    "cachepin_dra_unprepares_total{outcome=\"failed\"} %" PRIu64 "\n"
    "# HELP cachepin_dra_prepares_waiting Claims whose prepare waits for the API server now.\n"
    "# TYPE cachepin_dra_prepares_waiting gauge\n"
    "cachepin_dra_prepares_waiting %zu\n",
    k->registered ? 1 : 0, k->prepares[0], k->prepares[1], k->unprepares[0], k->unprepares[1], waiting);
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
