/* cachepin: admitting a container, and the failure policy for one that asked.
 *
 * Every front end (the OCI hook, a long-running plugin) runs the same checks
 * before a placement and judges a failure the same way, so both live here and
 * take plain inputs (a pid, a cgroup, the request, the host config), never the
 * front end's own input structs.
 *
 * The failure policy: a container that asked (it has a cachepin.io/ annotation;
 * one that did not is never touched and never failed, and the front end decides
 * that first) fails when what it asked, or what its state says, is wrong: that is
 * the container's error (cp_admission_refuse()).  Anything else that goes wrong
 * (the host cannot meet the request, the cgroup or the ledger fails) fails it only
 * when it asked for strict or the host config says on_error=deny; otherwise it
 * starts where the runtime put it and the reason is logged
 * (cp_admission_host_failure()).
 *
 * Who logs: the policy calls log what they decide (to syslog and stderr for a
 * container that starts unplaced, to syslog only for one that fails: main()
 * prints that error on stderr); the checks only return errors. */
#ifndef CP_ADMISSION_H
#define CP_ADMISSION_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "log.h"
#include "request.h"
#include "cgroup.h"
#include "hostconfig.h"

/* ---- the failure policy --------------------------------------------------------- */

/* The policy's primitive: returns 0 (the container starts unplaced; ERR is logged
 * at LEVEL on stderr and in syslog, then freed) or -1 (it fails with ERR, logged
 * to syslog only).  It fails when STRICT, or when HC (NULL: the defaults, which
 * allow) says on_error=deny. */
int cp_admission_allow_or_fail (const struct cp_hostconfig *hc, bool strict, const char *id, enum cp_log_level level,
                                cp_error_t *err);

/* Who is told each decision the policy makes (a front end's journal: the engine
 * does not write it): FN (NULL: nobody) with the container's ID, whether it FAILS
 * (false: it starts unplaced), WHY and the error's KIND (whose failure it is, for
 * the journal's counts); called before the policy logs and before ERR is freed.
 * One per process, set by the front end before it admits. */
typedef void (*cp_admission_recorder_fn) (const char *id, bool fails, const char *why, enum cp_error_kind kind,
                                          void *data);
void cp_admission_set_recorder (cp_admission_recorder_fn fn, void *data);

/* The container's own error (invalid annotations, a state that contradicts
 * itself): always -1, ERR logged to syslog as an error. */
int cp_admission_refuse (const char *id, cp_error_t *err);

/* The host's failure for a container that asked (cp_admission_host_kind(), then
 * cp_admission_allow_or_fail() at warning level): 0 or -1 as above. */
int cp_admission_host_failure (const struct cp_hostconfig *hc, bool strict, const char *id, cp_error_t *err);

/* The policy's one reclassification of an error (policy/base/error.h): past the
 * annotations nothing is the container's input.  A topology file that does not
 * load, a cgroup whose contents the ledger refuses, are input errors where they
 * are found (someone's input: the admin's, the kernel's text), but for this
 * container they are the host's failures: exit 1 when strict, never the exit 2
 * that tells the user that what the container asked is wrong. */
void cp_admission_host_kind (cp_error_t err);

/* Whether ERR is the host running out of something (descriptors, memory, file
 * size or disk): a system failure wherever it happens, never the container's. */
bool cp_admission_exhausted (cp_error_t err);

/* ---- the checks ------------------------------------------------------------------ */

/* PID names a container's init: never this pid namespace's init, the caller itself
 * or its parent (the runtime running a hook), whose cgroups are not the
 * container's.  An input error: the state contradicts itself. */
int cp_admit_pid (pid_t pid, cp_error_t *err);

/* When the container's config names its cgroup (NAMED: an absolute cgroupfs path
 * below the hierarchy's mount; NULL: not named), the cgroup PID is in (CG) must
 * be that one or below it; else the state and the config disagree about the
 * container (an input error). */
int cp_admit_pid_cgroup (pid_t pid, const struct cp_cgroup *cg, const char *named, cp_error_t *err);

/* CG holds the container alone (PID and what it started): pinning a cgroup
 * others share would pin them too (a runtime error). */
int cp_admit_cgroup_alone (pid_t pid, const struct cp_cgroup *cg, cp_error_t *err);

/* cachepin.io/core-sched=true: a core-scheduling cookie for PID, which its threads
 * and everything it starts inherit, so that no task of another container (or of
 * the host) runs on its cores' other hardware threads at the same time.  Made
 * before the sandbox (which allows no prctl).  Where the kernel cannot (no
 * CONFIG_SCHED_CORE, no SMT, not allowed): a warning, and the container starts
 * without it (0, *GOT false), or when STRICT a refusal (CP_ERR_UNSATISFIABLE for
 * what the kernel lacks).  *GOT says whether it has one.  ID names it in logs. */
int cp_admit_core_sched (const char *id, pid_t pid, bool strict, bool *got, cp_error_t *err);

/* The same decision where the process does not exist yet (the NRI plugin's
 * CreateContainer): PROBE, core scheduling as cp_sched_core_probe() found it on
 * this host, decides what can be decided before the pid is known.  Supported:
 * *WANTED true, 0 (the cookie is made once the process exists).  Not: *WANTED
 * false and cp_admit_core_sched()'s outcome for that errno (a warning and 0, or
 * when STRICT -1 with its refusal). */
struct cp_sched_core;
int cp_admit_core_sched_probed (const char *id, const struct cp_sched_core *probe, bool strict, bool *wanted,
                                cp_error_t *err);

/* ---- all of them ------------------------------------------------------------------ */

/* A container to admit, as any front end knows it. */
struct cp_admission
{
  const char *id;                          /* the container id (ledger id, log lines) */
  pid_t pid;                               /* its init process */
  const char *cgroup;                      /* the cgroup its config names (absolute cgroupfs path
                                              below the mount); NULL: not named */
  const struct cp_container_request *creq; /* what it asks (strict, core_sched) */
};

/* What admission found: the container's cgroup (found from its pid) and whether
 * it got a core-scheduling cookie.  Free with cp_admitted_clear(). */
struct cp_admitted
{
  struct cp_cgroup *cgroup;
  bool core_sched;
};

/* Admit A, with the failure policy applied: 1 when it is to be placed (*OUT
 * filled), 0 when it starts unplaced (logged), -1 when it fails (*ERR).  In
 * order: cp_admit_pid() (refused), not rootless (a rootless runtime runs its hooks
 * in its user namespace, where nothing may write the host's cgroups: the host's
 * failure), its cgroup from the pid (the host's), cp_admit_pid_cgroup() (refused),
 * cp_admit_cgroup_alone() and, when asked, cp_admit_core_sched() (the host's). */
int cp_admit (const struct cp_hostconfig *hc, const struct cp_admission *a, struct cp_admitted *out, cp_error_t *err);

void cp_admitted_clear (struct cp_admitted *a);
#define cleanup_admitted __attribute__ ((cleanup (cp_admitted_clear)))

#endif
