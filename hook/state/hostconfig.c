#define _GNU_SOURCE
#include "hostconfig.h"
#include "bitmap.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "io.h"
#include "json.h"
#include "cpulist.h"
#include "text.h"
#include "util.h"
#include "ledger.h"

void
cp_hostconfig_init (struct cp_hostconfig *hc)
{
  memset (hc, 0, sizeof *hc);
  hc->cpus = cp_bitmap_new ();
  hwloc_bitmap_fill (hc->cpus);
  hc->reserved = cp_bitmap_new ();
  cp_request_init (&hc->defaults);
  hc->state_dir = cp_xstrdup (CP_LEDGER_DEFAULT_DIR);
  hc->on_error = CP_ON_ERROR_ALLOW;
  hc->log_level = CP_LOG_INFO;
  hc->lock_timeout_ms = CP_HOSTCONFIG_LOCK_TIMEOUT_DEFAULT;
  hc->topology = cp_xstrdup ("host");
  hc->sandbox = true;
  hc->sched_cache = CP_SCHED_CACHE_LEAVE;
  hc->isolate = CP_ISOLATE_ALLOW;
  hc->kernel_root = cp_xstrdup ("/");
  hc->kubelet_state = cp_xstrdup (CP_HOSTCONFIG_KUBELET_STATE);
  hc->cdi_dir = cp_xstrdup (CP_HOSTCONFIG_CDI_DIR);
}

void
cp_hostconfig_free (struct cp_hostconfig *hc)
{
  free (hc->path);
  if (hc->cpus)
    hwloc_bitmap_free (hc->cpus);
  if (hc->reserved)
    hwloc_bitmap_free (hc->reserved);
  free (hc->state_dir);
  free (hc->topology);
  free (hc->kernel_root);
  free (hc->kubelet_state);
  free (hc->cdi_dir);
  memset (hc, 0, sizeof *hc);
}

const char *
cp_on_error_name (enum cp_on_error on_error)
{
  return on_error == CP_ON_ERROR_DENY ? "deny" : "allow";
}

/* ---- fields ------------------------------------------------------------------------ */

static int
cpulist_field (json_object *v, const char *field, unsigned flags, hwloc_bitmap_t out, cp_error_t *err)
{
  const char *s;
  if (cp_json_string (v, field, CP_CPULIST_MAX_LEN, (flags & CP_CPULIST_ALLOW_EMPTY) != 0, &s, err) < 0)
    return -1;
  if (cp_cpulist_parse (s, flags, out, err) < 0)
    return cp_error_wrap (err, "%s", field);
  return 0;
}

static int
parse_cpus (json_object *v, struct cp_hostconfig *hc, cp_error_t *err)
{
  return cpulist_field (v, "cpus", 0, hc->cpus, err);
}

static int
parse_reserved (json_object *v, struct cp_hostconfig *hc, cp_error_t *err)
{
  return cpulist_field (v, "reserved", CP_CPULIST_ALLOW_EMPTY, hc->reserved, err);
}

static int
parse_defaults (json_object *v, struct cp_hostconfig *hc, cp_error_t *err)
{
  if (cp_json_object (v, "defaults", err) < 0)
    return -1;
  struct cp_request *req = &hc->defaults;
  json_object_object_foreach (v, key, value)
    {
      bool is_strict = strcmp (key, "strict") == 0;
      if (!is_strict && strcmp (key, "align") != 0 && strcmp (key, "smt") != 0 && strcmp (key, "mode") != 0)
        {
          static const char *const keys[] = { "align", "smt", "mode", "strict" };
          const char *near = cp_text_closest (key, keys, CP_ARRAY_SIZE (keys));
          return cp_fail_input (err, "defaults: unknown key \"%.128s\" (%s%s%sexpected align, smt, mode or strict)",
                                key, near ? "did you mean \"" : "", near ? near : "", near ? "\"? " : "");
        }
      if (is_strict && json_object_is_type (value, json_type_boolean))
        {
          req->strict = json_object_get_boolean (value);
          continue;
        }
      if (is_strict && !json_object_is_type (value, json_type_string))
        {
          cleanup_free char *got = cp_json_describe (value);
          return cp_fail_input (err, "defaults.strict: expected a boolean, got %s", got);
        }
      cleanup_free char *field = cp_xasprintf ("defaults.%s", key);
      const char *s;
      if (cp_json_string (value, field, 64, false, &s, err) < 0)
        return -1;
      int r = is_strict                    ? cp_parse_bool (s, &req->strict, err)
              : strcmp (key, "align") == 0 ? cp_parse_align (s, &req->align, err)
              : strcmp (key, "smt") == 0   ? cp_parse_smt (s, &req->smt, err)
                                           : cp_parse_mode (s, &req->mode, err);
      if (r < 0)
        return cp_error_wrap (err, "%s", field);
    }
  return 0;
}

