/* cachepin: cache-aware scheduling's switch (sched.h, cp_sched_cas_*): whether
 * debugfs is mounted, which of the three shapes this kernel has, and the switch
 * read, opened, written and read back.  Core scheduling, the boot option and the
 * probe of everything are in sched.c. */
#define _GNU_SOURCE
#include "sched_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "util.h"

/* sched/features lists every scheduler feature; mountinfo grows with the mounts. */
#define FEATURES_MAX 16384
#define MOUNTINFO_MAX (4u << 20)

static bool
is_denial (int errnum)
{
  return errnum == EACCES || errnum == EPERM;
}

static bool
is_absence (int errnum)
{
  return errnum == ENOENT || errnum == ENOTDIR;
}

/* ROOT/REL for messages ("/sys/..." when ROOT is "/"). */
static char *
display_path (const char *root, const char *rel)
{
  size_t n = strlen (root);
  return cp_xasprintf ("%s%s%s", root, n > 0 && root[n - 1] == '/' ? "" : "/", rel);
}

/* Hand the error in *FROM to *ERR, freeing what *ERR held (as cp_error_set()
 * does), and return -1. */
static int
move_error (cp_error_t *err, cp_error_t *from)
{
  if (err == NULL)
    {
      cp_error_free (from);
      return -1;
    }
  cp_error_free (err);
  *err = cp_steal_pointer (from);
  return -1;
}

/* ------------------------------------------------------------------ debugfs mount */

/* The mount point field of a mountinfo line matches PATH, \ooo escapes and all. */
static bool
mountinfo_line_is_debugfs (char *line, const char *path)
{
  char *sep = strstr (line, " - ");
  if (sep == NULL)
    return false;
  *sep = '\0';
  char *save = NULL, *field = strtok_r (line, " ", &save);
  for (int i = 1; field != NULL && i < 5; i++)
    field = strtok_r (NULL, " ", &save);
  if (field == NULL || strcmp (field, path) != 0)
    return false;
  char *fstype = strtok_r (sep + 3, " ", &save);
  return fstype != NULL && strcmp (fstype, "debugfs") == 0;
}

/* Whether some directory entry exists in DIRFD/REL (a mount point left empty
 * when debugfs is not mounted).  -1 with ENOENT when REL is not there. */
