/* Around the engine's steps, what every front end shares: the sandbox a run
 * enters between opening and deciding (and the NRI agent's, once for its whole
 * run), a placement, a batch of them and a release run through the steps
 * (placer.h), and the journal of the decisions they make (journal.h), recorded
 * where they are made.  The hook, apply and the NRI agent call these; none records
 * its decisions alone. */
#define _GNU_SOURCE
#include "front.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "admission.h"
#include "caps.h"
#include "cgroup.h"
#include "events.h"
#include "ledger.h"
#include "log.h"
#include "sched.h"
#include "text.h"
#include "topocache.h"
#include "util.h"

/* The run's journal: open from before the sandbox (it takes its lock then, on
   the ledger's directory fd, the one the sandbox allows) until the decision is
   recorded.  A process runs one command, so one is enough. */
static struct
{
  struct cp_journal *open; /* between open and close in cp_front_place/release */
  bool sandboxed;          /* past cp_sandbox_enter(): no cp_journal_note() (flock) */
  bool warned;             /* a failure is logged once, and the journal not tried again */
  enum cp_journal_front front; /* who decides in this run */
  struct cp_journal_list pending; /* the engine's events (events.h) seen before it was open */
  bool queued;             /* records added to OPEN and not yet committed */
  char *name;              /* cp_front_set_name(): the name of this run's target, NULL: none */
} journal;

const char *
cp_front_set_name (const char *raw)
{
  free (journal.name);
  journal.name = raw ? cp_text_clean_copy (raw, CP_LEDGER_MAX_NAME) : NULL;
  if (journal.name && *journal.name == '\0')
    {
      free (journal.name);
      journal.name = NULL;
    }
  return journal.name;
}


static void
log_sandbox (enum cp_log_level level, const char *what, int abi)
{
  if (CP_SANDBOX_SANITIZER_BUILD)
    cp_log (level, "%s: no_new_privs only (a sanitizer build: see hook/host/sandbox.h)", what);
  else if (abi > 0)
    cp_log (level, "%s: no_new_privs, Landlock ABI %d, seccomp", what, abi);
  else
    cp_log (level, "%s: no_new_privs, seccomp (this kernel has no Landlock)", what);
}

int
cp_front_enter_sandbox (const struct cp_hostconfig *hc, const struct cp_sandbox *sb, cp_error_t *err)
{
  if (!hc->sandbox)
    return 0;
  int abi = cp_sandbox_enter (sb, err);
  /* Whether or not it failed, what it shut may be shut: no more flock. */
  journal.sandboxed = true;
  if (abi < 0)
    return -1;
  log_sandbox (CP_LOG_DEBUG, "sandbox", abi);
  return 0;
}

/* The kubelet state file's directory ("/" or none: NULL, no rule). */
static char *
kubelet_dir (const char *state_file)
{
  const char *slash = state_file ? strrchr (state_file, '/') : NULL;
  if (slash == NULL || slash == state_file)
    return NULL;
  return cp_xasprintf ("%.*s", (int) (slash - state_file), state_file);
}

int
cp_front_enter_plugin_sandbox (const struct cp_hostconfig *hc, const struct cp_front_listener *l, cp_error_t *err)
{
  cp_front_stay_unsandboxed (); /* this one covers every request */
  if (!hc->sandbox)
    {
      cp_log (CP_LOG_INFO, "nri: not sandboxed (the host config says `sandbox: false`)");
      return 0;
    }
  cleanup_close int dirfd = cp_ledger_open_dir (hc->state_dir, err);
  if (dirfd < 0)
    return cp_error_wrap (err, "sandbox");
  /* A discovery reads files (hwloc's plugins) and makes calls the profile
     refuses: done here, the requests read the cache (one stale later, after a
     CPU hotplug, is discovered again inside, with what /sys and /proc give). */
  cleanup_topo struct cp_topo *topo = NULL;
  cleanup_error cp_error_t e = NULL;
  if (cp_topocache_load (hc, 0, &topo, &e) < 0)
    cp_log (CP_LOG_WARNING, "nri: the topology, read before the sandbox: %s", cp_error_message (e));
  cleanup_free char *kubelet = kubelet_dir (hc->kubelet_state);
  /* The kernel's cache-aware scheduling switch, written per request as the hook
     writes it (on-demand, always, never; and under leave, a value an earlier
     on-demand kept is given back): the one file below /sys the plugin writes. */
  cleanup_free char *cas_switch = cp_sched_cas_switch_file (hc->kernel_root);
  struct cp_sandbox sb = {
    .profile = CP_SANDBOX_PLUGIN,
    .state_dirfd = dirfd,
    .cgroup_mountfd = -1,
    .read_dirs = { "/proc", "/sys", kubelet },
    .write_files = { cas_switch },
    .listener = l && l->listen_fd >= 0,
    .listen_fd = l ? l->listen_fd : -1,
    .epoll_fd = l ? l->epoll_fd : -1,
    .grpc = l && l->grpc_epoll_fd >= 0,
    .grpc_listen_fds = { -1, -1 },
    .grpc_epoll_fd = -1,
    .cdi = l && l->cdi_dirfd >= 0,
    .cdi_dirfd = l ? l->cdi_dirfd : -1,
  };
  if (sb.grpc)
    {
      sb.grpc_epoll_fd = l->grpc_epoll_fd;
      for (size_t i = 0; i < 2; i++)
        {
          sb.grpc_listen_fds[i] = l->grpc_listen_fds[i];
          sb.remove_dirs[i] = l->grpc_dirs[i];
        }
    }
  /* No capability past this point (caps.h says why none is needed); given up before
     the filter, which kills capset. */
  if (cp_caps_drop_all (err) < 0)
    return cp_error_wrap (err, "nri");
  int abi = cp_sandbox_enter (&sb, err);
  if (abi < 0)
    return cp_error_wrap (err, "nri");
  log_sandbox (CP_LOG_INFO, "nri: sandboxed (no capabilities)", abi);
  return 0;
}

