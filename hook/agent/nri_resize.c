/* `cachepin nri`: an in-place resize (Kubernetes' InPlacePodVerticalScaling, or
 * `crictl update --cpu-quota`) of a container whose CPU count comes from its CPU limit.
 *
 * The runtime sends UpdateContainer with the container's new linux.resources.  A
 * container that named its count (cachepin.io/cpus) keeps its placement whatever the
 * update says (nri_events.c); one whose count is its quota / period (no cpus
 * annotation: annotations.c's fallback) asked for as many CPUs as its limit, and a new
 * limit is a new count: it is placed again through the engine, as CreateContainer
 * places it, its own CPUs counted free (the decision replaces its entry, the same
 * id and cgroup), and the answer carries the new cpuset.  The engine's rule decides
 * where (the tightest L3 that holds it: grown in its own when that one has room,
 * moved otherwise).  A request that cannot be met keeps the old placement: said in
 * one line, and for a strict container the update is refused with it (the runtime
 * then fails the resize, and the kubelet reports it). */
#define _GNU_SOURCE
#include <string.h>

#include "nri_plugin.h"
#include "annotations.h"
#include "bitmap.h"
#include "cpulist.h"
#include "log.h"
#include "util.h"

typedef Nri__Pkg__Api__V1alpha1__Container nri_container;
typedef Nri__Pkg__Api__V1alpha1__PodSandbox nri_pod;

/* C as it will be once the update is applied: its new resources, without the
   cpuset and nodes (the current ones are its placement, which would bound the new
   one to itself: the new placement's bounds are the parent's). */
struct resized
{
  nri_container c;
  Nri__Pkg__Api__V1alpha1__LinuxContainer linux_;
  Nri__Pkg__Api__V1alpha1__LinuxResources res;
  Nri__Pkg__Api__V1alpha1__LinuxCPU cpu;
};

static const nri_container *
resized_of (struct resized *r, const nri_container *c, const Nri__Pkg__Api__V1alpha1__LinuxResources *res)
{
  r->c = *c;
  r->linux_ = c->linux ? *c->linux : (Nri__Pkg__Api__V1alpha1__LinuxContainer) NRI__PKG__API__V1ALPHA1__LINUX_CONTAINER__INIT;
  r->res = *res;
  r->cpu = *res->cpu;
  r->cpu.cpus = NULL;
  r->cpu.mems = NULL;
  r->res.cpu = &r->cpu;
  r->linux_.resources = &r->res;
  r->c.linux = &r->linux_;
  return &r->c;
}

/* Placed again for CREQ (its count from the new limit) when PLACED has another
   count: as cp_nri_resize() returns. */
static int
place_again (struct cp_nri_plugin *p, const nri_container *c, const struct cp_oci_config *cfg,
             struct cp_container_request *creq, const char *placed, char **cpus, char **mems, cp_error_t *why)
{
  cleanup_error cp_error_t ignored = NULL;
  cleanup_bitmap hwloc_bitmap_t now = cp_bitmap_new ();
  if (cp_cpulist_parse (placed, 0, now, &ignored) < 0 || (unsigned) hwloc_bitmap_weight (now) == creq->req.cpus)
    return 0; /* the same count: nothing to do */
  unsigned before = (unsigned) hwloc_bitmap_weight (now);
  cleanup_plan struct cp_plan *plan = NULL;
  int r = cp_nri_place (p, NULL, c->id, cfg, creq, &plan, why);
  if (r == 0)
    {
      *cpus = cp_cpulist_format (plan->cpus);
      *mems = cp_cpulist_format (plan->mems);
      cp_log (CP_LOG_INFO, "resized %s: its limit asks %u CPUs (it had %u): cpus %s mems %s (were %s); %s", c->id,
              creq->req.cpus, before, *cpus, *mems, placed, plan->reason);
      return 1;
    }
  if (r < 0)
    {
      cp_log (CP_LOG_WARNING, "resize of %s to %u CPUs refused (strict), its placement %s stands: %s", c->id,
              creq->req.cpus, placed, cp_error_message (*why));
      return -1;
    }
  cp_log (CP_LOG_WARNING, "resize of %s to %u CPUs: not placed again, its placement %s stands", c->id, creq->req.cpus,
          placed);
  return 0;
}

int
cp_nri_resize (struct cp_nri_plugin *p, const nri_pod *pod, const nri_container *c,
               const Nri__Pkg__Api__V1alpha1__LinuxResources *res, const char *placed, char **cpus, char **mems,
               cp_error_t *why)
{
  *cpus = *mems = NULL;
  if (res == NULL || res->cpu == NULL || res->cpu->quota == NULL)
    return 0; /* no new limit */
  struct resized r;
  const nri_container *next = resized_of (&r, c, res);
  struct cp_annotations ann = { 0 };
  struct cp_oci_config cfg = { 0 };
  struct cp_limits limits;
  struct cp_container_request creq;
  cleanup_error cp_error_t ignored = NULL;
  int ret = 0;
  /* Its count is its limit's, and the request reads; else its placement stands. */
  if (cp_nri_annotations_of (pod, c, &ann, &ignored) == 0 && cp_annotations_wants_cachepin (&ann)
      && cp_nri_config_of (next, &cfg, &ignored) == 0
      && cp_annotations_to_request (&ann, &p->hc->defaults, cp_oci_config_limits (&cfg, &limits), &creq, &ignored) == 0
      && strcmp (creq.cpus_source, CP_CPUS_SOURCE_QUOTA) == 0)
    ret = place_again (p, c, &cfg, &creq, placed, cpus, mems, why);
  cp_oci_config_free (&cfg);
  cp_annotations_free (&ann);
  return ret;
}
