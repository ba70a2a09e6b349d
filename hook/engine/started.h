/* cachepin: what a front end that places a container before it runs (the NRI
 * agent) makes once the container has a process: its core-scheduling cookie
 * (cachepin.io/core-sched) and its isolated partition (cachepin.io/isolate), each
 * with a helper process forked before the front end's sandbox (started.c says how
 * each request is split between CreateContainer and the start). */
#ifndef CP_STARTED_H
#define CP_STARTED_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "hostconfig.h"
#include "owner.h"
#include "placer.h"
#include "request.h"

/* ---- core scheduling ---- */

/* At start-up, before the sandbox: core scheduling probed as the hook probes it,
   and where it is there and HC sandboxes the front end, the helper that makes the
   cookies (sched_core_helper.h) started.  Logged; never fails. */
void cp_started_core_sched_init (const struct cp_hostconfig *hc);
void cp_started_core_sched_stop (void);

/* Tests: the probe's result pinned (the prctl itself stays real). */
struct cp_sched_core;
void cp_started_core_sched_pin (const struct cp_sched_core *probe);

/* Whether cookies can be made here (the probe said so). */
bool cp_started_core_sched_there (void);

/* CreateContainer's part for container ID asking CREQ: 0 (not asked; or wanted,
   made at start; or unavailable and not strict, said once), -1 (unavailable and
   strict: *WHY, the hook's line, through the failure policy). */
int cp_started_core_sched_admit (const struct cp_hostconfig *hc, const char *id,
                                 const struct cp_container_request *creq, cp_error_t *why);

/* Container ID, which asks for core scheduling, has process PID: the cookie made
   when core scheduling is there and OWNER's entry of ID has none yet, then
   recorded (core_sched: true).  Logged, never a failure. */
void cp_started_core_sched_make (const struct cp_hostconfig *hc, const struct cp_owner *owner, const char *id,
                                 pid_t pid);

/* ---- isolation ---- */

/* At start-up, before the sandbox: whether this host makes cgroup v2 partitions
   (cp_partition_supported_host()), and where it does and HC sandboxes the front
   end, the helper that writes them (partition_helper.h) started and partition.c's
   files routed through it.  CreateContainer then grants an isolated request (or
   says why not, cp_isolate_later()), and runs repair partitions.  Logged; never
   fails. */
void cp_started_isolate_init (const struct cp_hostconfig *hc);
void cp_started_isolate_stop (void);

/* Whether partitions are made here (init found them supported). */
bool cp_started_isolate_there (void);

/* T (an id, its cgroup's mount and path, its process) asks cachepin.io/isolate and
   runs: its partition made on its entry's CPUs (cp_placer_isolate_started()), the
   helper shown the process first.  < 0 (*WHY) when it runs without. */
int cp_started_isolate_make (const struct cp_hostconfig *hc, const struct cp_target *t, cp_error_t *why);

#endif