static int
parse_state_dir (json_object *v, struct cp_hostconfig *hc, cp_error_t *err)
{
  const char *s;
  if (cp_json_string (v, "state_dir", CP_HOSTCONFIG_PATH_MAX, false, &s, err) < 0)
    return -1;
  if (*s != '/')
    return cp_fail_input (err, "state_dir: expected an absolute path, got \"%.128s\"", s);
  free (hc->state_dir);
  hc->state_dir = cp_xstrdup (s);
  return 0;
}

static int
parse_topology (json_object *v, struct cp_hostconfig *hc, cp_error_t *err)
{
  const char *s;
  if (cp_json_string (v, "topology", CP_HOSTCONFIG_PATH_MAX, false, &s, err) < 0)
    return -1;
  if (*s != '/' && strcmp (s, "host") != 0 && strncmp (s, "sysfs:/", 7) != 0)
    return cp_fail_input (err, "topology: expected \"host\", an absolute path or \"sysfs:\" and one, got \"%.128s\"",
                          s);
  free (hc->topology);
  hc->topology = cp_xstrdup (s);
  return 0;
}

static int
parse_on_error (json_object *v, struct cp_hostconfig *hc, cp_error_t *err)
{
  if (json_object_is_type (v, json_type_string))
    {
      const char *s = json_object_get_string (v);
      bool plain = strlen (s) == (size_t) json_object_get_string_len (v);
      if (plain && (strcmp (s, "allow") == 0 || strcmp (s, "deny") == 0))
        {
          hc->on_error = strcmp (s, "deny") == 0 ? CP_ON_ERROR_DENY : CP_ON_ERROR_ALLOW;
          return 0;
        }
    }
  cleanup_free char *got = cp_json_describe (v);
  return cp_fail_input (err, "on_error: expected \"allow\" or \"deny\", got %s", got);
}

static int
parse_log_level (json_object *v, struct cp_hostconfig *hc, cp_error_t *err)
{
  const char *s;
  if (cp_json_string (v, "log_level", 64, false, &s, err) < 0)
    return -1;
  if (cp_log_parse_level (s, &hc->log_level, err) < 0)
    return cp_error_wrap (err, "log_level");
  return 0;
}

static int
parse_lock_timeout (json_object *v, struct cp_hostconfig *hc, cp_error_t *err)
{
  int64_t ms;
  if (cp_json_int (v, "lock_timeout_ms", 1, CP_HOSTCONFIG_LOCK_TIMEOUT_MAX, &ms, err) < 0)
    return -1;
  hc->lock_timeout_ms = (unsigned) ms;
  return 0;
}

static int
parse_sandbox (json_object *v, struct cp_hostconfig *hc, cp_error_t *err)
{
  if (!json_object_is_type (v, json_type_boolean))
    {
      cleanup_free char *got = cp_json_describe (v);
      return cp_fail_input (err, "sandbox: expected true or false, got %s", got);
    }
  hc->sandbox = json_object_get_boolean (v);
  return 0;
}

