/* cachepin: AllowedCPUs=/AllowedMemoryNodes= on the container's systemd unit (see systemd.h). */
#define _GNU_SOURCE
#include "systemd.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "bitmap.h"
#include "cpulist.h"
#include "util.h"
#include "log.h"
#include "manager.h"

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"
#define SD_UNIT_PREFIX "/org/freedesktop/systemd1/unit"
/* A hook runs under the runtime's timeout (often 10-30 s); PID 1 answers in
   milliseconds unless it is busy reloading. */
#define SD_CALL_TIMEOUT_USEC (10ULL * 1000 * 1000)
#define SD_UNIT_NAME_MAX 255

struct cp_systemd
{
  sd_bus *bus;
  char *unit;
};

/* libsystemd and what it pulls in (liblzma, libzstd, libgcrypt, libcap...) cost
   every hook run about 2 ms of dynamic linking, for a path few runs take: it is
   loaded with dlopen() when a unit is to be told, before the sandbox, and never
   unloaded.  The headers still give each pointer its type. */
#define SD_LIBRARY "libsystemd.so.0"
#define SD_BOOTED_DIR "/run/systemd/system/"

static const char *sd_library = SD_LIBRARY;
static const char *sd_booted_dir = SD_BOOTED_DIR;

#ifdef CACHEPIN_FAULT_INJECTION
void
cp_systemd_set_test_paths (const char *library, const char *booted_dir)
{
  sd_library = library ? library : SD_LIBRARY;
  sd_booted_dir = booted_dir ? booted_dir : SD_BOOTED_DIR;
}
#endif

#define SD_FNS(X)                                                                                            \
  X (sd_bus_open_system)                                                                                     \
  X (sd_bus_set_method_call_timeout)                                                                         \
  X (sd_bus_get_property_string)                                                                             \
  X (sd_bus_error_free)                                                                                      \
  X (sd_bus_error_is_set)                                                                                    \
  X (sd_bus_path_encode)                                                                                     \
  X (sd_bus_get_fd)                                                                                          \
  X (sd_bus_message_new_method_call)                                                                         \
  X (sd_bus_message_open_container)                                                                          \
  X (sd_bus_message_close_container)                                                                         \
  X (sd_bus_message_append)                                                                                  \
  X (sd_bus_message_append_array)                                                                            \
  X (sd_bus_message_unref)                                                                                   \
  X (sd_bus_call)                                                                                            \
  X (sd_bus_flush_close_unref)

static struct
{
#define SD_FIELD(name) __typeof__ (name) *name;
  SD_FNS (SD_FIELD)
#undef SD_FIELD
} libsd;

