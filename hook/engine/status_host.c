/* `cachepin status`: the cgroup mode and cpuset mount, and the kernel's scheduler
 * features (hook/host/sched.h's probes and classifiers; each feature is probed on its
 * own here, so that one that cannot be told does not hide the others). */
#define _GNU_SOURCE
#include "status_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>

#include "io.h"
#include "cgroup_parse.h"
#include "sched.h"

/* Read PATH (a kernel text) into *OUT. */
static int
read_text (const char *path, size_t max, char **out, cp_error_t *err)
{
  return cp_io_read_at (AT_FDCWD, path, O_NOFOLLOW, path, max, CP_IO_NO_NUL, out, NULL, err);
}

/* ------------------------------------------------------------------ cgroup */

/* v1, v2, hybrid or none: which cgroup filesystems are mounted. */
static const char *
cgroup_mode (const char *mountinfo)
{
  bool v1 = false, v2 = false;
  for (const char *line = mountinfo; line && *line;)
    {
      const char *end = strchrnul (line, '\n');
      const char *sep = memmem (line, (size_t) (end - line), " - ", 3);
      if (sep && (size_t) (end - sep) > 10 && strncmp (sep + 3, "cgroup2 ", 8) == 0)
        v2 = true;
      else if (sep && (size_t) (end - sep) > 9 && strncmp (sep + 3, "cgroup ", 7) == 0)
        v1 = true;
      line = *end ? end + 1 : end;
    }
  if (v1 && v2)
    return "hybrid";
  return v2 ? "v2" : v1 ? "v1" : "none";
}

static int
cgroup_read (json_object *o, cp_error_t *err)
{
  cleanup_free char *mountinfo = NULL;
  cleanup_free char *self = NULL;
  if (read_text ("/proc/self/mountinfo", CP_CGROUP_MOUNTINFO_MAX, &mountinfo, err) < 0
      || read_text ("/proc/self/cgroup", CP_CGROUP_PROC_CGROUP_MAX, &self, err) < 0)
    return -1;
  add (o, "mode", jstr (cgroup_mode (mountinfo)));
  cleanup_where struct cp_cgroup_where w = { 0 };
  if (cp_cgroup_locate_from_text (mountinfo, self, "cpuset", &w, err) < 0)
    return cp_error_wrap (err, "the cpuset hierarchy");
  add (o, "cpuset_version", json_object_new_int (w.version));
  add (o, "cpuset_mount", jstr (w.mount));
  return 0;
}

json_object *
cp_status_cgroup (bool *ok)
{
  static const char *const keys[] = { "mode", "cpuset_version", "cpuset_mount", NULL };
  json_object *o = json_object_new_object ();
  cleanup_error cp_error_t e = NULL;
  if (cgroup_read (o, &e) == 0)
    {
      add (o, "errno", NULL);
      add (o, "error", NULL);
      *ok = true;
      return o;
    }
  /* Keep the mode when only the cpuset hierarchy was not found. */
  json_object *mode = NULL;
  if (json_object_object_get_ex (o, "mode", &mode))
    *ok = true;
  json_object *f = failed_part (keys, e);
  if (mode)
    add (f, "mode", json_object_get (mode));
  json_object_put (o);
  return f;
}

/* ------------------------------------------------------------------ kernel features */

static json_object *
cas_part (const struct cp_hostconfig *hc, bool *ok)
{
  struct cp_sched_cas cas;
  cleanup_error cp_error_t e = NULL;
  json_object *o = json_object_new_object ();
  /* What cachepin does with it; who asks and what comes back are the ledger's
     (cmd_status.c adds them). */
  add (o, "setting", jstr (cp_sched_cache_setting_name (hc->sched_cache)));
  if (cp_sched_cas_probe (hc->kernel_root, &cas, &e) < 0)
    {
      add (o, "interface", NULL);
      add (o, "state", NULL);
      add (o, "enabled", NULL);
      add (o, "errno", jerrno (cp_error_errno (e)));
      add (o, "error", jstr (cp_error_message (e)));
      return o;
    }
  *ok = true;
  const char *state = cp_sched_avail_name (cas.avail);
  if (cas.avail == CP_SCHED_SUPPORTED)
    state = cas.enabled ? "on" : "off";
  add (o, "interface", jstr (cp_sched_cas_iface_name (cas.iface)));
  add (o, "state", jstr (state));
  add (o, "enabled", cas.avail == CP_SCHED_SUPPORTED ? json_object_new_boolean (cas.enabled == 1) : NULL);
  add (o, "errno", jerrno (cas.errnum));
  add (o, "error", NULL);
  return o;
}

static json_object *
core_part (const struct cp_hostconfig *hc, bool *ok)
{
  struct cp_sched_core core;
  cleanup_error cp_error_t e = NULL;
  json_object *o = json_object_new_object ();
  bool known = cp_sched_core_probe (hc->kernel_root, &core, &e) == 0;
  *ok = *ok || known;
  add (o, "state", known ? jstr (cp_sched_core_avail_name (core.avail)) : NULL);
  add (o, "smt_active", !known || core.smt_active < 0 ? NULL : json_object_new_boolean (core.smt_active == 1));
  add (o, "errno", jerrno (known ? core.errnum : cp_error_errno (e)));
  add (o, "error", known ? NULL : jstr (cp_error_message (e)));
  return o;
}

static json_object *
asym_part (const struct cp_hostconfig *hc, bool *ok)
{
  enum cp_sched_boot boot = cp_sched_boot_probe (hc->kernel_root);
  *ok = *ok || boot != CP_SCHED_BOOT_UNKNOWN;
  json_object *o = json_object_new_object ();
  add (o, "state", jstr (cp_sched_boot_name (boot)));
  add (o, "effective", json_object_new_boolean (boot == CP_SCHED_BOOT_ON));
  add (o, "error", boot == CP_SCHED_BOOT_UNKNOWN ? jstr ("/proc/cmdline could not be read") : NULL);
  return o;
}

json_object *
cp_status_features (const struct cp_hostconfig *hc, bool *ok)
{
  json_object *o = json_object_new_object ();
  add (o, "cache_aware_scheduling", cas_part (hc, ok));
  add (o, "core_scheduling", core_part (hc, ok));
  add (o, "smt_asym_packing", asym_part (hc, ok));
  return o;
}