static const char *const sched_cache_names[] = {
  [CP_SCHED_CACHE_LEAVE] = "leave",
  [CP_SCHED_CACHE_ON_DEMAND] = "on-demand",
  [CP_SCHED_CACHE_ALWAYS] = "always",
  [CP_SCHED_CACHE_NEVER] = "never",
};

const char *
cp_sched_cache_setting_name (enum cp_sched_cache_setting setting)
{
  return (size_t) setting < CP_ARRAY_SIZE (sched_cache_names) ? sched_cache_names[setting] : "unknown";
}

static int
parse_sched_cache (json_object *v, struct cp_hostconfig *hc, cp_error_t *err)
{
  if (json_object_is_type (v, json_type_string))
    {
      const char *s = json_object_get_string (v);
      bool plain = strlen (s) == (size_t) json_object_get_string_len (v);
      for (size_t i = 0; plain && i < CP_ARRAY_SIZE (sched_cache_names); i++)
        if (strcmp (s, sched_cache_names[i]) == 0)
          {
            hc->sched_cache = (enum cp_sched_cache_setting) i;
            return 0;
          }
    }
  cleanup_free char *got = cp_json_describe (v);
  return cp_fail_input (err, "sched_cache: expected \"leave\", \"on-demand\", \"always\" or \"never\", got %s",
                        got);
}

static const char *const isolate_names[] = {
  [CP_ISOLATE_ALLOW] = "allow",
  [CP_ISOLATE_DENY] = "deny",
};

const char *
cp_isolate_setting_name (enum cp_isolate_setting setting)
{
  return (size_t) setting < CP_ARRAY_SIZE (isolate_names) ? isolate_names[setting] : "unknown";
}

static int
parse_isolate (json_object *v, struct cp_hostconfig *hc, cp_error_t *err)
{
  if (json_object_is_type (v, json_type_string))
    {
      const char *s = json_object_get_string (v);
      bool plain = strlen (s) == (size_t) json_object_get_string_len (v);
      for (size_t i = 0; plain && i < CP_ARRAY_SIZE (isolate_names); i++)
        if (strcmp (s, isolate_names[i]) == 0)
          {
            hc->isolate = (enum cp_isolate_setting) i;
            return 0;
          }
    }
  cleanup_free char *got = cp_json_describe (v);
  return cp_fail_input (err, "isolate: expected \"allow\" or \"deny\", got %s", got);
}

static int
parse_kernel_root (json_object *v, struct cp_hostconfig *hc, cp_error_t *err)
{
  const char *s;
  if (cp_json_string (v, "kernel_root", CP_HOSTCONFIG_PATH_MAX, false, &s, err) < 0)
    return -1;
  if (*s != '/')
    return cp_fail_input (err, "kernel_root: expected an absolute path, got \"%.128s\"", s);
  free (hc->kernel_root);
  hc->kernel_root = cp_xstrdup (s);
  return 0;
}

static int
parse_kubelet_state (json_object *v, struct cp_hostconfig *hc, cp_error_t *err)
{
  const char *s;
  if (cp_json_string (v, "kubelet_state", CP_HOSTCONFIG_PATH_MAX, true, &s, err) < 0)
    return -1;
  if (*s != '\0' && *s != '/')
    return cp_fail_input (err, "kubelet_state: expected an absolute path or \"\", got \"%.128s\"", s);
  free (hc->kubelet_state);
  hc->kubelet_state = cp_xstrdup (s);
  return 0;
}

static int
parse_cdi_dir (json_object *v, struct cp_hostconfig *hc, cp_error_t *err)
{
  const char *s;
  if (cp_json_string (v, "cdi_dir", CP_HOSTCONFIG_PATH_MAX, false, &s, err) < 0)
    return -1;
  if (*s != '/')
    return cp_fail_input (err, "cdi_dir: expected an absolute path, got \"%.128s\"", s);
  free (hc->cdi_dir);
  hc->cdi_dir = cp_xstrdup (s);
  return 0;
}

