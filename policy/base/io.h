/* cachepin: bounded reads and whole writes, the one place the read(2) and
 * write(2) loops are written.
 *
 * Every file cachepin reads is someone else's (the runtime's state on stdin, a
 * bundle's config.json, the host config, the ledger, /proc and cgroup files), so
 * every read has a bound and is refused past it, never truncated.  Models: crun's
 * read_all_fd()/write_file_at() (src/libcrun/utils.c) and runc's
 * cgroups.ReadFile/WriteFile (libcontainer/cgroups/file.go). */
#ifndef CP_IO_H
#define CP_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "error.h"

enum cp_io_flags
{
  /* The content is someone's input (state, config.json, host config): too big,
     not a regular file, a symlink under O_NOFOLLOW are CP_ERR_INPUT.  Without it
     they are runtime errors (EFBIG, ...): the kernel's or our own files. */
  CP_IO_INPUT = 1 << 0,
  /* A NUL byte in the content is an error (text files: cgroup, /proc). */
  CP_IO_NO_NUL = 1 << 1,
};

/* Read FD to its end, at most MAX bytes, into a NUL-terminated *OUT (caller frees)
 * of *LEN bytes (LEN may be NULL).  NAME names the file in messages ("read NAME:
 * ...").  EINTR is retried.  TIMEOUT_MS >= 0 bounds the whole read (a pipe whose
 * writer never closes it): past it, *OUT holds what came so far and the call fails
 * with errnum ETIMEDOUT; -1 waits as long as it takes. */
int cp_io_read_fd (int fd, const char *name, size_t max, unsigned flags, int timeout_ms, char **out, size_t *len,
                   cp_error_t *err);

/* Open PATH relative to DIRFD (AT_FDCWD or a directory) with O_RDONLY | O_CLOEXEC |
 * O_NONBLOCK | O_NOCTTY | OPEN_FLAGS (a FIFO never blocks the open), check that it
 * is a regular file (or, with REGULAR false, anything readable: cgroupfs and procfs
 * files are regular too, but sized 0 or 4096), and read it as cp_io_read_fd().
 * A missing file fails with errnum ENOENT. */
int cp_io_read_at (int dirfd, const char *path, int open_flags, const char *name, size_t max, unsigned flags,
                   char **out, size_t *len, cp_error_t *err);

/* Write all of BUF, retrying EINTR and short writes; 0 bytes written is EIO.
 * Returns 0, or -1 with errno set (for callers that add their own context). */
int cp_io_write_all (int fd, const void *buf, size_t len);

/* Create NAME in DIRFD (O_EXCL, never through a symlink; a file of that name left by
 * a run that was killed, whose pid the name holds, is removed first) with MODE,
 * write all of BUF (LEN bytes), fsync it when SYNC, close it: the temporary file of
 * an atomic replace, which the caller renames into place.  CP_ERR_RUNTIME with errno,
 * naming the step and NAME ("create NAME", "write NAME", "close NAME"). */
int cp_io_create_at (int dirfd, const char *name, mode_t mode, const void *buf, size_t len, bool sync,
                     cp_error_t *err);

/* Write VALUE into the existing file FILE in DIRFD as ONE write(2), never creating
 * it and never through a symlink: a kernel control file (cgroupfs) takes each
 * write as a whole value, so a short write is an error, not something to finish
 * with a second write (the rest of "0-15" after "0-1" would set "5").  NAME names
 * the file in messages. */
int cp_io_write_control (int dirfd, const char *file, const char *name, const char *value, cp_error_t *err);

/* A file's identity, enough to tell that it is still the file a long-running
 * process read or wrote (a writer that renames a new file over it changes the
 * inode and the times): its directory's, and its own device, inode, size,
 * modification, change and birth times. */
struct cp_file_ident
{
  dev_t dir_dev, dev;
  ino_t dir_ino, ino;
  off_t size;
  struct timespec mtim, ctim, btim; /* btim zero: the file system does not say */
};

/* The identity of the regular file NAME in DIRFD (never through a symlink);
 * false when it cannot be had (missing, not regular, an error). */
bool cp_io_file_ident (int dirfd, const char *name, struct cp_file_ident *out);
bool cp_io_same_file_ident (const struct cp_file_ident *a, const struct cp_file_ident *b);

#endif
