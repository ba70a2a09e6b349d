/* cachepin: one long-running front end per state directory and served thing (instance.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "instance.h"
#include "io.h"
#include "ledger.h"
#include "util.h"

/* FNV-1a, 64 bits: a file name from a key of any length (a socket's path). */
static uint64_t
key_hash (const char *key)
{
  uint64_t h = 14695981039346656037ull;
  for (const unsigned char *p = (const unsigned char *) key; *p; p++)
    h = (h ^ *p) * 1099511628211ull;
  return h;
}

/* The holder's line, read for the refusal ("?" when it cannot be). */
static char *
holder_of (int fd)
{
  char buf[256] = "";
  ssize_t n = pread (fd, buf, sizeof buf - 1, 0);
  if (n <= 0)
    return cp_xstrdup ("?");
  buf[n] = '\0';
  buf[strcspn (buf, " \n")] = '\0';
  for (char *p = buf; *p; p++)
    if (*p < '0' || *p > '9')
      return cp_xstrdup ("?");
  return cp_xstrdup (buf[0] ? buf : "?");
}

int
cp_instance_lock (const char *state_dir, const char *kind, const char *key, cp_error_t *err)
{
  cleanup_close int dirfd = cp_ledger_open_dir (state_dir, err);
  if (dirfd < 0)
    return -1;
  char name[96];
  snprintf (name, sizeof name, "instance-%s-%016llx.lock", kind, (unsigned long long) key_hash (key));
  int fd = openat (dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
  struct stat st;
  if (fd < 0 && (errno == ELOOP || errno == EISDIR || errno == ENXIO))
    return cp_fail_input (err, "%s/%s is not a regular file: move it aside (or remove it) and start again", state_dir,
                          name);
  if (fd < 0)
    return cp_fail_errno (err, errno, "%s/%s", state_dir, name);
  if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode))
    {
      close (fd);
      return cp_fail_input (err, "%s/%s is not a regular file: move it aside (or remove it) and start again",
                            state_dir, name);
    }
  if (flock (fd, LOCK_EX | LOCK_NB) < 0)
    {
      int e = errno;
      cleanup_free char *pid = holder_of (fd);
      close (fd);
      if (e == EWOULDBLOCK)
        return cp_fail_runtime (err, "another cachepin %s (pid %s) serves %.256s with state directory %s: one per "
                                     "state directory and %s (its lock: %s/%s)",
                                kind, pid, key, state_dir, strcmp (kind, "nri") == 0 ? "runtime" : "target",
                                state_dir, name);
      return cp_fail_errno (err, e, "lock %s/%s", state_dir, name);
    }
  char line[4200];
  int len = snprintf (line, sizeof line, "%d %.4095s\n", (int) getpid (), key);
  if (ftruncate (fd, 0) < 0 || pwrite (fd, line, (size_t) len, 0) != len)
    {
      int e = errno;
      close (fd);
      return cp_fail_errno (err, e, "write %s/%s", state_dir, name);
    }
  return fd;
}
