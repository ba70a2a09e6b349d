/* cachepin: what the ledger's modules share with each other and with the tests,
 * and nobody else: the ledger's insides (ledger.c the model, ledger_codec.c and
 * ledger_codec_write.c its text, ledger_store.c its files, ledger_lock.c its lock)
 * and the test-only fault points. */
#ifndef CP_LEDGER_INTERNAL_H
#define CP_LEDGER_INTERNAL_H

#include <sys/types.h>
#include <time.h>

#include "io.h"
#include "ledger.h"

struct cp_ledger
{
  char *dir;  /* the state directory, for messages; NULL when detached */
  int dirfd;  /* -1 when detached (cp_ledger_parse) */
  int lockfd; /* holds the flock; -1 when detached */
  struct cp_ledger_entry *entries;
  size_t n, cap;
  struct cp_ledger_partition *parts; /* ledger_partition.h */
  size_t n_parts;
  int cas_restore; /* cp_ledger_cas_restore() */
  int cas_restore_stored; /* what sched_cache_restore (the file) holds: 0, 1, -1 none (ledger_store.c) */
  bool dirty;      /* changed since read or last commit */
  char *recovered; /* why ledger.json was set aside, or NULL */
  struct cp_file_ident ident;          /* ledger.json's, as the entries were read or committed (the cache's) */
  bool ident_known; /* ident is what ledger.json is now */
  bool deferred;    /* cp_ledger_defer_commits(): commits wait for the batch's end */
  struct cp_ledger_on_commit *on_commit; /* cp_ledger_on_commit(), in the order given */
  size_t n_on_commit;
};

struct cp_ledger_on_commit
{
  void (*fn) (void *data);
  void *data;
  void (*free_data) (void *data);
};

/* ledger_store.c: the cp_ledger_on_commit() functions called (RUN) or not, and
   forgotten. */
void cp_ledger_on_commit_done (struct cp_ledger *l, bool run);

/* ledger_cache.c (cp_ledger_cache_keep()): under the lock. */
bool cp_ledger_cache_on (void);
/* ledger.json's identity in L's directory now; false when it cannot be had. */
bool cp_ledger_ident_now (const struct cp_ledger *l, struct cp_file_ident *out);
/* Take the cached entries into L when they are ledger.json's as it is now
   (IDENT); false otherwise (a miss: the file is read). */
bool cp_ledger_cache_take (struct cp_ledger *l, const struct cp_file_ident *ident);
/* At close: L's entries to the cache, when L is unchanged since its read or commit. */
void cp_ledger_cache_give (struct cp_ledger *l);

/* An empty, detached ledger. */
struct cp_ledger *cp_ledger_new (void);

/* A new zeroed entry at the end (the caller fills it, or the ledger's close frees
 * what it got so far). */
struct cp_ledger_entry *cp_ledger_append (struct cp_ledger *l);

/* Ids unique, no CPU held by two exclusive entries (CP_ERR_INPUT).  O(n log n):
 * the entries come from a file someone may have written to hurt us. */
int cp_ledger_check_entries (const struct cp_ledger *l, cp_error_t *err);

/* Flock DIRFD (the state directory DIR, for messages), then open (creating it)
 * and flock ledger.lock in it, waiting at most TIMEOUT_MS in all; set aside, once,
 * anything other than a regular file found in its place.  The fd holding
 * ledger.lock's flock, or -1; the directory's flock goes with DIRFD's close. */
int cp_ledger_take_lock (int dirfd, const char *dir, unsigned timeout_ms, cp_error_t *err);

/* Rename NAME to ASIDE in DIRFD, replacing an older ASIDE, and sync the directory.
 * A file cannot replace a directory nor a directory a non-empty one: then the
 * older ASIDE is removed (an empty directory at most) and, failing that, NAME
 * itself.  *HOW says which, for the log ("moved it to", "... removed it ..."). */
int cp_ledger_move_aside (int dirfd, const char *dir, const char *name, const char *aside, const char **how,
                          cp_error_t *err);

/* The entries' rules for ids and paths (ledger.c), for the partition records. */
int cp_ledger_check_text (const char *what, const char *s, size_t max, cp_error_t *err);
int cp_ledger_check_path (const char *what, const char *s, cp_error_t *err);

/* Whether S (NUL-terminated) is short and clean enough to be quoted in a message. */
bool cp_ledger_quotable (const char *s);

#ifdef CACHEPIN_FAULT_INJECTION
/* Test builds only (-DCACHEPIN_FAULT_INJECTION for the whole build): a function
 * called at each step of cp_ledger_commit().  It may _exit() to simulate a kill
 * there, or return an errno value (non-zero) to make the commit fail there. */
enum cp_ledger_fault_point
{
  CP_LEDGER_FAULT_TMP_WRITTEN, /* ledger.json.tmp written, not yet fsync'ed */
  CP_LEDGER_FAULT_TMP_SYNCED,  /* fsync'ed and closed, not yet renamed */
  CP_LEDGER_FAULT_PREV_KEPT,   /* ledger.json also linked as ledger.json.prev, not yet replaced (a kill only) */
  CP_LEDGER_FAULT_RENAMED,     /* renamed over ledger.json, directory not yet fsync'ed */
};
typedef int (*cp_ledger_fault_fn) (enum cp_ledger_fault_point point, void *data);
void cp_ledger_set_fault_hook (cp_ledger_fault_fn fn, void *data);
#endif

/* flock(FD, LOCK_EX) by TIMEOUT_MS after START (CLOCK_MONOTONIC), polling LOCK_NB
 * with short jittered naps (flock() has no timeout, and SIGALRM would disturb the
 * rest of a hook).  WHAT names the file in messages.  The ledger's lock and the
 * journal's (journal.c). */
int cp_ledger_poll_flock (int fd, const char *what, unsigned timeout_ms, const struct timespec *start, cp_error_t *err);

#endif
