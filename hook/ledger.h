/* cachepin: the ledger of placed containers and the CPUs each one holds.
 *
 * The hook runs once per container start (createRuntime) and stop (poststop), in
 * parallel with other instances of itself.  The ledger is how they agree on who
 * holds which CPUs: a JSON file in a root-only state directory, read, changed and
 * rewritten under an exclusive flock(2) that is held from cp_ledger_open() until
 * cp_ledger_close(), so every read-modify-write is atomic with respect to the
 * other hooks.
 *
 * State directory (default /run/cachepin, a tmpfs: placements do not survive a
 * reboot, and neither do the containers):
 *   ledger.lock          the flock target; created once, never replaced
 *   ledger.json          the data (format below)
 *   ledger.json.tmp      the next ledger.json while it is written; a stale one
 *                        from a killed hook is ignored and replaced
 *   ledger.json.corrupt  the last ledger.json that failed validation
 *
 * ledger.json, version 1:
 *   {"version": 1,
 *    "entries": [{"id": "<container id>" or "apply:<cgroup>",
 *                 "cgroup_mount": "/sys/fs/cgroup/cpuset",
 *                 "cgroup": "/path/in/hierarchy",
 *                 "pid": 1234,              (0: no process, liveness by cgroup only)
 *                 "start_time": 987654,     (field 22 of /proc/<pid>/stat; 0 when pid is 0)
 *                 "mode": "exclusive" | "shared",
 *                 "cpus": "0-3",            (the container's cpuset, never empty)
 *                 "held": "0-3,64-67",      (exclusive: cpus and the siblings it keeps idle;
 *                                            shared: "")
 *                 "mems": "0",              (may be empty: a cgroup v2 cpuset.mems that
 *                                            was left to inherit; the ledger only records it)
 *                 "placed_at": 1700000000}  (unix seconds)
 *               ...]}
 * Every key is required and no other key is allowed; integers are JSON integers
 * in 0..2^53; cpulists are strict (policy/cpulist.h); ids and paths are valid
 * UTF-8 without control characters, paths are absolute without `..`; ids are
 * unique; no CPU is held by two exclusive entries.  cp_ledger_put() applies the
 * same rules, so the hook never writes a ledger it would refuse to read. */
#ifndef CP_LEDGER_H
#define CP_LEDGER_H

#include <hwloc.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "../policy/error.h"
#include "../policy/placement.h"
#include "../policy/request.h"

#define CP_LEDGER_DEFAULT_DIR "/run/cachepin"
#define CP_LEDGER_FILE "ledger.json"
#define CP_LEDGER_LOCK_FILE "ledger.lock"
#define CP_LEDGER_TMP_FILE "ledger.json.tmp"
#define CP_LEDGER_CORRUPT_FILE "ledger.json.corrupt"

#define CP_LEDGER_VERSION 1
/* Bounds on what we read (and therefore on what we write). */
#define CP_LEDGER_MAX_SIZE (4 * 1024 * 1024)
#define CP_LEDGER_MAX_ENTRIES 16384
#define CP_LEDGER_MAX_PATH 4095                  /* cgroup_mount, cgroup: PATH_MAX - 1 */
#define CP_LEDGER_MAX_ID (CP_LEDGER_MAX_PATH + 64) /* room for "apply:" + a cgroup path */
#define CP_LEDGER_MAX_INT (1LL << 53)            /* integers every JSON reader keeps exact */

/* cp_ledger_put()'s return when the entry's held CPUs overlap another exclusive
 * entry's (*err is a CP_ERR_RUNTIME naming both).  Other failures return -1. */
#define CP_LEDGER_CONFLICT (-2)

struct cp_ledger_entry
{
  char *id;
  char *cgroup_mount;
  char *cgroup;
  pid_t pid;                     /* 0: none */
  unsigned long long start_time; /* 0 when pid is 0 */
  enum cp_mode mode;
  hwloc_bitmap_t cpus;
  hwloc_bitmap_t held;           /* empty in shared mode; includes cpus in exclusive mode */
  hwloc_bitmap_t mems;           /* may be empty */
  long long placed_at;
};

struct cp_ledger;

/* Open STATE_DIR (created 0700 if missing; its parent must exist), take the lock,
 * waiting at most LOCK_TIMEOUT_MS, and read the ledger.  The directory must not be
 * a symlink, must be owned by the effective uid and not be writable by group or
 * others.  A missing ledger.json is an empty ledger.  A ledger.json that fails
 * validation is moved to ledger.json.corrupt and the ledger starts empty: see
 * cp_ledger_was_recovered().  Fails (< 0) on a bad directory, a lock timeout, or
 * an I/O error. */
int cp_ledger_open (const char *state_dir, unsigned lock_timeout_ms, struct cp_ledger **out, cp_error_t *err);

/* True when open found an untrusted ledger.json and started empty; *WHY (if not
 * NULL) is then a one-line explanation for the log, valid until close. */
bool cp_ledger_was_recovered (const struct cp_ledger *l, const char **why);

/* The state directory's fd (-1 when detached), for the sandbox: the one place the
 * commit creates a file in.  Still the ledger's: not to be closed. */
int cp_ledger_dirfd (const struct cp_ledger *l);

