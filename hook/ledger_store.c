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

#include "../oci/io.h"
#include "../policy/util.h"
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
    return cp_fail_runtime (err, "state directory `%s` is owned by uid %u, not %u; refusing it", path,
                            (unsigned) st.st_uid, (unsigned) geteuid ());
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

/* ledger.json failed validation: keep it for a post-mortem and start empty.
 *
 * This fails open on purpose.  The ledger is input an attacker with root on the
 * host could tamper with and a disk or filesystem could tear; refusing to work
 * until someone repairs it would stop every container start on the host, while
 * an empty ledger only risks sharing CPUs until the containers that are still
 * running are seen again: the hook's next reconcile rebuilds what it can from
 * the cgroups it finds.  The caller logs *why*. */
static int
set_aside (struct cp_ledger *l, const char *why, cp_error_t *err)
{
  const char *how;
  if (cp_ledger_move_aside (l->dirfd, l->dir, CP_LEDGER_FILE, CP_LEDGER_CORRUPT_FILE, &how, err) < 0)
    return -1;
  l->recovered = cp_xasprintf ("%s/%s was not trusted (%s); %s %s and started an empty ledger", l->dir,
                               CP_LEDGER_FILE, why, how, CP_LEDGER_CORRUPT_FILE);
  return 0;
}

static int
load (struct cp_ledger *l, cp_error_t *err)
{
  cleanup_free char *name = cp_xasprintf ("`%s/%s`", l->dir, CP_LEDGER_FILE);
  cleanup_free char *buf = NULL;
  size_t len = 0;
  if (cp_io_read_at (l->dirfd, CP_LEDGER_FILE, O_NOFOLLOW, name, CP_LEDGER_MAX_SIZE, 0, &buf, &len, err) < 0)
    {
      if (cp_error_errno (*err) == ENOENT)
        {
          cp_error_free (err);
          return 0;
        }
      /* A symlink, FIFO, socket (whose open fails with ENXIO), directory or a file
         too big would fail every run the same way: set it aside. */
      cleanup_free char *why = untrusted (l->dirfd, CP_LEDGER_FILE);
      if (why == NULL)
        return -1;
      cp_error_free (err);
      return set_aside (l, why, err);
    }
  cleanup_error cp_error_t perr = NULL;
  struct cp_ledger *parsed = NULL;
  if (cp_ledger_parse (buf, len, &parsed, &perr) < 0)
    return set_aside (l, cp_error_message (perr), err);
  l->entries = cp_steal_pointer (&parsed->entries);
  l->n = parsed->n;
  l->cas_restore = parsed->cas_restore;
  l->cap = parsed->cap;
  parsed->n = parsed->cap = 0;
  cp_ledger_close (parsed);
  return 0;
}

/* Under the lock, a ledger.json.tmp is what a killed hook left: nobody is writing
 * it.  A directory in its place would fail every commit (unlink cannot remove it,
 * and the sandbox the commit runs in may not remove directories): set it aside.
 * Anything else is removed now, so that a run with nothing to commit does not
 * leave it behind (the commit's own unlink only runs when there is something). */
static int
clear_tmp (struct cp_ledger *l, cp_error_t *err)
{
  struct stat st;
  if (fstatat (l->dirfd, CP_LEDGER_TMP_FILE, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return errno == ENOENT ? 0 : cp_fail_errno (err, errno, "stat `%s/%s`", l->dir, CP_LEDGER_TMP_FILE);
  if (!S_ISDIR (st.st_mode))
    {
      if (unlinkat (l->dirfd, CP_LEDGER_TMP_FILE, 0) < 0 && errno != ENOENT)
        return cp_fail_errno (err, errno, "remove stale `%s/%s`", l->dir, CP_LEDGER_TMP_FILE);
      return 0;
    }
  const char *how;
  if (cp_ledger_move_aside (l->dirfd, l->dir, CP_LEDGER_TMP_FILE, CP_LEDGER_TMP_CORRUPT_FILE, &how, err) < 0)
    return -1;
  cp_log (CP_LOG_WARNING, "%s/%s was a directory; %s %s", l->dir, CP_LEDGER_TMP_FILE, how,
          CP_LEDGER_TMP_CORRUPT_FILE);
  return 0;
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
  if (l->lockfd < 0 || load (l, err) < 0 || clear_tmp (l, err) < 0)
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

/* Write, fsync and close ledger.json.tmp. */
static int
write_tmp (struct cp_ledger *l, const char *text, size_t len, cp_error_t *err)
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
  int fe = FAULT_RESULT (CP_LEDGER_FAULT_TMP_WRITTEN);
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

int
cp_ledger_commit (struct cp_ledger *l, cp_error_t *err)
{
  if (l->dirfd < 0)
    return cp_fail_runtime (err, "commit: the ledger has no state directory");
  if (!l->dirty)
    return 0;
  cleanup_free char *text = cp_ledger_serialize (l);
  size_t len = strlen (text);
  /* Never write what the next open would refuse to read. */
  if (len > CP_LEDGER_MAX_SIZE)
    return cp_fail_runtime (err, "commit: the ledger would be %zu bytes, more than the limit %d", len,
                            CP_LEDGER_MAX_SIZE);
  if (write_tmp (l, text, len, err) < 0)
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
  if (renameat (l->dirfd, CP_LEDGER_TMP_FILE, l->dirfd, CP_LEDGER_FILE) < 0)
    {
      int saved = errno;
      unlinkat (l->dirfd, CP_LEDGER_TMP_FILE, 0);
      return cp_fail_errno (err, saved, "rename `%s/%s` to %s", l->dir, CP_LEDGER_TMP_FILE, CP_LEDGER_FILE);
    }
  fe = FAULT_RESULT (CP_LEDGER_FAULT_RENAMED);
  if (fe)
    return cp_fail_errno (err, fe, "fault injected before syncing `%s`", l->dir);
  if (fsync (l->dirfd) < 0)
    return cp_fail_errno (err, errno, "fsync `%s`", l->dir);
  l->dirty = false;
  return 0;
}

