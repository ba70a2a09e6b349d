/* cachepin: the journal of decisions, the last few of them, for people.
 *
 * Every decision a front end makes about a container (placed, started unplaced
 * and why, refused, released, a drift seen, the kernel switch written) is also
 * kept here, so that `cachepin status` can show it the way `kubectl describe`
 * shows events: on a host without syslog the log line is lost, and the ledger
 * only knows the containers that are placed.  The journal is advisory: nothing
 * reads it to decide anything, a failure to write it is logged and ignored, and
 * a journal that cannot be trusted is set aside with one warning.
 *
 * The file.  CP_JOURNAL_FILE in the state directory (hook/state/ledger_store.h:
 * created 0700 and checked by cp_ledger_open_dir()), mode 0600, one JSON object,
 * the records oldest first, one per line:
 *   {"version":1,"records":[
 *    {"time":1764500000,"front":"hook","kind":"placed","id":"<container id>",
 *     "name":"web","cgroup":"/machine.slice/libpod-<id>.scope","cpus":"0-3",
 *     "mems":"0","reason":"4 CPUs in L3#0, one thread per core"},
 *    ...
 *   ]}
 * then, after the records, the counts (version 2; a version 1 file has none):
 *   ],"counts":[
 *    {"front":"hook","kind":"placed","cause":"","n":12},
 *    {"front":"hook","kind":"unplaced","cause":"unsatisfiable","n":2},
 *    ...
 *   ]}
 * Every key is required and no other is allowed; "name", "cgroup", "cpus",
 * "mems" and "reason" may be "" (not known, none).  Strict JSON
 * (policy/base/json.h: no duplicate keys, no NaN, no escaped NUL, ...), strings
 * valid UTF-8 without control characters (policy/base/text.h) and within the
 * CP_JOURNAL_MAX_* lengths, cpulists strict (policy/base/cpulist.h), time an
 * integer in 0..2^53, front and kind one of the names below.
 *
 * The bound.  At most CP_JOURNAL_MAX_RECORDS records and CP_JOURNAL_MAX_BYTES
 * bytes: a commit keeps the newest records that fit both (any one record fits
 * alone, with the counts: the field limits see to it) and drops the older ones.
 * The reader refuses a file past either bound.
 *
 * The counts.  How many decisions of each front, kind and cause the journal was
 * given since it started (struct cp_journal_counts): a commit adds its records to
 * them, and they are never trimmed, so that `cachepin metrics` (engine/metrics.h)
 * has counters where the records, bounded, cannot be counted.  One line per
 * front, kind and cause that is not zero, each once, "n" from 1 to
 * CP_JOURNAL_MAX_COUNT; "cause" is "" but for refused and unplaced, which have
 * one.  They are as safe as the records (the same file, the same commit) and as
 * advisory: a record the journal could not keep is not counted, and a journal set
 * aside starts its counts from zero (a counter's reset, for Prometheus).
 *
 * Crash safety.  A commit reads the journal, adds its records, and writes the
 * whole file again as CP_JOURNAL_TMP_FILE, fsync'ed, renamed over CP_JOURNAL_FILE:
 * a kill at any point leaves the old file or the new one (a stale tmp is replaced
 * by the next commit), and a reader without the lock (`status`) sees one of them
 * whole.  The directory is not fsync'ed: after a power cut the journal may miss
 * its last commit, never be torn (the state directory is a tmpfs by default
 * anyway).  A file that is not a regular file or does not parse (torn by
 * something other than cachepin, garbage, from a newer version) is moved to
 * CP_JOURNAL_CORRUPT_FILE, with one warning in the log, and the journal starts
 * again from the records being committed; a journal.json.tmp or journal.lock that
 * is not a regular file is set aside the same way (to its ".corrupt" name).
 *
 * The lock.  Its own, CP_JOURNAL_LOCK_FILE's flock, not the ledger's: records come
 * also from runs that do not hold the ledger (its lock timed out, a request
 * refused before it was opened).  It is taken by cp_journal_open() and held until
 * cp_journal_close(), always after the ledger's (never the other way round, so
 * the two cannot deadlock), with a short bounded wait: a busy journal costs a
 * record, never a placement.  Taking it at open is what lets the hook commit from
 * inside its sandbox (hook/host/sandbox.h), which allows openat with O_CREAT in
 * the state directory, write, fsync, renameat and unlinkat, but not flock or a
 * nap: open before cp_sandbox_enter(), add and commit after.  A read for display
 * (cp_journal_read()) takes no lock and writes nothing. */
