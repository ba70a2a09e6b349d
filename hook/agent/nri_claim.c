/* `cachepin nri`: a container given a prepared DRA claim (docs/dra.md, "Prepare").
 *
 * The claim's CDI spec (hook/host/cdi.h) tags each container the kubelet gives its
 * device with CACHEPIN_DRA_CLAIM=<uid> in its environment; the runtime applies the
 * CDI edits before NRI's CreateContainer, so the plugin sees the tag there and
 * answers the claim's CPUs (cpuset, and the claim's NUMA nodes as mems).  Such a
 * container gets no ledger entry of its own: the claim's entries hold the CPUs,
 * and the containers of a pod that share one claim share them.  Only the ledger is
 * read (cp_dra_container_cpus()): nothing of the network on NRI's path. */
#define _GNU_SOURCE
#include <string.h>

#include "nri_plugin.h"
#include "bitmap.h"
#include "cpulist.h"
#include "dra_prepare.h"
#include "log.h"
#include "util.h"

#define TAG CP_DRA_CLAIM_ENV "="

const char *
cp_nri_claim_of (const Nri__Pkg__Api__V1alpha1__Container *c)
{
  const char *uid = NULL;
  for (size_t i = 0; c && i < c->n_env; i++)
    if (c->env[i] && strncmp (c->env[i], TAG, strlen (TAG)) == 0)
      uid = c->env[i] + strlen (TAG); /* the last one given, as the process sees it */
  return uid;
}

int
cp_nri_claim_cpus (const struct cp_nri_plugin *p, const Nri__Pkg__Api__V1alpha1__Container *c, char **cpus,
                   char **mems, cp_error_t *why)
{
  *cpus = *mems = NULL;
  const char *uid = cp_nri_claim_of (c);
  if (uid == NULL)
    return 0;
  cleanup_bitmap hwloc_bitmap_t set = cp_bitmap_new ();
  cleanup_bitmap hwloc_bitmap_t nodes = cp_bitmap_new ();
  int r = cp_dra_container_cpus (p->hc, uid, set, nodes, why);
  if (r == 0)
    r = cp_fail_runtime (why, "DRA claim %.128s (%s): not prepared on this node", uid, CP_DRA_CLAIM_ENV);
  if (r < 0)
    return cp_error_wrap (why, "container %s", c->id);
  *cpus = cp_cpulist_format (set);
  *mems = hwloc_bitmap_iszero (nodes) ? NULL : cp_cpulist_format (nodes);
  cp_log (CP_LOG_INFO, "container %s has DRA claim %s: cpus %s mems %s", c->id, uid, *cpus, *mems ? *mems : "kept");
  return 1;
}
