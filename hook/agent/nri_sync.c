/* `cachepin nri`: Synchronize, the message: its parts kept until the last one
 * (bounded: CP_NRI_SYNC_MAX_PARTS parts, CP_NRI_SYNC_MAX_BYTES bytes, past which
 * the call is refused and the connection closed), then the whole list handed to
 * the resync (nri_resync.c) and its updates answered. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "nri_plugin.h"
#include "nri_rpc.h"
#include "log.h"
#include "util.h"

typedef Nri__Pkg__Api__V1alpha1__Container nri_container;
typedef Nri__Pkg__Api__V1alpha1__PodSandbox nri_pod;
typedef Nri__Pkg__Api__V1alpha1__SynchronizeRequest sync_req;

void
cp_nri_updates_free (struct cp_nri_updates *u)
{
  for (size_t i = 0; i < u->n_strings; i++)
    free (u->strings[i]);
  free (u->strings);
  free (u->p);
  free (u->u);
  *u = (struct cp_nri_updates) { 0 };
}

void
cp_nri_sync_clear (struct cp_nri_sync *s)
{
  for (size_t i = 0; i < s->n; i++)
    cp_buf_free (&s->parts[i]);
  free (s->parts);
  *s = (struct cp_nri_sync) { 0 };
}

/* REQ kept with the parts before it; -1 when that passes the bounds (nothing kept). */
static int
keep_part (struct cp_nri_sync *s, const sync_req *req)
{
  size_t len = protobuf_c_message_get_packed_size (&req->base);
  if (s->n + 1 > CP_NRI_SYNC_MAX_PARTS || len > CP_NRI_SYNC_MAX_BYTES - s->bytes)
    return -1;
  s->parts = realloc (s->parts, (s->n + 1) * sizeof *s->parts);
  if (s->parts == NULL)
    abort ();
  struct cp_buf *b = &s->parts[s->n++];
  *b = (struct cp_buf) { 0 };
  b->p = cp_xmalloc0 (len + 1);
  b->len = b->cap = protobuf_c_message_pack (&req->base, b->p);
  s->bytes += b->len;
  return 0;
}

/* Every part's pods and containers, in the order sent; PARTS[i] owns what they
   point at. */
struct whole
{
  sync_req **parts;
  nri_pod **pods;
  nri_container **ctrs;
  size_t n_parts, n_pods, n_ctrs;
};

static void
whole_free (struct whole *w)
{
  for (size_t i = 0; i < w->n_parts; i++)
    if (w->parts[i])
      protobuf_c_message_free_unpacked (&w->parts[i]->base, NULL);
  free (w->parts);
  free (w->pods);
  free (w->ctrs);
}

static void
gather (const struct cp_nri_sync *s, struct whole *w)
{
  *w = (struct whole) { .parts = cp_xcalloc (s->n + 1, sizeof *w->parts) };
  size_t pods = 0, ctrs = 0;
  for (size_t i = 0; i < s->n; i++)
    {
      /* Packed by us from what was decoded: it decodes again. */
      w->parts[i] = nri__pkg__api__v1alpha1__synchronize_request__unpack (NULL, s->parts[i].len, s->parts[i].p);
      if (w->parts[i] == NULL)
        abort ();
      w->n_parts++;
      pods += w->parts[i]->n_pods;
      ctrs += w->parts[i]->n_containers;
    }
  w->pods = cp_xcalloc (pods + 1, sizeof *w->pods);
  w->ctrs = cp_xcalloc (ctrs + 1, sizeof *w->ctrs);
  for (size_t i = 0; i < w->n_parts; i++)
    {
      for (size_t j = 0; j < w->parts[i]->n_pods; j++)
        w->pods[w->n_pods++] = w->parts[i]->pods[j];
      for (size_t j = 0; j < w->parts[i]->n_containers; j++)
        w->ctrs[w->n_ctrs++] = w->parts[i]->containers[j];
    }
}

int
cp_nri_synchronize (struct cp_nri_plugin *p, const sync_req *req, struct cp_nri_call *call, cp_error_t *err)
{
  struct cp_nri_sync *s = &p->sync;
  Nri__Pkg__Api__V1alpha1__SynchronizeResponse resp = NRI__PKG__API__V1ALPHA1__SYNCHRONIZE_RESPONSE__INIT;
  if (keep_part (s, req) < 0)
    {
      cleanup_free char *line = cp_xasprintf (
          "cachepin: Synchronize past %d parts or %u MiB without its last part (%zu parts, %zu bytes so far): "
          "refused, the connection is closed",
          CP_NRI_SYNC_MAX_PARTS, CP_NRI_SYNC_MAX_BYTES >> 20, s->n, s->bytes);
      cp_log (CP_LOG_ERROR, "nri: %s", line + strlen ("cachepin: "));
      cp_nri_sync_clear (s);
      if (cp_rpc_response_encode (CP_MUX_CONN_PLUGIN, call->stream, CP_RPC_RESOURCE_EXHAUSTED, line, NULL, call->out,
                                  err)
          < 0)
        return -1;
      return CP_NRI_SYNC_TOO_LONG;
    }
  if (req->more)
    {
      cp_log (CP_LOG_DEBUG, "nri: synchronization part %zu: %zu pods, %zu containers, more to come", s->n,
              req->n_pods, req->n_containers);
      resp.more = true; /* the runtime sends the rest only when we say we take it */
      return cp_rpc_response_encode (CP_MUX_CONN_PLUGIN, call->stream, CP_RPC_OK, NULL, &resp.base, call->out, err);
    }
  struct whole w;
  gather (s, &w);
  cp_log (CP_LOG_INFO, "nri: synchronized: %zu pods, %zu containers (%zu %s)", w.n_pods, w.n_ctrs, w.n_parts,
          w.n_parts == 1 ? "part" : "parts");
  struct cp_nri_updates u;
  cp_nri_resync (p, w.pods, w.n_pods, w.ctrs, w.n_ctrs, CP_NRI_RESYNC_BUDGET_MS, &u);
  resp.update = u.p;
  resp.n_update = u.n;
  int r = cp_rpc_response_encode (CP_MUX_CONN_PLUGIN, call->stream, CP_RPC_OK, NULL, &resp.base, call->out, err);
  cp_nri_updates_free (&u);
  whole_free (&w);
  cp_nri_sync_clear (s);
  return r;
}
