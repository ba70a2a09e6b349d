/* `cachepin nri`: isolation (cachepin.io/isolate) once the container runs: its
 * cgroup, as its linux.cgroupsPath names it, given to the engine, which makes the
 * partition (hook/engine/started.h says how the request is split between
 * CreateContainer and the start). */
#define _GNU_SOURCE
#include <string.h>

#include "nri_plugin.h"
#include "locate.h"
#include "log.h"
#include "started.h"
#include "util.h"

void
cp_nri_isolate_start (const struct cp_hostconfig *hc, const Nri__Pkg__Api__V1alpha1__PodSandbox *pod,
                      const Nri__Pkg__Api__V1alpha1__Container *c)
{
  if (!cp_started_isolate_there () || c == NULL || c->id == NULL || c->id[0] == '\0' || c->pid == 0
      || !cp_nri_asks_of (hc, pod, c).isolate)
    return; /* said at start-up and at CreateContainer, no process yet, or not asked */
  struct cp_oci_config cfg = { 0 };
  cleanup_free char *mount = NULL, *cgroup = NULL;
  cleanup_error cp_error_t why = NULL;
  int r = cp_nri_config_of (c, &cfg, &why);
  if (r == 0)
    r = cp_locate_cgroup (c->id, &cfg, NULL, &mount, &cgroup, &why);
  cp_oci_config_free (&cfg);
  if (r == 0)
    {
      const struct cp_target t = { .id = c->id, .cgroup_mount = mount, .cgroup_path = cgroup, .pid = (pid_t) c->pid };
      r = cp_started_isolate_make (hc, &t, &why);
    }
  if (r < 0)
    cp_log (CP_LOG_WARNING, "%s asks cachepin.io/isolate, runs without it: %s", c->id, cp_error_message (why));
}