/* ------------------------------------------------------------------ the journal */


static void
journal_warn (const char *what, cp_error_t e)
{
  /* Syslog only: the journal is advisory, and the runtime shows the user the
     decision's own line on stderr, one line (tests/cli/limits.sh, hostile.sh). */
  if (!journal.warned)
    cp_log_syslog (CP_LOG_WARNING, "journal: %s, not recorded: %s", what, cp_error_message (e));
  journal.warned = true;
}

/* The events seen before the journal was open, into J's queue. */
static void
add_pending (struct cp_journal *j)
{
  for (size_t i = 0; i < journal.pending.n; i++)
    {
      cp_journal_add (j, &journal.pending.records[i]);
      cp_journal_record_clear (&journal.pending.records[i]);
    }
  journal.queued |= journal.pending.n > 0;
  free (journal.pending.records);
  journal.pending = (struct cp_journal_list) { 0 };
}

static void
commit_queued (struct cp_journal *j, const char *what)
{
  cleanup_error cp_error_t e = NULL;
  if (journal.queued && cp_journal_commit (j, &e) < 0)
    journal_warn (what, e);
  journal.queued = false;
}

void
cp_front_journal (const char *state_dir, const struct cp_journal_record *in)
{
  /* Every decision of the run is about its target: named as it is. */
  struct cp_journal_record named = *in;
  if (named.name == NULL)
    named.name = journal.name;
  const struct cp_journal_record *r = &named;
  if (journal.open)
    {
      cp_journal_add (journal.open, r);
      journal.queued = true;
      commit_queued (journal.open, r->id);
      return;
    }
  if (journal.sandboxed || journal.warned || state_dir == NULL)
    {
      /* No flock in the sandbox; a journal that failed is not waited for twice;
         no state directory is known (the host config did not load). */
      cp_log (CP_LOG_DEBUG, "journal: %s %s not recorded", cp_journal_kind_name (r->kind), r->id);
      return;
    }
  /* A run that never opened the ledger (refused before it, its lock timed out).
     It never makes the state directory: a run that wrote nothing else (a refused
     rootless hook, a broken host) leaves nothing behind. */
  struct stat st;
  if (stat (state_dir, &st) < 0 || !S_ISDIR (st.st_mode))
    {
      cp_log (CP_LOG_DEBUG, "journal: %s %s not recorded (no state directory)", cp_journal_kind_name (r->kind), r->id);
      return;
    }
  cleanup_journal struct cp_journal *j = NULL;
  cleanup_error cp_error_t e = NULL;
  if (cp_journal_open (state_dir, CP_JOURNAL_LOCK_TIMEOUT_MS, &j, &e) < 0)
    {
      journal_warn (r->id, e);
      return;
    }
  add_pending (j);
  cp_journal_add (j, r);
  journal.queued = true;
  commit_queued (j, r->id);
}

/* The engine's events (events.h): queued, committed with the run's decision. */
static void
record_event (const struct cp_event *ev, void *data)
{
  (void) data;
  struct cp_journal_record r = {
    .front = journal.front,
    .kind = ev->kind == CP_EVENT_DRIFT      ? CP_JOURNAL_DRIFT
            : ev->kind == CP_EVENT_RELEASED ? CP_JOURNAL_RELEASED
                                            : CP_JOURNAL_SWITCH,
    .id = (char *) ev->id,
    .name = (char *) ev->name,
    .cgroup = (char *) ev->cgroup,
    .cpus = (hwloc_bitmap_t) ev->cpus,
    .reason = (char *) ev->what,
  };
  if (journal.open)
    {
      cp_journal_add (journal.open, &r);
      journal.queued = true;
    }
  else if (!journal.sandboxed)
    cp_journal_record_clean (&r, cp_journal_list_push (&journal.pending));
}

