/* `cachepin status`: the cgroup mode, the topology, the ledger with a per-LLC
 * occupancy map, the kernel's scheduler features and the configuration in effect.
 *
 * Read-only, and safe while hooks run: the ledger is read without its lock (a
 * commit renames a complete ledger.json into place, so a read sees the old one or
 * the new one), nothing is created, repaired or set aside, and each part that
 * cannot be read is reported in its own "error" and does not stop the others.
 * The gathering is here; status_text.c renders the result for people. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include "cli.h"
#include "../oci/io.h"
#include "../policy/bitmap.h"
#include "../policy/cpulist.h"
#include "../policy/topo.h"
#include "../policy/util.h"
#include "cgroup_parse.h"
#include "hostconfig.h"
#include "ledger.h"
#include "sched.h"
#include "status.h"

static const char status_usage[] =
  "Usage: cachepin status [--json] [--config PATH]\n"
  "Show the cgroup mode, the topology, the ledger and its per-LLC occupancy, the\n"
  "kernel's scheduler features and the configuration in effect; writes nothing.\n\n"
  "  --config PATH       host configuration (default " CP_HOSTCONFIG_DEFAULT_PATH ")\n"
  "  --json              print one JSON object (keys in docs/status.md)\n"
  "  -h, --help          this text\n";

enum
{
  OPT_CONFIG = 0x400,
  OPT_JSON,
};

/* Bounds on the kernel texts read here (as hook/cgroup.c's). */
#define STATUS_MOUNTINFO_MAX (16 * 1024 * 1024)
#define STATUS_PROC_CGROUP_MAX (256 * 1024)
#define STATUS_SMALL_MAX 4096

#ifndef PR_SCHED_CORE
#define PR_SCHED_CORE 62
#endif
#ifndef PR_SCHED_CORE_GET
#define PR_SCHED_CORE_GET 0
#endif
#define STATUS_PIDTYPE_PID 0

struct status_args
{
  const char *config;
  bool json;
  bool help;
};

static int
parse_args (int argc, char **argv, struct status_args *a, cp_error_t *err)
{
  static const struct option options[] = {
    { "config", required_argument, NULL, OPT_CONFIG },
    { "json", no_argument, NULL, OPT_JSON },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  optind = 1;
  opterr = 0;
  int opt;
  while ((opt = getopt_long (argc, argv, "+:h", options, NULL)) != -1)
    switch (opt)
      {
      case OPT_CONFIG:
        a->config = optarg;
        break;
      case OPT_JSON:
        a->json = true;
        break;
      case 'h':
        a->help = true;
        break;
      case ':':
      default:
        return cp_cli_option_error (opt, argv, "status", err);
      }
  if (optind < argc)
    return cp_fail_input (err, "`%.64s`: unexpected argument (see `cachepin status --help`)", argv[optind]);
  return 0;
}

/* ------------------------------------------------------------------ JSON helpers */

static json_object *
jstr (const char *s)
{
  return s ? json_object_new_string (s) : NULL;
}

static json_object *
jcpulist (hwloc_const_bitmap_t set)
{
  if (hwloc_bitmap_weight (set) < 0) /* infinite: the default of the config's cpus */
    return json_object_new_string ("all");
  cleanup_free char *s = cp_cpulist_format (set);
  return json_object_new_string (s);
}

static void
add (json_object *obj, const char *key, json_object *value)
{
  json_object_object_add (obj, key, value);
}

/* A part that could not be read: KEYS (NULL-terminated) present and null, and why. */
static json_object *
failed_part (const char *const *keys, cp_error_t e)
{
  json_object *o = json_object_new_object ();
  for (const char *const *k = keys; *k; k++)
    add (o, *k, NULL);
  add (o, "error", jstr (cp_error_message (e)));
  return o;
}

/* Read PATH (a kernel text) into *OUT; NULL-safe error. */
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
  if (read_text ("/proc/self/mountinfo", STATUS_MOUNTINFO_MAX, &mountinfo, err) < 0
      || read_text ("/proc/self/cgroup", STATUS_PROC_CGROUP_MAX, &self, err) < 0)
    return -1;
  add (o, "mode", jstr (cgroup_mode (mountinfo)));
  cleanup_where struct cp_cgroup_where w = { 0 };
  if (cp_cgroup_locate_from_text (mountinfo, self, "cpuset", &w, err) < 0)
    return cp_error_wrap (err, "the cpuset hierarchy");
  add (o, "cpuset_version", json_object_new_int (w.version));
  add (o, "cpuset_mount", jstr (w.mount));
  return 0;
}

