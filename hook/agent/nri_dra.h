/* cachepin: the NRI agent's DRA side (`cachepin nri --dra-node NAME`): the
 * publisher of the node's ResourceSlices (hook/engine/dra_publisher.h), started
 * before the sandbox, its outcomes read by the agent's loop as a side descriptor
 * (nri_conn.h) and served among its metrics. */
#ifndef CP_NRI_DRA_H
#define CP_NRI_DRA_H

#include "dra_publisher.h"
#include "nri_conn.h"

/* What the command line says: NODE NULL: no DRA. */
struct cp_nri_dra_options
{
  const char *node;
  struct cp_kube_options kube;
};

struct cp_nri_dra
{
  struct cp_dra_publisher pub;
  int *slot; /* its side's fd in the loop's table: -1 once the publisher is gone */
};

/* The publisher started where O names a node (*SIDE then its side, *N_SIDE 1;
   else 0). */
int cp_nri_dra_start (struct cp_nri_dra *d, const struct cp_hostconfig *hc, const struct cp_nri_dra_options *o,
                      struct cp_nri_side *side, size_t *n_side, cp_error_t *err);

/* D's side found in the loop's table SIDE (N), whose fd it sets to -1 (poll
   skips it) once the publisher is gone. */
void cp_nri_dra_attach (struct cp_nri_dra *d, struct cp_nri_side *side, size_t n);

void cp_nri_dra_stop (struct cp_nri_dra *d);

#endif
