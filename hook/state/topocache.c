/* cachepin: the topology cache (see topocache.h). */
#define _GNU_SOURCE
#include "topocache.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io.h"
#include "bitmap.h"
#include "cpulist.h"
#include "topo_codec.h"
#include "util.h"
#include "ledger.h"
#include "log.h"

#define SYSFS_PREFIX "sysfs:"
#define BOOT_ID "/proc/sys/kernel/random/boot_id"
#define CPU_ONLINE "/sys/devices/system/cpu/online"
/* Kernel texts: sysfs files are sized 4096 whatever they hold. */
#define KERNEL_TEXT_MAX 65536

/* ---- discovery ------------------------------------------------------------------- */

/* Where hwloc's Linux backend reads the CPUs, below the root it is given. */
#define SYSFS_CPU "sys/devices/system/cpu"

/* A "sysfs:DIR" source is a dump hwloc's Linux backend can read: DIR an absolute
   directory holding SYSFS_CPU.  Without it hwloc does not fail: it says so on
   stderr and falls back to another backend, on x86 to this host's own CPUID,
   which `status` would then show as the dump's topology.  The backend also needs
   a CPU's topology files in there; read_by_linux() checks after the load that it
   found them. */
static int
check_sysfs_dump (const char *source, cp_error_t *err)
{
  const char *dir = source + strlen (SYSFS_PREFIX);
  struct stat st;
  if (dir[0] != '/' || stat (dir, &st) < 0 || !S_ISDIR (st.st_mode))
    return cp_fail_input (err, "`%s`: not an absolute path to a directory", source);
  cleanup_free char *cpu = cp_xasprintf ("%s/" SYSFS_CPU, dir);
  if (stat (cpu, &st) < 0 || !S_ISDIR (st.st_mode))
    return cp_fail_input (err, "`%s`: not a sysfs dump (no directory " SYSFS_CPU " in it)", source);
  return 0;
}

/* Did hwloc's Linux backend build T?  It names itself in the root's infos
   ("Backend" "Linux"); a fallback names another ("x86") or none. */
static bool
read_by_linux (hwloc_topology_t t)
{
  hwloc_obj_t root = hwloc_get_root_obj (t);
  for (unsigned i = 0; i < root->infos_count; i++)
    if (strcmp (root->infos[i].name, "Backend") == 0 && strcmp (root->infos[i].value, "Linux") == 0)
      return true;
  return false;
}

/* hwloc 2 has no call that sets the Linux backend's fsroot (1.x's
   hwloc_topology_set_fsroot() is gone): its Linux backend reads HWLOC_FSROOT when
   it is instantiated and when it computes the allowed CPUs, both inside
   hwloc_topology_load().  So the variable is set, from the host config (root's
   file, trusted like an XML path), for exactly that call, and removed after it:
   main() has scrubbed every HWLOC_* of the caller's before (docs/security.md). */
static int
discover_sysfs (const char *source, struct cp_topo **out, cp_error_t *err)
{
  if (check_sysfs_dump (source, err) < 0)
    return -1;
  const char *dir = source + strlen (SYSFS_PREFIX);
  cleanup_hwloc hwloc_topology_t t = NULL;
  if (hwloc_topology_init (&t) < 0)
    return cp_fail_errno (err, errno ? errno : ENOMEM, "hwloc_topology_init");
  cp_topo_hwloc_prepare (t);
  if (setenv ("HWLOC_FSROOT", dir, 1) < 0)
    return cp_fail_errno (err, errno, "setenv HWLOC_FSROOT");
  int r = hwloc_topology_load (t);
  unsetenv ("HWLOC_FSROOT");
  if (r < 0)
    return cp_fail_input (err, "`%s`: hwloc could not discover a topology there", source);
  if (!read_by_linux (t))
    return cp_fail_input (err, "`%s`: not a sysfs dump (hwloc's Linux backend found no CPU topology in its " SYSFS_CPU
                               ")", source);
  return cp_topo_from_hwloc (t, source, out, err);
}

static bool
is_sysfs (const char *source)
{
  return source && strncmp (source, SYSFS_PREFIX, strlen (SYSFS_PREFIX)) == 0;
}

int
cp_topocache_discover (const char *source, struct cp_topo **out, cp_error_t *err)
{
  if (is_sysfs (source))
    return discover_sysfs (source, out, err);
  return cp_topo_load (source, out, err);
}

/* ---- the key --------------------------------------------------------------------- */

/* A kernel file's text, its trailing newline dropped. */
static int
kernel_text (const char *path, char **out, cp_error_t *err)
{
  size_t len = 0;
  if (cp_io_read_at (AT_FDCWD, path, 0, path, KERNEL_TEXT_MAX, CP_IO_NO_NUL, out, &len, err) < 0)
    return -1;
  while (len > 0 && ((*out)[len - 1] == '\n' || (*out)[len - 1] == ' '))
    (*out)[--len] = '\0';
  return 0;
}