static const struct
{
  const char *key;
  int (*parse) (json_object *v, struct cp_hostconfig *hc, cp_error_t *err);
} fields[] = {
  { "cpus", parse_cpus },
  { "reserved", parse_reserved },
  { "defaults", parse_defaults },
  { "state_dir", parse_state_dir },
  { "on_error", parse_on_error },
  { "log_level", parse_log_level },
  { "lock_timeout_ms", parse_lock_timeout },
  { "topology", parse_topology },
  { "sandbox", parse_sandbox },
  { "sched_cache", parse_sched_cache },
  { "isolate", parse_isolate },
  { "kernel_root", parse_kernel_root },
  { "kubelet_state", parse_kubelet_state },
  { "cdi_dir", parse_cdi_dir },
};

/* An unknown top-level KEY, with the known one it is likely a typo of, as the
   CLI's options get (cp_text_closest()). */
static int
unknown_key (const char *key, cp_error_t *err)
{
  const char *names[CP_ARRAY_SIZE (fields)];
  for (size_t i = 0; i < CP_ARRAY_SIZE (fields); i++)
    names[i] = fields[i].key;
  const char *near = cp_text_closest (key, names, CP_ARRAY_SIZE (names));
  if (near)
    return cp_fail_input (err, "unknown key \"%.128s\" (did you mean \"%s\"?)", key, near);
  return cp_fail_input (err, "unknown key \"%.128s\"", key);
}

static int
parse_fields (json_object *root, struct cp_hostconfig *hc, cp_error_t *err)
{
  json_object_object_foreach (root, key, v)
    {
      size_t i = 0;
      while (i < CP_ARRAY_SIZE (fields) && strcmp (key, fields[i].key) != 0)
        i++;
      if (i == CP_ARRAY_SIZE (fields))
        return unknown_key (key, err);
      if (fields[i].parse (v, hc, err) < 0)
        return -1;
    }
  if (hwloc_bitmap_isincluded (hc->cpus, hc->reserved))
    return cp_fail_input (err, "reserved: covers every CPU of cpus, leaving none to hand out");
  return 0;
}

int
cp_hostconfig_parse (const char *buf, size_t len, const char *name, struct cp_hostconfig *out,
                     cp_error_t *err)
{
  cp_hostconfig_init (out);
  out->path = cp_xstrdup (name);
  cleanup_json json_object *root = NULL;
  if (cp_json_parse_object (buf, len, &root, err) < 0 || parse_fields (root, out, err) < 0)
    {
      cp_hostconfig_free (out);
      return cp_error_wrap (err, "%s", name);
    }
  return 0;
}

int
cp_hostconfig_load (const char *path, struct cp_hostconfig *out, cp_error_t *err)
{
  const char *name = path ? path : CP_HOSTCONFIG_DEFAULT_PATH;
  cleanup_free char *buf = NULL;
  size_t len;
  cleanup_error cp_error_t read_err = NULL;
  memset (out, 0, sizeof *out);
  /* No O_NOFOLLOW: admins may keep /etc files as symlinks. */
  if (cp_io_read_at (AT_FDCWD, name, 0, name, CP_HOSTCONFIG_MAX_SIZE, CP_IO_INPUT, &buf, &len, &read_err) < 0)
    {
      if (path == NULL && cp_error_errno (read_err) == ENOENT)
        {
          cp_hostconfig_init (out);
          return 0;
        }
      /* A file named on purpose (--config) that is not there is the caller's mistake,
         as a malformed one is: invalid input, exit 2 (man cachepin, EXIT STATUS), not a
         system failure.  A file there but unreadable stays one (run as root). */
      if (cp_error_errno (read_err) == ENOENT)
        return cp_error_set (err, CP_ERR_INPUT, ENOENT, "open %s", name);
      if (err)
        {
          cp_error_free (err);
          *err = cp_steal_pointer (&read_err);
        }
      return -1;
    }
  return cp_hostconfig_parse (buf, len, name, out, err);
}
