/* `cachepin nri`: what a container asks of what is made once it runs (its
 * core-scheduling cookie, its partition: hook/engine/started.h says how each is
 * split between CreateContainer and the start), read from what the event carries,
 * and the cookie made through the engine when it has a process. */
#define _GNU_SOURCE
#include <string.h>

#include "nri_plugin.h"
#include "annotations.h"
#include "log.h"
#include "started.h"
#include "util.h"

typedef Nri__Pkg__Api__V1alpha1__Container nri_container;
typedef Nri__Pkg__Api__V1alpha1__PodSandbox nri_pod;

/* What C (of POD) asks for of what is made once it runs: its annotations read as
   CreateContainer reads them.  Annotations that do not read ask nothing here
   (CreateContainer refused them). */
struct cp_nri_asks
cp_nri_asks_of (const struct cp_hostconfig *hc, const nri_pod *pod, const nri_container *c)
{
  struct cp_annotations ann = { 0 };
  struct cp_oci_config cfg = { 0 };
  struct cp_limits limits;
  struct cp_container_request creq = { 0 };
  cleanup_error cp_error_t e = NULL;
  struct cp_nri_asks asks = { 0 };
  if (cp_nri_annotations_of (pod, c, &ann, &e) == 0 && cp_annotations_wants_cachepin (&ann)
      && cp_nri_config_of (c, &cfg, &e) == 0
      && cp_annotations_to_request (&ann, &hc->defaults, cp_oci_config_limits (&cfg, &limits), &creq, &e) == 0)
    asks = (struct cp_nri_asks) { .core_sched = creq.core_sched, .isolate = creq.isolate };
  cp_oci_config_free (&cfg);
  cp_annotations_free (&ann);
  return asks;
}

void
cp_nri_core_sched_start (const struct cp_nri_plugin *p, const nri_pod *pod, const nri_container *c)
{
  if (c == NULL || c->id == NULL || c->id[0] == '\0' || c->pid == 0)
    return; /* no process yet: a later event, or the resync, has it */
  cp_log (CP_LOG_DEBUG, "nri: %s has process %u", c->id, (unsigned) c->pid);
  if (!cp_started_core_sched_there () || !cp_nri_asks_of (p->hc, pod, c).core_sched)
    return; /* not asked, or said at CreateContainer */
  cp_started_core_sched_make (p->hc, &p->owner, c->id, (pid_t) c->pid);
}
