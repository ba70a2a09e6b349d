#define _GNU_SOURCE
#include "admission.h"

#include <errno.h>
#include <unistd.h>

#include "util.h"
#include "proc.h"
#include "sched.h"

static cp_admission_recorder_fn recorder;
static void *recorder_data;

void
cp_admission_set_recorder (cp_admission_recorder_fn fn, void *data)
{
  recorder = fn;
  recorder_data = data;
}

int
cp_admission_allow_or_fail (const struct cp_hostconfig *hc, bool strict, const char *id, enum cp_log_level level,
                            cp_error_t *err)
{
  bool fails = strict || (hc && hc->on_error == CP_ON_ERROR_DENY);
  if (recorder)
    recorder (id, fails, cp_error_message (*err), cp_error_kind (*err), recorder_data);
  if (fails)
    {
      cp_log_syslog (CP_LOG_ERROR, "container %s not started: %s", id, cp_error_message (*err));
      return -1;
    }
  cp_log (level, "container %s starts unplaced: %s", id, cp_error_message (*err));
  cp_error_free (err);
  return 0;
}

int
cp_admission_refuse (const char *id, cp_error_t *err)
{
  return cp_admission_allow_or_fail (NULL, true, id, CP_LOG_ERROR, err);
}

void
cp_admission_host_kind (cp_error_t err)
{
  if (cp_error_kind (err) == CP_ERR_INPUT)
    cp_error_reclassify (err, CP_ERR_RUNTIME);
}

int
cp_admission_host_failure (const struct cp_hostconfig *hc, bool strict, const char *id, cp_error_t *err)
{
  cp_admission_host_kind (*err);
  return cp_admission_allow_or_fail (hc, strict, id, CP_LOG_WARNING, err);
}

bool
cp_admission_exhausted (cp_error_t err)
{
  switch (cp_error_errno (err))
    {
    case EMFILE:
    case ENFILE:
    case ENOMEM:
    case EFBIG:
    case ENOSPC:
    case EDQUOT:
      return true;
    default:
      return false;
    }
}

int
cp_admit_pid (pid_t pid, cp_error_t *err)
{
  if (pid == 1 || pid == getpid () || pid == getppid ())
    return cp_fail_input (err, "state: pid: %d is %s, not a container's init", (int) pid,
                          pid == 1 ? "the init of this pid namespace"
                          : pid == getpid () ? "this hook"
                                             : "the runtime running this hook");
  return 0;
}

int
cp_admit_pid_cgroup (pid_t pid, const struct cp_cgroup *cg, const char *named, cp_error_t *err)
{
  if (named == NULL || cp_cgroup_path_within (cg->path, named))
    return 0;
  return cp_fail_input (err,
                        "state: pid: process %d is in cgroup %s, outside %s, the cgroup config.json's "
                        "linux.cgroupsPath names",
                        (int) pid, cg->path, named);
}

int
cp_admit_cgroup_alone (pid_t pid, const struct cp_cgroup *cg, cp_error_t *err)
{
  pid_t foreign = 0;
  if (cp_cgroup_foreign_process (cg, pid, &foreign, err) < 0)
    return cp_error_wrap (err, "cgroup %s%s", cg->mount, cg->path);
  if (foreign)
    return cp_fail_runtime (err,
                            "cgroup %s%s also holds process %d, which is not the container's (not %d nor one of "
                            "its descendants); refusing to pin a shared cgroup",
                            cg->mount, cg->path, (int) foreign, (int) pid);
  return 0;
}

/* Core scheduling unavailable for ID (the kernel's errno E, *ERR its error):
   strict, a refusal in the hook's words; else started without it, said once. */
static int
core_sched_unavailable (const char *id, int e, bool strict, cp_error_t *err)
{
  const char *why = e == EINVAL   ? "this kernel has no core scheduling (CONFIG_SCHED_CORE)"
                    : e == ENODEV ? "this machine has no SMT (or it is off)"
                                  : NULL;
  if (strict && why)
    {
      cp_error_free (err);
      return cp_fail_unsatisfiable (err, "cachepin.io/core-sched: %s", why);
    }
  if (strict)
    return -1;
  cp_log (CP_LOG_WARNING, "%s asks cachepin.io/core-sched, started without it: %s", id,
          why ? why : cp_error_message (*err));
  cp_error_free (err);
  return 0;
}

int
cp_admit_core_sched (const char *id, pid_t pid, bool strict, bool *got, cp_error_t *err)
{
  *got = false;
  if (cp_sched_core_create (pid, err) == 0)
    {
      *got = true;
      cp_log (CP_LOG_INFO, "%s: core-scheduling cookie for process %d", id, (int) pid);
      return 0;
    }
  return core_sched_unavailable (id, cp_error_errno (*err), strict, err);
}

int
cp_admit_core_sched_probed (const char *id, const struct cp_sched_core *probe, bool strict, bool *wanted,
                            cp_error_t *err)
{
  *wanted = probe->avail == CP_SCHED_CORE_SUPPORTED;
  if (*wanted)
    return 0;
  cp_fail_errno (err, probe->errnum, "core scheduling: prctl(PR_SCHED_CORE_GET) (%s)",
                 cp_sched_core_avail_name (probe->avail));
  return core_sched_unavailable (id, probe->errnum, strict, err);
}

/* The checks past the pid and rootless, on the cgroup found from the pid: < 0
   with *REFUSED set for the container's own error, else the host's. */
static int
admit_cgroup (const struct cp_admission *a, struct cp_admitted *out, bool *refused, cp_error_t *err)
{
  if (cp_cgroup_from_pid (a->pid, &out->cgroup, err) < 0)
    return cp_error_wrap (err, "container process %d", (int) a->pid);
  if (cp_admit_pid_cgroup (a->pid, out->cgroup, a->cgroup, err) < 0)
    {
      *refused = true;
      return -1;
    }
  if (cp_admit_cgroup_alone (a->pid, out->cgroup, err) < 0)
    return -1;
  if (a->creq->core_sched)
    return cp_admit_core_sched (a->id, a->pid, a->creq->req.strict, &out->core_sched, err);
  return 0;
}

int
cp_admit (const struct cp_hostconfig *hc, const struct cp_admission *a, struct cp_admitted *out, cp_error_t *err)
{
  *out = (struct cp_admitted) { 0 };
  bool strict = a->creq->req.strict;
  if (cp_admit_pid (a->pid, err) < 0)
    return cp_admission_refuse (a->id, err);
  /* Said up front, in one line, rather than as whichever EACCES comes first. */
  cleanup_free char *rootless = cp_proc_rootless_reason ();
  if (rootless)
    {
      cp_fail_unsatisfiable (err, "rootless: not supported (%s)", rootless);
      return cp_admission_host_failure (hc, strict, a->id, err);
    }
  bool refused = false;
  if (admit_cgroup (a, out, &refused, err) < 0)
    {
      cp_admitted_clear (out);
      return refused ? cp_admission_refuse (a->id, err) : cp_admission_host_failure (hc, strict, a->id, err);
    }
  return 1;
}

void
cp_admitted_clear (struct cp_admitted *a)
{
  cp_cgroup_free (a->cgroup);
  *a = (struct cp_admitted) { 0 };
}
