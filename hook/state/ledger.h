/* cachepin: the ledger of placed containers and the CPUs each one holds.
 *
 * The hook runs once per container start (createRuntime) and stop (poststop), in
 * parallel with other instances of itself.  The ledger is how they agree on who
 * holds which CPUs: one entry per placed container, kept in a JSON file
 * (ledger_codec.h: the format) in a root-only state directory and changed only
 * under an exclusive lock (ledger_store.h: the files, the lock, crash safety).
 *
 * This header is the model: the entries, their rules, the operations the placer
 * needs, and reconcile (dropping the entries of containers that are gone).  It
 * includes the other two, so that callers include this one.
 *
 * The rules an entry follows (cp_ledger_entry_check(), applied by the reader and
 * by cp_ledger_put() alike, so the hook never writes a ledger it would refuse to
 * read): ids and paths are valid UTF-8 without control characters (policy/base/text.h),
 * paths are absolute without `..`; integers are in 0..2^53; cpulists are strict
 * (policy/base/cpulist.h); ids are unique; no CPU is held by two exclusive entries. */
#ifndef CP_LEDGER_H
#define CP_LEDGER_H

#include <hwloc.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "request.h"
#include "error.h"
#include "placement.h"
#include "request.h"

/* Bounds on what we read (and therefore on what we write). */
#define CP_LEDGER_MAX_ENTRIES 16384
#define CP_LEDGER_MAX_PATH 4095                  /* cgroup_mount, cgroup: PATH_MAX - 1 */
#define CP_LEDGER_MAX_ID (CP_LEDGER_MAX_PATH + 64) /* room for "apply:" + a cgroup path */
#define CP_LEDGER_MAX_INT (1LL << 53)            /* integers every JSON reader keeps exact */
#define CP_LEDGER_MAX_NAME 253                   /* name: a DNS name's length, room for namespace/pod/container */

/* cp_ledger_put()'s return when the entry's held CPUs overlap another exclusive
 * entry's (*err is a CP_ERR_RUNTIME naming both).  Other failures return -1. */
#define CP_LEDGER_CONFLICT (-2)

struct cp_ledger_entry
{
  char *id;
  char *name;                    /* the container's name as its engine gave it (status shows it);
                                    NULL: none known.  From user-controlled annotations: cut
                                    with cp_text_clean_copy() before it is put */
  char *cgroup_mount;
  char *cgroup;
  unsigned long long cgroup_ino; /* the cgroup directory's inode when placed (v2: its cgroup id);
                                    0: not recorded.  Another inode at that path is another cgroup
                                    (removed and made again): the entry's is gone */
  pid_t pid;                     /* 0: none */
  unsigned long long start_time; /* 0 when pid is 0 */
  enum cp_mode mode;
  hwloc_bitmap_t cpus;
  hwloc_bitmap_t held;           /* empty in shared mode; includes cpus in exclusive mode */
  hwloc_bitmap_t mems;           /* may be empty */
  long long placed_at;
  enum cp_ask sched_cache;       /* what it asked of cache-aware scheduling */
  bool core_sched;               /* it asked for core scheduling and got a cookie */
  /* Drift: the CPUs its cgroup's cpuset was found to hold when that was not
   * `cpus` (another manager rewrote it: runc/podman update, systemd, the kubelet),
   * as last logged.  NULL or empty: none seen.  The entry keeps `cpus` and `held`
   * as placed; cp_ledger_usage() counts the drifted CPUs as used too. */
  hwloc_bitmap_t drift;
  /* Its cgroup was made a cgroup v2 partition root on its CPUs and read back
   * (cachepin.io/isolate; hook/engine/isolate.h).  What was written for it is in
   * the ledger's partition records (ledger_partition.h), which outlive the entry
   * until undone. */
  bool isolated;
  /* The NRI plugin's entries only: the runtime instance whose plugin made it (the
   * runtime's NRI socket, cp_nri_runtime_key()), so that a plugin serving another
   * runtime on the same host never settles it.  NULL: another front end's, or
   * written before cachepin recorded it (any plugin's).  Safe text, a path's length. */
  char *runtime;
};

/* Which front end made an entry: the one rule, from what the entry records.  The
 * hook records the container's init process (a pid: a stopped container is never
 * placed); `cachepin apply` records no pid, under the id "apply:<cgroup>"; the NRI
 * plugin records no pid (at CreateContainer there is no process yet) under the
 * container's id, which it never lets start with "apply:" (cp_nri_id_check()), and
 * its runtime.  The hook taking over the plugin's entry (placer_takeover.c) gives
 * it a pid: it is the hook's from then on.  A prepared DRA claim's entries (the
 * kubelet plugin's, `cachepin dra prepare`: hook/engine/dra_prepare.h) have no pid
 * and the id "dra:claim:<uid>:<result>"; no container's cgroup is behind them (their
 * cgroup fields name the claim, CP_LEDGER_DRA_MOUNT and below it), so reconcile never
 * drops them: the claim's unprepare does. */
