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

#include <json-c/json.h>

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

char *
cp_cdi_result_device_name (const char *uid, unsigned index)
{
  return cp_xasprintf ("%s=%s-%u", CP_CDI_KIND, uid, index);
}

static char *
spec_path (const char *dir, const char *uid)
{
  cleanup_free char *name = cp_cdi_spec_name (uid);
  size_t n = strlen (dir);
  return cp_xasprintf ("%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name);
}

int
cp_cdi_mount_tag (const char *dir, const char *source, const char *destination, char *uid, size_t uid_size,
                  unsigned *index, cp_error_t *err)
{
  static const char base[] = CP_CDI_MOUNT_DIR "/";
  if (destination == NULL || strncmp (destination, base, sizeof base - 1) != 0)
    return 0;
  const char *rest = destination + sizeof base - 1, *slash = strchr (rest, '/');
  size_t n = slash ? (size_t) (slash - rest) : 0;
  if (slash == NULL || n == 0 || n >= uid_size)
    return cp_fail_input (err, "mount %.200s: not %s/<claim uid>/<result>", destination, CP_CDI_MOUNT_DIR);
  memcpy (uid, rest, n);
  uid[n] = '\0';
  if (strspn (uid, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") != n)
    return cp_fail_input (err, "mount %.200s: `%.128s` is not a claim uid", destination, uid);
  const char *digits = slash + 1;
  char *end = NULL;
  unsigned long i = digits[0] >= '0' && digits[0] <= '9' ? strtoul (digits, &end, 10) : CP_CDI_MAX_RESULTS;
  if (end == NULL || *end != '\0' || i >= CP_CDI_MAX_RESULTS || (digits[0] == '0' && digits[1] != '\0'))
    return cp_fail_input (err, "mount %.200s: the result `%.32s` is not a number below %u", destination, digits,
                          CP_CDI_MAX_RESULTS);
  cleanup_free char *want = spec_path (dir, uid);
  if (source == NULL || strcmp (source, want) != 0)
    return cp_fail_input (err, "mount %.200s: its source `%.200s` is not the claim's CDI spec %s", destination,
                          source ? source : "", want);
  *index = (unsigned) i;
  return 1;
}

/* A device's edits: the environment tag, and the mount of the spec at
   CP_CDI_MOUNT_DIR/UID/I for each of INDEXES (N). */
static json_object *
device_json (const char *name, const char *path, const char *uid, const unsigned *indexes, size_t n)
{
  json_object *env = json_object_new_array (), *mounts = json_object_new_array ();
  cleanup_free char *tag = cp_xasprintf ("%s=%s", CP_CDI_ENV, uid);
  json_object_array_add (env, json_object_new_string (tag));
  for (size_t i = 0; i < n; i++)
    {
      json_object *m = json_object_new_object (), *opts = json_object_new_array ();
      cleanup_free char *dest = cp_xasprintf ("%s/%s/%u", CP_CDI_MOUNT_DIR, uid, indexes[i]);
      json_object_object_add (m, "hostPath", json_object_new_string (path));
      json_object_object_add (m, "containerPath", json_object_new_string (dest));
      static const char *const options[] = { "bind", "ro", "nosuid", "nodev", "noexec" };
      for (size_t k = 0; k < CP_ARRAY_SIZE (options); k++)
        json_object_array_add (opts, json_object_new_string (options[k]));
      json_object_object_add (m, "options", opts);
      json_object_array_add (mounts, m);
    }
  json_object *edits = json_object_new_object (), *d = json_object_new_object ();
  json_object_object_add (edits, "env", env);
  json_object_object_add (edits, "mounts", mounts);
  json_object_object_add (d, "name", json_object_new_string (name));
  json_object_object_add (d, "containerEdits", edits);
  return d;
}

/* Claim UID's spec text: the whole claim's device, then one per result. */
static char *
spec_text (const char *path, const char *uid, const unsigned *indexes, size_t n)
{
  json_object *root = json_object_new_object (), *devices = json_object_new_array ();
  json_object_object_add (root, "cdiVersion", json_object_new_string (CP_CDI_VERSION));
  json_object_object_add (root, "kind", json_object_new_string (CP_CDI_KIND));
  json_object_array_add (devices, device_json (uid, path, uid, indexes, n));
  for (size_t i = 0; i < n; i++)
    {
      cleanup_free char *name = cp_xasprintf ("%s-%u", uid, indexes[i]);
      json_object_array_add (devices, device_json (name, path, uid, &indexes[i], 1));
    }
  json_object_object_add (root, "devices", devices);
  char *text = cp_xasprintf ("%s\n", json_object_to_json_string_ext (root, JSON_C_TO_STRING_PLAIN
                                                                          | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put (root);
  return text;
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
cp_cdi_write_at (int dirfd, const char *dir, const char *uid, const unsigned *indexes, size_t n, char **path,
                 cp_error_t *err)
{
  if (n == 0)
    return cp_fail_input (err, "CDI spec of claim %s: no result", uid);
  cleanup_free char *name = cp_cdi_spec_name (uid);
  cleanup_free char *tmp = cp_xasprintf (".%s.tmp.%ld", name, (long) getpid ());
  cleanup_free char *full = spec_path (dir, uid);
  cleanup_free char *text = spec_text (full, uid, indexes, n);
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
    *path = cp_xstrdup (full);
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
cp_cdi_write (const char *dir, const char *uid, const unsigned *indexes, size_t n, char **path, cp_error_t *err)
{
  if (is_held (dir))
    return cp_cdi_write_at (held.fd, dir, uid, indexes, n, path, err);
  cleanup_close int dirfd = cp_cdi_open_dir (dir, true, err);
  return dirfd < 0 ? -1 : cp_cdi_write_at (dirfd, dir, uid, indexes, n, path, err);
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