#ifndef CP_JOURNAL_H
#define CP_JOURNAL_H

#include <hwloc.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define CP_JOURNAL_FILE "journal.json"
#define CP_JOURNAL_LOCK_FILE "journal.lock"
#define CP_JOURNAL_TMP_FILE "journal.json.tmp"
#define CP_JOURNAL_CORRUPT_FILE "journal.json.corrupt"
#define CP_JOURNAL_LOCK_CORRUPT_FILE "journal.lock.corrupt"
#define CP_JOURNAL_TMP_CORRUPT_FILE "journal.json.tmp.corrupt"

#define CP_JOURNAL_VERSION 2 /* 1: the same without the counts, still read */
/* The bound: the newest records that fit both. */
#define CP_JOURNAL_MAX_RECORDS 64
#define CP_JOURNAL_MAX_BYTES (128 * 1024)
/* The longest text of each field (bytes).  cp_journal_add() cuts longer text (at a
 * character boundary) rather than lose the record; the reader refuses it.  With
 * cpulists of at most CP_CPULIST_MAX, one record is at most about 60 KiB. */
#define CP_JOURNAL_MAX_ID 4159     /* CP_LEDGER_MAX_ID: "apply:" + a cgroup path */
#define CP_JOURNAL_MAX_NAME 255
#define CP_JOURNAL_MAX_CGROUP 4095 /* PATH_MAX - 1 */
#define CP_JOURNAL_MAX_REASON 1023
#define CP_JOURNAL_MAX_TIME (1LL << 53)
#define CP_JOURNAL_MAX_COUNT (1ULL << 53) /* a count stays there (JSON's exact integers) */
/* How long cp_journal_open() waits for the lock by default. */
#define CP_JOURNAL_LOCK_TIMEOUT_MS 250

/* Which command decided. */
enum cp_journal_front
{
  CP_JOURNAL_HOOK = 0,
  CP_JOURNAL_APPLY,
  CP_JOURNAL_RELEASE,
  CP_JOURNAL_NRI, /* `cachepin nri`, the NRI plugin */
  CP_JOURNAL_N_FRONTS,
};

/* What was decided. */
enum cp_journal_kind
{
  CP_JOURNAL_PLACED = 0, /* cpus (and mems) written into the cgroup */
  CP_JOURNAL_UNPLACED,   /* the container started on whatever it had, and why */
  CP_JOURNAL_REFUSED,    /* the request was refused (strict, a bad annotation, ...) */
  CP_JOURNAL_RELEASED,   /* its CPUs given back */
  CP_JOURNAL_DRIFT,      /* another manager moved its cpuset (cpus: where to) */
  CP_JOURNAL_SWITCH,     /* the kernel's cache-aware scheduling switch written */
  CP_JOURNAL_N_KINDS,
};

/* Why a container was refused or started unplaced: the failure's kind
 * (policy/base/error.h), counted but not written in its record. */
enum cp_journal_cause
{
  CP_JOURNAL_CAUSE_NONE = 0,      /* placed, released, drift, switch: no failure */
  CP_JOURNAL_CAUSE_INVALID,       /* what it asked is wrong (CP_ERR_INPUT) */
  CP_JOURNAL_CAUSE_UNSATISFIABLE, /* a valid request the host cannot meet */
  CP_JOURNAL_CAUSE_FAILURE,       /* the host failed (CP_ERR_RUNTIME) */
  CP_JOURNAL_N_CAUSES,
};

