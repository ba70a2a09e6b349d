/* `cachepin nri`: isolation (cachepin.io/isolate), whose partition needs the
 * container's cgroup.
 *
 * The hook makes the partition at createRuntime, after it wrote the cpuset
 * (cp_isolate_apply()).  The plugin decides at CreateContainer, before the runtime
 * made the cgroup, so the request is split as core scheduling's is (nri_start.c):
 *  1. at start-up, before the sandbox (cp_nri_isolate_init()): does this host make
 *     partitions (cgroup v2, cpuset.cpus.exclusive)?  If not, CreateContainer says
 *     why, once per container, or refuses a strict one (cp_isolate_later());
 *  2. CreateContainer: the host setting, then the placement made off the host's
 *     kept cores and judged by the rule, as the hook's (cp_isolate_open(),
 *     cp_isolate_decide(): a strict request is refused there, with the hook's line);
 *  3. StartContainer (and PostCreateContainer, and the resync for a running
 *     container): the cgroup exists and holds the pid; the partition is made on
 *     the entry's CPUs (cp_placer_isolate_started(): the same writes, read-back and
 *     records as the hook's).  The container runs already: a kernel that refuses
 *     is undone and said, strict or not (docs/isolation.md).
 * The writes go through the partition helper (partition_helper.h), shown the
 * container's process first; a release, and the repair of a run cut short, only
 * give CPUs back, which the helper does for any cgroup. */
#define _GNU_SOURCE
#include <linux/capability.h>
#include <string.h>

#include "nri_plugin.h"
#include "caps.h"
#include "isolation.h"
#include "log.h"
#include "partition.h"
#include "partition_helper.h"
#include "placer.h"
#include "sandbox.h"
#include "util.h"

static struct cp_partition_helper helper = CP_PARTITION_HELPER_INIT;
static char *unsupported; /* why this host makes no partition (NULL: it does) */

/* No partition from this plugin, because WHY: said, and left so. */
static void
not_here (char *why)
{
  free (unsupported);
  unsupported = why;
  cp_isolate_later (unsupported);
  cp_isolate_repairs (false); /* the next hook or apply repairs */
  cp_log (CP_LOG_INFO, "nri: isolation (cachepin.io/isolate): unsupported here (%s)", unsupported);
}

void
cp_nri_isolate_init (const struct cp_hostconfig *hc)
{
  if (hc->isolate == CP_ISOLATE_DENY)
    {
      not_here (cp_xstrdup ("host setting isolate is deny"));
      return;
    }
  cleanup_free char *mount = NULL;
  char *why = NULL;
  cleanup_error cp_error_t e = NULL;
  int r = cp_partition_supported_host (&mount, &why, &e);
  if (r < 0)
    why = cp_xasprintf ("could not tell: %s", cp_error_message (e));
  if (r != 1)
    {
      not_here (why);
      return;
    }
  free (why);
  /* The kernel makes a remote partition only for a writer with CAP_SYS_ADMIN: without it
     every one would read `root invalid (Enable partition not permitted)` at start, after a
     strict request was let through at CreateContainer. */
  if (!cp_caps_effective (CAP_SYS_ADMIN))
    {
      not_here (cp_xstrdup ("the plugin runs without CAP_SYS_ADMIN, which the kernel asks to make a partition"));
      return;
    }
  /* Sandboxed, the plugin writes no cgroup file: the helper does (a sanitizer
     build loads no sandbox, and writes them itself). */
  if (hc->sandbox && !CP_SANDBOX_SANITIZER_BUILD)
    {
      if (cp_partition_helper_start (&helper, mount, &e) < 0)
        {
          not_here (cp_xasprintf ("no partition helper: %s", cp_error_message (e)));
          return;
        }
      cp_partition_helper_use (&helper);
    }
  cp_isolate_later (NULL);
  cp_isolate_repairs (true);
  cp_log (CP_LOG_INFO, "nri: isolation (cachepin.io/isolate): cgroup v2 partitions under %s, made at "
                       "StartContainer%s", mount, helper.fd >= 0 ? " by a helper process" : "");
}

void
cp_nri_isolate_stop (void)
{
  cp_partition_helper_stop (&helper);
  free (unsupported);
  unsupported = NULL;
  cp_isolate_later ("no cgroup yet");
}

void
cp_nri_isolate_start (const struct cp_hostconfig *hc, const Nri__Pkg__Api__V1alpha1__PodSandbox *pod,
                      const Nri__Pkg__Api__V1alpha1__Container *c)
{
  if (unsupported || c == NULL || c->id == NULL || c->id[0] == '\0' || c->pid == 0
      || !cp_nri_asks_of (hc, pod, c).isolate)
    return; /* said at start-up and at CreateContainer, no process yet, or not asked */
  struct cp_oci_config cfg = { 0 };
  cleanup_free char *mount = NULL, *cgroup = NULL;
  cleanup_error cp_error_t why = NULL;
  int r = cp_nri_config_of (c, &cfg, &why);
  if (r == 0)
    r = cp_nri_cgroup_of (c->id, &cfg, NULL, &mount, &cgroup, &why);
  cp_oci_config_free (&cfg);
  pid_t pid = (pid_t) c->pid;
  if (r == 0 && helper.fd >= 0)
    r = cp_partition_helper_grant (&helper, pid, cgroup, &why);
  if (r == 0)
    {
      const struct cp_target t = { .id = c->id, .cgroup_mount = mount, .cgroup_path = cgroup, .pid = pid };
      r = cp_placer_isolate_started (hc, &t, &why);
    }
  if (r < 0)
    cp_log (CP_LOG_WARNING, "%s asks cachepin.io/isolate, runs without it: %s", c->id, cp_error_message (why));
}