static json_object *
cgroup_part (bool *ok)
{
  static const char *const keys[] = { "mode", "cpuset_version", "cpuset_mount", NULL };
  json_object *o = json_object_new_object ();
  cleanup_error cp_error_t e = NULL;
  if (cgroup_read (o, &e) == 0)
    {
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

/* ------------------------------------------------------------------ topology */

static json_object *
topo_nodes (const struct cp_topo *topo)
{
  json_object *a = json_object_new_array ();
  for (unsigned i = 0; i < topo->n_nodes; i++)
    {
      json_object *n = json_object_new_object ();
      add (n, "os_index", json_object_new_int ((int) topo->nodes_info[i].os_index));
      add (n, "cpus", jcpulist (topo->nodes_info[i].cpus));
      json_object_array_add (a, n);
    }
  return a;
}

static json_object *
topo_llcs (const struct cp_topo *topo)
{
  json_object *a = json_object_new_array ();
  for (unsigned i = 0; i < topo->n_domains[CP_LEVEL_LLC]; i++)
    {
      const struct cp_domain *d = &topo->domains[CP_LEVEL_LLC][i];
      json_object *o = json_object_new_object ();
      add (o, "index", json_object_new_int ((int) d->index));
      add (o, "cpus", jcpulist (d->cpus));
      add (o, "cores", json_object_new_int ((int) d->n_cores));
      add (o, "fallback", json_object_new_boolean (d->fallback));
      json_object_array_add (a, o);
    }
  return a;
}

/* Each distinct hwloc CPU kind (efficiency rank) with its CPUs; [] when hwloc
   reports none (one kind). */
static json_object *
topo_kinds (const struct cp_topo *topo)
{
  json_object *a = json_object_new_array ();
  for (unsigned c = 0; c < topo->n_cores; c++)
    {
      int kind = topo->cores[c].kind;
      bool seen = kind < 0;
      for (unsigned p = 0; p < c && !seen; p++)
        seen = topo->cores[p].kind == kind;
      if (seen)
        continue;
      cleanup_bitmap hwloc_bitmap_t cpus = cp_bitmap_new ();
      for (unsigned k = c; k < topo->n_cores; k++)
        if (topo->cores[k].kind == kind)
          hwloc_bitmap_or (cpus, cpus, topo->cores[k].pus);
      json_object *o = json_object_new_object ();
      add (o, "efficiency", json_object_new_int (kind));
      add (o, "cpus", jcpulist (cpus));
      json_object_array_add (a, o);
    }
  return a;
}

static void
topo_pe0_smt (const struct cp_topo *topo, json_object *o)
{
  cleanup_bitmap hwloc_bitmap_t pe0 = cp_bitmap_new ();
  int width = 0;
  for (unsigned c = 0; c < topo->n_cores; c++)
    {
      hwloc_bitmap_set (pe0, topo->cores[c].first_pu);
      int w = hwloc_bitmap_weight (topo->cores[c].pus);
      width = w > width ? w : width;
    }
  add (o, "pe0", jcpulist (pe0));
  add (o, "smt_width", json_object_new_int (width));
}

static json_object *
topology_part (const struct cp_topo *topo, const char *source, cp_error_t e, bool *ok)
{
  static const char *const keys[] = { "online", "allowed", "packages", "numa_nodes", "llc_label", "llcs",
                                      "cores", "pe0", "smt_width", "cpu_kinds", NULL };
  if (topo == NULL)
    {
      json_object *f = failed_part (keys, e);
      add (f, "source", jstr (source));
      return f;
    }
  *ok = true;
  json_object *o = json_object_new_object ();
  add (o, "source", jstr (topo->source));
  add (o, "online", jcpulist (topo->online));
  add (o, "allowed", jcpulist (topo->allowed));
  add (o, "packages", json_object_new_int ((int) topo->n_domains[CP_LEVEL_PACKAGE]));
  add (o, "numa_nodes", topo_nodes (topo));
  add (o, "llc_label", jstr (cp_topo_level_label (topo, CP_LEVEL_LLC)));
  add (o, "llcs", topo_llcs (topo));
  add (o, "cores", json_object_new_int ((int) topo->n_cores));
  topo_pe0_smt (topo, o);
  add (o, "cpu_kinds", topo_kinds (topo));
  add (o, "error", NULL);
  return o;
}

/* ------------------------------------------------------------------ ledger */

static json_object *
entry_json (const struct cp_ledger_entry *e, const struct cp_topo *topo)
{
  json_object *o = json_object_new_object ();
  add (o, "id", jstr (e->id));
  add (o, "cgroup_mount", jstr (e->cgroup_mount));
  add (o, "cgroup", jstr (e->cgroup));
  add (o, "pid", json_object_new_int64 (e->pid));
  add (o, "mode", jstr (cp_mode_name (e->mode)));
  add (o, "cpus", jcpulist (e->cpus));
  add (o, "held", jcpulist (e->held));
  add (o, "mems", jcpulist (e->mems));
  add (o, "placed_at", json_object_new_int64 (e->placed_at));
  json_object *llcs = NULL;
  if (topo)
    {
      llcs = json_object_new_array ();
      for (unsigned d = 0; d < topo->n_domains[CP_LEVEL_LLC]; d++)
        if (hwloc_bitmap_intersects (topo->domains[CP_LEVEL_LLC][d].cpus, e->cpus))
          json_object_array_add (llcs, json_object_new_int ((int) d));
    }
  add (o, "llcs", llcs);
  return o;
}

/* What the entries use: the exclusive entries' held CPUs, the shared ones' cpus. */
struct usage
{
  hwloc_bitmap_t held;
  hwloc_bitmap_t shared;
  hwloc_bitmap_t usable; /* what the host config lets the hook hand out */
};

/* One character per CPU: # held, s used by a shared entry, - not to be handed
   out (reserved, outside the config's cpus, not allowed), . free. */
static char
cpu_mark (const struct usage *u, unsigned cpu)
{
  if (hwloc_bitmap_isset (u->held, cpu))
    return '#';
  if (hwloc_bitmap_isset (u->shared, cpu))
    return 's';
  return hwloc_bitmap_isset (u->usable, cpu) ? '.' : '-';
}

static json_object *
holders (const struct cp_ledger *l, hwloc_const_bitmap_t cpus)
{
  json_object *a = json_object_new_array ();
  for (size_t i = 0; i < cp_ledger_count (l); i++)
    {
      const struct cp_ledger_entry *e = cp_ledger_at (l, i);
      hwloc_const_bitmap_t used = e->mode == CP_MODE_EXCLUSIVE ? e->held : e->cpus;
      if (hwloc_bitmap_intersects (used, cpus))
        json_object_array_add (a, jstr (e->id));
    }
  return a;
}

static json_object *
llc_occupancy (const struct cp_domain *d, const struct cp_ledger *l, const struct usage *u)
{
  cleanup_bitmap hwloc_bitmap_t held = cp_bitmap_new ();
  cleanup_bitmap hwloc_bitmap_t shared = cp_bitmap_new ();
  hwloc_bitmap_and (held, u->held, d->cpus);
  hwloc_bitmap_and (shared, u->shared, d->cpus);
  hwloc_bitmap_andnot (shared, shared, held);
  cleanup_free char *map = cp_xmalloc0 ((size_t) hwloc_bitmap_weight (d->cpus) + 1);
  size_t n = 0;
  int cpu;
  hwloc_bitmap_foreach_begin (cpu, d->cpus)
    map[n++] = cpu_mark (u, (unsigned) cpu);
  hwloc_bitmap_foreach_end ();
  json_object *o = json_object_new_object ();
  add (o, "index", json_object_new_int ((int) d->index));
  add (o, "cpus", jcpulist (d->cpus));
  add (o, "size", json_object_new_int (hwloc_bitmap_weight (d->cpus)));
  add (o, "held", jcpulist (held));
  add (o, "held_count", json_object_new_int (hwloc_bitmap_weight (held)));
  add (o, "shared", jcpulist (shared));
  add (o, "map", jstr (map));
  add (o, "holders", holders (l, d->cpus));
  return o;
}

static void
usage_fill (const struct cp_ledger *l, const struct cp_topo *topo, const struct cp_hostconfig *hc,
            struct usage *u)
{
  u->held = cp_bitmap_new ();
  u->shared = cp_bitmap_new ();
  u->usable = cp_bitmap_dup (topo->allowed);
  hwloc_bitmap_and (u->usable, u->usable, hc->cpus);
  hwloc_bitmap_andnot (u->usable, u->usable, hc->reserved);
  for (size_t i = 0; i < cp_ledger_count (l); i++)
    {
      const struct cp_ledger_entry *e = cp_ledger_at (l, i);
      if (e->mode == CP_MODE_EXCLUSIVE)
        hwloc_bitmap_or (u->held, u->held, e->held);
      else
        hwloc_bitmap_or (u->shared, u->shared, e->cpus);
    }
}

/* The per-LLC map and the held CPUs that no LLC of this topology has (a ledger
   written under another topology). */
static void
add_occupancy (json_object *o, const struct cp_ledger *l, const struct cp_topo *topo,
               const struct cp_hostconfig *hc)
{
  struct usage u;
  usage_fill (l, topo, hc, &u);
  json_object *a = json_object_new_array ();
  for (unsigned d = 0; d < topo->n_domains[CP_LEVEL_LLC]; d++)
    json_object_array_add (a, llc_occupancy (&topo->domains[CP_LEVEL_LLC][d], l, &u));
  add (o, "occupancy", a);
  add (o, "held", jcpulist (u.held));
  add (o, "held_count", json_object_new_int (hwloc_bitmap_weight (u.held)));
  hwloc_bitmap_andnot (u.held, u.held, topo->online);
  add (o, "held_outside_topology", jcpulist (u.held));
  hwloc_bitmap_free (u.held);
  hwloc_bitmap_free (u.shared);
  hwloc_bitmap_free (u.usable);
}

/* ledger.json, read once without the lock; a missing file is an empty ledger.
   *STATE says what was found ("ok", "missing"); on failure, "unreadable" or
   "invalid". */
static int
ledger_read (const char *path, const char **state, struct cp_ledger **out, cp_error_t *err)
{
  cleanup_free char *buf = NULL;
  size_t len = 0;
  cleanup_error cp_error_t e = NULL;
  *state = "ok";
  if (cp_io_read_at (AT_FDCWD, path, O_NOFOLLOW, path, CP_LEDGER_MAX_SIZE, 0, &buf, &len, &e) < 0)
    {
      if (cp_error_errno (e) != ENOENT)
        {
          *state = "unreadable";
          *err = cp_steal_pointer (&e);
          return -1;
        }
      *state = "missing";
      static const char empty[] = "{\"version\": 1, \"entries\": []}";
      return cp_ledger_parse (empty, sizeof empty - 1, out, err);
    }
  if (cp_ledger_parse (buf, len, out, err) < 0)
    {
      *state = "invalid";
      return cp_error_wrap (err, "%s", path);
    }
  return 0;
}

static json_object *
ledger_part (const struct cp_hostconfig *hc, bool have_config, const struct cp_topo *topo, bool *ok)
{
  static const char *const keys[] = { "state", "entries", "occupancy", "held", "held_count",
                                      "held_outside_topology", NULL };
  cleanup_free char *path = cp_xasprintf ("%s/%s", hc->state_dir, CP_LEDGER_FILE);
  cleanup_error cp_error_t e = NULL;
  if (!have_config)
    {
      cp_fail_runtime (&e, "not read: the host configuration (which names the state directory) could not be read");
      json_object *f = failed_part (keys, e);
      add (f, "path", NULL);
      return f;
    }
  const char *state = NULL;
  cleanup_ledger struct cp_ledger *l = NULL;
  if (ledger_read (path, &state, &l, &e) < 0)
    {
      json_object *f = failed_part (keys, e);
      add (f, "path", jstr (path));
      add (f, "state", jstr (state));
      return f;
    }
  *ok = true;
  json_object *o = json_object_new_object ();
  add (o, "path", jstr (path));
  add (o, "state", jstr (state));
  json_object *entries = json_object_new_array ();
  for (size_t i = 0; i < cp_ledger_count (l); i++)
    json_object_array_add (entries, entry_json (cp_ledger_at (l, i), topo));
  add (o, "entries", entries);
  if (topo)
    add_occupancy (o, l, topo, hc);
  else
    for (const char *const *k = keys + 2; *k; k++)
      add (o, *k, NULL);
  add (o, "error", NULL);
  return o;
}

/* ------------------------------------------------------------------ kernel features */

static json_object *
cas_part (bool *ok)
{
  struct cp_sched_cas cas;
  cleanup_error cp_error_t e = NULL;
  json_object *o = json_object_new_object ();
  if (cp_sched_cas_probe ("/", &cas, &e) < 0)
    {
      add (o, "interface", NULL);
      add (o, "state", NULL);
      add (o, "enabled", NULL);
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
  add (o, "errno", cas.errnum ? jstr (strerrorname_np (cas.errnum)) : NULL);
  add (o, "error", NULL);
  return o;
}

/* /sys/devices/system/cpu/smt/active: 1, 0, or -1 when it cannot be read. */
static int
smt_active (void)
{
  cleanup_free char *text = NULL;
  cleanup_error cp_error_t ignored = NULL;
  if (read_text ("/sys/devices/system/cpu/smt/active", STATUS_SMALL_MAX, &text, &ignored) < 0)
    return -1;
  return text[0] == '1' ? 1 : text[0] == '0' ? 0 : -1;
}

static json_object *
core_part (bool *ok)
{
  uint64_t cookie = 0;
  int rc = prctl (PR_SCHED_CORE, PR_SCHED_CORE_GET, 0UL, STATUS_PIDTYPE_PID, (unsigned long) (uintptr_t) &cookie);
  int errnum = rc < 0 ? errno : 0;
  int smt = smt_active ();
  struct cp_sched_core core;
  cleanup_error cp_error_t e = NULL;
  json_object *o = json_object_new_object ();
  bool known = cp_sched_core_classify (rc, errnum, smt, &core, &e) == 0;
  *ok = *ok || known;
  add (o, "state", known ? jstr (cp_sched_core_avail_name (core.avail)) : NULL);
  add (o, "smt_active", smt < 0 ? NULL : json_object_new_boolean (smt == 1));
  add (o, "errno", errnum ? jstr (strerrorname_np (errnum)) : NULL);
  add (o, "error", known ? NULL : jstr (cp_error_message (e)));
  return o;
}

static json_object *
asym_part (bool *ok)
{
  cleanup_free char *cmdline = NULL;
  cleanup_error cp_error_t e = NULL;
  enum cp_sched_boot boot = CP_SCHED_BOOT_UNKNOWN;
  if (read_text ("/proc/cmdline", 1 << 16, &cmdline, &e) == 0)
    {
      boot = cp_sched_boot_parse (cmdline);
      *ok = true;
    }
  json_object *o = json_object_new_object ();
  add (o, "state", jstr (cp_sched_boot_name (boot)));
  add (o, "effective", json_object_new_boolean (boot == CP_SCHED_BOOT_ON));
  add (o, "error", e ? jstr (cp_error_message (e)) : NULL);
  return o;
}

static json_object *
features_part (bool *ok)
{
  json_object *o = json_object_new_object ();
  add (o, "cache_aware_scheduling", cas_part (ok));
  add (o, "core_scheduling", core_part (ok));
  add (o, "smt_asym_packing", asym_part (ok));
  return o;
}

/* ------------------------------------------------------------------ configuration */

static const char *
log_level_name (enum cp_log_level level)
{
  switch (level)
    {
    case CP_LOG_ERROR:
      return "error";
    case CP_LOG_WARNING:
      return "warning";
    case CP_LOG_INFO:
      return "info";
    case CP_LOG_DEBUG:
      return "debug";
    default:
      return "?";
    }
}

static json_object *
defaults_json (const struct cp_request *d)
{
  json_object *o = json_object_new_object ();
  add (o, "align", jstr (cp_align_name (d->align)));
  add (o, "smt", jstr (cp_smt_name (d->smt)));
  add (o, "mode", jstr (cp_mode_name (d->mode)));
  add (o, "strict", json_object_new_boolean (d->strict));
  return o;
}

static json_object *
config_part (const char *path, const struct cp_hostconfig *hc, cp_error_t e, bool *ok)
{
  static const char *const keys[] = { "found", "state_dir", "topology", "cpus", "reserved", "defaults",
                                      "on_error", "log_level", "lock_timeout_ms", "sandbox", NULL };
  if (e)
    {
      json_object *f = failed_part (keys, e);
      add (f, "path", jstr (path));
      return f;
    }
  *ok = true;
  json_object *o = json_object_new_object ();
  add (o, "path", jstr (path));
  add (o, "found", json_object_new_boolean (hc->path != NULL));
  add (o, "state_dir", jstr (hc->state_dir));
  add (o, "topology", jstr (hc->topology));
  add (o, "cpus", jcpulist (hc->cpus));
  add (o, "reserved", jcpulist (hc->reserved));
  add (o, "defaults", defaults_json (&hc->defaults));
  add (o, "on_error", jstr (cp_on_error_name (hc->on_error)));
  add (o, "log_level", jstr (log_level_name (hc->log_level)));
  add (o, "lock_timeout_ms", json_object_new_int ((int) hc->lock_timeout_ms));
  add (o, "sandbox", json_object_new_boolean (hc->sandbox));
  add (o, "error", NULL);
  return o;
}

/* ------------------------------------------------------------------ the command */

/* Everything, into *OUT; fails only when no part could be read at all. */
static int
gather (const struct status_args *a, json_object **out, cp_error_t *err)
{
  struct cp_hostconfig hc = { 0 };
  cleanup_error cp_error_t cfg_err = NULL;
  bool have_config = cp_hostconfig_load (a->config, &hc, &cfg_err) == 0;
  if (!have_config)
    cp_hostconfig_init (&hc); /* the topology still shows; the ledger does not */
  struct cp_topo *topo = NULL;
  cleanup_error cp_error_t topo_err = NULL;
  if (cp_topo_load (hc.topology, &topo, &topo_err) < 0)
    topo = NULL;

  bool ok[5] = { false };
  json_object *root = json_object_new_object ();
  add (root, "cgroup", cgroup_part (&ok[0]));
  add (root, "topology", topology_part (topo, hc.topology, topo_err, &ok[1]));
  add (root, "ledger", ledger_part (&hc, have_config, topo, &ok[2]));
  add (root, "features", features_part (&ok[3]));
  add (root, "config", config_part (a->config ? a->config : CP_HOSTCONFIG_DEFAULT_PATH, &hc, cfg_err, &ok[4]));
  cp_topo_free (topo);
  cp_hostconfig_free (&hc);
  if (!ok[0] && !ok[1] && !ok[2] && !ok[3] && !ok[4])
    {
      json_object_put (root);
      return cp_fail_runtime (err, "nothing could be read (the host configuration: %s)", cp_error_message (cfg_err));
    }
  *out = root;
  return 0;
}

int
cp_cmd_status (int argc, char **argv, cp_error_t *err)
{
  struct status_args a = { 0 };
  if (parse_args (argc, argv, &a, err) < 0)
    return -1;
  if (a.help)
    {
      fputs (status_usage, stdout);
      return 0;
    }
  json_object *status = NULL;
  if (gather (&a, &status, err) < 0)
    return -1;
  if (a.json)
    puts (json_object_to_json_string_ext (status, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
  else
    cp_status_print_text (status, stdout);
  json_object_put (status);
  return 0;
}
