/* `cachepin nri`: a container given a prepared DRA claim (docs/dra.md, "Prepare").
 *
 * The claim's CDI spec (hook/host/cdi.h) gives each container the kubelet gives one
 * of its devices a read-only mount of the spec at CP_DRA_CLAIM_MOUNT_DIR/<uid>/<result>,
 * one per result of the device; the runtime applies the CDI edits before NRI's
 * CreateContainer, so the plugin sees the mounts there and answers the union of those
 * results' CPUs (cpuset, and their NUMA nodes as mems).  The mount is the tag because
 * its source, a file of the host's CDI directory, is out of a pod's reach: the
 * environment variable the spec sets too (CACHEPIN_DRA_CLAIM) is a pod's to set, and
 * taken for nothing alone.  Such a container gets no ledger entry of its own: the
 * claim's entries hold the CPUs, and the containers that share a claim share them.
 * Only the ledger is read (cp_dra_container_cpus()): nothing of the network on NRI's
 * path. */
#define _GNU_SOURCE
#include <string.h>

#include "nri_plugin.h"
#include "bitmap.h"
#include "cpulist.h"
#include "dra_prepare.h"
#include "log.h"
#include "util.h"

#define TAG CP_DRA_CLAIM_ENV "="

/* The uid C's environment says (the last CACHEPIN_DRA_CLAIM=), or NULL. */
static const char *
env_claim (const Nri__Pkg__Api__V1alpha1__Container *c)
{
  const char *uid = NULL;
  for (size_t i = 0; c && i < c->n_env; i++)
    if (c->env[i] && strncmp (c->env[i], TAG, strlen (TAG)) == 0)
      uid = c->env[i] + strlen (TAG);
  return uid;
}

size_t
cp_nri_claim_tags (const struct cp_nri_plugin *p, const Nri__Pkg__Api__V1alpha1__Container *c,
                   struct cp_dra_tag *tags, size_t max)
{
  size_t n = 0;
  for (size_t i = 0; c && i < c->n_mounts && n < max; i++)
    {
      const Nri__Pkg__Api__V1alpha1__Mount *m = c->mounts[i];
      if (m == NULL)
        continue;
      struct cp_dra_tag t = { 0 };
      cleanup_error cp_error_t e = NULL;
      int r = cp_dra_mount_tag (p->hc, m->source, m->destination, &t, &e);
      if (r < 0)
        cp_log (CP_LOG_WARNING, "container %.64s: %s: not a claim's tag, ignored", c->id ? c->id : "",
                cp_error_message (e));
      if (r <= 0)
        continue;
      bool seen = false;
      for (size_t k = 0; k < n && !seen; k++)
        seen = tags[k].index == t.index && strcmp (tags[k].uid, t.uid) == 0;
      if (!seen)
        tags[n++] = t;
    }
  const char *env = env_claim (c);
  if (n == 0 && env)
    cp_log (CP_LOG_WARNING,
            "container %.64s: %s=%.64s in its environment without the claim's CDI mount (%s): "
            "not given the claim's CPUs",
            c->id ? c->id : "", CP_DRA_CLAIM_ENV, env, CP_DRA_CLAIM_MOUNT_DIR);
  return n;
}

bool
cp_nri_claim_of (const struct cp_nri_plugin *p, const Nri__Pkg__Api__V1alpha1__Container *c)
{
  struct cp_dra_tag tags[CP_NRI_MAX_CLAIM_TAGS];
  return cp_nri_claim_tags (p, c, tags, CP_ARRAY_SIZE (tags)) > 0;
}

/* TAGS (N) as "uid/result, ...", for the log. */
static char *
tags_text (const struct cp_dra_tag *tags, size_t n)
{
  char *s = cp_xstrdup ("");
  for (size_t i = 0; i < n; i++)
    {
      char *next = cp_xasprintf ("%s%s%s/%u", s, i ? ", " : "", tags[i].uid, tags[i].index);
      free (s);
      s = next;
    }
  return s;
}

int
cp_nri_claim_cpus (const struct cp_nri_plugin *p, const Nri__Pkg__Api__V1alpha1__Container *c, char **cpus,
                   char **mems, cp_error_t *why)
{
  *cpus = *mems = NULL;
  struct cp_dra_tag tags[CP_NRI_MAX_CLAIM_TAGS];
  size_t n = cp_nri_claim_tags (p, c, tags, CP_ARRAY_SIZE (tags));
  if (n == 0)
    return 0;
  cleanup_bitmap hwloc_bitmap_t set = cp_bitmap_new ();
  cleanup_bitmap hwloc_bitmap_t nodes = cp_bitmap_new ();
  int r = cp_dra_container_cpus (p->hc, tags, n, set, nodes, why);
  if (r == 0)
    r = -1; /* *WHY names the claim and the result not prepared */
  if (r < 0)
    return cp_error_wrap (why, "container %s", c->id);
  *cpus = cp_cpulist_format (set);
  *mems = hwloc_bitmap_iszero (nodes) ? NULL : cp_cpulist_format (nodes);
  cleanup_free char *which = tags_text (tags, n);
  cp_log (CP_LOG_INFO, "container %s has DRA claim %s: cpus %s mems %s", c->id, which, *cpus,
          *mems ? *mems : "kept");
  return 1;
}