enum cp_ledger_origin
{
  CP_ORIGIN_HOOK,
  CP_ORIGIN_APPLY,
  CP_ORIGIN_NRI,
  CP_ORIGIN_DRA,
};
#define CP_LEDGER_DRA_PREFIX "dra:claim:"
#define CP_LEDGER_DRA_MOUNT "/dra"
enum cp_ledger_origin cp_ledger_entry_origin (const struct cp_ledger_entry *e);
const char *cp_ledger_origin_name (enum cp_ledger_origin o);

struct cp_ledger;

size_t cp_ledger_count (const struct cp_ledger *l);
/* Entries in ledger order; pointers are valid until the next put, remove,
 * reconcile or close. */
const struct cp_ledger_entry *cp_ledger_at (const struct cp_ledger *l, size_t i);
const struct cp_ledger_entry *cp_ledger_find (const struct cp_ledger *l, const char *id);

/* FN (DATA) once L's changes so far are in ledger.json: after the next
 * cp_ledger_commit() that writes them (or finds nothing left to write), never
 * when L closes first; FREE_DATA (DATA) (may be NULL) either way.  For what may be
 * told only once it is true: reconcile's releases (hook/engine/events.h), which a
 * run that reads the ledger and does not commit would tell again at every run. */
void cp_ledger_on_commit (struct cp_ledger *l, void (*fn) (void *data), void *data, void (*free_data) (void *data));

/* Free what E holds (any member may be NULL) and zero it. */
void cp_ledger_entry_clear (struct cp_ledger_entry *e);

/* Whether LIVE, the CPUs E's cgroup was found on (empty: not known), is a drift:
 * known and not E's cpus.  The one rule for reconcile and `cachepin status`. */
bool cp_ledger_live_drifted (const struct cp_ledger_entry *e, hwloc_const_bitmap_t live);

/* Add to INTO the CPUs E counts as taking: its held CPUs (exclusive) or its cpus
 * (shared), and the CPUs it drifted to.  LIVE: the CPUs its cgroup was just found
 * on, judged by cp_ledger_live_drifted(); NULL or empty (not read now): the drift
 * the last reconcile recorded.  The one rule for cp_ledger_usage() and status. */
void cp_ledger_entry_taken (const struct cp_ledger_entry *e, hwloc_const_bitmap_t live, hwloc_bitmap_t into);

/* Check E against the format's rules (the ones parse applies); CP_ERR_INPUT. */
int cp_ledger_entry_check (const struct cp_ledger_entry *e, cp_error_t *err);

/* Copy E into the ledger, replacing the entry with the same id.  Refuses an entry
 * that fails cp_ledger_entry_check() (-1, CP_ERR_INPUT), one whose held CPUs
 * overlap another exclusive entry's (CP_LEDGER_CONFLICT), and a new entry beyond
 * CP_LEDGER_MAX_ENTRIES (-1, CP_ERR_RUNTIME). */
int cp_ledger_put (struct cp_ledger *l, const struct cp_ledger_entry *e, cp_error_t *err);

/* Remove the entry ID; false when there was none. */
bool cp_ledger_remove (struct cp_ledger *l, const char *id);

/* The value of the kernel's cache-aware scheduling switch to give back (0 or 1)
 * once no placed container asks for it, or -1: cachepin does not hold the switch
 * (hook/engine/schedctl.h).  Kept in the ledger so that a crash, or a poststop that
 * never came, does not lose it. */
int cp_ledger_cas_restore (const struct cp_ledger *l);
void cp_ledger_set_cas_restore (struct cp_ledger *l, int value);

/* How many entries ask cachepin.io/sched-cache=on. */
size_t cp_ledger_cas_askers (const struct cp_ledger *l);

/* Release the lock (without committing) and free.  NULL is fine. */
void cp_ledger_close (struct cp_ledger *l);

#define cleanup_ledger __attribute__ ((cleanup (cp_ledger_closep)))
static inline void
cp_ledger_closep (struct cp_ledger **l)
{
  cp_ledger_close (*l);
}

/* What other containers use, for cp_place(): an exclusive entry's held CPUs and
 * a shared entry's cpus, each with the CPUs it drifted to (what its cgroup really
 * runs on also counts as taken, so that nothing is handed out twice). */
struct cp_ledger_usage
{
  struct cp_usage usage; /* points into the storage below */
  hwloc_bitmap_t held;   /* union of the exclusive entries' held, and the CPUs of the
                            partitions not undone yet (root records, ledger_partition.h) */
  hwloc_bitmap_t *shared; /* the shared entries' cpus, equal sets one bitmap */
  size_t n_shared;
  hwloc_bitmap_t *distinct; /* the bitmaps SHARED points at, each once */
  size_t n_distinct;
};

