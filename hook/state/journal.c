/* cachepin: the journal of decisions (see journal.h): its file, its lock, the
 * commit and the read for display; the records' codec is journal_codec.c.
 *
 * The codec is json-c's DOM through the strict reader (policy/base/json.h), not a
 * pull parser as the ledger's: a journal is at most CP_JOURNAL_MAX_RECORDS
 * records and is read by a run that commits a record, not by every hook run
 * (bench/journal.c measures what that costs beside a ledger commit). */
#define _GNU_SOURCE
#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bitmap.h"
#include "cpulist.h"
#include "fault.h"
#include "io.h"
#include "json.h"
#include "text.h"
#include "util.h"
#include "ledger_internal.h"
#include "log.h"

/* ------------------------------------------------------------ fault points */

CP_FAULT_HOOK (cp_journal_set_fault_hook, cp_journal_fault_fn);

/* ------------------------------------------------------------------- the lock */

struct cp_journal
{
  char *dir;
  int dirfd;       /* the caller's (open_at) or our own (open) */
  bool own_dirfd;
  int lockfd;
  struct cp_journal_list queue;
};

/* Set NAME, which is not what it should be (WHY), aside to ASIDE, with the one
 * warning. */
static int
set_aside (struct cp_journal *j, const char *name, const char *aside, const char *why, cp_error_t *err)
{
  const char *how;
  if (cp_ledger_move_aside (j->dirfd, j->dir, name, aside, &how, err) < 0)
    return -1;
  bool data = strcmp (name, CP_JOURNAL_FILE) == 0;
  cp_log (CP_LOG_WARNING, "%s/%s was not trusted (%s); %s %s%s", j->dir, name, why, how, aside,
          data ? "; the journal of decisions starts again" : "");
  return 0;
}