struct cp_journal_record
{
  long long time;        /* unix seconds (UTC); 0 in cp_journal_add(): now */
  enum cp_journal_front front;
  enum cp_journal_kind kind;
  char *id;              /* the container id, or "apply:<cgroup>"; never empty */
  char *name;            /* the container's name; "" or NULL: not known */
  char *cgroup;          /* the cgroup path in its hierarchy; "" or NULL: not known */
  hwloc_bitmap_t cpus;   /* NULL or empty: none */
  hwloc_bitmap_t mems;   /* NULL or empty: none */
  char *reason;          /* one line; "" or NULL: none */
  enum cp_journal_cause cause; /* refused, unplaced: why (counted, not written; read: NONE) */
};

/* "hook", "placed", "invalid" ("" for NONE), ...; and back (false: not a name). */
const char *cp_journal_front_name (enum cp_journal_front front);
const char *cp_journal_kind_name (enum cp_journal_kind kind);
const char *cp_journal_cause_name (enum cp_journal_cause cause);
bool cp_journal_front_parse (const char *s, enum cp_journal_front *out);
bool cp_journal_kind_parse (const char *s, enum cp_journal_kind *out);
bool cp_journal_cause_parse (const char *s, enum cp_journal_cause *out);

/* The cause of a refusal or an unplaced start whose error is of KIND. */
enum cp_journal_cause cp_journal_cause_of (enum cp_error_kind kind);

/* Whether records of KIND have a cause (refused, unplaced). */
bool cp_journal_kind_has_cause (enum cp_journal_kind kind);

/* The cause a record of KIND giving CAUSE is counted under: NONE for a kind that
 * has none; for one that has, CAUSE, or FAILURE when CAUSE is NONE or unknown (a
 * failure that says no kind is the host's: error.h's default). */
enum cp_journal_cause cp_journal_cause_for (enum cp_journal_kind kind, enum cp_journal_cause cause);

/* Free what R holds and zero it. */
void cp_journal_record_clear (struct cp_journal_record *r);

/* The decisions counted since the journal started: [front][kind][cause]. */
struct cp_journal_counts
{
  unsigned long long n[CP_JOURNAL_N_FRONTS][CP_JOURNAL_N_KINDS][CP_JOURNAL_N_CAUSES];
};

/* R counted in C under its front, kind and cp_journal_cause_for() (up to
 * CP_JOURNAL_MAX_COUNT, where a count stays); R must pass
 * cp_journal_record_check(). */
void cp_journal_counts_add (struct cp_journal_counts *c, const struct cp_journal_record *r);

/* Records, oldest first, and the counts of every decision the journal was given
 * (the records dropped by the bound included). */
struct cp_journal_list
{
  struct cp_journal_record *records;
  size_t n;
  struct cp_journal_counts counts;
};

void cp_journal_list_free (struct cp_journal_list *l);
/* A new zeroed record at the end of L, for the caller to fill. */
struct cp_journal_record *cp_journal_list_push (struct cp_journal_list *l);
#define cleanup_journal_list __attribute__ ((cleanup (cp_journal_list_freep)))
static inline void
cp_journal_list_freep (struct cp_journal_list **l)
{
  cp_journal_list_free (*l);
}

/* ---- the codec ---- */

/* Parse and check journal text (LEN bytes; NUL bytes, more than the bound, any
 * fault listed above refused): CP_ERR_INPUT with a one-line message. */
int cp_journal_parse (const char *buf, size_t len, struct cp_journal_list **out, cp_error_t *err);

/* The text of the newest records of L that fit the bound (NUL-terminated, ends
 * with a newline); *KEPT (may be NULL) is how many.  Every record must pass
 * cp_journal_record_check().  Caller frees. */
char *cp_journal_serialize (const struct cp_journal_list *l, size_t *kept);

/* R against the rules the reader applies (CP_ERR_INPUT), and a known cause. */
int cp_journal_record_check (const struct cp_journal_record *r, cp_error_t *err);

/* Fill OUT (the caller's to clear) with a copy of R that passes
 * cp_journal_record_check(), as cp_journal_add() queues it: text cut to the
 * limits (at a character boundary) and made safe for a terminal
 * (cp_text_sanitize()), cpus and mems cut to 0..CP_CPULIST_MAX, a time of 0 made
 * now, an empty id made "?", an unknown front or kind made hook or unplaced, the
 * cause cp_journal_cause_for()'s. */
void cp_journal_record_clean (const struct cp_journal_record *r, struct cp_journal_record *out);

