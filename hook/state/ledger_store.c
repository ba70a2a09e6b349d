/* cachepin: the ledger's files (see ledger_store.h): the state directory,
 * loading ledger.json, setting aside what cannot be trusted, and the commit.  The
 * lock is in ledger_lock.c. */
#define _GNU_SOURCE
#include "ledger_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "util.h"
#include "fault.h"
#include "log.h"

/* ------------------------------------------------------------ fault points */

CP_FAULT_HOOK (cp_ledger_set_fault_hook, cp_ledger_fault_fn);

/* --------------------------------------------------------- the directory */

/* Create the directory if missing and open it; refuse one that others could
 * change under us, or that cachepin did not make for itself: it makes its own
 * 0700 (every version did), so a directory open to group or others (`/`,
 * /var/lib, any shared 0755 one) is someone else's, and its files are not ours
 * to write beside. */
static int
open_state_dir (const char *state_dir, cp_error_t *err)
{
  if (state_dir == NULL || state_dir[0] == '\0')
    return cp_fail_input (err, "the state directory is empty");
  /* With a trailing '/', the kernel follows a final symlink despite O_NOFOLLOW. */
  cleanup_free char *path = cp_xstrdup (state_dir);
  for (size_t len = strlen (path); len > 1 && path[len - 1] == '/'; len--)
    path[len - 1] = '\0';

  bool created = mkdir (path, 0700) == 0;
  if (!created && errno != EEXIST)
    {
      if (errno == ENOENT)
        return cp_fail_errno (err, errno, "create state directory `%s` (its parent must exist)", path);
      return cp_fail_errno (err, errno, "create state directory `%s`", path);
    }
  cleanup_close int fd = open (path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    {
      int saved = errno;
      struct stat lst;
      if (lstat (path, &lst) == 0 && S_ISLNK (lst.st_mode))
        return cp_fail_runtime (err, "state directory `%s` is a symlink; refusing it", path);
      return cp_fail_errno (err, saved, "open state directory `%s`", path);
    }
  struct stat st;
  if (fstat (fd, &st) < 0)
    return cp_fail_errno (err, errno, "stat state directory `%s`", path);
  if (st.st_uid != geteuid ())
    return cp_fail_runtime (err, "state directory `%s` is owned by uid %u, not %u; refusing it%s", path,
                            (unsigned) st.st_uid, (unsigned) geteuid (), st.st_uid == 0 ? " (run as root)" : "");
  if (!cp_ledger_dir_mode_ok (st.st_mode))
    return cp_fail_runtime (err,
                            "state directory `%s` has mode %04o, open to group or others: not one cachepin made for "
                            "itself (0700); refusing it",
                            path, (unsigned) (st.st_mode & 07777));
  /* The umask may have taken bits we want (it cannot have added any). */
  if (created && (st.st_mode & 07777) != 0700 && fchmod (fd, 0700) < 0)
    return cp_fail_errno (err, errno, "chmod state directory `%s`", path);
  int ret = fd;
  fd = -1;
  return ret;
}

bool
cp_ledger_dir_mode_ok (mode_t mode)
{
  return (mode & (S_IRWXG | S_IRWXO)) == 0;
}

int
cp_ledger_open_dir (const char *state_dir, cp_error_t *err)
{
  return open_state_dir (state_dir, err);
}

/* ------------------------------------------------------------ setting aside */

int
cp_ledger_move_aside (int dirfd, const char *dir, const char *name, const char *aside, const char **how,
                      cp_error_t *err)
{
  *how = "moved it to";
  if (renameat (dirfd, name, dirfd, aside) < 0)
    {
      if (errno != EISDIR && errno != ENOTDIR && errno != ENOTEMPTY && errno != EEXIST)
        return cp_fail_errno (err, errno, "move untrusted `%s/%s` aside", dir, name);
      if (unlinkat (dirfd, aside, 0) < 0 && errno == EISDIR)
        unlinkat (dirfd, aside, AT_REMOVEDIR);
      if (renameat (dirfd, name, dirfd, aside) < 0)
        {
          *how = "could not keep it, removed it instead of moving it to";
          if (unlinkat (dirfd, name, 0) < 0 && (errno != EISDIR || unlinkat (dirfd, name, AT_REMOVEDIR) < 0))
            return cp_fail_errno (err, errno, "move untrusted `%s/%s` aside", dir, name);
        }
    }
  if (fsync (dirfd) < 0)
    return cp_fail_errno (err, errno, "fsync `%s`", dir);
  return 0;
}

/* Why NAME, which could not be read, is not to be trusted (caller frees), or NULL
 * when it could not be read for another reason (an I/O error: not its fault). */
static char *
untrusted (int dirfd, const char *name)
{
  struct stat st;
  if (fstatat (dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return NULL;
  if (S_ISLNK (st.st_mode))
    return cp_xstrdup ("it is a symlink");
  if (!S_ISREG (st.st_mode))
    return cp_xstrdup ("not a regular file");
  if (st.st_size > CP_LEDGER_MAX_SIZE)
    return cp_xasprintf ("%lld bytes, more than the limit %d", (long long) st.st_size, CP_LEDGER_MAX_SIZE);
  return NULL;
}

/* ---------------------------------------------------------------- loading */

/* Read and check the generation NAME into *OUT.  1: read; 0: there is none; -1
 * with *WHY (caller frees): it is there and not to be trusted; -1 without *WHY:
 * it could not be read for a reason that is not its fault (an I/O error, *ERR). */
static int
read_generation (struct cp_ledger *l, const char *name, struct cp_ledger **out, char **why, cp_error_t *err)
{
  *out = NULL;
  *why = NULL;
  cleanup_free char *display = cp_xasprintf ("`%s/%s`", l->dir, name);
  cleanup_free char *buf = NULL;
  size_t len = 0;
  if (cp_io_read_at (l->dirfd, name, O_NOFOLLOW, display, CP_LEDGER_MAX_SIZE, 0, &buf, &len, err) < 0)
    {
      if (cp_error_errno (*err) == ENOENT)
        {
          cp_error_free (err);
          return 0;
        }
      /* A symlink, FIFO, socket (whose open fails with ENXIO), directory or a file
         too big would fail every run the same way. */
      *why = untrusted (l->dirfd, name);
      if (*why)
        cp_error_free (err);
      return -1;
    }
  cleanup_error cp_error_t perr = NULL;
  if (cp_ledger_parse (buf, len, out, &perr) < 0)
    {
      *why = cp_xstrdup (cp_error_message (perr));
      return -1;
    }
  return 1;
}

/* Take the entries and the kept value of PARSED (freed). */
static void
adopt (struct cp_ledger *l, struct cp_ledger *parsed)
{
  l->entries = cp_steal_pointer (&parsed->entries);
  l->n = parsed->n;
  l->cap = parsed->cap;
  l->cas_restore = parsed->cas_restore;
  l->parts = cp_steal_pointer (&parsed->parts);
  l->n_parts = parsed->n_parts;
  parsed->n = parsed->cap = parsed->n_parts = 0;
  cp_ledger_close (parsed);
}

/* ledger.json is missing or was set aside (LOST says which, for the log): go
 * back to the previous generation, ledger.json.prev, which every commit keeps.
 *
 * A ledger that is lost must not start empty when it can be helped: the CPUs of
 * the containers still running would be handed out again, and nothing rebuilds
 * them (a reconcile only drops entries).  What the previous generation does not
 * have is the last commit, at most one placement or release.  Only when there is
 * no trustworthy previous generation does the ledger start empty: refusing to
 * work until someone repairs it would stop every container start on the host. */
static void
go_back (struct cp_ledger *l, const char *lost, bool missing)
{
  struct cp_ledger *prev = NULL;
  cleanup_free char *why = NULL;
  cleanup_error cp_error_t io = NULL;
  int r = read_generation (l, CP_LEDGER_PREV_FILE, &prev, &why, &io);
  if (r > 0)
    {
      size_t n = prev->n;
      adopt (l, prev);
      l->dirty = true; /* the next commit writes ledger.json again */
      l->recovered = cp_xasprintf ("%s; went back to the previous generation, %s (%zu entr%s): at most the last "
                                   "commit is lost", lost, CP_LEDGER_PREV_FILE, n, n == 1 ? "y" : "ies");
    }
  else if (r == 0 && !missing)
    l->recovered = cp_xasprintf ("%s; started an empty ledger (no previous generation, %s, to go back to)", lost,
                                 CP_LEDGER_PREV_FILE);
  else if (r < 0)
    l->recovered = cp_xasprintf ("%s; started an empty ledger (the previous generation, %s, is not trusted "
                                 "either: %s)", lost, CP_LEDGER_PREV_FILE, why ? why : cp_error_message (io));
  /* else: neither is there, the first run. */
}

static int
load (struct cp_ledger *l, cp_error_t *err)
{
  /* A long-running process's parsed ledger, when ledger.json is still the file
     it was read from or written as (under the lock: nobody replaces it now). */
  struct cp_file_ident ident = { 0 };
  bool known = cp_ledger_cache_on () && cp_ledger_ident_now (l, &ident);
  if (known && cp_ledger_cache_take (l, &ident))
    return 0;
  struct cp_ledger *parsed = NULL;
  cleanup_free char *why = NULL;
  int r = read_generation (l, CP_LEDGER_FILE, &parsed, &why, err);
  if (r > 0)
    {
      adopt (l, parsed);
      l->ident = ident;
      l->ident_known = known;
      return 0;
    }
  if (r < 0 && why == NULL)
    return -1;
  if (r == 0)
    {
      cleanup_free char *lost = cp_xasprintf ("%s/%s is missing", l->dir, CP_LEDGER_FILE);
      go_back (l, lost, true);
      return 0;
    }
  /* Kept for a post-mortem, and out of the way of the next commit. */
  const char *how;
  if (cp_ledger_move_aside (l->dirfd, l->dir, CP_LEDGER_FILE, CP_LEDGER_CORRUPT_FILE, &how, err) < 0)
    return -1;
  cleanup_free char *lost
      = cp_xasprintf ("%s/%s was not trusted (%s); %s %s", l->dir, CP_LEDGER_FILE, why, how, CP_LEDGER_CORRUPT_FILE);
  go_back (l, lost, false);
  return 0;
}

/* A directory found in place of NAME would fail every commit (a file cannot
 * replace it, and the sandbox the commit runs in may not remove directories):
 * set it aside to ASIDE, under the lock.  1 when it was one, 0 when not (or
 * there is nothing there), -1 on error. */
static int
set_aside_dir (struct cp_ledger *l, const char *name, const char *aside, cp_error_t *err)
{
  struct stat st;
  if (fstatat (l->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return errno == ENOENT ? 0 : cp_fail_errno (err, errno, "stat `%s/%s`", l->dir, name);
  if (!S_ISDIR (st.st_mode))
    return 0;
  const char *how;
  if (cp_ledger_move_aside (l->dirfd, l->dir, name, aside, &how, err) < 0)
    return -1;
  cp_log (CP_LOG_WARNING, "%s/%s was a directory; %s %s", l->dir, name, how, aside);
  return 1;
}

/* The value of the cache-aware scheduling switch to give back lives in its own
 * file, sched_cache_restore ("on" or "off"), besides ledger.json's copy: a
 * ledger.json lost, or gone back a generation, must not take it along (the switch
 * would stay on for good).  The file wins.  Without one, ledger.json's copy is
 * taken when ledger.json itself was read (a ledger of a version before the file,
 * or a kill between removing the file and writing ledger.json), never a previous
 * generation's (the file is the truth since it exists).  A change on either side
 * marks the ledger, so that the next commit brings the other in line.  A file that
 * cannot be trusted is set aside once, with a warning saying what is lost. */
static int
load_restore (struct cp_ledger *l, cp_error_t *err)
{
  int in_ledger = l->recovered ? -1 : l->cas_restore;
  l->cas_restore = l->cas_restore_stored = -1;
  cleanup_free char *name = cp_xasprintf ("`%s/%s`", l->dir, CP_LEDGER_RESTORE_FILE);
  cleanup_free char *text = NULL;
  cleanup_free char *why = NULL;
  if (cp_io_read_at (l->dirfd, CP_LEDGER_RESTORE_FILE, O_NOFOLLOW, name, 16, CP_IO_NO_NUL, &text, NULL, err) < 0)
    {
      if (cp_error_errno (*err) != ENOENT && (why = untrusted (l->dirfd, CP_LEDGER_RESTORE_FILE)) == NULL)
        return -1;
      cp_error_free (err);
    }
  else if (strcmp (text, "on\n") == 0 || strcmp (text, "off\n") == 0)
    l->cas_restore = l->cas_restore_stored = strcmp (text, "on\n") == 0;
  else
    {
      text[strcspn (text, "\n")] = '\0'; /* quoted without its line's end */
      why = cp_ledger_quotable (text) ? cp_xasprintf ("`%s`, not on or off", text) : cp_xstrdup ("not on or off");
    }
  if (why)
    {
      const char *how;
      if (cp_ledger_move_aside (l->dirfd, l->dir, CP_LEDGER_RESTORE_FILE, CP_LEDGER_RESTORE_CORRUPT_FILE, &how, err)
          < 0)
        return -1;
      cleanup_free char *then
          = in_ledger < 0 ? cp_xstrdup ("the value of cache-aware scheduling to give back, if cachepin held the "
                                        "switch, is lost: the switch is left as it is")
                          : cp_xasprintf ("ledger.json's copy, %s, is what is given back", in_ledger ? "on" : "off");
      cp_log (CP_LOG_WARNING, "%s/%s was not trusted (%s); %s %s; %s", l->dir, CP_LEDGER_RESTORE_FILE, why, how,
              CP_LEDGER_RESTORE_CORRUPT_FILE, then);
    }
  if (l->cas_restore_stored < 0)
    l->cas_restore = in_ledger;
  l->dirty |= l->cas_restore != l->cas_restore_stored || l->cas_restore != in_ledger;
  return 0;
}

/* Under the lock, a ledger.json.tmp is what a killed hook left: nobody is writing
 * it.  It is removed now, so that a run with nothing to commit does not leave it
 * behind (the commit's own unlink only runs when there is something); a directory
 * is set aside.  ledger.json.prev is kept, unless it is a directory. */
static int
clear_stale (struct cp_ledger *l, cp_error_t *err)
{
  int r = set_aside_dir (l, CP_LEDGER_TMP_FILE, CP_LEDGER_TMP_CORRUPT_FILE, err);
  if (r < 0)
    return -1;
  if (r == 0 && unlinkat (l->dirfd, CP_LEDGER_TMP_FILE, 0) < 0 && errno != ENOENT)
    return cp_fail_errno (err, errno, "remove stale `%s/%s`", l->dir, CP_LEDGER_TMP_FILE);
  return set_aside_dir (l, CP_LEDGER_PREV_FILE, CP_LEDGER_PREV_CORRUPT_FILE, err) < 0 ? -1 : 0;
}

int
cp_ledger_open (const char *state_dir, unsigned lock_timeout_ms, struct cp_ledger **out, cp_error_t *err)
{
  cleanup_ledger struct cp_ledger *l = cp_ledger_new ();
  l->dirfd = open_state_dir (state_dir, err);
  if (l->dirfd < 0)
    return -1;
  l->dir = cp_xstrdup (state_dir);
  l->lockfd = cp_ledger_take_lock (l->dirfd, l->dir, lock_timeout_ms, err);
  if (l->lockfd < 0 || load (l, err) < 0 || clear_stale (l, err) < 0 || load_restore (l, err) < 0)
    return -1;
  *out = cp_steal_pointer (&l);
  return 0;
}

bool
cp_ledger_was_recovered (const struct cp_ledger *l, const char **why)
{
  if (why)
    *why = l->recovered;
  return l->recovered != NULL;
}

int
cp_ledger_dirfd (const struct cp_ledger *l)
{
  return l->dirfd;
}

/* ----------------------------------------------------------------- commit */

/* Write, fsync and close ledger.json.tmp (LEDGER: with the ledger's text, at
 * its fault point; else the value to give back, which goes through it too). */
static int
write_tmp (struct cp_ledger *l, const char *text, size_t len, bool ledger, cp_error_t *err)
{
  /* A stale tmp from a killed hook is replaced; unlinking first also takes care
   * of one that is not a plain file of ours (a FIFO would block the open, a hard
   * link would have O_TRUNC truncate another file). */
  if (unlinkat (l->dirfd, CP_LEDGER_TMP_FILE, 0) < 0 && errno != ENOENT)
    return cp_fail_errno (err, errno, "remove stale `%s/%s`", l->dir, CP_LEDGER_TMP_FILE);
  cleanup_close int fd
      = openat (l->dirfd, CP_LEDGER_TMP_FILE, O_CREAT | O_TRUNC | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return cp_fail_errno (err, errno, "create `%s/%s`", l->dir, CP_LEDGER_TMP_FILE);
  if (cp_io_write_all (fd, text, len) < 0)
    return cp_fail_errno (err, errno, "write `%s/%s`", l->dir, CP_LEDGER_TMP_FILE);
  int fe = ledger ? FAULT_RESULT (CP_LEDGER_FAULT_TMP_WRITTEN) : 0;
  if (fe)
    return cp_fail_errno (err, fe, "fault injected after writing `%s/%s`", l->dir, CP_LEDGER_TMP_FILE);
  if (fsync (fd) < 0)
    return cp_fail_errno (err, errno, "fsync `%s/%s`", l->dir, CP_LEDGER_TMP_FILE);
  int rc = close (fd);
  fd = -1;
  if (rc < 0)
    return cp_fail_errno (err, errno, "close `%s/%s`", l->dir, CP_LEDGER_TMP_FILE);
  return 0;
}

/* ledger.json.tmp, written and synced, renamed to NAME; on failure it is removed. */
static int
rename_tmp (struct cp_ledger *l, const char *name, cp_error_t *err)
{
  if (renameat (l->dirfd, CP_LEDGER_TMP_FILE, l->dirfd, name) == 0)
    return 0;
  int saved = errno;
  unlinkat (l->dirfd, CP_LEDGER_TMP_FILE, 0);
  return cp_fail_errno (err, saved, "rename `%s/%s` to %s", l->dir, CP_LEDGER_TMP_FILE, name);
}

/* sched_cache_restore brought to the ledger's value, before ledger.json is
 * written: the value to give back is on disk before the switch moves away from
 * it, and forgotten only once it was given back (schedctl.h). */
static int
commit_restore (struct cp_ledger *l, cp_error_t *err)
{
  if (l->cas_restore == l->cas_restore_stored)
    return 0;
  if (l->cas_restore < 0)
    {
      if (unlinkat (l->dirfd, CP_LEDGER_RESTORE_FILE, 0) < 0 && errno != ENOENT)
        return cp_fail_errno (err, errno, "remove `%s/%s`", l->dir, CP_LEDGER_RESTORE_FILE);
    }
  else
    {
      const char *text = l->cas_restore ? "on\n" : "off\n";
      if (write_tmp (l, text, strlen (text), false, err) < 0)
        {
          unlinkat (l->dirfd, CP_LEDGER_TMP_FILE, 0);
          return -1;
        }
      if (rename_tmp (l, CP_LEDGER_RESTORE_FILE, err) < 0)
        return -1;
    }
  if (fsync (l->dirfd) < 0)
    return cp_fail_errno (err, errno, "fsync `%s`", l->dir);
  l->cas_restore_stored = l->cas_restore;
  return 0;
}

/* Keep ledger.json, about to be replaced, as ledger.json.prev: a second name for
 * the same file (a hard link), so that ledger.json itself is never missing, not
 * even for a moment.  The renames that follow leave ledger.json.prev the
 * generation before the new one, which load goes back to when ledger.json is
 * lost.  Best effort: a commit does not fail because the safety net could not be
 * kept (a warning says so); it stays the older generation, or none. */
static void
keep_prev (struct cp_ledger *l)
{
  if (linkat (l->dirfd, CP_LEDGER_FILE, l->dirfd, CP_LEDGER_PREV_FILE, 0) == 0 || errno == ENOENT)
    return; /* ENOENT: no ledger.json (the first commit, or it was set aside): the older one stays */
  if (errno == EEXIST && (unlinkat (l->dirfd, CP_LEDGER_PREV_FILE, 0) == 0 || errno == ENOENT)
      && (linkat (l->dirfd, CP_LEDGER_FILE, l->dirfd, CP_LEDGER_PREV_FILE, 0) == 0 || errno == ENOENT))
    return;
  cp_log (CP_LOG_WARNING, "%s/%s: could not keep the previous generation (%s): a ledger.json lost now would lose "
          "more than its last commit", l->dir, CP_LEDGER_PREV_FILE, strerror (errno));
}

void
cp_ledger_on_commit (struct cp_ledger *l, void (*fn) (void *data), void *data, void (*free_data) (void *data))
{
  l->on_commit = cp_xrealloc (l->on_commit, (l->n_on_commit + 1) * sizeof *l->on_commit);
  l->on_commit[l->n_on_commit++] = (struct cp_ledger_on_commit) { fn, data, free_data };
}

void
cp_ledger_on_commit_done (struct cp_ledger *l, bool run)
{
  /* Taken first: a function that registers another is told at the next commit. */
  struct cp_ledger_on_commit *calls = cp_steal_pointer (&l->on_commit);
  size_t n = l->n_on_commit;
  l->n_on_commit = 0;
  for (size_t i = 0; i < n; i++)
    {
      if (run)
        calls[i].fn (calls[i].data);
      if (calls[i].free_data)
        calls[i].free_data (calls[i].data);
    }
  free (calls);
}

void
cp_ledger_defer_commits (struct cp_ledger *l, bool deferred)
{
  l->deferred = deferred;
}

int
cp_ledger_commit (struct cp_ledger *l, cp_error_t *err)
{
  if (l->dirfd < 0)
    return cp_fail_runtime (err, "commit: the ledger has no state directory");
  if (l->deferred)
    return 0;
  if (!l->dirty)
    {
      cp_ledger_on_commit_done (l, true); /* what it was told of is in the file already */
      return 0;
    }
  l->ident_known = false; /* until the new file is in place */
  cleanup_free char *text = cp_ledger_serialize (l);
  size_t len = strlen (text);
  /* Never write what the next open would refuse to read. */
  if (len > CP_LEDGER_MAX_SIZE)
    return cp_fail_runtime (err, "commit: the ledger would be %zu bytes, more than the limit %d", len,
                            CP_LEDGER_MAX_SIZE);
  if (commit_restore (l, err) < 0)
    return -1;
  if (write_tmp (l, text, len, true, err) < 0)
    {
      unlinkat (l->dirfd, CP_LEDGER_TMP_FILE, 0);
      return -1;
    }
  int fe = FAULT_RESULT (CP_LEDGER_FAULT_TMP_SYNCED);
  if (fe)
    {
      unlinkat (l->dirfd, CP_LEDGER_TMP_FILE, 0);
      return cp_fail_errno (err, fe, "fault injected before renaming `%s/%s`", l->dir, CP_LEDGER_TMP_FILE);
    }
  keep_prev (l);
  FAULT (CP_LEDGER_FAULT_PREV_KEPT);
  if (rename_tmp (l, CP_LEDGER_FILE, err) < 0)
    return -1;
  fe = FAULT_RESULT (CP_LEDGER_FAULT_RENAMED);
  if (fe)
    return cp_fail_errno (err, fe, "fault injected before syncing `%s`", l->dir);
  if (fsync (l->dirfd) < 0)
    return cp_fail_errno (err, errno, "fsync `%s`", l->dir);
  l->dirty = false;
  l->ident_known = cp_ledger_cache_on () && cp_ledger_ident_now (l, &l->ident);
  cp_ledger_on_commit_done (l, true);
  return 0;
}

int
cp_ledger_read (const char *state_dir, const char **state, struct cp_ledger **out, cp_error_t *err)
{
  cleanup_free char *path = cp_xasprintf ("%s/%s", state_dir, CP_LEDGER_FILE);
  cleanup_free char *buf = NULL;
  size_t len = 0;
  cleanup_error cp_error_t e = NULL;
  *state = "ok";
  if (cp_io_read_at (AT_FDCWD, path, O_NOFOLLOW, path, CP_LEDGER_MAX_SIZE, 0, &buf, &len, &e) < 0)
    {
      if (cp_error_errno (e) != ENOENT)
        {
          *state = "unreadable";
          *err = cp_steal_pointer (&e);
          return -1;
        }
      *state = "missing";
      static const char empty[] = "{\"version\": 2, \"entries\": []}";
      return cp_ledger_parse (empty, sizeof empty - 1, out, err);
    }
  if (cp_ledger_parse (buf, len, out, err) < 0)
    {
      *state = "invalid";
      return cp_error_wrap (err, "%s", path);
    }
  return 0;
}
