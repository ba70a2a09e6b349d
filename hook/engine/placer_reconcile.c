/* cachepin: the placer's ledger, opened, locked and reconciled (placer.h's
 * cp_placer_open_ledger(); split from placer.c): the entries whose container is
 * gone dropped, drift judged and logged, then the partitions no isolated entry
 * backs undone (isolation.h). */
#define _GNU_SOURCE
#include "placer_internal.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

#include "bitmap.h"
#include "cpulist.h"
#include "util.h"
#include "ledger.h"
#include "log.h"
#include "events.h"
#include "recheck.h"
#include "isolation.h"

/* What reconcile's callbacks are given: the mounts each opened once, and the
   ledger whose commit tells the releases (events.h). */
struct reconcile_ctx
{
  struct cp_cgroup_mounts *mounts;
  struct cp_ledger *l;
};

static void
log_dropped (const struct cp_ledger_entry *e, const char *why, void *data)
{
  const struct reconcile_ctx *ctx = data;
  cleanup_free char *cpus = cp_cpulist_format (e->held);
  cp_log (CP_LOG_INFO, "released %s (cpus %s): %s", e->id, cpus, why);
  cp_event_emit_on_commit (ctx->l, &(struct cp_event) { .kind = CP_EVENT_RELEASED, .id = e->id, .name = e->name,
                                                        .cgroup = e->cgroup, .cpus = e->cpus, .what = why });
}

/* Another manager rewrote a placed container's cpuset (runc or podman update,
   systemd, the kubelet's CPU manager): said once per change, at warning level,
   because cachepin's promise that no CPU is handed out twice now rests on counting
   the CPUs it really runs on.  The line names every CPU the entry now withholds
   (cp_ledger_entry_taken()): the ones it was placed on stay held as well, and a
   user who reads only the drifted ones looks for the others in vain. */
static void
log_drifted (const struct cp_ledger_entry *e, hwloc_const_bitmap_t before, void *data)
{
  (void) data;
  cleanup_free char *placed = cp_cpulist_format (e->cpus);
  if (hwloc_bitmap_iszero (e->drift))
    {
      cp_log (CP_LOG_INFO, "drift: %s (cgroup %s%s) is back on the CPUs cachepin placed it on (%s)", e->id,
              e->cgroup_mount, e->cgroup, placed);
      cleanup_free char *back = cp_xasprintf ("back on the CPUs cachepin placed it on (%s)", placed);
      cp_event_emit (&(struct cp_event) { .kind = CP_EVENT_DRIFT, .id = e->id, .name = e->name, .cgroup = e->cgroup,
                                          .cpus = e->cpus, .what = back });
      return;
    }
  bool exclusive = e->mode == CP_MODE_EXCLUSIVE;
  cleanup_bitmap hwloc_bitmap_t taken = cp_bitmap_new ();
  cp_ledger_entry_taken (e, NULL, taken);
  cleanup_free char *now = cp_cpulist_format (e->drift);
  cleanup_free char *was = cp_cpulist_format (before);
  cleanup_free char *withheld = cp_cpulist_format (taken);
  cleanup_free char *kept = cp_cpulist_format (exclusive ? e->held : e->cpus);
  bool one = hwloc_bitmap_weight (taken) == 1;
  cp_log (CP_LOG_WARNING,
          "drift: %s (cgroup %s%s): its cpuset.cpus is %s, not the %s cachepin placed%s%s%s; another manager "
          "rewrote it (runc/podman update, systemd, the kubelet); until it is released, %s %s %s: %s %s since "
          "its placement and %s it runs on now",
          e->id, e->cgroup_mount, e->cgroup, now, placed, hwloc_bitmap_iszero (before) ? "" : " (it was ",
          hwloc_bitmap_iszero (before) ? "" : was, hwloc_bitmap_iszero (before) ? "" : " at the last run)",
          one ? "CPU" : "CPUs", withheld,
          exclusive ? (one ? "is withheld from other containers" : "are withheld from other containers")
                    : (one ? "counts in its shared load" : "count in its shared load"),
          kept, exclusive ? "held" : "used", now);
  cleanup_free char *what = cp_xasprintf ("cpuset.cpus is %s, not the %s cachepin placed; %s %s withheld until "
                                          "it is released", now, placed, one ? "CPU" : "CPUs", withheld);
  cp_event_emit (&(struct cp_event) { .kind = CP_EVENT_DRIFT, .id = e->id, .name = e->name, .cgroup = e->cgroup,
                                      .cpus = e->drift, .what = what });
}

/* cp_ledger_cgroup_state() and the cgroup's CPUs, with each mount point opened
   once for the whole reconcile (DATA), not once per entry. */