/* Whether NAME in DIRFD is there and not a regular file: then *WHY says what it is. */
static bool
not_regular (int dirfd, const char *name, const char **why)
{
  struct stat st;
  if (fstatat (dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISREG (st.st_mode))
    return false;
  *why = S_ISLNK (st.st_mode) ? "a symlink" : S_ISDIR (st.st_mode) ? "a directory" : "not a regular file";
  return true;
}

static int
take_lock (struct cp_journal *j, unsigned timeout_ms, cp_error_t *err)
{
  struct timespec start;
  clock_gettime (CLOCK_MONOTONIC, &start);
  cleanup_free char *what = cp_xasprintf ("`%s/%s`", j->dir, CP_JOURNAL_LOCK_FILE);
  /* O_NONBLOCK and O_NOCTTY: a FIFO or a terminal planted here must neither hang
     the run nor become its terminal; a second try after setting aside what was
     there.  Unlike the ledger's, this repair runs under no other lock: two runs
     that repair at once may each lock a file of their own, and one of their
     records may be lost.  The journal is advisory; the ledger's lock, which
     decides who holds CPUs, is never at stake. */
  for (int attempt = 0;; attempt++)
    {
      const char *why;
      cleanup_close int fd = openat (j->dirfd, CP_JOURNAL_LOCK_FILE,
                                     O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
      struct stat st;
      if (fd >= 0 && fstat (fd, &st) == 0 && S_ISREG (st.st_mode))
        {
          if (cp_ledger_poll_flock (fd, what, timeout_ms, &start, err) < 0)
            return -1;
          j->lockfd = fd;
          fd = -1;
          return 0;
        }
      int saved = fd < 0 ? errno : 0;
      if (attempt > 0 || !not_regular (j->dirfd, CP_JOURNAL_LOCK_FILE, &why))
        return saved ? cp_fail_errno (err, saved, "open %s", what)
                     : cp_fail_runtime (err, "%s is not a regular file", what);
      if (set_aside (j, CP_JOURNAL_LOCK_FILE, CP_JOURNAL_LOCK_CORRUPT_FILE, why, err) < 0)
        return -1;
    }
}

/* --------------------------------------------------------------- the handle */

int
cp_journal_open_at (int dirfd, const char *dir, unsigned timeout_ms, struct cp_journal **out, cp_error_t *err)
{
  cleanup_journal struct cp_journal *j = cp_xmalloc0 (sizeof *j);
  j->lockfd = -1;
  j->dir = cp_xstrdup (dir);
  /* The caller's fd itself, not a duplicate: the hook's sandbox allows a file to
     be created only relative to that very fd number (hook/host/sandbox.h). */
  j->dirfd = dirfd;
  if (take_lock (j, timeout_ms, err) < 0)
    return -1;
  *out = cp_steal_pointer (&j);
  return 0;
}

int
cp_journal_open (const char *state_dir, unsigned timeout_ms, struct cp_journal **out, cp_error_t *err)
{
  cleanup_close int dirfd = cp_ledger_open_dir (state_dir, err);
  if (dirfd < 0 || cp_journal_open_at (dirfd, state_dir, timeout_ms, out, err) < 0)
    return -1;
  (*out)->own_dirfd = true;
  dirfd = -1;
  return 0;
}

void
cp_journal_close (struct cp_journal *j)
{
  if (j == NULL)
    return;
  for (size_t i = 0; i < j->queue.n; i++)
    cp_journal_record_clear (&j->queue.records[i]);
  free (j->queue.records);
  if (j->lockfd >= 0)
    close (j->lockfd); /* the flock goes with it */
  if (j->own_dirfd && j->dirfd >= 0)
    close (j->dirfd);
  free (j->dir);
  free (j);
}

static hwloc_bitmap_t
clean_set (hwloc_const_bitmap_t set)
{
  hwloc_bitmap_t out = cp_bitmap_new ();
  if (set)
    {
      hwloc_bitmap_copy (out, set);
      cleanup_bitmap hwloc_bitmap_t range = cp_bitmap_new ();
      hwloc_bitmap_set_range (range, 0, CP_CPULIST_MAX);
      hwloc_bitmap_and (out, out, range);
    }
  return out;
}

void
cp_journal_record_clean (const struct cp_journal_record *r, struct cp_journal_record *c)
{
  c->time = r->time > 0 ? r->time : (long long) time (NULL);
  if (c->time > CP_JOURNAL_MAX_TIME)
    c->time = CP_JOURNAL_MAX_TIME;
  c->front = (unsigned) r->front < CP_JOURNAL_N_FRONTS ? r->front : CP_JOURNAL_HOOK;
  c->kind = (unsigned) r->kind < CP_JOURNAL_N_KINDS ? r->kind : CP_JOURNAL_UNPLACED;
  c->cause = cp_journal_cause_for (c->kind, r->cause);
  c->id = cp_text_clean_copy (r->id, CP_JOURNAL_MAX_ID);
  if (c->id[0] == '\0')
    {
      free (c->id);
      c->id = cp_xstrdup ("?"); /* a bug of the caller's: keep the record anyway */
    }
  c->name = cp_text_clean_copy (r->name, CP_JOURNAL_MAX_NAME);
  c->cgroup = cp_text_clean_copy (r->cgroup, CP_JOURNAL_MAX_CGROUP);
  c->reason = cp_text_clean_copy (r->reason, CP_JOURNAL_MAX_REASON);
  c->cpus = clean_set (r->cpus);
  c->mems = clean_set (r->mems);
}

void
cp_journal_add (struct cp_journal *j, const struct cp_journal_record *r)
{
  cp_journal_record_clean (r, cp_journal_list_push (&j->queue));
}

/* ------------------------------------------------------ the records kept */

/* The records kept with journal.json's identity (every writer renames a new
   file over it: cp_io_file_ident()). */
static struct
{
  bool on;
  struct cp_journal_list *list; /* journal.json's records as of ident; NULL: none kept */
  struct cp_file_ident ident;
  unsigned long hits, misses;
} kept;

void
cp_journal_cache_keep (bool on)
{
  cp_journal_list_free (kept.list);
  kept.list = NULL;
  kept.on = on;
  kept.hits = kept.misses = 0;
}

void
cp_journal_cache_stats (unsigned long *hits, unsigned long *misses)
{
  *hits = kept.hits;
  *misses = kept.misses;
}

/* The kept records, moved out, if journal.json in J's directory is still the file
   they are; NULL otherwise (it is read).  Either way nothing stays kept: a commit
   that fails from here on leaves the next one to read the file. */
static struct cp_journal_list *
take_kept (struct cp_journal *j)
{
  if (kept.list == NULL)
    return NULL;
  struct cp_file_ident now;
  struct cp_journal_list *l = cp_steal_pointer (&kept.list);
  if (cp_io_file_ident (j->dirfd, CP_JOURNAL_FILE, &now) && cp_io_same_file_ident (&now, &kept.ident))
    {
      kept.hits++;
      return l;
    }
  kept.misses++;
  cp_journal_list_free (l);
  return NULL;
}

/* After a rename: ALL's newest N records, the ones the file holds, kept with its
   identity. */
static void
keep (struct cp_journal *j, struct cp_journal_list **all, size_t n)
{
  struct cp_journal_list *l = *all;
  if (!kept.on || !cp_io_file_ident (j->dirfd, CP_JOURNAL_FILE, &kept.ident))
    return;
  size_t drop = l->n - n;
  for (size_t i = 0; i < drop; i++)
    cp_journal_record_clear (&l->records[i]);
  if (drop > 0)
    memmove (l->records, l->records + drop, n * sizeof *l->records);
  l->n = n;
  kept.list = cp_steal_pointer (all);
}

/* --------------------------------------------------------------- the commit */

/* The journal on disk into *OUT: empty when there is none; when it cannot be
 * trusted, set aside (one warning) and empty too.  Fails on an I/O error only. */
static int
load (struct cp_journal *j, struct cp_journal_list **out, cp_error_t *err)
{
  cleanup_free char *name = cp_xasprintf ("`%s/%s`", j->dir, CP_JOURNAL_FILE);
  cleanup_free char *buf = NULL;
  size_t len = 0;
  const char *what;
  cleanup_error cp_error_t why = NULL;
  *out = take_kept (j);
  if (*out)
    return 0;
  if (cp_io_read_at (j->dirfd, CP_JOURNAL_FILE, O_NOFOLLOW, name, CP_JOURNAL_MAX_BYTES, 0, &buf, &len, &why) < 0)
    {
      if (cp_error_errno (why) == ENOENT)
        {
          *out = cp_xmalloc0 (sizeof **out);
          return 0;
        }
      if (not_regular (j->dirfd, CP_JOURNAL_FILE, &what))
        ;
      else if (cp_error_errno (why) == EFBIG)
        what = "larger than the limit";
      else
        {
          *err = cp_steal_pointer (&why);
          return -1;
        }
    }
  else if (cp_journal_parse (buf, len, out, &why) == 0)
    return 0;
  else
    what = cp_error_message (why);
  if (set_aside (j, CP_JOURNAL_FILE, CP_JOURNAL_CORRUPT_FILE, what, err) < 0)
    return -1;
  *out = cp_xmalloc0 (sizeof **out);
  return 0;
}

/* TEXT into journal.json.tmp, synced; a stale one (a killed run's) replaced. */
static int
write_tmp (struct cp_journal *j, const char *text, cp_error_t *err)
{
  /* Unlinking first also takes care of what is not a plain file of ours (a FIFO
     would block the open, a hard link would have O_TRUNC truncate another file);
     what cannot be unlinked (a directory) is set aside. */
  const char *why;
  if (unlinkat (j->dirfd, CP_JOURNAL_TMP_FILE, 0) < 0 && errno != ENOENT)
    {
      int saved = errno;
      if (!not_regular (j->dirfd, CP_JOURNAL_TMP_FILE, &why))
        return cp_fail_errno (err, saved, "remove `%s/%s`", j->dir, CP_JOURNAL_TMP_FILE);
      if (set_aside (j, CP_JOURNAL_TMP_FILE, CP_JOURNAL_TMP_CORRUPT_FILE, why, err) < 0)
        return -1;
    }
  cleanup_close int fd
      = openat (j->dirfd, CP_JOURNAL_TMP_FILE, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return cp_fail_errno (err, errno, "create `%s/%s`", j->dir, CP_JOURNAL_TMP_FILE);
  if (cp_io_write_all (fd, text, strlen (text)) < 0)
    return cp_fail_errno (err, errno, "write `%s/%s`", j->dir, CP_JOURNAL_TMP_FILE);
  int fe = FAULT_RESULT (CP_JOURNAL_FAULT_TMP_WRITTEN);
  if (fe)
    return cp_fail_errno (err, fe, "fault injected after writing `%s/%s`", j->dir, CP_JOURNAL_TMP_FILE);
  if (fsync (fd) < 0)
    return cp_fail_errno (err, errno, "fsync `%s/%s`", j->dir, CP_JOURNAL_TMP_FILE);
  int rc = close (fd);
  fd = -1;
  if (rc < 0)
    return cp_fail_errno (err, errno, "close `%s/%s`", j->dir, CP_JOURNAL_TMP_FILE);
  return 0;
}

/* R is a drift the journal already says: the newest record of R's id in ALL is a
   drift to the same CPUs.  A run that sees a drift and commits no ledger (a strict
   refusal, a read) sees it again next time; the journal says it once per change. */
static bool
repeated_drift (const struct cp_journal_list *all, const struct cp_journal_record *r)
{
  if (r->kind != CP_JOURNAL_DRIFT || r->id == NULL)
    return false;
  for (size_t i = all->n; i-- > 0;)
    {
      const struct cp_journal_record *o = &all->records[i];
      if (o->id == NULL || strcmp (o->id, r->id) != 0)
        continue;
      bool o_none = o->cpus == NULL || hwloc_bitmap_iszero (o->cpus);
      bool r_none = r->cpus == NULL || hwloc_bitmap_iszero (r->cpus);
      return o->kind == CP_JOURNAL_DRIFT && o_none == r_none && (o_none || hwloc_bitmap_isequal (o->cpus, r->cpus));
    }
  return false;
}

int
cp_journal_commit (struct cp_journal *j, cp_error_t *err)
{
  struct cp_journal_list queue = j->queue;
  j->queue = (struct cp_journal_list){ 0 };
  cleanup_journal_list struct cp_journal_list *all = NULL;
  int r = load (j, &all, err);
  /* The queue joins the list (freed with it) whatever happens from here. */
  if (all == NULL)
    all = cp_xmalloc0 (sizeof *all);
  all->records = cp_xrealloc (all->records, (all->n + queue.n + 1) * sizeof *all->records);
  size_t added = 0;
  for (size_t i = 0; i < queue.n; i++)
    {
      if (repeated_drift (all, &queue.records[i]))
        {
          cp_journal_record_clear (&queue.records[i]);
          continue;
        }
      all->records[all->n++] = queue.records[i];
      cp_journal_counts_add (&all->counts, &queue.records[i]);
      added++;
    }
  free (queue.records);
  if (r < 0)
    return -1;
  if (added == 0)
    return 0;
  size_t n_written;
  cleanup_free char *text = cp_journal_serialize (all, &n_written);
  int fe = 0;
  if (write_tmp (j, text, err) < 0 || (fe = FAULT_RESULT (CP_JOURNAL_FAULT_TMP_SYNCED)) != 0)
    {
      unlinkat (j->dirfd, CP_JOURNAL_TMP_FILE, 0);
      return fe ? cp_fail_errno (err, fe, "fault injected before renaming `%s/%s`", j->dir, CP_JOURNAL_TMP_FILE) : -1;
    }
  if (renameat (j->dirfd, CP_JOURNAL_TMP_FILE, j->dirfd, CP_JOURNAL_FILE) < 0)
    {
      int saved = errno;
      unlinkat (j->dirfd, CP_JOURNAL_TMP_FILE, 0);
      return cp_fail_errno (err, saved, "rename `%s/%s` to %s", j->dir, CP_JOURNAL_TMP_FILE, CP_JOURNAL_FILE);
    }
  fe = FAULT_RESULT (CP_JOURNAL_FAULT_RENAMED);
  if (fe)
    return cp_fail_errno (err, fe, "fault injected after renaming `%s/%s`", j->dir, CP_JOURNAL_TMP_FILE);
  keep (j, &all, n_written);
  return 0;
}

void
cp_journal_note (const char *state_dir, const struct cp_journal_record *r)
{
  cleanup_journal struct cp_journal *j = NULL;
  cleanup_error cp_error_t err = NULL;
  if (cp_journal_open (state_dir, CP_JOURNAL_LOCK_TIMEOUT_MS, &j, &err) == 0)
    {
      cp_journal_add (j, r);
      if (cp_journal_commit (j, &err) == 0)
        return;
    }
  cleanup_free char *id = cp_text_clean_copy (r->id, 64);
  cp_log (CP_LOG_WARNING, "could not keep `%s %s` in the journal of decisions: %s", cp_journal_kind_name (r->kind),
          id, cp_error_message (err));
}

/* ---------------------------------------------------------- reading for display */

int
cp_journal_read (const char *state_dir, size_t k, struct cp_journal_list **out, cp_error_t *err)
{
  cleanup_close int dirfd = open (state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  cleanup_free char *name = cp_xasprintf ("`%s/%s`", state_dir, CP_JOURNAL_FILE);
  cleanup_free char *buf = NULL;
  size_t len = 0;
  if (dirfd < 0 && errno != ENOENT)
    return cp_fail_errno (err, errno, "open state directory `%s`", state_dir);
  if (dirfd < 0
      || cp_io_read_at (dirfd, CP_JOURNAL_FILE, O_NOFOLLOW, name, CP_JOURNAL_MAX_BYTES, CP_IO_INPUT, &buf, &len, err)
             < 0)
    {
      if (dirfd >= 0 && cp_error_errno (*err) != ENOENT)
        return -1;
      cp_error_free (err);
      *out = cp_xmalloc0 (sizeof **out);
      return 0;
    }
  cleanup_journal_list struct cp_journal_list *l = NULL;
  if (cp_journal_parse (buf, len, &l, err) < 0)
    return cp_error_wrap (err, "%s", name);
  if (k > 0 && l->n > k)
    {
      size_t drop = l->n - k;
      for (size_t i = 0; i < drop; i++)
        cp_journal_record_clear (&l->records[i]);
      memmove (l->records, l->records + drop, k * sizeof *l->records);
      l->n = k;
    }
  *out = cp_steal_pointer (&l);
  return 0;
}
