/* cachepin: around the engine's steps, what every front end shares (front.c):
 * the sandbox, a placement, a batch and a release run through the steps
 * (placer.h), and the journal of their decisions (journal.h). */
#ifndef CP_FRONT_H
#define CP_FRONT_H

#include <stdbool.h>

#include "error.h"
#include "hostconfig.h"
#include "journal.h"
#include "placer.h"
#include "sandbox.h"


/* The name of what this run places or releases, from RAW (an engine's
   annotations, `apply --name`: user text): kept cut to CP_LEDGER_MAX_NAME bytes
   and cleaned (policy/base/text.h) for its ledger entry and every journal record
   of its decisions.  Returns the kept name, NULL when RAW is NULL or nothing is
   left of it.  One process runs one command: one name. */
const char *cp_front_set_name (const char *raw);

/* ---- around the engine's steps (front.c) ---- */

/* Enter the sandbox keeping what SB says, unless HC says `sandbox: false`;
   logged at debug level (which kind of sandbox). */
int cp_front_enter_sandbox (const struct cp_hostconfig *hc, const struct cp_sandbox *sb, cp_error_t *err);

/* How a front end judges a placement that failed (the hook:
   cp_admission_host_failure(), which starts the container unplaced or fails it);
   NULL: the failure stands (apply). */
typedef int (*cp_front_judge_fn) (const struct cp_hostconfig *hc, bool strict, const char *id, cp_error_t *err);

/* A placement through the engine's steps (placer.h): open, the journal
   (journal.h, on the ledger's directory, before the sandbox), the sandbox,
   decide, apply; a failure judged by JUDGE; the decision recorded in the journal
   as FRONT's; the ledger is unlocked when it returns.  Returns 0 with *PLAN_OUT
   the plan applied, 1 when JUDGE let the target go unplaced (*PLAN_OUT NULL), < 0
   on a failure.  The sandbox stays after the call returns. */
int cp_front_place (const struct cp_hostconfig *hc, enum cp_journal_front front, const struct cp_target *target,
                    const struct cp_container_request *creq, cp_front_judge_fn judge, struct cp_plan **plan_out,
                    cp_error_t *err);

/* Many placements at once (the NRI plugin's Synchronize), through the engine's
   batch (placer.h: targets whose cgroup is named and not made yet): open, each
   placed as cp_front_place() places (a failure judged by JUDGE; 0, 1 or < 0 as
   there), then committed once, the ledger first and then the journal's records of
   the placements; nothing of them is recorded when the ledger's commit fails
   (the caller then tells nobody of them).  Close unlocks, dropping what was not
   committed. */
struct cp_front_batch;
int cp_front_batch_open (const struct cp_hostconfig *hc, enum cp_journal_front front, struct cp_front_batch **out,
                         cp_error_t *err);
int cp_front_batch_place (struct cp_front_batch *cb, const struct cp_target *target,
                          const struct cp_container_request *creq, cp_front_judge_fn judge, struct cp_plan **plan_out,
                          cp_error_t *err);
int cp_front_batch_commit (struct cp_front_batch *cb, cp_error_t *err);
/* /proc/self/cgroup and mountinfo as the batch read them at open (cgroup.h). */
const struct cp_cgroup_snapshot *cp_front_batch_mounts (const struct cp_front_batch *cb);
void cp_front_batch_close (struct cp_front_batch *cb);
static inline void
cp_front_batch_closep (struct cp_front_batch **cb)
{
  cp_front_batch_close (*cb);
}
#define cleanup_front_batch __attribute__ ((cleanup (cp_front_batch_closep)))

/* A long-running front end (`cachepin nri`) places one container after another in
   one process: the sandbox a run enters before its decision would stay for the
   next ones, so cp_front_place() and cp_front_release() enter none after this is
   called (cp_front_enter_plugin_sandbox() calls it: its profile covers them). */
void cp_front_stay_unsandboxed (void);

/* The plugin's sandbox (sandbox.h, CP_SANDBOX_PLUGIN), entered once for the rest
   of the process, unless HC says `sandbox: false`: the state directory (made if
   missing) and the topology cache (discovered now if stale, so that requests
   read it) ready first, then the directories its requests read beneath: /proc,
   /sys (the cgroup mounts with it) and the kubelet state's.  The runtime's
   connection and syslog's socket are opened before.  L (may be NULL) is the
   agent's HTTP listener, bound before (nri_http.h): accept on its socket and epoll
   on its set allowed (-1: none).  Fails (*ERR) when the state directory cannot be
   had or the sandbox cannot be set up. */
struct cp_front_listener
{
  int listen_fd, epoll_fd;
  /* The kubelet plugin's gRPC servers (nri_kubelet.h), bound before: accept on
     its sockets, epoll on its set, and the sockets' removal beneath GRPC_DIRS
     allowed (GRPC_EPOLL_FD -1: none). */
  int grpc_listen_fds[2];
  int grpc_epoll_fd;
  const char *grpc_dirs[2];
  /* The CDI spec directory held (cdi.h), where claims' specs are written (-1: none). */
  int cdi_dirfd;
};
int cp_front_enter_plugin_sandbox (const struct cp_hostconfig *hc, const struct cp_front_listener *l,
                                   cp_error_t *err);

/* A release through the engine's steps: open, the journal, the sandbox, commit;
   a release done is recorded as FRONT's. */
int cp_front_release (const struct cp_hostconfig *hc, enum cp_journal_front front, const struct cp_release *rel,
                      enum cp_release_result *result, cp_error_t *err);

/* ---- the journal of decisions (front.c) ----

   One decision per run, recorded where it is made: into the journal the engine's
   steps opened before the sandbox when there is one, else (a run refused before
   it opened the ledger, whose lock timed out) with cp_journal_note() in
   STATE_DIR, never from inside the sandbox (no flock there).  Advisory: a
   failure is logged once and changes nothing else. */
void cp_front_journal (const char *state_dir, const struct cp_journal_record *r);

/* The admission policy's decisions (admission.h) recorded as FRONT's in the
   journal of HC's state directory (HC must outlive the run). */
void cp_front_journal_admissions (const struct cp_hostconfig *hc, enum cp_journal_front front);

#endif
