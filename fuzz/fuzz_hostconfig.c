/* Fuzz cp_hostconfig_parse() (/etc/cachepin/config.json).
 *
 * Invariants on success (hook/state/hostconfig.h): path is the name given; cpus is the
 * full set (the default) or a finite set within 0..CP_CPULIST_MAX; reserved is
 * finite and does not cover cpus; defaults.cpus is 0 and its enums are known;
 * state_dir absolute; topology "host" or absolute; lock_timeout_ms in
 * 1..CP_HOSTCONFIG_LOCK_TIMEOUT_MAX.  And a round trip: the configuration written
 * back as JSON (every key spelled out) parses to the same configuration.
 * On failure: an input error starting with the name, *out left zeroed. */
#include <hwloc.h>
#include <json-c/json.h>

#include "common.h"
#include "hostconfig.h"
#include "cpulist.h"

#define NAME "/etc/cachepin/config.json"

static const char *const level_names[] = { "error", "warning", "info", "debug" };

static void
check_hostconfig (const struct cp_hostconfig *hc)
{
  FUZZ_CHECK (hc->path && strcmp (hc->path, NAME) == 0);
  FUZZ_CHECK (hc->cpus && hc->reserved);
  if (!hwloc_bitmap_isfull (hc->cpus))
    FUZZ_CHECK (hwloc_bitmap_weight (hc->cpus) > 0 && hwloc_bitmap_last (hc->cpus) <= CP_CPULIST_MAX);
  FUZZ_CHECK (hwloc_bitmap_weight (hc->reserved) >= 0 && hwloc_bitmap_last (hc->reserved) <= CP_CPULIST_MAX);
  FUZZ_CHECK (!hwloc_bitmap_isincluded (hc->cpus, hc->reserved));
  FUZZ_CHECK (hc->defaults.cpus == 0);
  FUZZ_CHECK ((unsigned) hc->defaults.align < CP_LEVEL_COUNT && (unsigned) hc->defaults.smt <= CP_SMT_ANY);
  FUZZ_CHECK (hc->defaults.mode == CP_MODE_EXCLUSIVE || hc->defaults.mode == CP_MODE_SHARED);
  FUZZ_CHECK (hc->state_dir && hc->state_dir[0] == '/' && strlen (hc->state_dir) <= CP_HOSTCONFIG_PATH_MAX);
  FUZZ_CHECK (hc->on_error == CP_ON_ERROR_ALLOW || hc->on_error == CP_ON_ERROR_DENY);
  FUZZ_CHECK ((unsigned) hc->log_level <= CP_LOG_DEBUG);
  FUZZ_CHECK (hc->lock_timeout_ms >= 1 && hc->lock_timeout_ms <= CP_HOSTCONFIG_LOCK_TIMEOUT_MAX);
  FUZZ_CHECK (hc->topology
              && (strcmp (hc->topology, "host") == 0 || hc->topology[0] == '/'
                  || strncmp (hc->topology, "sysfs:/", 7) == 0));
  FUZZ_CHECK (strlen (hc->topology) <= CP_HOSTCONFIG_PATH_MAX);
  FUZZ_CHECK ((unsigned) hc->sched_cache <= CP_SCHED_CACHE_NEVER);
  FUZZ_CHECK (hc->kernel_root && hc->kernel_root[0] == '/' && strlen (hc->kernel_root) <= CP_HOSTCONFIG_PATH_MAX);
  FUZZ_CHECK (hc->kubelet_state && (hc->kubelet_state[0] == '\0' || hc->kubelet_state[0] == '/')
              && strlen (hc->kubelet_state) <= CP_HOSTCONFIG_PATH_MAX);
  FUZZ_CHECK (hc->cdi_dir && hc->cdi_dir[0] == '/' && strlen (hc->cdi_dir) <= CP_HOSTCONFIG_PATH_MAX);
}

static void
add_string (json_object *obj, const char *key, const char *value)
{
  json_object *v = json_object_new_string (value);
  if (v == NULL || json_object_object_add (obj, key, v) < 0)
    abort ();
}

