#define _GNU_SOURCE
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* Wait until FD is readable or DEADLINE (cp_monotonic_ms() time) passes: 1 ready, 0 timed out. */
static int
wait_readable (int fd, long long deadline, const char *name, cp_error_t *err)
{
  for (;;)
    {
      long long left = deadline - cp_monotonic_ms ();
      if (left <= 0)
        return 0;
      struct pollfd p = { .fd = fd, .events = POLLIN };
      int r = poll (&p, 1, left > INT32_MAX ? INT32_MAX : (int) left);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        return cp_fail_errno (err, errno, "poll %s", name);
      if (r > 0)
        return 1;
    }
}

int
cp_io_read_fd (int fd, const char *name, size_t max, unsigned flags, int timeout_ms, char **out, size_t *len,
               cp_error_t *err)
{
  long long deadline = timeout_ms >= 0 ? cp_monotonic_ms () + timeout_ms : 0;
  size_t cap = max < 4095 ? max + 1 : 4096, n = 0;
  cleanup_free char *buf = cp_xmalloc0 (cap + 1);
  for (;;)
    {
      if (n == cap)
        {
          if (n > max)
            break;
          cap = cap > max / 2 ? max + 1 : cap * 2;
          buf = cp_xrealloc (buf, cap + 1);
        }
      if (timeout_ms >= 0)
        {
          int ready = wait_readable (fd, deadline, name, err);
          if (ready < 0)
            return -1;
          if (ready == 0)
            {
              buf[n] = '\0';
              if (len)
                *len = n;
              *out = cp_steal_pointer (&buf);
              return cp_fail_errno (err, ETIMEDOUT, "read %s: not finished after %d ms", name, timeout_ms);
            }
        }
      ssize_t r = read (fd, buf + n, cap - n);
      if (r < 0 && (errno == EINTR || (errno == EAGAIN && timeout_ms >= 0)))
        continue;
      if (r < 0)
        return cp_fail_errno (err, errno, "read %s", name);
      if (r == 0)
        break;
      n += (size_t) r;
    }
  if (n > max)
    return cp_error_set (err, flags & CP_IO_INPUT ? CP_ERR_INPUT : CP_ERR_RUNTIME, flags & CP_IO_INPUT ? 0 : EFBIG,
                         "%s: larger than %zu bytes", name, max);
  buf[n] = '\0';
  if ((flags & CP_IO_NO_NUL) && strlen (buf) != n)
    return cp_error_set (err, flags & CP_IO_INPUT ? CP_ERR_INPUT : CP_ERR_RUNTIME, 0, "%s: NUL byte at offset %zu",
                         name, strlen (buf));
  if (len)
    *len = n;
  *out = cp_steal_pointer (&buf);
  return 0;
}

int
cp_io_read_at (int dirfd, const char *path, int open_flags, const char *name, size_t max, unsigned flags,
               char **out, size_t *len, cp_error_t *err)
{
  enum cp_error_kind kind = flags & CP_IO_INPUT ? CP_ERR_INPUT : CP_ERR_RUNTIME;
  cleanup_close int fd = openat (dirfd, path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | open_flags);
  if (fd < 0 && errno == ELOOP && (open_flags & O_NOFOLLOW))
    return cp_error_set (err, kind, kind == CP_ERR_INPUT ? 0 : ELOOP, "%s: is a symbolic link", name);
  if (fd < 0)
    return cp_fail_errno (err, errno, "open %s", name);
  struct stat st;
  if (fstat (fd, &st) < 0)
    return cp_fail_errno (err, errno, "stat %s", name);
  if (!S_ISREG (st.st_mode))
    return cp_error_set (err, kind, 0, "%s: not a regular file", name);
  if ((uintmax_t) st.st_size > max)
    return cp_error_set (err, kind, kind == CP_ERR_INPUT ? 0 : EFBIG, "%s: larger than %zu bytes", name, max);
  /* A regular file never blocks: O_NONBLOCK only mattered for the open. */
  return cp_io_read_fd (fd, name, max, flags, -1, out, len, err);
}

int
cp_io_write_all (int fd, const void *buf, size_t len)
{
  const char *p = buf;
  while (len > 0)
    {
      ssize_t w = write (fd, p, len);
      if (w < 0 && errno == EINTR)
        continue;
      if (w < 0)
        return -1;
      if (w == 0)
        {
          errno = EIO;
          return -1;
        }
      p += w;
      len -= (size_t) w;
    }
  return 0;
}

int
cp_io_write_control (int dirfd, const char *file, const char *name, const char *value, cp_error_t *err)
{
  cleanup_close int fd = openat (dirfd, file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
  if (fd < 0)
    return cp_fail_errno (err, errno, "open %s", name);
  size_t len = strlen (value);
  ssize_t n;
  do
    n = write (fd, value, len);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return cp_fail_errno (err, errno, "write %s", name);
  if ((size_t) n != len)
    return cp_fail_runtime (err, "write %s: short write, %zd of %zu bytes taken", name, n, len);
  return 0;
}

bool
cp_io_file_ident (int dirfd, const char *name, struct cp_file_ident *out)
{
  struct stat dir;
  struct statx f;
  if (dirfd < 0 || fstat (dirfd, &dir) < 0
      || statx (dirfd, name, AT_SYMLINK_NOFOLLOW | AT_STATX_SYNC_AS_STAT, STATX_BASIC_STATS | STATX_BTIME, &f) < 0
      || !S_ISREG (f.stx_mode))
    return false;
  *out = (struct cp_file_ident) {
    .dir_dev = dir.st_dev,
    .dir_ino = dir.st_ino,
    .dev = makedev (f.stx_dev_major, f.stx_dev_minor),
    .ino = f.stx_ino,
    .size = (off_t) f.stx_size,
    .mtim = { f.stx_mtime.tv_sec, f.stx_mtime.tv_nsec },
    .ctim = { f.stx_ctime.tv_sec, f.stx_ctime.tv_nsec },
  };
  if (f.stx_mask & STATX_BTIME)
    out->btim = (struct timespec) { f.stx_btime.tv_sec, f.stx_btime.tv_nsec };
  return true;
}

static bool
same_time (struct timespec a, struct timespec b)
{
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

bool
cp_io_same_file_ident (const struct cp_file_ident *a, const struct cp_file_ident *b)
{
  return a->dir_dev == b->dir_dev && a->dir_ino == b->dir_ino && a->dev == b->dev && a->ino == b->ino
         && a->size == b->size && same_time (a->mtim, b->mtim) && same_time (a->ctim, b->ctim)
         && same_time (a->btim, b->btim);
}

int
cp_io_create_at (int dirfd, const char *name, mode_t mode, const void *buf, size_t len, bool sync, cp_error_t *err)
{
  cleanup_close int fd = openat (dirfd, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0 && errno == EEXIST && unlinkat (dirfd, name, 0) == 0) /* a killed run's, with our pid */
    fd = openat (dirfd, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0)
    return cp_fail_errno (err, errno, "create %s", name);
  if (cp_io_write_all (fd, buf, len) < 0 || (sync && fsync (fd) < 0))
    return cp_fail_errno (err, errno, "write %s", name);
  int fd2 = fd;
  fd = -1;
  if (close (fd2) < 0)
    return cp_fail_errno (err, errno, "close %s", name);
  return 0;
}
