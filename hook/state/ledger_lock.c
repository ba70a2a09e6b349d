/* cachepin: the ledger's lock: the state directory's flock, then ledger.lock's,
 * taken with a bounded wait; ledger.lock is repaired once when something other
 * than a regular file is in its place (see ledger_store.h). */
#define _GNU_SOURCE
#include "ledger_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"
#include "log.h"

static long long
elapsed_ms (const struct timespec *since)
{
  struct timespec now;
  clock_gettime (CLOCK_MONOTONIC, &now);
  /* In nanoseconds first: the tv_nsec difference alone truncates toward zero
     when it is negative, which read up to 1 ms high. */
  long long ns = (long long) (now.tv_sec - since->tv_sec) * 1000000000LL + (now.tv_nsec - since->tv_nsec);
  return ns / 1000000;
}

/* flock(FD, LOCK_EX) by TIMEOUT_MS after START.  flock() has no timeout and
 * SIGALRM would disturb the rest of the hook, so poll LOCK_NB.  WHAT names the
 * file in messages. */
int
cp_ledger_poll_flock (int fd, const char *what, unsigned timeout_ms, const struct timespec *start, cp_error_t *err)
{
  /* Poll with short, jittered naps: a hook holds the lock for a few ms, and long
     or synchronized naps leave it idle while dozens of hooks wait (64 hooks at
     once waited up to 1.6 s with naps growing to 20 ms; with 2 ms, 0.2 s). */
  long nap_us = 200;
  unsigned jitter = (unsigned) getpid () * 2654435761u ^ (unsigned) start->tv_nsec;
  for (;;)
    {
      if (flock (fd, LOCK_EX | LOCK_NB) == 0)
        return 0;
      if (errno == EINTR)
        continue;
      if (errno != EWOULDBLOCK)
        return cp_fail_errno (err, errno, "lock %s", what);
      long long waited = elapsed_ms (start);
      if (waited >= timeout_ms)
        return cp_fail_runtime (err,
                                "timed out after %lld ms (limit %u ms) waiting for the lock on %s: another cachepin "
                                "holds it",
                                waited, timeout_ms, what);
      long long left_us = ((long long) timeout_ms - waited) * 1000;
      jitter = jitter * 1103515245u + 12345u;
      long us = nap_us / 2 + (long) (jitter >> 16) % (nap_us / 2 + 1);
      if (left_us < us)
        us = (long) left_us;
      struct timespec nap = { .tv_sec = 0, .tv_nsec = us * 1000 };
      nanosleep (&nap, NULL);
      if (nap_us < 2000)
        nap_us *= 2;
    }
}

#define LOCK_NOT_REGULAR (-2)

/* Open (creating it) the lock file: its fd, LOCK_NOT_REGULAR when something
 * other than a regular file is in its place, or -1. */