/* ---- the file ---- */

struct cp_journal;

/* Take the journal's lock in the state directory DIRFD (DIR names it in messages),
 * waiting at most TIMEOUT_MS.  DIRFD stays the caller's and must stay open until
 * cp_journal_close(): the handle uses that very fd (the sandbox allows creating
 * files relative to it alone).  With the ledger open: cp_journal_open_at
 * (cp_ledger_dirfd (l), dir, ...), closed before the ledger. */
int cp_journal_open_at (int dirfd, const char *dir, unsigned timeout_ms, struct cp_journal **out, cp_error_t *err);

/* The same with STATE_DIR opened (created 0700 if missing) and checked as the
 * ledger's is (cp_ledger_open_dir()). */
int cp_journal_open (const char *state_dir, unsigned timeout_ms, struct cp_journal **out, cp_error_t *err);

/* Queue a copy of R for the next commit, cleaned by cp_journal_record_clean():
 * a record is never lost for its text. */
void cp_journal_add (struct cp_journal *j, const struct cp_journal_record *r);

/* Write the queued records: the journal read, what cannot be trusted set aside
 * (one warning), the records added, the bound applied, the file replaced.  The
 * queue is emptied whatever happens (a record is written at most once). */
int cp_journal_commit (struct cp_journal *j, cp_error_t *err);

/* The records kept between commits, for a long-running process (the NRI plugin):
 * with ON, a commit that renamed its file keeps the records it wrote, with that
 * journal.json's identity (the state directory's device and inode, the file's
 * device, inode, size, modification, change and birth times); the next commit, under
 * the lock, takes them instead of reading and parsing the file when journal.json
 * still has that identity.  Every writer replaces the file by a rename (a new inode,
 * new times), so another process's commit is always seen and read.  Reading the
 * journal was nine tenths of a commit's instructions (64 records through json-c's
 * DOM and the strict checks), the plugin's largest cost with the ledger's
 * serialization.  OFF (the default: the hook, apply) reads the file every time and
 * frees what is kept.  *HITS and *MISSES: the commits that took the records, and
 * those that found the file changed, since ON. */
void cp_journal_cache_keep (bool on);
void cp_journal_cache_stats (unsigned long *hits, unsigned long *misses);

/* Release the lock and free; queued records not committed are dropped.  NULL is
 * fine. */
void cp_journal_close (struct cp_journal *j);
#define cleanup_journal __attribute__ ((cleanup (cp_journal_closep)))
static inline void
cp_journal_closep (struct cp_journal **j)
{
  cp_journal_close (*j);
}

/* Open, add R, commit, close: for a front end that does not hold the journal
 * open.  Advisory: a failure is logged as a warning naming the record, and
 * ignored. */
void cp_journal_note (const char *state_dir, const struct cp_journal_record *r);

/* For display (`cachepin status`, `cachepin metrics`): the last K records (0:
 * all), oldest first, with all the counts, read without the lock and without
 * writing anything: a missing state directory
 * or journal is an empty list; a journal that cannot be read or trusted fails
 * (CP_ERR_INPUT when it is the file's fault), and stays where it is. */
int cp_journal_read (const char *state_dir, size_t k, struct cp_journal_list **out, cp_error_t *err);

#ifdef CACHEPIN_FAULT_INJECTION
/* Test builds only (-DCACHEPIN_FAULT_INJECTION, policy/base/fault.h): a function
 * called at each step of cp_journal_commit().  It may _exit() to simulate a kill
 * there, or return an errno value (non-zero) to make the commit fail there. */
enum cp_journal_fault_point
{
  CP_JOURNAL_FAULT_TMP_WRITTEN, /* journal.json.tmp written, not yet fsync'ed */
  CP_JOURNAL_FAULT_TMP_SYNCED,  /* fsync'ed and closed, not yet renamed */
  CP_JOURNAL_FAULT_RENAMED,     /* renamed over journal.json */
};
typedef int (*cp_journal_fault_fn) (enum cp_journal_fault_point point, void *data);
void cp_journal_set_fault_hook (cp_journal_fault_fn fn, void *data);
#endif

#endif