/* Fill OUT from the ledger, leaving out the entry EXCLUDE_ID (NULL: none) whatever
 * its mode: the container being placed again does not compete with itself.  OUT
 * owns its storage and does not depend on L afterwards. */
void cp_ledger_usage (const struct cp_ledger *l, const char *exclude_id, struct cp_ledger_usage *out);
void cp_ledger_usage_release (struct cp_ledger_usage *u);

/* Liveness.  Each check returns 1 (exists / running), 0 (gone) or -1 (could not
 * tell: the entry is kept, as dropping a live container's CPUs would let two
 * containers share them, while keeping a dead one only wastes them until the
 * next reconcile). */
struct cp_ledger_liveness
{
  /* Does the cgroup directory CGROUP_MOUNT + CGROUP exist? */
  int (*cgroup_exists) (const char *cgroup_mount, const char *cgroup, void *data);
  /* Is PID running (not a zombie)?  On 1, *START_TIME is its start time. */
  int (*pid_start_time) (pid_t pid, unsigned long long *start_time, void *data);
  /* Optional: told about each entry reconcile drops, and why (for the log). */
  void (*dropped) (const struct cp_ledger_entry *e, const char *why, void *data);
  /* Optional, in place of cgroup_exists: the same answer, and on 1 the CPUs the
   * cgroup runs on in CPUS (empty: could not read them, no drift is judged) and,
   * when INO is not NULL (asked for entries that recorded one), the directory's
   * inode (0: could not read it). */
  int (*cgroup_cpus) (const char *cgroup_mount, const char *cgroup, hwloc_bitmap_t cpus, unsigned long long *ino,
                      void *data);
  /* Optional: told when an entry's drift changes (E already has the new one;
   * BEFORE the one it had, empty for none): once per change, for the log. */
  void (*drifted) (const struct cp_ledger_entry *e, hwloc_const_bitmap_t before, void *data);
  /* Optional: when it returns false for an entry, that entry is kept as it is,
   * unchecked (a release checks only the entries its decisions read). */
  bool (*check) (const struct cp_ledger_entry *e, void *data);
  void *data;
};

/* The real checks; DATA is unused.  The cgroup one is cp_cgroup_dir_state()
 * (hook/host/cgroup.h): the directory opened without following symlinks, on a cgroup
 * filesystem (anything else is "could not tell"); the pid one is
 * cp_proc_start_time() (hook/host/proc.h). */
int cp_ledger_cgroup_state (const char *cgroup_mount, const char *cgroup, void *data);
int cp_ledger_pid_start_time (pid_t pid, unsigned long long *start_time, void *data);

/* Why E's container is gone (a cgroup directory that no longer exists or was
 * made again, a pid that exited or was reused), or NULL when it is or may be
 * alive; then LIVE holds the CPUs its cgroup runs on when ALIVE->cgroup_cpus could
 * read them (else it is empty).  The one rule for reconcile and `cachepin status`
 * (which shows such an entry GONE and drops nothing).  The caller frees. */
char *cp_ledger_entry_gone (const struct cp_ledger_entry *e, const struct cp_ledger_liveness *alive,
                            hwloc_bitmap_t live);

/* Whether E is pending: the NRI plugin's entry of a container whose cgroup it has
 * not recorded yet (no inode), or a pinned unit's entry held while the unit is
 * stopped (cp_ledger_entry_unit(): its cgroup forgotten at stop).  Kept while its
 * cgroup does not exist, for no set time: its front end settles it (ledger.c,
 * pending()). */
bool cp_ledger_entry_pending (const struct cp_ledger_entry *e);

/* `cachepin apply --unit NAME.service`'s entries: the id "apply:unit:NAME.service"
 * (an `apply` entry: no pid, the "apply:" prefix), kept for the unit, not for one
 * of its cgroups, from `apply --unit` to `release --unit`; hook/engine/unitpin.h
 * says what the engine does with them. */
#define CP_LEDGER_UNIT_PREFIX "apply:unit:"
bool cp_ledger_entry_unit (const struct cp_ledger_entry *e);

/* Drop the entries whose container is gone: its cgroup directory no longer
 * exists (unless the entry is pending: cp_ledger_entry_pending()), or (with ALIVE->cgroup_cpus) has another inode than the one recorded
 * (removed and made again: another cgroup, not a drifted one), or it has a pid and
 * that pid is dead, a zombie, or started at another time (the pid was reused).
 * ALIVE NULL: the real checks.  *DROPPED (if not NULL) is how many were dropped.
 * With ALIVE->cgroup_cpus, each kept entry's drift is brought up to date: the
 * cgroup's CPUs when they are not the entry's `cpus`, else none (a change marks
 * the ledger for commit). */
int cp_ledger_reconcile (struct cp_ledger *l, const struct cp_ledger_liveness *alive, unsigned *dropped,
                         cp_error_t *err);

#include "ledger_codec.h"
#include "ledger_store.h"
#include "ledger_partition.h"

#endif
