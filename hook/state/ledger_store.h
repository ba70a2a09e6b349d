/* cachepin: the ledger's files: the state directory, the lock, load and commit.
 *
 * The ledger is read, changed and rewritten under exclusive flock(2)s that are
 * held from cp_ledger_open() until cp_ledger_close(), so every read-modify-write
 * is atomic with respect to the other hooks: the state directory's own (a file
 * can be removed or replaced while a hook holds it; the directory cannot), then
 * ledger.lock's (for flock(1) and older versions, which lock that file alone).
 *
 * State directory (default /run/cachepin, a tmpfs: placements do not survive a
 * reboot, and neither do the containers):
 *   ledger.lock              flocked after the directory; created once, never
 *                            replaced while it is a regular file
 *   ledger.json              the data (ledger_codec.h)
 *   ledger.json.prev         the generation before it: each commit links the
 *                            ledger.json it replaces there first, and a load that
 *                            finds ledger.json missing or untrusted goes back to
 *                            it (with a warning), so that a lost ledger.json costs
 *                            at most its last commit, not the running containers
 *   sched_cache_restore      "on" or "off": the value of the kernel's cache-aware
 *                            scheduling switch to give back (cp_ledger_cas_restore()),
 *                            present while cachepin holds the switch; its own
 *                            file, written before ledger.json, so that a lost
 *                            ledger.json does not leave the switch on for good
 *   ledger.json.tmp          the next ledger.json (or sched_cache_restore) while it
 *                            is written; a stale one from a killed hook is
 *                            ignored and replaced
 *   ledger.json.corrupt      the last ledger.json that failed validation
 *   ledger.lock.corrupt      the last ledger.lock that was not a regular file
 *   ledger.json.tmp.corrupt  the last ledger.json.tmp that could not be removed
 *                            (a directory)
 *   ledger.json.prev.corrupt the last ledger.json.prev that was a directory
 *   sched_cache_restore.corrupt  the last sched_cache_restore that was not a
 *                            regular file holding "on" or "off"
 * Anything found in place of ledger.json, ledger.lock, ledger.json.tmp or
 * sched_cache_restore that is not a regular file (symlink, FIFO, socket,
 * directory, device), and a directory in place of ledger.json.prev, is set aside once to its .corrupt name, with a
 * warning in the log, and the run goes on: such a file would otherwise fail every
 * run forever.  (A ledger.json.prev of another kind is never read and is replaced
 * by the next commit.) */
#ifndef CP_LEDGER_STORE_H
#define CP_LEDGER_STORE_H

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "ledger.h"

#define CP_LEDGER_DEFAULT_DIR "/run/cachepin"
#define CP_LEDGER_FILE "ledger.json"
#define CP_LEDGER_LOCK_FILE "ledger.lock"
#define CP_LEDGER_TMP_FILE "ledger.json.tmp"
#define CP_LEDGER_CORRUPT_FILE "ledger.json.corrupt"
#define CP_LEDGER_LOCK_CORRUPT_FILE "ledger.lock.corrupt"
#define CP_LEDGER_TMP_CORRUPT_FILE "ledger.json.tmp.corrupt"
#define CP_LEDGER_PREV_FILE "ledger.json.prev"
#define CP_LEDGER_PREV_CORRUPT_FILE "ledger.json.prev.corrupt"
#define CP_LEDGER_RESTORE_FILE "sched_cache_restore"
#define CP_LEDGER_RESTORE_CORRUPT_FILE "sched_cache_restore.corrupt"

/* Open STATE_DIR (created 0700 if missing; its parent must exist), take the lock,
 * waiting at most LOCK_TIMEOUT_MS, and read the ledger.  The directory must not be
 * a symlink, must be owned by the effective uid and have no group or other
 * permission bits (cp_ledger_dir_mode_ok(): one cachepin made for itself).  A missing ledger.json is an empty ledger.  A ledger.json that fails
 * validation is moved to ledger.json.corrupt; then, as when ledger.json is
 * missing, the ledger is ledger.json.prev's, or empty when that is missing too
 * (the first run) or not trusted either: see cp_ledger_was_recovered().  Fails
 * (< 0) on a bad directory, a lock timeout, or an I/O error. */
int cp_ledger_open (const char *state_dir, unsigned lock_timeout_ms, struct cp_ledger **out, cp_error_t *err);

/* STATE_DIR's ledger.json read once, without the lock, creating nothing and
 * setting nothing aside (`cachepin status`, `cachepin plan`): a missing file
 * (or state directory) is an empty ledger.  *STATE says what was found: "ok",
 * "missing"; on failure "unreadable" (*ERR keeps the errno: EACCES for a
 * non-root reader of the root-only directory) or "invalid" (a ledger the hook
 * would set aside). */
int cp_ledger_read (const char *state_dir, const char **state, struct cp_ledger **out, cp_error_t *err);

/* Whether a state directory of mode MODE may be cachepin's: nothing for group or
 * others, as cachepin makes its own (0700). */
bool cp_ledger_dir_mode_ok (mode_t mode);

/* The state directory alone, created and checked as cp_ledger_open() does, no lock:
 * for the other files kept there (hook/state/topocache.h).  The fd, or -1. */
int cp_ledger_open_dir (const char *state_dir, cp_error_t *err);

/* True when open found ledger.json untrusted, or missing beside a
 * ledger.json.prev, and went back to ledger.json.prev or started empty; *WHY (if
 * not NULL) is then a one-line explanation for the log, saying which, valid until
 * close. */
bool cp_ledger_was_recovered (const struct cp_ledger *l, const char **why);

/* The state directory's fd (-1 when detached), for the sandbox: the one place the
 * commit creates a file in.  Still the ledger's: not to be closed. */
int cp_ledger_dirfd (const struct cp_ledger *l);

/* Write the ledger if it changed since open or the last commit: ledger.json.tmp
 * written and fsync'ed, the old ledger.json linked as ledger.json.prev, the tmp
 * renamed over ledger.json, then the directory fsync'ed.  A kill at any point
 * leaves either the old or the new ledger.json. */
int cp_ledger_commit (struct cp_ledger *l, cp_error_t *err);

/* With DEFERRED, cp_ledger_commit() writes nothing and the changes wait (dirty)
 * for a commit after this is called again without: a batch of decisions made
 * under one lock (the NRI plugin's Synchronize) is written once, all or none,
 * before anyone is told of any of them. */
void cp_ledger_defer_commits (struct cp_ledger *l, bool deferred);

/* The parsed ledger kept between calls, for a long-running process (the NRI
 * plugin; ledger_cache.c).  With ON, a ledger closed unchanged since its read or
 * its last commit hands its entries to the cache, with the identity of the
 * ledger.json they are (its state directory's device and inode, and its own
 * device, inode, size, modification, change and birth times); the next
 * cp_ledger_open() of the same directory takes them back instead of reading and
 * parsing the file when, under the lock, ledger.json still has that identity.
 * Every writer (the hook, apply, another plugin) replaces ledger.json by a rename
 * of a new file: a new inode and new times, so its write is always seen and read.
 * The ledger has no generation counter, and its format is not changed for one.
 * OFF (the default: the hook, apply) reads the file every time and frees the cache. */
void cp_ledger_cache_keep (bool on);

/* How many opens took the cache, and how many read the file while it was on. */
void cp_ledger_cache_stats (unsigned long *hits, unsigned long *misses);

#endif