/* HC as a config.json that spells every key out. */
static char *
write_back (const struct cp_hostconfig *hc)
{
  json_object *root = json_object_new_object (), *defaults = json_object_new_object ();
  if (root == NULL || defaults == NULL)
    abort ();
  if (!hwloc_bitmap_isfull (hc->cpus))
    {
      char *s = cp_cpulist_format (hc->cpus);
      add_string (root, "cpus", s);
      free (s);
    }
  char *reserved = cp_cpulist_format (hc->reserved);
  add_string (root, "reserved", reserved);
  free (reserved);
  add_string (defaults, "align", cp_align_name (hc->defaults.align));
  add_string (defaults, "smt", cp_smt_name (hc->defaults.smt));
  add_string (defaults, "mode", cp_mode_name (hc->defaults.mode));
  json_object_object_add (defaults, "strict", json_object_new_boolean (hc->defaults.strict));
  json_object_object_add (root, "defaults", defaults);
  add_string (root, "state_dir", hc->state_dir);
  add_string (root, "on_error", cp_on_error_name (hc->on_error));
  add_string (root, "log_level", level_names[hc->log_level]);
  json_object_object_add (root, "lock_timeout_ms", json_object_new_int ((int) hc->lock_timeout_ms));
  add_string (root, "topology", hc->topology);
  json_object_object_add (root, "sandbox", json_object_new_boolean (hc->sandbox));
  add_string (root, "sched_cache", cp_sched_cache_setting_name (hc->sched_cache));
  add_string (root, "kernel_root", hc->kernel_root);
  add_string (root, "kubelet_state", hc->kubelet_state);
  add_string (root, "cdi_dir", hc->cdi_dir);
  char *text = strdup (json_object_to_json_string_ext (root, JSON_C_TO_STRING_PRETTY));
  if (text == NULL)
    abort ();
  json_object_put (root);
  return text;
}

static bool
hostconfig_equal (const struct cp_hostconfig *a, const struct cp_hostconfig *b)
{
  return hwloc_bitmap_isequal (a->cpus, b->cpus) && hwloc_bitmap_isequal (a->reserved, b->reserved)
         && a->defaults.cpus == b->defaults.cpus && a->defaults.align == b->defaults.align
         && a->defaults.smt == b->defaults.smt && a->defaults.mode == b->defaults.mode
         && a->defaults.strict == b->defaults.strict && strcmp (a->state_dir, b->state_dir) == 0
         && a->on_error == b->on_error && a->log_level == b->log_level && a->lock_timeout_ms == b->lock_timeout_ms
         && strcmp (a->topology, b->topology) == 0 && a->sandbox == b->sandbox && a->sched_cache == b->sched_cache
         && strcmp (a->kernel_root, b->kernel_root) == 0 && strcmp (a->kubelet_state, b->kubelet_state) == 0
         && strcmp (a->cdi_dir, b->cdi_dir) == 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct cp_hostconfig hc;
  memset (&hc, 0xa5, sizeof hc); /* parse must not rely on a zeroed *out */
  cp_error_t err = NULL;
  int r = cp_hostconfig_parse ((const char *) data, size, NAME, &hc, &err);
  if (r < 0)
    {
      fuzz_check_input_error (r, err, NAME ": ");
      FUZZ_CHECK (fuzz_all_zero (&hc, sizeof hc));
      cp_error_free (&err);
      cp_hostconfig_free (&hc);
      return 0;
    }
  FUZZ_CHECK (r == 0 && err == NULL);
  check_hostconfig (&hc);

  char *text = write_back (&hc);
  struct cp_hostconfig back;
  r = cp_hostconfig_parse (text, strlen (text), NAME, &back, &err);
  FUZZ_CHECK_MSG (r == 0, "written back, it does not parse: %s\n%s", cp_error_message (err), text);
  FUZZ_CHECK_MSG (hostconfig_equal (&hc, &back), "written back, it parses differently:\n%s", text);
  cp_hostconfig_free (&back);
  free (text);

  cp_hostconfig_free (&hc);
  FUZZ_CHECK (fuzz_all_zero (&hc, sizeof hc));
  return 0;
}