/* Parse and validate a ledger from BUF (LEN bytes, NUL bytes refused) into a
 * detached ledger: find/at/usage/put/remove work, commit fails.  Errors are
 * CP_ERR_INPUT.  Exported for the fuzz target and the tests. */
int cp_ledger_parse (const char *buf, size_t len, struct cp_ledger **out, cp_error_t *err);

/* The ledger as ledger.json text (NUL-terminated, ends with a newline).  Caller frees. */
char *cp_ledger_serialize (const struct cp_ledger *l);

size_t cp_ledger_count (const struct cp_ledger *l);
/* Entries in ledger order; pointers are valid until the next put, remove,
 * reconcile or close. */
const struct cp_ledger_entry *cp_ledger_at (const struct cp_ledger *l, size_t i);
const struct cp_ledger_entry *cp_ledger_find (const struct cp_ledger *l, const char *id);

/* Check E against the format's rules (the ones parse applies); CP_ERR_INPUT. */
int cp_ledger_entry_check (const struct cp_ledger_entry *e, cp_error_t *err);

/* Copy E into the ledger, replacing the entry with the same id.  Refuses an entry
 * that fails cp_ledger_entry_check() (-1, CP_ERR_INPUT), one whose held CPUs
 * overlap another exclusive entry's (CP_LEDGER_CONFLICT), and a new entry beyond
 * CP_LEDGER_MAX_ENTRIES (-1, CP_ERR_RUNTIME). */
int cp_ledger_put (struct cp_ledger *l, const struct cp_ledger_entry *e, cp_error_t *err);

/* Remove the entry ID; false when there was none. */
bool cp_ledger_remove (struct cp_ledger *l, const char *id);

/* Write the ledger if it changed since open or the last commit: ledger.json.tmp
 * written, fsync'ed and renamed over ledger.json, then the directory fsync'ed.
 * A kill at any point leaves either the old or the new ledger.json. */
int cp_ledger_commit (struct cp_ledger *l, cp_error_t *err);

/* Release the lock (without committing) and free.  NULL is fine. */
void cp_ledger_close (struct cp_ledger *l);

#define cleanup_ledger __attribute__ ((cleanup (cp_ledger_closep)))
static inline void
cp_ledger_closep (struct cp_ledger **l)
{
  cp_ledger_close (*l);
}

/* What other containers use, for cp_place(). */
struct cp_ledger_usage
{
  struct cp_usage usage; /* points into the storage below */
  hwloc_bitmap_t held;   /* union of the exclusive entries' held */
  hwloc_bitmap_t *shared; /* the shared entries' cpus */
  size_t n_shared;
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
  /* Does the directory CGROUP_MOUNT + CGROUP exist? */
  int (*cgroup_exists) (const char *cgroup_mount, const char *cgroup, void *data);
  /* Is PID running (not a zombie)?  On 1, *START_TIME is its start time. */
  int (*pid_start_time) (pid_t pid, unsigned long long *start_time, void *data);
  /* Optional: told about each entry reconcile drops, and why (for the log). */
  void (*dropped) (const struct cp_ledger_entry *e, const char *why, void *data);
  void *data;
};

/* The real checks: stat(2) and /proc/<pid>/stat; DATA is unused. */
int cp_ledger_cgroup_exists (const char *cgroup_mount, const char *cgroup, void *data);
int cp_ledger_pid_start_time (pid_t pid, unsigned long long *start_time, void *data);

/* Drop the entries whose container is gone: its cgroup directory no longer
 * exists, or it has a pid and that pid is dead, a zombie, or started at another
 * time (the pid was reused).  ALIVE NULL: the real checks.  *DROPPED (if not NULL)
 * is how many were dropped. */
int cp_ledger_reconcile (struct cp_ledger *l, const struct cp_ledger_liveness *alive, unsigned *dropped,
                         cp_error_t *err);

/* Start time (clock ticks after boot, field 22) of PID from /proc/PID/stat, and
 * whether it is a zombie.  Fails with errnum ENOENT or ESRCH when there is no
 * such process. */
int cp_ledger_proc_start_time (pid_t pid, unsigned long long *start_time, bool *zombie, cp_error_t *err);

/* Parse the text of a /proc/<pid>/stat.  The comm field (2) may hold spaces and
 * parentheses, so the fields are counted from the LAST ')'.  CP_ERR_INPUT. */
int cp_ledger_parse_proc_stat (const char *buf, size_t len, unsigned long long *start_time, char *state,
                               cp_error_t *err);

#ifdef CACHEPIN_FAULT_INJECTION
/* Test builds only (-DCACHEPIN_FAULT_INJECTION for the whole build): a function
 * called at each step of cp_ledger_commit().  It may _exit() to simulate a kill
 * there, or return an errno value (non-zero) to make the commit fail there. */
enum cp_ledger_fault_point
{
  CP_LEDGER_FAULT_TMP_WRITTEN, /* ledger.json.tmp written, not yet fsync'ed */
  CP_LEDGER_FAULT_TMP_SYNCED,  /* fsync'ed and closed, not yet renamed */
  CP_LEDGER_FAULT_RENAMED,     /* renamed over ledger.json, directory not yet fsync'ed */
};
typedef int (*cp_ledger_fault_fn) (enum cp_ledger_fault_point point, void *data);
void cp_ledger_set_fault_hook (cp_ledger_fault_fn fn, void *data);
#endif

#endif
