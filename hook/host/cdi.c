/* cachepin: the CDI specs of prepared DRA claims (cdi.h). */
#define _GNU_SOURCE
#include "cdi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "util.h"

char *
cp_cdi_spec_name (const char *uid)
{
  return cp_xasprintf ("cachepin.io-claim_%s.json", uid);
}

char *
cp_cdi_device_name (const char *uid)
{
  return cp_xasprintf ("%s=%s", CP_CDI_KIND, uid);
}

int
cp_cdi_open_dir (const char *dir, bool create, cp_error_t *err)
{
  if (dir[0] != '/')
    return cp_fail_input (err, "cdi_dir: expected an absolute path, got \"%.128s\"", dir);
  int fd = open (dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && create)
    {
      if (mkdir (dir, 0755) < 0 && errno != EEXIST)
        return cp_fail_errno (err, errno, "CDI spec directory %s: create", dir);
      fd = open (dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
  if (fd < 0)
    return cp_fail_errno (err, errno, "CDI spec directory %s", dir);
  return fd;
}

int
cp_cdi_write_at (int dirfd, const char *dir, const char *uid, char **path, cp_error_t *err)
{
  cleanup_free char *name = cp_cdi_spec_name (uid);
  cleanup_free char *tmp = cp_xasprintf (".%s.tmp.%ld", name, (long) getpid ());
  cleanup_free char *text = cp_xasprintf ("{\"cdiVersion\": \"%s\", \"kind\": \"%s\", \"devices\": "
                                          "[{\"name\": \"%s\", \"containerEdits\": {\"env\": [\"%s=%s\"]}}]}\n",
                                          CP_CDI_VERSION, CP_CDI_KIND, uid, CP_CDI_ENV, uid);
  if (cp_io_create_at (dirfd, tmp, 0644, text, strlen (text), true, err) < 0)
    {
      unlinkat (dirfd, tmp, 0);
      return cp_error_wrap (err, "CDI spec directory %s", dir);
    }
  if (renameat (dirfd, tmp, dirfd, name) < 0)
    {
      int e = errno;
      unlinkat (dirfd, tmp, 0);
      return cp_fail_errno (err, e, "CDI spec %s/%s: rename", dir, name);
    }
  fsync (dirfd);
  if (path)
    *path = cp_xasprintf ("%s/%s", dir, name);
  return 0;
}

int
cp_cdi_remove_at (int dirfd, const char *dir, const char *uid, cp_error_t *err)
{
  cleanup_free char *name = cp_cdi_spec_name (uid);
  if (unlinkat (dirfd, name, 0) < 0)
    {
      if (errno == ENOENT)
        return 0;
      return cp_fail_errno (err, errno, "CDI spec %s/%s: remove", dir, name);
    }
  fsync (dirfd);
  return 1;
}

/* The directory a sandboxed front end holds (cp_cdi_hold_dir()). */
static struct
{
  char *dir;
  int fd;
} held = { NULL, -1 };

int
cp_cdi_hold_dir (const char *dir, cp_error_t *err)
{
  int fd = cp_cdi_open_dir (dir, true, err);
  if (fd < 0)
    return -1;
  if (held.fd >= 0)
    close (held.fd);
  free (held.dir);
  held.dir = cp_xstrdup (dir);
  held.fd = fd;
  return fd;
}

static bool
is_held (const char *dir)
{
  return held.fd >= 0 && strcmp (held.dir, dir) == 0;
}

int
cp_cdi_write (const char *dir, const char *uid, char **path, cp_error_t *err)
{
  if (is_held (dir))
    return cp_cdi_write_at (held.fd, dir, uid, path, err);
  cleanup_close int dirfd = cp_cdi_open_dir (dir, true, err);
  return dirfd < 0 ? -1 : cp_cdi_write_at (dirfd, dir, uid, path, err);
}

int
cp_cdi_remove (const char *dir, const char *uid, cp_error_t *err)
{
  if (is_held (dir))
    return cp_cdi_remove_at (held.fd, dir, uid, err);
  cleanup_close int dirfd = cp_cdi_open_dir (dir, false, err);
  if (dirfd >= 0)
    return cp_cdi_remove_at (dirfd, dir, uid, err);
  if (cp_error_errno (*err) != ENOENT)
    return -1;
  cp_error_free (err);
  return 0;
}