static int
cgroup_cpus (const char *cgroup_mount, const char *cgroup, hwloc_bitmap_t cpus, unsigned long long *ino, void *data)
{
  const struct reconcile_ctx *ctx = data;
  return cp_cgroup_cpus_in (ctx->mounts, cgroup_mount, cgroup, cpus, ino);
}

/* A release decides only whether cache-aware scheduling goes back (no CPU is
   handed out): the entries of containers that asked for it are the ones it needs
   checked.  The rest wait for the next placement's reconcile, which drops them and
   judges their drift before any CPU is handed out; a release then costs no cgroupfs
   or /proc read per entry (two per entry at 1,000 entries is most of its time).
   Except an entry whose pid no longer exists at all (one kill(pid, 0), no read):
   a container whose own poststop timed out on the lock (40 poststops at once
   behind a stalled holder left 38 entries), which the next release drops rather
   than leaving it until the next placement.  A pid that exists may be reused:
   that is the full check's to judge.  With a recheck window (the NRI plugin), an
   entry this process found alive within its window is not asked either, as a
   placement would not check it (recheck.h): 1,000 kill() calls were a fifth of
   the plugin's time; a dead one is dropped by the release or placement after
   its window, as a placement's reconcile would drop it. */
static bool
release_checks (const struct cp_ledger_entry *e, void *data)
{
  (void) data;
  if (e->sched_cache == CP_ASK_ON || e->isolated) /* the switch, the partition */
    return true;
  if (cp_recheck_on () && !cp_recheck_due (e, NULL))
    return false;
  return e->pid > 0 && kill (e->pid, 0) < 0 && errno == ESRCH;
}

int
cp_placer_open_ledger_in (const struct cp_hostconfig *hc, enum cp_reconcile_scope scope, struct cp_ledger **out, cp_error_t *err)
{
  struct cp_ledger *l = NULL;
  if (cp_ledger_open (hc->state_dir, hc->lock_timeout_ms, &l, err) < 0)
    return cp_error_wrap (err, "ledger %s", hc->state_dir);
  PLACER_FAULT (CP_PLACER_FAULT_LOCKED);
  const char *why = NULL;
  if (cp_ledger_was_recovered (l, &why))
    cp_log (CP_LOG_WARNING, "ledger: %s", why); /* names the file, and what it went back to */
  struct reconcile_ctx ctx = { .mounts = cp_cgroup_mounts_new (), .l = l };
  struct cp_ledger_liveness alive = {
    .cgroup_cpus = cgroup_cpus,
    .pid_start_time = cp_ledger_pid_start_time,
    .dropped = log_dropped,
    .drifted = log_drifted,
    .check = scope == CP_RECONCILE_CAS_ASKERS ? release_checks : NULL,
    .data = &ctx,
  };
  /* A long-running front end's placements check an entry it found alive again
     only once its window has passed (recheck.h: a dead container's CPUs, or a
     drift, are seen up to that much later than by the hook). */
  bool window = scope == CP_RECONCILE_ALL && cp_recheck_on ();
  if (cp_recheck_on ())
    cp_recheck_begin (); /* the clock, for release_checks() too */
  if (window)
    alive.check = cp_recheck_due;
  /* Who was isolated before reconcile: a partition whose entry it drops (its
     container is gone) is released, not repaired (isolation.h). */
  size_t n_iso = 0;
  char **iso = cp_xcalloc (cp_ledger_count (l) + 1, sizeof *iso);
  for (size_t i = 0; i < cp_ledger_count (l); i++)
    if (cp_ledger_at (l, i)->isolated)
      iso[n_iso++] = cp_xstrdup (cp_ledger_at (l, i)->id);
  int r = cp_ledger_reconcile (l, &alive, NULL, err);
  if (r == 0 && window)
    cp_recheck_seen (l);
  cp_cgroup_mounts_free (ctx.mounts);
  if (r == 0)
    cp_isolate_reconcile (l, NULL, iso, n_iso); /* before the sandbox: mounts opened by name */
  for (size_t i = 0; i < n_iso; i++)
    free (iso[i]);
  free (iso);
  if (r < 0)
    {
      cp_ledger_close (l);
      return cp_error_wrap (err, "ledger %s", hc->state_dir);
    }
  PLACER_FAULT (CP_PLACER_FAULT_RECONCILED);
  *out = l;
  return 0;
}

int
cp_placer_open_ledger (const struct cp_hostconfig *hc, struct cp_ledger **out, cp_error_t *err)
{
  return cp_placer_open_ledger_in (hc, CP_RECONCILE_ALL, out, err);
}

