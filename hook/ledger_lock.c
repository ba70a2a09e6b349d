/* cachepin: the ledger's lock, ledger.lock in the state directory: taken with a
 * bounded wait, and repaired once when something other than a regular file is
 * in its place (see ledger_store.h). */
#define _GNU_SOURCE
#include "ledger_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../policy/util.h"
#include "log.h"

static long long
elapsed_ms (const struct timespec *since)
{
  struct timespec now;
  clock_gettime (CLOCK_MONOTONIC, &now);
  return (long long) (now.tv_sec - since->tv_sec) * 1000 + (now.tv_nsec - since->tv_nsec) / 1000000;
}

/* flock(FD, LOCK_EX) by TIMEOUT_MS after START.  flock() has no timeout and
 * SIGALRM would disturb the rest of the hook, so poll LOCK_NB.  WHAT names the
 * file in messages. */
static int
poll_flock (int fd, const char *what, unsigned timeout_ms, const struct timespec *start, cp_error_t *err)
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

/* Under the directory's flock: set a lock that is still not a regular file aside
 * and create a new one. */
static int
replace_lock (int dirfd, const char *dir, cp_error_t *err)
{
  struct stat st;
  bool present = fstatat (dirfd, CP_LEDGER_LOCK_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (!present && errno != ENOENT)
    return cp_fail_errno (err, errno, "stat `%s/%s`", dir, CP_LEDGER_LOCK_FILE);
  if (present && S_ISREG (st.st_mode))
    return 0; /* another hook repaired it while we waited */
  const char *how = "created";
  if (present && cp_ledger_move_aside (dirfd, dir, CP_LEDGER_LOCK_FILE, CP_LEDGER_LOCK_CORRUPT_FILE, &how, err) < 0)
    return -1;
  /* EEXIST: a hook on the normal path created it since the rename; that is the
     lock now, and it is a regular file: O_CREAT without O_EXCL makes nothing else. */
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

/* The lock is the one file the hooks must agree on: two hooks that replaced a bad
 * lock each with its own new file would each hold a flock and both write the
 * ledger.  So repairs take the directory's own flock (the directory is never
 * replaced: every hook holds it open), check again under it, and only then
 * rename and create.  The normal path never takes it: a lock that is a regular
 * file is never renamed, so every flock is on that one file. */
static int
repair_lock (int dirfd, const char *dir, unsigned timeout_ms, const struct timespec *start, cp_error_t *err)
{
  cleanup_free char *what = cp_xasprintf ("`%s` (to repair %s)", dir, CP_LEDGER_LOCK_FILE);
  if (poll_flock (dirfd, what, timeout_ms, start, err) < 0)
    return -1;
  int ret = replace_lock (dirfd, dir, err);
  flock (dirfd, LOCK_UN);
  return ret;
}

int
cp_ledger_take_lock (int dirfd, const char *dir, unsigned timeout_ms, cp_error_t *err)
{
  struct timespec start;
  clock_gettime (CLOCK_MONOTONIC, &start);
  cleanup_close int fd = open_lock (dirfd, dir, err);
  if (fd == LOCK_NOT_REGULAR)
    {
      if (repair_lock (dirfd, dir, timeout_ms, &start, err) < 0)
        return -1;
      fd = open_lock (dirfd, dir, err);
      if (fd == LOCK_NOT_REGULAR)
        return cp_fail_runtime (err, "`%s/%s` is not a regular file, again after it was set aside", dir,
                                CP_LEDGER_LOCK_FILE);
    }
  if (fd < 0)
    return -1;
  cleanup_free char *what = cp_xasprintf ("`%s/%s`", dir, CP_LEDGER_LOCK_FILE);
  if (poll_flock (fd, what, timeout_ms, &start, err) < 0)
    return -1;
  int ret = fd;
  fd = -1;
  return ret;
}