static int
open_lock (int dirfd, const char *dir, cp_error_t *err)
{
  /* O_NONBLOCK and O_NOCTTY: a FIFO or a terminal planted here must neither hang
     the hook nor become its terminal. */
  cleanup_close int fd
      = openat (dirfd, CP_LEDGER_LOCK_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
  struct stat st;
  if (fd < 0)
    {
      /* Failed on what is there (a symlink: ELOOP, a socket: ENXIO, a directory:
         EISDIR): to the repair, which checks again under its flock, even if the
         fstatat would already see a lock another hook has put there since. */
      int saved = errno;
      if (saved == ELOOP || saved == ENXIO || saved == EISDIR
          || (fstatat (dirfd, CP_LEDGER_LOCK_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG (st.st_mode)))
        return LOCK_NOT_REGULAR;
      return cp_fail_errno (err, saved, "open `%s/%s`", dir, CP_LEDGER_LOCK_FILE);
    }
  if (fstat (fd, &st) < 0)
    return cp_fail_errno (err, errno, "stat `%s/%s`", dir, CP_LEDGER_LOCK_FILE);
  if (!S_ISREG (st.st_mode))
    return LOCK_NOT_REGULAR;
  int ret = fd;
  fd = -1;
  return ret;
}

/* Under the directory's flock: set a lock that is not a regular file aside and
 * create a new one. */
static int
replace_lock (int dirfd, const char *dir, cp_error_t *err)
{
  struct stat st;
  bool present = fstatat (dirfd, CP_LEDGER_LOCK_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (!present && errno != ENOENT)
    return cp_fail_errno (err, errno, "stat `%s/%s`", dir, CP_LEDGER_LOCK_FILE);
  if (present && S_ISREG (st.st_mode))
    return 0; /* put back since open_lock() looked (not by a hook: we hold the directory) */
  const char *how = "created";
  if (present && cp_ledger_move_aside (dirfd, dir, CP_LEDGER_LOCK_FILE, CP_LEDGER_LOCK_CORRUPT_FILE, &how, err) < 0)
    {
      /* Removed since we looked (not by a hook: we hold the directory), so there
         is nothing left to set aside. */
      if (fstatat (dirfd, CP_LEDGER_LOCK_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
        return -1;
      cp_error_free (err);
      how = "found it gone before it could be moved to";
    }
  /* EEXIST: someone created it since the rename (flock(1), an older cachepin);
     open_lock() checks what it is. */
  cleanup_close int fd = openat (dirfd, CP_LEDGER_LOCK_FILE, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0 && errno != EEXIST)
    return cp_fail_errno (err, errno, "create `%s/%s`", dir, CP_LEDGER_LOCK_FILE);
  if (fsync (dirfd) < 0)
    return cp_fail_errno (err, errno, "fsync `%s`", dir);
  if (present)
    cp_log (CP_LOG_WARNING, "%s/%s was not a regular file; %s %s and created a new lock", dir, CP_LEDGER_LOCK_FILE,
            how, CP_LEDGER_LOCK_CORRUPT_FILE);
  return 0;
}

/* Whether FD is still the file at ledger.lock: 1 yes, 0 no (removed, renamed or
 * replaced since it was opened), -1 on an error. */
static int
still_at_path (int fd, int dirfd, const char *dir, cp_error_t *err)
{
  struct stat held, now;
  if (fstat (fd, &held) < 0)
    return cp_fail_errno (err, errno, "stat `%s/%s`", dir, CP_LEDGER_LOCK_FILE);
  if (fstatat (dirfd, CP_LEDGER_LOCK_FILE, &now, AT_SYMLINK_NOFOLLOW) < 0)
    {
      if (errno == ENOENT)
        return 0;
      return cp_fail_errno (err, errno, "stat `%s/%s`", dir, CP_LEDGER_LOCK_FILE);
    }
  return held.st_dev == now.st_dev && held.st_ino == now.st_ino;
}

/* Open (repairing it when it is not a regular file) and flock ledger.lock, with
 * the directory's flock already held; retry when the file locked is no longer
 * the one at the path: someone else (flock(1), an older cachepin) may still lock
 * ledger.lock alone, and the next one to open the path must meet our flock. */
static int
lock_file (int dirfd, const char *dir, unsigned timeout_ms, const struct timespec *start, cp_error_t *err)
{
  cleanup_free char *what = cp_xasprintf ("`%s/%s`", dir, CP_LEDGER_LOCK_FILE);
  for (;;)
    {
      cleanup_close int fd = open_lock (dirfd, dir, err);
      if (fd == LOCK_NOT_REGULAR)
        {
          if (replace_lock (dirfd, dir, err) < 0)
            return -1;
          fd = open_lock (dirfd, dir, err);
          if (fd == LOCK_NOT_REGULAR)
            return cp_fail_runtime (err, "`%s/%s` is not a regular file, again after it was set aside", dir,
                                    CP_LEDGER_LOCK_FILE);
        }
      if (fd < 0 || cp_ledger_poll_flock (fd, what, timeout_ms, start, err) < 0)
        return -1;
      int same = still_at_path (fd, dirfd, dir, err);
      if (same < 0)
        return -1;
      if (same)
        {
          int ret = fd;
          fd = -1;
          return ret;
        }
      if (elapsed_ms (start) >= timeout_ms)
        return cp_fail_runtime (err, "%s kept being replaced while cachepin locked it (limit %u ms)", what,
                                timeout_ms);
    }
}

/* Two hooks that each flocked their own ledger.lock (one removed or replaced
 * while the other held it, or a bad one repaired by each) would both write the
 * ledger.  A flock on a file that can be unlinked under it cannot prevent that;
 * so the lock is the state directory's own flock (the directory cannot be
 * replaced under an fd every hook holds), taken first and held until close, and
 * ledger.lock is flocked under it for whoever locks that file alone.  The repair
 * of a bad ledger.lock runs under the directory's flock too. */
int
cp_ledger_take_lock (int dirfd, const char *dir, unsigned timeout_ms, cp_error_t *err)
{
  struct timespec start;
  clock_gettime (CLOCK_MONOTONIC, &start);
  cleanup_free char *what = cp_xasprintf ("`%s` (with its %s)", dir, CP_LEDGER_LOCK_FILE);
  if (cp_ledger_poll_flock (dirfd, what, timeout_ms, &start, err) < 0)
    return -1;
  int fd = lock_file (dirfd, dir, timeout_ms, &start, err);
  if (fd < 0)
    flock (dirfd, LOCK_UN);
  return fd;
}
