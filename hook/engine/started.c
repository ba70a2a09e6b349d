/* What a front end that places a container before it runs (the NRI agent) makes
 * once the container has a process (started.h): its core-scheduling cookie and its
 * isolated partition, each split in two as the hook's cannot be.
 *
 * Core scheduling: the hook makes the cookie at createRuntime, where it knows the
 * pid (cp_admit_core_sched()).  The agent decides at CreateContainer, when the
 * container has no process yet (containerd gives Container.pid 0 there):
 *  1. CreateContainer (cp_started_core_sched_admit()): what can be decided without
 *     the pid, from core scheduling as probed once at start-up, before the sandbox
 *     (cp_sched_core_probe(), the hook's probe): unavailable and strict, the
 *     creation fails with the hook's line; unavailable and not strict, it is placed
 *     and the reason said once; available, it is placed and the cookie is wanted.
 *  2. StartContainer and PostCreateContainer, the events that carry the pid
 *     (containerd: StartContainer, after the task is created and before it is
 *     started, so that every thread and child inherits the cookie; CRI-O creates
 *     the process before PostCreateContainer), and the resync for a running
 *     container (cp_started_core_sched_make()): the cookie is made on the pid
 *     (PR_SCHED_CORE_CREATE, the thread group) and the entry then records
 *     core_sched: true (cp_placer_record_core_sched(), under the ledger's lock).
 *     The events are notifications: a failure is one line, never the container's.
 * "Wanted, not made" is not a ledger field: the ledger's core_sched keeps its
 * meaning (asked and got), and the want is read again from what the event carries
 * (the front end's part), the probe said available, and the front end's own entry
 * of the container (owner.h: not one the hook took over and gave its own cookie)
 * says core_sched: false.  In the sandbox the agent cannot make a cookie itself
 * (sched_core_helper.h: Landlock refuses another domain's process): a helper forked
 * before it makes them, started only where the probe says core scheduling is there.
 *
 * Isolation: the hook makes the partition at createRuntime, after it wrote the
 * cpuset (cp_isolate_apply()).  The agent decides at CreateContainer, before the
 * runtime made the cgroup:
 *  1. at start-up, before the sandbox (cp_started_isolate_init()): does this host
 *     make partitions (cgroup v2, cpuset.cpus.exclusive)?  If not, CreateContainer
 *     says why, once per container, or refuses a strict one (cp_isolate_later());
 *  2. CreateContainer: the host setting, then the placement made off the host's
 *     kept cores and judged by the rule, as the hook's (cp_isolate_open(),
 *     cp_isolate_decide(): a strict request is refused there, with the hook's line);
 *  3. StartContainer (and PostCreateContainer, and the resync for a running
 *     container): the cgroup exists and holds the pid; the partition is made on the
 *     entry's CPUs (cp_started_isolate_make(), cp_placer_isolate_started(): the same
 *     writes, read-back and records as the hook's).  The container runs already: a
 *     kernel that refuses is undone and said, strict or not (docs/isolation.md).
 * The writes go through the partition helper (partition_helper.h), shown the
 * container's process first; a release, and the repair of a run cut short, only
 * give CPUs back, which the helper does for any cgroup. */
#define _GNU_SOURCE
#include "started.h"

#include <linux/capability.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "caps.h"
#include "entries.h"
#include "isolation.h"
#include "log.h"
#include "partition.h"
#include "partition_helper.h"
#include "sandbox.h"
#include "sched.h"
#include "sched_core_helper.h"
#include "util.h"

/* ---- core scheduling ---------------------------------------------------------- */

static struct cp_sched_core probe;
static bool probed;
static struct cp_sched_core_helper core_helper = CP_SCHED_CORE_HELPER_INIT;

/* The probe's result; probed now when nobody did (a test, unsandboxed). */
static const struct cp_sched_core *
core_state (void)
{
  if (!probed)
    {
      cleanup_error cp_error_t e = NULL;
      if (cp_sched_core_probe ("/", &probe, &e) < 0)
        probe = (struct cp_sched_core) {
          .avail = CP_SCHED_CORE_DENIED, .errnum = cp_error_errno (e), .smt_active = -1
        };
      probed = true;
    }
  return &probe;
}

void
cp_started_core_sched_pin (const struct cp_sched_core *p)
{
  probe = *p;
  probed = true;
}