static char *
affinity_text (void)
{
  cleanup_bitmap hwloc_bitmap_t set = cp_bitmap_new ();
  size_t ncpus = 65536;
  cpu_set_t *mask = CPU_ALLOC (ncpus);
  if (mask == NULL)
    cp_oom ();
  size_t size = CPU_ALLOC_SIZE (ncpus);
  /* Word by word: 65,536 CPU_ISSET_S() tests were 0.6 million instructions, a
     tenth of the NRI plugin's CreateContainer (bench/nri-latency, callgrind). */
  const unsigned long *words = (const unsigned long *) mask;
  size_t bits = 8 * sizeof *words;
  if (sched_getaffinity (0, size, mask) == 0)
    for (size_t w = 0; w < size / sizeof *words; w++)
      for (unsigned long v = words[w]; v; v &= v - 1)
        hwloc_bitmap_set (set, (unsigned) (w * bits + (size_t) __builtin_ctzl (v)));
  CPU_FREE (mask);
  return cp_cpulist_format (set); /* empty when unknown: still a key */
}

/* "file=" for an XML file or a sysfs directory; "" for "host". */
static int
source_identity (const char *source, char **out, cp_error_t *err)
{
  const char *path = source;
  if (is_sysfs (source))
    path += strlen (SYSFS_PREFIX);
  if (path[0] != '/')
    {
      *out = cp_xstrdup ("");
      return 0;
    }
  struct stat st;
  if (stat (path, &st) < 0)
    return cp_fail_errno (err, errno, "stat %s", path);
  *out = cp_xasprintf ("file=%llu:%llu:%lld:%lld.%09ld:%lld.%09ld\n", (unsigned long long) st.st_dev,
                       (unsigned long long) st.st_ino, (long long) st.st_size, (long long) st.st_mtim.tv_sec,
                       st.st_mtim.tv_nsec, (long long) st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
  return 0;
}

int
cp_topocache_key (const char *source, char **out, cp_error_t *err)
{
  const char *src = source ? source : "host";
  cleanup_free char *boot = NULL, *online = NULL, *identity = NULL;
  if (kernel_text (BOOT_ID, &boot, err) < 0 || kernel_text (CPU_ONLINE, &online, err) < 0
      || source_identity (src, &identity, err) < 0)
    return -1;
  cleanup_free char *allowed = affinity_text ();
  *out = cp_xasprintf ("format=%u\nhwloc=%#x\nboot=%s\nonline=%s\nallowed=%s\nsource=%s\n%s", CP_TOPO_CODEC_VERSION,
                       hwloc_get_api_version (), boot, online, allowed, src, identity);
  return 0;
}

/* ---- the file -------------------------------------------------------------------- */

/* The state directory's fd; with READ_ONLY, -1 (and no error) when it does not exist,
   so that a reader creates nothing. */
static int
open_dir (const char *state_dir, unsigned flags, cp_error_t *err)
{
  struct stat st;
  if ((flags & CP_TOPOCACHE_READ_ONLY) && lstat (state_dir, &st) < 0 && errno == ENOENT)
    return -1;
  return cp_ledger_open_dir (state_dir, err);
}

/* The cache's bytes, if the file is one we could have written (see topocache.h). */
static int
read_cache (int dirfd, const char *name, char **buf, size_t *len, cp_error_t *err)
{
  cleanup_close int fd
      = openat (dirfd, CP_TOPOCACHE_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0 && errno == ELOOP)
    return cp_fail_input (err, "%s is a symlink", name);
  if (fd < 0)
    return cp_fail_errno (err, errno, "open %s", name);
  struct stat st;
  if (fstat (fd, &st) < 0)
    return cp_fail_errno (err, errno, "stat %s", name);
  if (!S_ISREG (st.st_mode) || st.st_uid != geteuid () || st.st_nlink != 1 || (st.st_mode & (S_IWGRP | S_IWOTH)))
    return cp_fail_input (err, "%s is not a regular file of ours (mode %o, uid %u, %lu links)", name,
                          (unsigned) st.st_mode, (unsigned) st.st_uid, (unsigned long) st.st_nlink);
  if ((size_t) st.st_size > CP_TOPOCACHE_MAX)
    return cp_fail_input (err, "%s is larger than %zu bytes", name, CP_TOPOCACHE_MAX);
  return cp_io_read_fd (fd, name, CP_TOPOCACHE_MAX, 0, -1, buf, len, err);
}

/* The cached model, if it is valid for KEY. */
static int
load_cached (int dirfd, const char *name, const char *key, struct cp_topo **out, cp_error_t *err)
{
  cleanup_free char *buf = NULL;
  size_t len = 0;
  if (read_cache (dirfd, name, &buf, &len, err) < 0)
    return -1;
  return cp_topo_decode (buf, len, key, out, err);
}

static int
save (int dirfd, const char *name, const struct cp_topo *topo, const char *key, cp_error_t *err)
{
  cleanup_free char *buf = NULL;
  size_t len = 0;
  if (cp_topo_encode (topo, key, &buf, &len, err) < 0)
    return -1;
  cleanup_free char *tmp = cp_xasprintf ("%s.tmp.%ld", CP_TOPOCACHE_FILE, (long) getpid ());
  if (cp_io_create_at (dirfd, tmp, 0600, buf, len, false, err) < 0)
    {
      unlinkat (dirfd, tmp, 0);
      return -1;
    }
  if (renameat (dirfd, tmp, dirfd, CP_TOPOCACHE_FILE) < 0)
    {
      int e = errno;
      unlinkat (dirfd, tmp, 0);
      return cp_fail_errno (err, e, "rename %s to %s", tmp, name);
    }
  return 0;
}

void
cp_topocache_origin_clear (struct cp_topocache_origin *o)
{
  free (o->file);
  free (o->why_not);
  memset (o, 0, sizeof *o);
}

int
cp_topocache_load (const struct cp_hostconfig *hc, unsigned flags, struct cp_topo **out, cp_error_t *err)
{
  return cp_topocache_load_from (hc, flags, out, NULL, err);
}

/* cp_topocache_keep()'s model and the key it was loaded under. */
static struct
{
  bool on;
  char *key;
  struct cp_topo *topo;
} kept;

static void
keep_clear (void)
{
  free (kept.key);
  kept.key = NULL;
  cp_topo_free (kept.topo);
  kept.topo = NULL;
}

void
cp_topocache_keep (bool on)
{
  kept.on = on;
  if (!on)
    keep_clear ();
}

/* Keep TOPO, loaded under KEY, when asked to. */
static void
keep (const char *key, struct cp_topo *topo)
{
  if (!kept.on)
    return;
  keep_clear ();
  kept.key = cp_xstrdup (key);
  kept.topo = cp_topo_ref (topo);
}

int
cp_topocache_load_from (const struct cp_hostconfig *hc, unsigned flags, struct cp_topo **out,
                        struct cp_topocache_origin *origin, cp_error_t *err)
{
  cleanup_error cp_error_t why = NULL;
  cleanup_free char *key = NULL;
  cleanup_free char *name = cp_xasprintf ("%s/%s", hc->state_dir, CP_TOPOCACHE_FILE);
  cleanup_close int dirfd = -1;
  if (origin)
    *origin = (struct cp_topocache_origin) { .file = cp_xstrdup (name) };
  /* Before the cache too: a model cached from a directory that is no dump (by a
     version without the check) must not outlive it. */
  if (is_sysfs (hc->topology) && check_sysfs_dump (hc->topology, err) < 0)
    return -1;
  if (cp_topocache_key (hc->topology, &key, &why) < 0)
    {
      cp_log (CP_LOG_DEBUG, "topology: no cache (no key: %s)", cp_error_message (why));
      if (origin)
        origin->why_not = cp_xasprintf ("no key: %s", cp_error_message (why));
      return cp_topocache_discover (hc->topology, out, err);
    }
  if (kept.topo && strcmp (kept.key, key) == 0)
    {
      cp_log (CP_LOG_DEBUG, "topology: the model kept in memory (same key)");
      if (origin)
        origin->used = true;
      *out = cp_topo_ref (kept.topo);
      return 0;
    }
  dirfd = open_dir (hc->state_dir, flags, &why);
  if (dirfd >= 0 && load_cached (dirfd, name, key, out, &why) == 0)
    {
      cp_log (CP_LOG_DEBUG, "topology: from the cache %s", name);
      if (origin)
        origin->used = true;
      keep (key, *out);
      return 0;
    }
  const char *reason = why ? cp_error_message (why) : "no state directory";
  cp_log (CP_LOG_DEBUG, "topology: cache %s not used (%s); discovering", name, reason);
  if (origin)
    origin->why_not = cp_xstrdup (reason);
  if (cp_topocache_discover (hc->topology, out, err) < 0)
    return -1;
  keep (key, *out);
  if (dirfd < 0 || (flags & CP_TOPOCACHE_READ_ONLY))
    return 0;
  cp_error_free (&why);
  /* Debug, not a warning: a cache that cannot be saved only makes the next run
     rediscover, and what stops it (a full or read-only state directory) fails the
     ledger's commit too, which says so in the run's one line. */
  if (save (dirfd, name, *out, key, &why) < 0)
    cp_log (CP_LOG_DEBUG, "topology: could not save the cache %s: %s", name, cp_error_message (why));
  else
    cp_log (CP_LOG_DEBUG, "topology: saved the cache %s", name);
  return 0;
}