/* Whose decisions this run records, and the engine's events with them. */
static void
journal_begin (enum cp_journal_front front)
{
  journal.front = front;
  cp_events_set_observer (record_event, NULL);
}

/* The journal on the ledger's directory (P's), before the sandbox; NULL when its
   lock is busy or it fails (logged once: the decision goes on without it). */
static struct cp_journal *
journal_open (const struct cp_hostconfig *hc, const struct cp_placer *p)
{
  cleanup_error cp_error_t e = NULL;
  struct cp_journal *j = NULL;
  if (journal.warned
      || cp_journal_open_at (cp_placer_state_dirfd (p), hc->state_dir, CP_JOURNAL_LOCK_TIMEOUT_MS, &j, &e) < 0)
    {
      if (e)
        journal_warn ("open", e);
      return NULL;
    }
  add_pending (j);
  journal.open = j;
  return j;
}

/* What is still queued (events of a run that recorded no decision) committed,
   then the lock released: before the ledger's fd closes. */
static void
journal_closep (struct cp_journal **j)
{
  if (*j == NULL)
    return;
  commit_queued (*j, "events");
  if (journal.open == *j)
    journal.open = NULL;
  cp_journal_close (*j);
}
#define cleanup_run_journal __attribute__ ((cleanup (journal_closep)))

struct admission_recorder
{
  const struct cp_hostconfig *hc;
  enum cp_journal_front front;
};

static void
record_admission (const char *id, bool fails, const char *why, enum cp_error_kind kind, void *data)
{
  const struct admission_recorder *a = data;
  struct cp_journal_record r = {
    .front = a->front,
    .kind = fails ? CP_JOURNAL_REFUSED : CP_JOURNAL_UNPLACED,
    .id = (char *) (id ? id : "?"),
    .reason = (char *) why,
    .cause = cp_journal_cause_of (kind),
  };
  cp_front_journal (a->hc->state_dir, &r);
}

void
cp_front_journal_admissions (const struct cp_hostconfig *hc, enum cp_journal_front front)
{
  static struct admission_recorder rec;
  rec = (struct admission_recorder) { .hc = hc, .front = front };
  journal_begin (front);
  cp_admission_set_recorder (record_admission, &rec);
}

static void
record_placed (const struct cp_hostconfig *hc, enum cp_journal_front front, const struct cp_target *t,
               const struct cp_plan *plan)
{
  struct cp_journal_record r = {
    .front = front,
    .kind = CP_JOURNAL_PLACED,
    .id = (char *) t->id,
    .cgroup = (char *) t->cgroup_path,
    .cpus = plan->cpus,
    .mems = plan->mems,
    .reason = plan->reason,
  };
  cp_front_journal (hc->state_dir, &r);
}

/* A failure nobody judges (apply's): refused, with its reason. */
static int
record_refused (const struct cp_hostconfig *hc, enum cp_journal_front front, const struct cp_target *t,
                cp_error_t *err)
{
  struct cp_journal_record r = {
    .front = front,
    .kind = CP_JOURNAL_REFUSED,
    .id = (char *) t->id,
    .cgroup = (char *) t->cgroup_path,
    .reason = (char *) cp_error_message (*err),
    .cause = cp_journal_cause_of (cp_error_kind (*err)),
  };
  cp_front_journal (hc->state_dir, &r);
  return -1;
}

/* A failure: judged (the judge's policy records it, cp_front_journal_admissions())
   or refused.  1: the target goes unplaced. */
static int
place_failed (const struct cp_hostconfig *hc, enum cp_journal_front front, const struct cp_target *t,
              const struct cp_container_request *creq, cp_front_judge_fn judge, cp_error_t *err)
{
  if (judge == NULL)
    return record_refused (hc, front, t, err);
  return judge (hc, creq->req.strict, t->id, err) < 0 ? -1 : 1;
}

/* Everything is read and the ledger is locked: from here on the run only decides,
   commits the ledger and writes into the target's cgroup hierarchy, and reads
   /proc/<pid>.  See sandbox.h. */
static bool stay_unsandboxed; /* cp_front_stay_unsandboxed() */

void
cp_front_stay_unsandboxed (void)
{
  stay_unsandboxed = true;
}

static int
sandbox_placer (const struct cp_hostconfig *hc, const struct cp_placer *p, cp_error_t *err)
{
  if (stay_unsandboxed)
    return 0;
  struct cp_sandbox sb;
  if (cp_placer_sandbox (p, &sb, err) < 0)
    return -1;
  return cp_front_enter_sandbox (hc, &sb, err);
}