static int
load_libsystemd (cp_error_t *err)
{
  static bool loaded;
  if (loaded)
    return 0;
  void *lib = dlopen (sd_library, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL)
    return cp_fail_runtime (err, "systemd: cannot load %s: %s", sd_library, dlerror ());
  const char *missing = NULL;
#define SD_LOAD(name)                                                                                        \
  if (missing == NULL && (libsd.name = (__typeof__ (name) *) dlsym (lib, #name)) == NULL)                   \
    missing = #name;
  SD_FNS (SD_LOAD)
#undef SD_LOAD
  if (missing)
    {
      dlclose (lib);
      return cp_fail_runtime (err, "systemd: %s has no %s", sd_library, missing);
    }
  loaded = true;
  return 0;
}

/* sd_booted() without libsystemd: what it checks. */
static bool
systemd_booted (void)
{
  return access (sd_booted_dir, F_OK) == 0;
}

/* ---- pure ---------------------------------------------------------------------- */

static bool
unit_char_ok (char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr (":-_.\\", c) != NULL;
}

static bool
has_suffix (const char *s, size_t len, const char *suffix)
{
  size_t n = strlen (suffix);
  return len > n && memcmp (s + len - n, suffix, n) == 0;
}

const char *
cp_systemd_unit_of_cgroup (const char *path)
{
  if (path == NULL)
    return NULL;
  const char *slash = strrchr (path, '/');
  const char *name = slash ? slash + 1 : path;
  size_t len = strlen (name);
  if (len == 0 || len > SD_UNIT_NAME_MAX)
    return NULL;
  /* len > strlen (suffix) in has_suffix(): a bare ".scope" has no prefix. */
  if (!has_suffix (name, len, ".scope") && !has_suffix (name, len, ".service"))
    return NULL;
  for (size_t i = 0; i < len; i++)
    if (!unit_char_ok (name[i]))
      return NULL;
  return name;
}

int
cp_systemd_parse_version (const char *version)
{
  if (version == NULL)
    return -1;
  const char *p = version;
  if (*p == 'v')
    p++;
  if (*p < '0' || *p > '9')
    return -1;
  long v = 0;
  for (; *p >= '0' && *p <= '9'; p++)
    {
      v = v * 10 + (*p - '0');
      if (v > 1000000)
        return -1;
    }
  return (int) v;
}

int
cp_systemd_cpuset_bytes (hwloc_const_bitmap_t set, uint8_t **out, size_t *len, cp_error_t *err)
{
  *out = NULL;
  *len = 0;
  if (hwloc_bitmap_weight (set) < 0)
    return cp_fail_input (err, "an infinite CPU set has no systemd encoding");
  int last = hwloc_bitmap_last (set);
  if (last < 0)
    return 0; /* empty */
  size_t n = (size_t) last / 8 + 1;
  cleanup_free uint8_t *bytes = cp_xcalloc (n, 1);
  int i;
  hwloc_bitmap_foreach_begin (i, set)
  {
    bytes[i / 8] |= (uint8_t) (1u << (i % 8));
  }
  hwloc_bitmap_foreach_end ();
  *out = cp_steal_pointer (&bytes);
  *len = n;
  return 0;
}

/* ---- the bus ------------------------------------------------------------------- */

static int
fail_bus (cp_error_t *err, int r, const sd_bus_error *e, const char *what)
{
  if (e && libsd.sd_bus_error_is_set (e) && e->message)
    return cp_fail_errno (err, r < 0 ? -r : EIO, "systemd: %s: %s (%s)", what, e->message, e->name);
  return cp_fail_errno (err, r < 0 ? -r : EIO, "systemd: %s", what);
}

static int
get_string (sd_bus *bus, const char *path, const char *iface, const char *prop, char **out, cp_error_t *err)
{
  sd_bus_error e = SD_BUS_ERROR_NULL;
  int r = libsd.sd_bus_get_property_string (bus, SD_DEST, path, iface, prop, &e, out);
  if (r < 0)
    {
      fail_bus (err, r, &e, prop);
      libsd.sd_bus_error_free (&e);
      return -1;
    }
  return 0;
}

/* The D-Bus interface whose ControlGroup property UNIT has. */
static const char *
unit_interface (const char *unit)
{
  return has_suffix (unit, strlen (unit), ".scope") ? "org.freedesktop.systemd1.Scope"
                                                    : "org.freedesktop.systemd1.Service";
}

static int
check_manager (sd_bus *bus, const char *unit, const char *cgroup_path, const char **why, cp_error_t *err)
{
  cleanup_free char *version = NULL;
  if (get_string (bus, SD_PATH, SD_MANAGER, "Version", &version, err) < 0)
    return -1;
  int major = cp_systemd_parse_version (version);
  if (major < CP_SYSTEMD_MIN_VERSION)
    {
      *why = "systemd is older than 244 (no AllowedCPUs=)";
      return 0;
    }
  cleanup_free char *object = NULL;
  int r = libsd.sd_bus_path_encode (SD_UNIT_PREFIX, unit, &object);
  if (r < 0)
    return cp_fail_errno (err, -r, "systemd: object path of %s", unit);
  cleanup_free char *cgroup = NULL;
  if (get_string (bus, object, unit_interface (unit), "ControlGroup", &cgroup, err) < 0)
    return cp_error_wrap (err, "unit %s", unit);
  if (strcmp (cgroup, cgroup_path) != 0)
    {
      *why = "the unit named like the cgroup does not own it";
      return 0;
    }
  return 1;
}

int
cp_systemd_open (const struct cp_cgroup *cg, struct cp_systemd **out, const char **why, cp_error_t *err)
{
  *out = NULL;
  *why = NULL;
  const char *unit = cp_systemd_unit_of_cgroup (cg->path);
  if (cg->version != 2)
    *why = "not the unified hierarchy (systemd manages no cpuset on v1)";
  else if (unit == NULL)
    *why = "the cgroup is not a unit's own (not *.scope or *.service)";
  else if (!systemd_booted ())
    *why = "PID 1 is not systemd";
  if (*why)
    return 0;
  if (load_libsystemd (err) < 0)
    return -1;

  sd_bus *bus = NULL;
  int r = libsd.sd_bus_open_system (&bus);
  if (r < 0)
    return cp_fail_errno (err, -r, "systemd: connect to the system bus");
  cleanup_systemd struct cp_systemd *sd = cp_xmalloc0 (sizeof *sd);
  sd->bus = bus;
  sd->unit = cp_xstrdup (unit);
  r = libsd.sd_bus_set_method_call_timeout (bus, SD_CALL_TIMEOUT_USEC);
  if (r < 0)
    return cp_fail_errno (err, -r, "systemd: call timeout");
  /* The first call authenticates and says Hello: after it the sandbox's
     sendmsg/recvmsg on the connected socket are all a call needs. */
  r = check_manager (bus, unit, cg->path, why, err);
  if (r <= 0)
    return r;
  *out = cp_steal_pointer (&sd);
  return 0;
}

int
cp_systemd_fd (const struct cp_systemd *sd)
{
  return sd ? libsd.sd_bus_get_fd (sd->bus) : -1;
}

const char *
cp_systemd_unit (const struct cp_systemd *sd)
{
  return sd->unit;
}

static int
append_set (sd_bus_message *m, const char *name, hwloc_const_bitmap_t set, cp_error_t *err)
{
  cleanup_free uint8_t *bytes = NULL;
  size_t len = 0;
  if (cp_systemd_cpuset_bytes (set, &bytes, &len, err) < 0)
    return cp_error_wrap (err, "%s", name);
  int r = libsd.sd_bus_message_open_container (m, 'r', "sv");
  if (r >= 0)
    r = libsd.sd_bus_message_append (m, "s", name);
  if (r >= 0)
    r = libsd.sd_bus_message_open_container (m, 'v', "ay");
  if (r >= 0)
    r = libsd.sd_bus_message_append_array (m, 'y', bytes, len);
  if (r >= 0)
    r = libsd.sd_bus_message_close_container (m);
  if (r >= 0)
    r = libsd.sd_bus_message_close_container (m);
  if (r < 0)
    return cp_fail_errno (err, -r, "systemd: build %s", name);
  return 0;
}

static void
message_unrefp (sd_bus_message **m)
{
  libsd.sd_bus_message_unref (*m);
}

int
cp_systemd_set_cpuset (struct cp_systemd *sd, hwloc_const_bitmap_t cpus, hwloc_const_bitmap_t mems, cp_error_t *err)
{
  __attribute__ ((cleanup (message_unrefp))) sd_bus_message *m = NULL;
  __attribute__ ((cleanup (message_unrefp))) sd_bus_message *reply = NULL;
  int r = libsd.sd_bus_message_new_method_call (sd->bus, &m, SD_DEST, SD_PATH, SD_MANAGER, "SetUnitProperties");
  if (r >= 0)
    r = libsd.sd_bus_message_append (m, "sb", sd->unit, 1);
  if (r >= 0)
    r = libsd.sd_bus_message_open_container (m, 'a', "(sv)");
  if (r < 0)
    return cp_fail_errno (err, -r, "systemd: build SetUnitProperties");
  if (append_set (m, "AllowedCPUs", cpus, err) < 0 || (mems && append_set (m, "AllowedMemoryNodes", mems, err) < 0))
    return -1;
  r = libsd.sd_bus_message_close_container (m);
  if (r < 0)
    return cp_fail_errno (err, -r, "systemd: build SetUnitProperties");
  sd_bus_error e = SD_BUS_ERROR_NULL;
  r = libsd.sd_bus_call (sd->bus, m, 0, &e, &reply);
  if (r < 0)
    {
      fail_bus (err, r, &e, "SetUnitProperties");
      libsd.sd_bus_error_free (&e);
      return cp_error_wrap (err, "unit %s", sd->unit);
    }
  return 0;
}

/* ---- its entry in the managers' table (manager.h) ---------------------------------- */

static int
manager_detect (const struct cp_manager_ctx *ctx, void **handle, const char **why, cp_error_t *err)
{
  *handle = NULL;
  if (ctx->cgroup == NULL)
    {
      *why = "no cgroup";
      return 0;
    }
  struct cp_systemd *sd = NULL;
  if (cp_systemd_open (ctx->cgroup, &sd, why, err) < 0)
    return -1;
  *handle = sd;
  return sd != NULL;
}

/* Never fails the placement: the direct cgroup write stands, and stays right until
   the next daemon-reload. */
static void
manager_report (const struct cp_manager_ctx *ctx, int r, const void *handle, const char *why, cp_error_t err)
{
  (void) handle;
  const struct cp_cgroup *cg = ctx->cgroup;
  if (cg == NULL)
    return;
  if (r < 0)
    cp_log (CP_LOG_WARNING, "cgroup %s%s: systemd may undo the placement at its next reload: %s", cg->mount,
            cg->path, cp_error_message (err));
  else if (r == 0)
    cp_log (CP_LOG_DEBUG, "cgroup %s%s: systemd not told: %s", cg->mount, cg->path, why);
}

/* AllowedCPUs=CPUS (and AllowedMemoryNodes=MEMS unless NULL); empty sets clear them. */
static int
tell (struct cp_systemd *sd, hwloc_const_bitmap_t cpus, hwloc_const_bitmap_t mems, cp_error_t *err)
{
  if (cp_systemd_set_cpuset (sd, cpus, mems, err) < 0)
    return -1;
  cleanup_free char *list = cp_cpulist_format (cpus);
  cp_log (CP_LOG_DEBUG, "systemd: %s AllowedCPUs=%s%s", sd->unit, list, mems ? " and AllowedMemoryNodes" : "");
  return 0;
}

static int
manager_apply (void *handle, const struct cp_manager_ctx *ctx, hwloc_const_bitmap_t cpus, hwloc_const_bitmap_t mems,
               cp_error_t *err)
{
  (void) ctx;
  return tell (handle, cpus, mems, err);
}

/* Empty: no restriction, as before the placement. */
static int
manager_clear (void *handle, const struct cp_manager_ctx *ctx, cp_error_t *err)
{
  (void) ctx;
  cleanup_bitmap hwloc_bitmap_t none = cp_bitmap_new ();
  return tell (handle, none, none, err);
}

static int
manager_fd (const void *handle)
{
  return cp_systemd_fd (handle);
}

static void
manager_close (void *handle)
{
  cp_systemd_close (handle);
}

const struct cp_manager cp_manager_systemd = {
  .name = "systemd",
  .on_failure = "systemd may undo the placement at its next reload",
  .detect = manager_detect,
  .report = manager_report,
  .apply = manager_apply,
  .clear = manager_clear,
  .fd = manager_fd,
  .close = manager_close,
};

void
cp_systemd_close (struct cp_systemd *sd)
{
  if (sd == NULL)
    return;
  libsd.sd_bus_flush_close_unref (sd->bus);
  free (sd->unit);
  free (sd);
}

void
cp_systemd_closep (struct cp_systemd **sd)
{
  cp_systemd_close (*sd);
}
