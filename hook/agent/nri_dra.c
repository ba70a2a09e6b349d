/* cachepin: the NRI agent's DRA side (nri_dra.h). */
#define _GNU_SOURCE
#include "nri_dra.h"

static void
dra_ready (void *ctx, int fd)
{
  (void) fd;
  struct cp_nri_dra *d = ctx;
  cp_dra_publisher_read (&d->pub);
  if (d->pub.gone && d->slot)
    *d->slot = -1; /* a socket at its end stays readable: the loop would spin */
}

int
cp_nri_dra_start (struct cp_nri_dra *d, const struct cp_hostconfig *hc, const struct cp_nri_dra_options *o,
                  struct cp_nri_side *side, size_t *n_side, cp_error_t *err)
{
  *n_side = 0;
  *d = (struct cp_nri_dra){ .pub = { .fd = -1 } };
  if (o == NULL || o->node == NULL)
    return 0;
  if (cp_dra_publisher_start (&d->pub, hc, o->node, &o->kube, err) < 0)
    return -1;
  *side = (struct cp_nri_side){ .fd = d->pub.fd, .ready = dra_ready, .ctx = d };
  *n_side = 1;
  return 0;
}

void
cp_nri_dra_attach (struct cp_nri_dra *d, struct cp_nri_side *side, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (side[i].ctx == d && side[i].ready == dra_ready)
      d->slot = &side[i].fd;
}

void
cp_nri_dra_stop (struct cp_nri_dra *d)
{
  cp_dra_publisher_stop (&d->pub);
}