void
cp_started_core_sched_init (const struct cp_hostconfig *hc)
{
  probed = false;
  const struct cp_sched_core *s = core_state ();
  cp_log (CP_LOG_INFO, "nri: core scheduling: %s", cp_sched_core_avail_name (s->avail));
  if (s->avail != CP_SCHED_CORE_SUPPORTED || !hc->sandbox || CP_SANDBOX_SANITIZER_BUILD || core_helper.fd >= 0)
    return; /* no cookie to make, or made by this process (no Landlock) */
  cleanup_error cp_error_t e = NULL;
  if (cp_sched_core_helper_start (&core_helper, &e) < 0)
    cp_log (CP_LOG_WARNING, "nri: no core-scheduling helper, cookies will be refused in the sandbox: %s",
            cp_error_message (e));
}

void
cp_started_core_sched_stop (void)
{
  cp_sched_core_helper_stop (&core_helper);
}

int
cp_started_core_sched_admit (const struct cp_hostconfig *hc, const char *id, const struct cp_container_request *creq,
                         cp_error_t *why)
{
  if (!creq->core_sched)
    return 0;
  bool wanted;
  if (cp_admit_core_sched_probed (id, core_state (), creq->req.strict, &wanted, why) < 0)
    return cp_admission_host_failure (hc, true, id, why); /* strict: it fails, in the policy's words */
  if (wanted)
    cp_log (CP_LOG_DEBUG, "%s: its core-scheduling cookie is made when its process exists", id);
  return 0;
}

/* ID's entry is the plugin's (OWNER's) and has no cookie yet (the ledger locked
   only while it is read). */
static bool
entry_lacks_cookie (const struct cp_hostconfig *hc, const struct cp_owner *owner, const char *id)
{
  cleanup_error cp_error_t e = NULL;
  struct cp_entry_view v;
  int found = cp_entries_read_one (hc, owner, id, &v, &e);
  if (found < 0)
    {
      cp_log (CP_LOG_WARNING, "%s: no core-scheduling cookie, the ledger could not be read: %s", id,
              cp_error_message (e));
      return false;
    }
  bool lacks = found && v.owned && !v.e.core_sched;
  if (found)
    cp_entry_view_clear (&v);
  return lacks;
}

bool
cp_started_core_sched_there (void)
{
  return core_state ()->avail == CP_SCHED_CORE_SUPPORTED;
}

void
cp_started_core_sched_make (const struct cp_hostconfig *hc, const struct cp_owner *owner, const char *id, pid_t pid)
{
  if (!cp_started_core_sched_there () || !entry_lacks_cookie (hc, owner, id))
    return; /* said at CreateContainer, or made already */
  cleanup_error cp_error_t why = NULL;
  int r = core_helper.fd >= 0 ? cp_sched_core_helper_create (&core_helper, pid, &why)
                              : cp_sched_core_create (pid, &why);
  if (r < 0)
    {
      cp_log (CP_LOG_WARNING, "%s asks cachepin.io/core-sched, runs without it: %s", id, cp_error_message (why));
      return;
    }
  if (cp_placer_record_core_sched (hc, id, &why) < 0)
    cp_log (CP_LOG_WARNING, "%s: core-scheduling cookie for process %d, not recorded: %s", id, (int) pid,
            cp_error_message (why));
  else
    cp_log (CP_LOG_INFO, "%s: core-scheduling cookie for process %d", id, (int) pid);
}

/* ---- isolation ------------------------------------------------------------------ */

static struct cp_partition_helper part_helper = CP_PARTITION_HELPER_INIT;
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
cp_started_isolate_init (const struct cp_hostconfig *hc)
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
      if (cp_partition_helper_start (&part_helper, mount, &e) < 0)
        {
          not_here (cp_xasprintf ("no partition helper: %s", cp_error_message (e)));
          return;
        }
      cp_partition_helper_use (&part_helper);
    }
  cp_isolate_later (NULL);
  cp_isolate_repairs (true);
  cp_log (CP_LOG_INFO, "nri: isolation (cachepin.io/isolate): cgroup v2 partitions under %s, made at "
                       "StartContainer%s", mount, part_helper.fd >= 0 ? " by a helper process" : "");
}

void
cp_started_isolate_stop (void)
{
  cp_partition_helper_stop (&part_helper);
  free (unsupported);
  unsupported = NULL;
  cp_isolate_later ("no cgroup yet");
}

bool
cp_started_isolate_there (void)
{
  return unsupported == NULL;
}

int
cp_started_isolate_make (const struct cp_hostconfig *hc, const struct cp_target *t, cp_error_t *why)
{
  if (unsupported)
    return cp_fail_runtime (why, "%s", unsupported);
  if (part_helper.fd >= 0 && cp_partition_helper_grant (&part_helper, t->pid, t->cgroup_path, why) < 0)
    return -1;
  return cp_placer_isolate_started (hc, t, why);
}
