/* `cachepin nri`: core scheduling (cachepin.io/core-sched), whose cookie needs the
 * container's process.
 *
 * The hook makes the cookie at createRuntime, where it knows the pid
 * (cp_admit_core_sched()).  The plugin decides at CreateContainer, when the
 * container has no process yet (containerd gives Container.pid 0 there), so the
 * request is split in two:
 *  1. CreateContainer (cp_nri_core_sched_admit()): what can be decided without the
 *     pid, from core scheduling as probed once at start-up, before the sandbox
 *     (cp_sched_core_probe(), the hook's probe): unavailable and strict, the
 *     creation fails with the hook's line; unavailable and not strict, it is placed
 *     and the reason said once; available, it is placed and the cookie is wanted.
 *  2. StartContainer and PostCreateContainer (cp_nri_core_sched_start()), the
 *     events that carry the pid (containerd: StartContainer, after the task is
 *     created and before it is started, so that every thread and child inherits
 *     the cookie; CRI-O creates the process before PostCreateContainer), and the
 *     resync for a running container: the cookie is made on the pid
 *     (PR_SCHED_CORE_CREATE, the thread group) and the entry then records
 *     core_sched: true (cp_placer_record_core_sched(), under the ledger's lock).
 *     The events are notifications: a failure is one line, never the container's.
 *
 * "Wanted, not made" is not a ledger field: the ledger's core_sched keeps its
 * meaning (asked and got), and the want is read again from what the event
 * carries: the container's (and its pod's) annotations ask for core-sched, the
 * probe said available, and the plugin's entry of the container (cp_ledger_entry_origin():
 * not one the hook took over and gave its own cookie) says core_sched: false.
 *
 * In the sandbox the plugin cannot make a cookie itself (sched_core_helper.h:
 * Landlock refuses another domain's process): a helper forked before it makes
 * them, started only where the probe says core scheduling is there. */
#define _GNU_SOURCE
#include <string.h>

#include "nri_plugin.h"
#include "admission.h"
#include "annotations.h"
#include "ledger.h"
#include "log.h"
#include "placer.h"
#include "sandbox.h"
#include "sched.h"
#include "sched_core_helper.h"
#include "util.h"

typedef Nri__Pkg__Api__V1alpha1__Container nri_container;
typedef Nri__Pkg__Api__V1alpha1__PodSandbox nri_pod;

static struct cp_sched_core probe;
static bool probed;
static struct cp_sched_core_helper helper = CP_SCHED_CORE_HELPER_INIT;

/* The probe's result; probed now when nobody did (a test, unsandboxed). */
static const struct cp_sched_core *
core_state (void)
{
  if (!probed)
    {
      cleanup_error cp_error_t e = NULL;
      if (cp_sched_core_probe ("/", &probe, &e) < 0)
        probe = (struct cp_sched_core) { .avail = CP_SCHED_CORE_DENIED, .errnum = cp_error_errno (e), .smt_active = -1 };
      probed = true;
    }
  return &probe;
}

void
cp_nri_core_sched_pin (const struct cp_sched_core *p)
{
  probe = *p;
  probed = true;
}

void
cp_nri_core_sched_init (const struct cp_hostconfig *hc)
{
  probed = false;
  const struct cp_sched_core *s = core_state ();
  cp_log (CP_LOG_INFO, "nri: core scheduling: %s", cp_sched_core_avail_name (s->avail));
  if (s->avail != CP_SCHED_CORE_SUPPORTED || !hc->sandbox || CP_SANDBOX_SANITIZER_BUILD || helper.fd >= 0)
    return; /* no cookie to make, or made by this process (no Landlock) */
  cleanup_error cp_error_t e = NULL;
  if (cp_sched_core_helper_start (&helper, &e) < 0)
    cp_log (CP_LOG_WARNING, "nri: no core-scheduling helper, cookies will be refused in the sandbox: %s",
            cp_error_message (e));
}

void
cp_nri_core_sched_stop (void)
{
  cp_sched_core_helper_stop (&helper);
}

int
cp_nri_core_sched_admit (const struct cp_hostconfig *hc, const char *id, const struct cp_container_request *creq,
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

/* ID's entry is the plugin's and has no cookie yet (the ledger locked only while
   it is read). */
static bool
entry_lacks_cookie (const struct cp_hostconfig *hc, const char *id)
{
  struct cp_ledger *l = NULL;
  cleanup_error cp_error_t e = NULL;
  if (cp_placer_open_ledger (hc, &l, &e) < 0)
    {
      cp_log (CP_LOG_WARNING, "%s: no core-scheduling cookie, the ledger could not be read: %s", id,
              cp_error_message (e));
      return false;
    }
  const struct cp_ledger_entry *entry = cp_ledger_find (l, id);
  bool lacks = entry && cp_ledger_entry_origin (entry) == CP_ORIGIN_NRI && !entry->core_sched;
  cp_ledger_close (l);
  return lacks;
}

void
cp_nri_core_sched_start (const struct cp_hostconfig *hc, const nri_pod *pod, const nri_container *c)
{
  if (c == NULL || c->id == NULL || c->id[0] == '\0' || c->pid == 0)
    return; /* no process yet: a later event, or the resync, has it */
  cp_log (CP_LOG_DEBUG, "nri: %s has process %u", c->id, (unsigned) c->pid);
  if (core_state ()->avail != CP_SCHED_CORE_SUPPORTED || !cp_nri_asks_of (hc, pod, c).core_sched
      || !entry_lacks_cookie (hc, c->id))
    return; /* not asked, said at CreateContainer, or made already */
  pid_t pid = (pid_t) c->pid;
  cleanup_error cp_error_t why = NULL;
  int r = helper.fd >= 0 ? cp_sched_core_helper_create (&helper, pid, &why) : cp_sched_core_create (pid, &why);
  if (r < 0)
    {
      cp_log (CP_LOG_WARNING, "%s asks cachepin.io/core-sched, runs without it: %s", c->id, cp_error_message (why));
      return;
    }
  if (cp_placer_record_core_sched (hc, c->id, &why) < 0)
    cp_log (CP_LOG_WARNING, "%s: core-scheduling cookie for process %d, not recorded: %s", c->id, (int) pid,
            cp_error_message (why));
  else
    cp_log (CP_LOG_INFO, "%s: core-scheduling cookie for process %d", c->id, (int) pid);
}