static int
dir_has_entries (int dirfd, const char *rel, const char *name, cp_error_t *err)
{
  int fd = openat (dirfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return cp_fail_errno (err, errno, "open %s", name);
  DIR *d = fdopendir (fd);
  if (d == NULL)
    {
      int e = errno;
      close (fd);
      return cp_fail_errno (err, e, "read %s", name);
    }
  struct dirent *ent;
  int found = 0;
  while (!found && (ent = readdir (d)) != NULL)
    found = strcmp (ent->d_name, ".") != 0 && strcmp (ent->d_name, "..") != 0;
  closedir (d);
  return found;
}

/* 1 when debugfs is mounted at ROOT/sys/kernel/debug, 0 when not: by
 * ROOT/proc/self/mountinfo, or, where that is missing (a fake tree, a /proc-less
 * chroot), by whether the mount point has anything in it.  A mount point we may
 * not look into (debugfs's root is 0700) counts as mounted: the read of the
 * switch then tells "denied". */
static int
debugfs_mounted (int rootfd, const char *root, cp_error_t *err)
{
  cleanup_free char *name = display_path (root, "proc/self/mountinfo");
  cleanup_free char *text = NULL;
  cleanup_error cp_error_t inner = NULL;
  if (cp_io_read_at (rootfd, "proc/self/mountinfo", 0, name, MOUNTINFO_MAX, CP_IO_NO_NUL, &text, NULL, &inner) == 0)
    {
      char *save = NULL;
      for (char *line = strtok_r (text, "\n", &save); line; line = strtok_r (NULL, "\n", &save))
        if (mountinfo_line_is_debugfs (line, "/" CP_SCHED_DEBUGFS))
          return 1;
      return 0;
    }
  if (!is_absence (cp_error_errno (inner)))
    return move_error (err, &inner);
  cleanup_free char *dname = display_path (root, CP_SCHED_DEBUGFS);
  cleanup_error cp_error_t dir_err = NULL;
  int r = dir_has_entries (rootfd, CP_SCHED_DEBUGFS, dname, &dir_err);
  if (r >= 0)
    return r;
  if (is_absence (cp_error_errno (dir_err)))
    return 0;
  if (is_denial (cp_error_errno (dir_err)))
    return 1;
  return move_error (err, &dir_err);
}

/* ------------------------------------------------------------------ the switch files */

int
cp_sched_parse_switch (const char *text)
{
  size_t n = strlen (text);
  if (n == 2 && text[1] == '\n')
    n = 1;
  if (n != 1)
    return -1;
  switch (text[0])
    {
    case '0':
    case 'N':
      return 0;
    case '1':
    case 'Y':
      return 1;
    default:
      return -1;
    }
}

/* SCHED_CACHE (1), NO_SCHED_CACHE (0), or neither (-1) among the words of a
 * sched/features text. */
static int
parse_features (const char *text)
{
  cleanup_free char *copy = cp_xstrdup (text);
  char *save = NULL;
  for (char *w = strtok_r (copy, " \t\n", &save); w; w = strtok_r (NULL, " \t\n", &save))
    {
      if (strcmp (w, "SCHED_CACHE") == 0)
        return 1;
      if (strcmp (w, "NO_SCHED_CACHE") == 0)
        return 0;
    }
  return -1;
}

/* Where each interface keeps its value: a directory under ROOT and a file in it. */
struct iface_place
{
  const char *dir;
  const char *file;
};

static struct iface_place
iface_place (enum cp_sched_cas_iface iface)
{
  switch (iface)
    {
    case CP_SCHED_CAS_IFACE_DIR:
      return (struct iface_place) { CP_SCHED_CAS_DIR, "enabled" };
    case CP_SCHED_CAS_IFACE_LLC_ENABLED:
      return (struct iface_place) { CP_SCHED_SCHED_DIR, "llc_enabled" };
    case CP_SCHED_CAS_IFACE_FEATURES:
      return (struct iface_place) { CP_SCHED_SCHED_DIR, "features" };
    case CP_SCHED_CAS_IFACE_NONE:
    default:
      return (struct iface_place) { NULL, NULL };
    }
}

/* Open ROOT's directory DIR the way every write goes through it: O_PATH, and
 * never through a symlink at its last component. */
static int
open_dir (int rootfd, const char *dir, const char *name, cp_error_t *err)
{
  int fd = openat (rootfd, dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return cp_fail_errno (err, errno, "open %s", name);
  return fd;
}

/* Open IFACE's directory (as open_dir()) and name its file for messages in *NAME
 * (ROOT/dir/file; the caller frees it, also on failure). */
static int
open_iface_dir (int rootfd, const char *root, struct iface_place p, char **name, cp_error_t *err)
{
  cleanup_free char *rel = cp_xasprintf ("%s/%s", p.dir, p.file);
  *name = display_path (root, rel);
  cleanup_free char *dname = display_path (root, p.dir);
  return open_dir (rootfd, p.dir, dname, err);
}

/* Read IFACE's value: 0 or 1, or -1 with the errno in *ERR (ENOENT: this kernel
 * has not that interface; EACCES/EPERM: denied).  Features without either token
 * is ENOENT too: that kernel has the file but no CAS. */
static int
read_iface (int rootfd, const char *root, enum cp_sched_cas_iface iface, int *value, cp_error_t *err)
{
  struct iface_place p = iface_place (iface);
  cleanup_free char *name = NULL;
  cleanup_close int dirfd = open_iface_dir (rootfd, root, p, &name, err);
  if (dirfd < 0)
    return -1;
  cleanup_free char *text = NULL;
  size_t max = iface == CP_SCHED_CAS_IFACE_FEATURES ? FEATURES_MAX : CP_SCHED_SWITCH_MAX;
  if (cp_io_read_at (dirfd, p.file, O_NOFOLLOW, name, max, CP_IO_NO_NUL, &text, NULL, err) < 0)
    return -1;
  int v = iface == CP_SCHED_CAS_IFACE_FEATURES ? parse_features (text) : cp_sched_parse_switch (text);
  if (v < 0 && iface == CP_SCHED_CAS_IFACE_FEATURES)
    return cp_fail_errno (err, ENOENT, "%s: no SCHED_CACHE feature", name);
  if (v < 0)
    return cp_fail_runtime (err, "%s: unexpected content '%.32s' (want 0 or 1)", name, text);
  *value = v;
  return 0;
}

/* cp_sched_cas_probe() without the prefix its errors get. */
static int
cas_probe (const char *root, struct cp_sched_cas *out, cp_error_t *err)
{
  *out = (struct cp_sched_cas) { .avail = CP_SCHED_UNSUPPORTED, .enabled = -1 };
  cleanup_close int rootfd = cp_sched_open_root (root, err);
  if (rootfd < 0)
    return -1;
  int mounted = debugfs_mounted (rootfd, root, err);
  if (mounted < 0)
    return -1;
  if (mounted == 0)
    {
      out->avail = CP_SCHED_NO_DEBUGFS;
      return 0;
    }
  /* Newest first: a kernel has one of them. */
  static const enum cp_sched_cas_iface order[]
      = { CP_SCHED_CAS_IFACE_DIR, CP_SCHED_CAS_IFACE_LLC_ENABLED, CP_SCHED_CAS_IFACE_FEATURES };
  for (size_t i = 0; i < CP_ARRAY_SIZE (order); i++)
    {
      cleanup_error cp_error_t inner = NULL;
      int value = -1;
      if (read_iface (rootfd, root, order[i], &value, &inner) == 0)
        {
          *out = (struct cp_sched_cas) { .avail = CP_SCHED_SUPPORTED, .iface = order[i], .enabled = value };
          return 0;
        }
      int e = cp_error_errno (inner);
      if (is_denial (e))
        {
          /* Knowing which file said no helps the user; a denied directory hides it. */
          struct stat st;
          struct iface_place p = iface_place (order[i]);
          cleanup_free char *rel = cp_xasprintf ("%s/%s", p.dir, p.file);
          bool seen = fstatat (rootfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0;
          *out = (struct cp_sched_cas) {
            .avail = CP_SCHED_DENIED, .iface = seen ? order[i] : CP_SCHED_CAS_IFACE_NONE, .enabled = -1, .errnum = e
          };
          return 0;
        }
      if (!is_absence (e))
        return move_error (err, &inner);
    }
  return 0;
}

int
cp_sched_cas_probe (const char *root, struct cp_sched_cas *out, cp_error_t *err)
{
  if (cas_probe (root, out, err) < 0)
    return cp_error_wrap (err, CP_SCHED_CAS_PREFIX);
  return 0;
}

char *
cp_sched_cas_switch_file (const char *root)
{
  struct cp_sched_cas cas;
  cleanup_error cp_error_t e = NULL;
  if (cas_probe (root, &cas, &e) < 0 || cas.iface == CP_SCHED_CAS_IFACE_NONE)
    return NULL;
  struct iface_place p = iface_place (cas.iface);
  cleanup_free char *rel = cp_xasprintf ("%s/%s", p.dir, p.file);
  return display_path (root, rel);
}

/* The whole text of the switch file behind FD, from offset 0 (pread: the same fd
 * is read again after a write), at most MAX bytes, NUL-terminated. */
static int
pread_text (int fd, const char *name, size_t max, char **out, cp_error_t *err)
{
  cleanup_free char *buf = cp_xmalloc0 (max + 1);
  size_t len = 0;
  for (;;)
    {
      if (len == max)
        return cp_fail_errno (err, EFBIG, "read %s: more than %zu bytes", name, max);
      ssize_t n = pread (fd, buf + len, max - len, (off_t) len);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return cp_fail_errno (err, errno, "read %s", name);
      if (n == 0)
        break;
      len += (size_t) n;
    }
  if (memchr (buf, '\0', len) != NULL)
    return cp_fail_runtime (err, "read %s: a NUL byte", name);
  buf[len] = '\0';
  *out = cp_steal_pointer (&buf);
  return 0;
}

void
cp_sched_cas_close (struct cp_sched_cas_handle *h)
{
  if (h->fd >= 0)
    close (h->fd);
  free (h->name);
  *h = (struct cp_sched_cas_handle) { .fd = -1 };
}

/* cp_sched_cas_open() without the prefix its errors get. */
static int
cas_open (const char *root, struct cp_sched_cas *cas, struct cp_sched_cas_handle *out, cp_error_t *err)
{
  *out = (struct cp_sched_cas_handle) { .fd = -1 };
  if (cas_probe (root, cas, err) < 0)
    return -1;
  if (cas->avail != CP_SCHED_SUPPORTED)
    return 0;
  cleanup_close int rootfd = cp_sched_open_root (root, err);
  if (rootfd < 0)
    return -1;
  struct iface_place p = iface_place (cas->iface);
  cleanup_free char *name = NULL;
  cleanup_close int dirfd = open_iface_dir (rootfd, root, p, &name, err);
  if (dirfd < 0)
    return -1;
  int fd = openat (dirfd, p.file, O_RDWR | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
  if (fd < 0 && is_denial (errno))
    {
      /* Readable but not writable: lockdown's integrity mode, a read-only mount. */
      cas->avail = CP_SCHED_DENIED;
      cas->errnum = errno;
      return 0;
    }
  if (fd < 0)
    return cp_fail_errno (err, errno, "open %s", name);
  *out = (struct cp_sched_cas_handle) { .iface = cas->iface, .fd = fd, .name = cp_steal_pointer (&name) };
  return 0;
}

int
cp_sched_cas_open (const char *root, struct cp_sched_cas *cas, struct cp_sched_cas_handle *out, cp_error_t *err)
{
  if (cas_open (root, cas, out, err) < 0)
    return cp_error_wrap (err, CP_SCHED_CAS_PREFIX);
  return 0;
}

int
cp_sched_cas_read (const struct cp_sched_cas_handle *h, int *value, cp_error_t *err)
{
  cleanup_free char *text = NULL;
  size_t max = h->iface == CP_SCHED_CAS_IFACE_FEATURES ? FEATURES_MAX : CP_SCHED_SWITCH_MAX;
  if (pread_text (h->fd, h->name, max, &text, err) < 0)
    return -1;
  int v = h->iface == CP_SCHED_CAS_IFACE_FEATURES ? parse_features (text) : cp_sched_parse_switch (text);
  if (v < 0)
    return cp_fail_runtime (err, "%s: unexpected content '%.32s'", h->name, text);
  *value = v;
  return 0;
}

int
cp_sched_cas_write (const struct cp_sched_cas_handle *h, bool on, struct cp_sched_cas_change *out, cp_error_t *err)
{
  int before;
  if (cp_sched_cas_read (h, &before, err) < 0)
    return -1;
  *out = (struct cp_sched_cas_change) { .iface = h->iface, .before = before, .after = before };
  if (before == (int) on)
    return 0;
  const char *value = h->iface == CP_SCHED_CAS_IFACE_FEATURES ? (on ? "SCHED_CACHE" : "NO_SCHED_CACHE")
                                                              : (on ? "1" : "0");
  size_t len = strlen (value);
  ssize_t n;
  do
    n = write (h->fd, value, len);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    return cp_fail_errno (err, errno, "write %s to %s", value, h->name);
  if ((size_t) n != len)
    return cp_fail_runtime (err, "write %s to %s: only %zd of %zu bytes taken", value, h->name, n, len);
  out->written = true;
  int after;
  if (cp_sched_cas_read (h, &after, err) < 0)
    return cp_error_wrap (err, "read back after writing %s", value);
  out->after = after;
  if (after != (int) on)
    return cp_fail_runtime (err, "%s: wrote %s but it reads back %s", h->name, value, after ? "on" : "off");
  return 0;
}

int
cp_sched_cas_set (const char *root, bool on, struct cp_sched_cas_change *out, cp_error_t *err)
{
  struct cp_sched_cas cas;
  struct cp_sched_cas_handle h;
  if (cp_sched_cas_open (root, &cas, &h, err) < 0)
    return -1;
  switch (cas.avail)
    {
    case CP_SCHED_SUPPORTED:
      break;
    case CP_SCHED_NO_DEBUGFS:
      return cp_fail_errno (err, ENOENT, CP_SCHED_CAS_PREFIX ": debugfs is not mounted at %s/%s",
                            strcmp (root, "/") == 0 ? "" : root, CP_SCHED_DEBUGFS);
    case CP_SCHED_DENIED:
      return cp_fail_errno (err, cas.errnum, CP_SCHED_CAS_PREFIX ": debugfs denied");
    case CP_SCHED_UNSUPPORTED:
    default:
      return cp_fail_errno (err, EOPNOTSUPP, CP_SCHED_CAS_PREFIX ": this kernel has none");
    }
  int r = cp_sched_cas_write (&h, on, out, err);
  cp_sched_cas_close (&h);
  return r < 0 ? cp_error_wrap (err, CP_SCHED_CAS_PREFIX) : 0;
}

/* ------------------------------------------------------------------ names */

const char *
cp_sched_cas_iface_name (enum cp_sched_cas_iface iface)
{
  switch (iface)
    {
    case CP_SCHED_CAS_IFACE_DIR:
      return "llc_balancing";
    case CP_SCHED_CAS_IFACE_LLC_ENABLED:
      return "llc_enabled";
    case CP_SCHED_CAS_IFACE_FEATURES:
      return "features";
    case CP_SCHED_CAS_IFACE_NONE:
    default:
      return "none";
    }
}

const char *
cp_sched_avail_name (enum cp_sched_avail avail)
{
  switch (avail)
    {
    case CP_SCHED_SUPPORTED:
      return "supported";
    case CP_SCHED_UNSUPPORTED:
      return "unsupported";
    case CP_SCHED_NO_DEBUGFS:
      return "debugfs-not-mounted";
    case CP_SCHED_DENIED:
      return "denied";
    default:
      return "unknown";
    }
}