int
cp_front_place (const struct cp_hostconfig *hc, enum cp_journal_front front, const struct cp_target *target,
                const struct cp_container_request *creq, cp_front_judge_fn judge, struct cp_plan **plan_out,
                cp_error_t *err)
{
  *plan_out = NULL;
  journal_begin (front);
  cleanup_placer struct cp_placer *p = NULL;
  if (cp_placer_open (hc, target, creq, &p, err) < 0)
    return place_failed (hc, front, target, creq, judge, err);
  /* Declared after P: closed before it, while the ledger's fd is still open. */
  cleanup_run_journal struct cp_journal *j = journal_open (hc, p);
  if (sandbox_placer (hc, p, err) < 0 || cp_placer_decide (p, err) < 0 || cp_placer_apply (p, err) < 0)
    return place_failed (hc, front, target, creq, judge, err);
  *plan_out = cp_placer_take_plan (p);
  record_placed (hc, front, target, *plan_out);
  return 0;
}

int
cp_front_release (const struct cp_hostconfig *hc, enum cp_journal_front front, const struct cp_release *rel,
                  enum cp_release_result *result, cp_error_t *err)
{
  journal_begin (front);
  cleanup_placer struct cp_placer *p = NULL;
  if (cp_placer_open_release (hc, rel, &p, err) < 0)
    return -1;
  cleanup_run_journal struct cp_journal *j = journal_open (hc, p);
  /* Its `released` record is the engine's event (events.h), as for every
     release, reconcile's included. */
  return sandbox_placer (hc, p, err) < 0 || cp_placer_release_commit (p, result, err) < 0 ? -1 : 0;
}

/* ------------------------------------------------------------------ a batch */

struct cp_front_batch
{
  const struct cp_hostconfig *hc;
  enum cp_journal_front front;
  struct cp_placer_batch *b;
  struct cp_cgroup_snapshot mounts; /* read once, for every target's cgroup path */
  struct cp_journal_list placed;  /* recorded once the ledger is committed */
};

const struct cp_cgroup_snapshot *
cp_front_batch_mounts (const struct cp_front_batch *cb)
{
  return &cb->mounts;
}

int
cp_front_batch_open (const struct cp_hostconfig *hc, enum cp_journal_front front, struct cp_front_batch **out,
                     cp_error_t *err)
{
  journal_begin (front);
  struct cp_front_batch *cb = cp_xcalloc (1, sizeof *cb);
  *cb = (struct cp_front_batch) { .hc = hc, .front = front };
  if (cp_cgroup_snapshot_read (&cb->mounts, err) < 0 || cp_placer_batch_open (hc, &cb->b, err) < 0)
    {
      cp_cgroup_snapshot_clear (&cb->mounts);
      free (cb);
      return -1;
    }
  *out = cb;
  return 0;
}

int
cp_front_batch_place (struct cp_front_batch *cb, const struct cp_target *target,
                      const struct cp_container_request *creq, cp_front_judge_fn judge, struct cp_plan **plan_out,
                      cp_error_t *err)
{
  if (cp_placer_batch_decide (cb->b, target, creq, plan_out, err) < 0)
    return place_failed (cb->hc, cb->front, target, creq, judge, err);
  struct cp_journal_record r = {
    .front = cb->front,
    .kind = CP_JOURNAL_PLACED,
    .id = (char *) target->id,
    .name = (char *) target->name,
    .cgroup = (char *) target->cgroup_path,
    .cpus = (*plan_out)->cpus,
    .mems = (*plan_out)->mems,
    .reason = (*plan_out)->reason,
  };
  cp_journal_record_clean (&r, cp_journal_list_push (&cb->placed));
  return 0;
}

int
cp_front_batch_commit (struct cp_front_batch *cb, cp_error_t *err)
{
  if (cp_placer_batch_commit (cb->b, err) < 0)
    return -1;
  if (cb->placed.n == 0 || journal.sandboxed || journal.warned)
    return 0;
  cleanup_journal struct cp_journal *j = NULL;
  cleanup_error cp_error_t e = NULL;
  if (cp_journal_open (cb->hc->state_dir, CP_JOURNAL_LOCK_TIMEOUT_MS, &j, &e) < 0)
    {
      journal_warn ("batch", e);
      return 0;
    }
  add_pending (j);
  for (size_t i = 0; i < cb->placed.n; i++)
    cp_journal_add (j, &cb->placed.records[i]);
  journal.queued = true;
  commit_queued (j, "batch");
  return 0;
}

void
cp_front_batch_close (struct cp_front_batch *cb)
{
  if (cb == NULL)
    return;
  cp_placer_batch_close (cb->b);
  cp_cgroup_snapshot_clear (&cb->mounts);
  for (size_t i = 0; i < cb->placed.n; i++)
    cp_journal_record_clear (&cb->placed.records[i]);
  free (cb->placed.records);
  free (cb);
}
