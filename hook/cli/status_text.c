/* `cachepin status` for people: the status object (status.h) as one screen of
 * text.  Every string is shown through policy/base/text.h's sanitizer: ids, paths and
 * messages come from files others wrote. */
#define _GNU_SOURCE
#include "cli.h"

#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "bitmap.h"
#include "cpulist.h"
#include "text.h"
#include "util.h"
#include "status.h"
#include "cpumap.h"

static json_object *
get (json_object *o, const char *key)
{
  json_object *v = NULL;
  if (o == NULL || !json_object_is_type (o, json_type_object) || !json_object_object_get_ex (o, key, &v))
    return NULL;
  return v;
}

/* The string at KEY, sanitized into BUF; "?" when it is not a string. */
static const char *
str (json_object *o, const char *key, char *buf, size_t size)
{
  json_object *v = get (o, key);
  if (!json_object_is_type (v, json_type_string))
    return "?";
  snprintf (buf, size, "%s", json_object_get_string (v));
  cp_text_sanitize (buf);
  return buf;
}

/* Room for a path of PATH_MAX and its prefix: ids are "apply:" + a cgroup path. */
#define TEXT_MAX 4200
#define S(o, key) str ((o), (key), (char[TEXT_MAX]) { 0 }, TEXT_MAX)

static bool
is_null (json_object *o, const char *key)
{
  return get (o, key) == NULL;
}

static int64_t
num (json_object *o, const char *key)
{
  return json_object_get_int64 (get (o, key));
}

static size_t
len (json_object *o, const char *key)
{
  json_object *v = get (o, key);
  return json_object_is_type (v, json_type_array) ? json_object_array_length (v) : 0;
}

static json_object *
at (json_object *o, const char *key, size_t i)
{
  return json_object_array_get_idx (get (o, key), i);
}

static const char *
plural (int64_t n, const char *one, const char *many)
{
  return n == 1 ? one : many;
}

/* "  label  error message" for a part that could not be read. */
static bool
print_error (FILE *out, const char *label, json_object *part)
{
  if (is_null (part, "error"))
    return false;
  fprintf (out, "%-12s%s\n", label, S (part, "error"));
  return true;
}

/* ------------------------------------------------------------------ cgroup */

static void
print_cgroup (FILE *out, json_object *c)
{
  if (is_null (c, "cpuset_mount"))
    {
      fprintf (out, "%-12s%s; cpuset: %s\n", "cgroup", is_null (c, "mode") ? "?" : S (c, "mode"), S (c, "error"));
      return;
    }
  fprintf (out, "%-12s%s; cpuset hierarchy: v%" PRId64 " at %s\n", "cgroup", S (c, "mode"), num (c, "cpuset_version"),
           S (c, "cpuset_mount"));
}

/* ------------------------------------------------------------------ topology */

static void
print_topology (FILE *out, json_object *t)
{
  if (print_error (out, "topology", t))
    return;
  int64_t pk = num (t, "packages"), nodes = (int64_t) len (t, "numa_nodes"), llcs = (int64_t) len (t, "llcs");
  int64_t cores = num (t, "cores");
  fprintf (out, "%-12s%s: %" PRId64 " %s, %" PRId64 " NUMA %s, %" PRId64 " %s, %" PRId64 " %s, SMT %" PRId64
           ", CPUs %s online, %s allowed\n",
           "topology", S (t, "source"), pk, plural (pk, "package", "packages"), nodes, plural (nodes, "node", "nodes"),
           llcs, S (t, "llc_label"), cores, plural (cores, "core", "cores"), num (t, "smt_width"), S (t, "online"),
           S (t, "allowed"));
  fprintf (out, "  %-10s", "NUMA");
  for (size_t i = 0; i < (size_t) nodes; i++)
    fprintf (out, " #%" PRId64 ":%s", num (at (t, "numa_nodes", i), "os_index"), S (at (t, "numa_nodes", i), "cpus"));
  fprintf (out, "\n  %-10s", S (t, "llc_label"));
  for (size_t i = 0; i < (size_t) llcs; i++)
    fprintf (out, " #%" PRId64 ":%s", num (at (t, "llcs", i), "index"), S (at (t, "llcs", i), "cpus"));
  fprintf (out, "\n  %-10s %s\n", "PE0", S (t, "pe0"));
  fprintf (out, "  %-10s", "CPU kinds");
  if (len (t, "cpu_kinds") == 0)
    fprintf (out, " one (hwloc reports no kinds)");
  for (size_t i = 0; i < len (t, "cpu_kinds"); i++)
    fprintf (out, " rank %" PRId64 ":%s", num (at (t, "cpu_kinds", i), "efficiency"), S (at (t, "cpu_kinds", i), "cpus"));
  fputc ('\n', out);
  json_object *cache = get (t, "cache");
  if (json_object_get_boolean (get (cache, "used")))
    fprintf (out, "  %-10s %s: used\n", "cache", S (cache, "file"));
  else if (cache)
    fprintf (out, "  %-10s %s: not used (%s); the next hook run discovers and saves it\n", "cache",
             S (cache, "file"), S (cache, "why_not"));
}

/* ------------------------------------------------------------------ ledger */

/* The widest string at KEY among the objects in the array ARR, at least MIN. */
static int
width (json_object *arr, const char *key, int min)
{
  int w = min;
  for (size_t i = 0; json_object_is_type (arr, json_type_array) && i < json_object_array_length (arr); i++)
    {
      json_object *v = get (json_object_array_get_idx (arr, i), key);
      int n = json_object_is_type (v, json_type_string) ? json_object_get_string_len (v) : 0;
      w = n > w ? n : w;
    }
  return w > 64 ? 64 : w;
}

static void
print_entry (FILE *out, json_object *e, int idw)
{
  char when[32] = "?";
  time_t t = (time_t) num (e, "placed_at");
  struct tm tm;
  if (gmtime_r (&t, &tm))
    strftime (when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
  const char *cas = S (e, "sched_cache");
  bool core = json_object_get_boolean (get (e, "core_sched"));
  bool drift = json_object_get_boolean (get (e, "drifted"));
  fprintf (out, "  %-*s %-9s %-10s %-10s %-5s %-8" PRId64 " %-19s %s%s%s%s%s%s\n", idw, S (e, "id"), S (e, "mode"),
           S (e, "cpus"), S (e, "held"), *S (e, "mems") ? S (e, "mems") : "-", num (e, "pid"), when, S (e, "cgroup"),
           strcmp (cas, "none") != 0 ? "  sched-cache=" : "", strcmp (cas, "none") != 0 ? cas : "",
           core ? "  core-sched" : "", drift ? "  DRIFTED: its cgroup runs on " : "", drift ? S (e, "live_cpus") : "");
}

/* ---- the map (cpumap.h): the same as `plan`'s, from the status object ---- */

static void short_id (const char *id, char *buf, size_t size);

/* The cpulist V as a bitmap (empty when it is not one). */
static hwloc_bitmap_t
cpus_of (json_object *v)
{
  hwloc_bitmap_t set = cp_bitmap_new ();
  cleanup_error cp_error_t e = NULL;
  if (!json_object_is_type (v, json_type_string)
      || cp_cpulist_parse (json_object_get_string (v), CP_CPULIST_ALLOW_EMPTY, set, &e) < 0)
    hwloc_bitmap_zero (set);
  return set;
}

static hwloc_bitmap_t
cpus_at (json_object *o, const char *key)
{
  return cpus_of (get (o, key));
}

/* The CPUs the object's "map" (one character per CPU of its "cpus", in number
   order) marks as not to be handed out: reserved, or not allowed at all. */
static hwloc_bitmap_t
not_handed_out (json_object *o)
{
  cleanup_bitmap hwloc_bitmap_t cpus = cpus_at (o, "cpus");
  hwloc_bitmap_t out = cp_bitmap_new ();
  json_object *map = get (o, "map");
  const char *m = json_object_is_type (map, json_type_string) ? json_object_get_string (map) : "";
  size_t k = 0, n = strlen (m);
  int cpu;
  hwloc_bitmap_foreach_begin (cpu, cpus)
    {
      if (k < n && m[k] == '-')
        hwloc_bitmap_set (out, (unsigned) cpu);
      k++;
    }
  hwloc_bitmap_foreach_end ();
  return out;
}

static char
status_mark (unsigned cpu, hwloc_const_bitmap_t held, hwloc_const_bitmap_t shared, hwloc_const_bitmap_t reserved,
             hwloc_const_bitmap_t denied)
{
  if (hwloc_bitmap_isset (held, cpu))
    return CP_MARK_HELD;
  if (hwloc_bitmap_isset (shared, cpu))
    return CP_MARK_SHARED;
  if (hwloc_bitmap_isset (reserved, cpu))
    return CP_MARK_RESERVED;
  return hwloc_bitmap_isset (denied, cpu) ? CP_MARK_NOT_ALLOWED : CP_MARK_FREE;
}

/* "by a1b2c3d4e5f6 ~/system.slice" under a domain's line: who holds its marks. */
static void
print_holders (FILE *out, json_object *o, int indent)
{
  if (len (o, "holders") == 0)
    return;
  char line[CP_CPUMAP_COLS + 1];
  int n = snprintf (line, sizeof line, "%*sby", indent, "");
  for (size_t i = 0; i < len (o, "holders") && n < (int) sizeof line; i++)
    {
      char buf[TEXT_MAX], id[16];
      snprintf (buf, sizeof buf, "%s", json_object_get_string (at (o, "holders", i)));
      cp_text_sanitize (buf);
      short_id (buf, id, sizeof id);
      n += snprintf (line + n, sizeof line - n, " %s", id);
    }
  fprintf (out, "%s\n", line);
}

static void
print_domain_map (FILE *out, json_object *o, const char *label, int label_w, int note_w)
{
  cleanup_bitmap hwloc_bitmap_t held = cpus_at (o, "held"), shared = cpus_at (o, "shared");
  cleanup_bitmap hwloc_bitmap_t reserved = cpus_at (o, "reserved"), denied = not_handed_out (o);
  cleanup_free char *name = cp_xasprintf ("%s#%" PRId64, label, num (o, "index"));
  cleanup_free char *note = cp_xasprintf ("%" PRId64 "/%" PRId64 " held", num (o, "held_count"), num (o, "size"));
  struct cp_cpumap_domain m = { .label = name, .note = note };
  size_t n_cores = len (o, "core_cpus");
  for (size_t c = 0; c < (n_cores ? n_cores : 1); c++)
    {
      cleanup_bitmap hwloc_bitmap_t core = n_cores ? cpus_of (at (o, "core_cpus", c)) : cpus_at (o, "cpus");
      int cpu;
      cp_cpumap_core (&m);
      hwloc_bitmap_foreach_begin (cpu, core)
        {
          if (n_cores == 0 && m.n > 0)
            cp_cpumap_core (&m); /* no cores in the object: one CPU each */
          cp_cpumap_cpu (&m, (unsigned) cpu, status_mark ((unsigned) cpu, held, shared, reserved, denied));
        }
      hwloc_bitmap_foreach_end ();
    }
  cp_cpumap_print (out, &m, label_w, note_w);
  cp_cpumap_clear (&m);
  print_holders (out, o, 2 + label_w + 1);
}

/* The ledger's occupancy of the LLCs, as `plan` draws its map. */
static void
print_map (FILE *out, json_object *l, const char *label)
{
  if (is_null (l, "occupancy"))
    return;
  char label_buf[16];
  snprintf (label_buf, sizeof label_buf, "%s", label);
  json_object *occ = get (l, "occupancy");
  int label_w = 0, note_w = 0;
  for (size_t i = 0; i < len (l, "occupancy"); i++)
    {
      json_object *o = json_object_array_get_idx (occ, i);
      int lw = snprintf (NULL, 0, "%s#%" PRId64, label_buf, num (o, "index"));
      int nw = snprintf (NULL, 0, "%" PRId64 "/%" PRId64 " held", num (o, "held_count"), num (o, "size"));
      label_w = lw > label_w ? lw : label_w;
      note_w = nw > note_w ? nw : note_w;
    }
  fputs ("  ", out);
  cp_cpumap_legend (out, label_buf, "xsr.-");
  for (size_t i = 0; i < len (l, "occupancy"); i++)
    print_domain_map (out, json_object_array_get_idx (occ, i), label_buf, label_w, note_w);
  if (*S (l, "held_outside_topology"))
    fprintf (out, "  held CPUs this topology does not have: %s\n", S (l, "held_outside_topology"));
}

static void
print_warnings (FILE *out, json_object *l)
{
  for (size_t i = 0; i < len (l, "warnings"); i++)
    {
      char buf[2 * TEXT_MAX];
      snprintf (buf, sizeof buf, "%s", json_object_get_string (at (l, "warnings", i)));
      cp_text_sanitize (buf);
      fprintf (out, "  warning: %s\n", buf);
    }
}

static void
print_ledger (FILE *out, json_object *l, const char *llc_label)
{
  if (!is_null (l, "error"))
    {
      fprintf (out, "%-12s%s: %s\n", "ledger", S (l, "state"), S (l, "error"));
      print_warnings (out, l);
      return;
    }
  int64_t n = (int64_t) len (l, "entries");
  fprintf (out, "%-12s%s%s: %" PRId64 " %s", "ledger", S (l, "path"),
           strcmp (S (l, "state"), "missing") == 0 ? " (none yet)" : "", n, plural (n, "entry", "entries"));
  if (!is_null (l, "held"))
    fprintf (out, ", CPUs held: %s", *S (l, "held") ? S (l, "held") : "none");
  fputc ('\n', out);
  print_warnings (out, l);
  int idw = width (get (l, "entries"), "id", 2);
  if (n > 0)
    fprintf (out, "  %-*s %-9s %-10s %-10s %-5s %-8s %-19s %s\n", idw, "ID", "MODE", "CPUS", "HELD", "MEMS", "PID",
             "PLACED (UTC)", "CGROUP");
  for (size_t i = 0; i < (size_t) n; i++)
    print_entry (out, at (l, "entries", i), idw);
  print_map (out, l, llc_label);
}

/* ------------------------------------------------------------------ features */

/* "; asked by a, b" (nothing when nobody asked; "?" when the ledger is unread). */
static void
print_asked_by (FILE *out, json_object *ids)
{
  if (ids == NULL)
    {
      fprintf (out, "asked by ? (ledger not read)");
      return;
    }
  size_t n = json_object_array_length (ids);
  for (size_t i = 0; i < n; i++)
    fprintf (out, "%s%s", i == 0 ? "asked by " : ", ", json_object_get_string (json_object_array_get_idx (ids, i)));
  if (n == 0)
    fprintf (out, "no placed container asks");
}

/* One line: the state, and the host setting; a second only when containers ask
   or cachepin holds the switch. */
static void
print_cas (FILE *out, json_object *c)
{
  fprintf (out, "  %-24s", "cache-aware scheduling");
  if (!is_null (c, "error"))
    fprintf (out, "could not tell: %s", S (c, "error"));
  else if (strcmp (S (c, "state"), "on") == 0 || strcmp (S (c, "state"), "off") == 0)
    fprintf (out, "%s (interface %s)", S (c, "state"), S (c, "interface"));
  else if (strcmp (S (c, "state"), "debugfs-not-mounted") == 0)
    fprintf (out, "unknown: debugfs is not mounted at /sys/kernel/debug");
  else if (strcmp (S (c, "state"), "denied") == 0)
    fprintf (out, "unknown: access denied (%s; interface %s)", is_null (c, "errno") ? "?" : S (c, "errno"),
             S (c, "interface"));
  else
    fprintf (out, "unsupported: this kernel has no CONFIG_SCHED_CACHE");
  fprintf (out, "; sched_cache %s\n", S (c, "setting"));
  json_object *ids = get (c, "asked_by");
  if (ids != NULL && json_object_array_length (ids) == 0 && is_null (c, "restore"))
    return;
  fprintf (out, "  %-24s", "");
  print_asked_by (out, ids);
  if (!is_null (c, "restore"))
    fprintf (out, "; held by cachepin, gives back %s when none asks", S (c, "restore"));
  fputc ('\n', out);
}

static void
print_core (FILE *out, json_object *c)
{
  fprintf (out, "  %-24s", "core scheduling");
  const char *state = S (c, "state");
  if (!is_null (c, "error"))
    fprintf (out, "could not tell: %s\n", S (c, "error"));
  else if (strcmp (state, "supported") == 0)
    fprintf (out, "supported\n");
  else if (strcmp (state, "unsupported") == 0)
    fprintf (out, "unsupported: no CONFIG_SCHED_CORE\n");
  else if (strcmp (state, "no-smt") == 0)
    fprintf (out, "unsupported: no SMT (or SMT is off)\n");
  else
    fprintf (out, "%s (%s)\n", state, is_null (c, "errno") ? "?" : S (c, "errno"));
  json_object *ids = get (c, "asked_by");
  if (ids == NULL || json_object_array_length (ids) > 0)
    {
      fprintf (out, "  %-24scookies: ", "");
      print_asked_by (out, ids);
      fputc ('\n', out);
    }
}

static void
print_asym (FILE *out, json_object *a)
{
  fprintf (out, "  %-24s", "sched_smt_asym_packing");
  const char *state = S (a, "state");
  if (strcmp (state, "unset") == 0)
    fprintf (out, "off (not on the kernel command line)\n");
  else if (strcmp (state, "unknown") == 0)
    fprintf (out, "unknown: %s\n", S (a, "error"));
  else
    fprintf (out, "boot option %s\n", state);
}

static void
print_features (FILE *out, json_object *f)
{
  fprintf (out, "kernel features\n");
  print_cas (out, get (f, "cache_aware_scheduling"));
  print_core (out, get (f, "core_scheduling"));
  print_asym (out, get (f, "smt_asym_packing"));
}

/* ------------------------------------------------------------------ config */

static const char *
onoff (json_object *o, const char *key)
{
  return json_object_get_boolean (get (o, key)) ? "true" : "false";
}

static void
print_config (FILE *out, json_object *c)
{
  if (!is_null (c, "error"))
    {
      fprintf (out, "%-12s%s\n", "config", S (c, "error"));
      return;
    }
  fprintf (out, "%-12s%s%s\n", "config", S (c, "path"),
           json_object_get_boolean (get (c, "found")) ? "" : " (not found: the defaults)");
  json_object *d = get (c, "defaults");
  fprintf (out, "  state_dir %s  topology %s  cpus %s  reserved %s\n", S (c, "state_dir"), S (c, "topology"),
           S (c, "cpus"), *S (c, "reserved") ? S (c, "reserved") : "none");
  fprintf (out, "  defaults align=%s smt=%s mode=%s strict=%s\n", S (d, "align"), S (d, "smt"), S (d, "mode"),
           onoff (d, "strict"));
  fprintf (out, "  on_error %s  log_level %s  lock_timeout_ms %" PRId64 "  sandbox %s  sched_cache %s\n",
           S (c, "on_error"), S (c, "log_level"), num (c, "lock_timeout_ms"), onoff (c, "sandbox"),
           S (c, "sched_cache"));
}

/* Only when there is a kubelet CPU manager state file to speak of. */
static void
print_kubelet (FILE *out, json_object *k)
{
  if (!is_null (k, "error"))
    fprintf (out, "%-12s%s: %s\n", "kubelet", S (k, "state_file"), S (k, "error"));
  else if (!is_null (k, "warning"))
    fprintf (out, "%-12sWARNING: %s\n", "kubelet", S (k, "warning"));
  else if (!is_null (k, "policy"))
    fprintf (out, "%-12sCPU manager policy %s (%s)\n", "kubelet", S (k, "policy"), S (k, "state_file"));
}

/* ---- recent: the journal's last decisions, one line of at most RECENT_COLS each ---- */

#define RECENT_COLS 80
/* The header and this many records: about ten lines. */
#define RECENT_LINES 9

/* ID as podman and crictl print a container's: its first 12 characters; for
   "apply:<cgroup>", the end of the cgroup, which tells cgroups apart. */
static void
short_id (const char *id, char *buf, size_t size)
{
  size_t n = strlen (id);
  if (strncmp (id, "apply:", 6) == 0 && n > 6 + 12)
    snprintf (buf, size, "~%s", id + n - 11);
  else
    snprintf (buf, size, "%.12s", id);
}

/* LINE cut to RECENT_COLS bytes at a character boundary (sanitized text: UTF-8). */
static void
cut_line (char *line)
{
  size_t n = strlen (line);
  if (n <= RECENT_COLS)
    return;
  n = RECENT_COLS;
  while (n > 0 && ((unsigned char) line[n] & 0xC0) == 0x80)
    n--;
  line[n] = '\0';
}

static void
print_record (FILE *out, json_object *r)
{
  char when[32] = "?", id[16], line[TEXT_MAX + 256];
  time_t t = (time_t) num (r, "time");
  struct tm tm;
  if (gmtime_r (&t, &tm))
    strftime (when, sizeof when, "%m-%d %H:%M", &tm);
  short_id (S (r, "id"), id, sizeof id);
  const char *kind = S (r, "kind"), *cpus = S (r, "cpus"), *reason = S (r, "reason");
  /* The front (hook, apply, release) is in --json: the width goes to the reason. */
  int n = snprintf (line, sizeof line, "  %s %-8s %-12s", when, kind, id);
  if (n > 0 && (size_t) n < sizeof line && *cpus)
    n += snprintf (line + n, sizeof line - n, " cpus %s:", cpus);
  if (n > 0 && (size_t) n < sizeof line)
    snprintf (line + n, sizeof line - n, " %s", *reason ? reason : "-");
  cut_line (line);
  fprintf (out, "%s\n", line);
}

static void
print_recent (FILE *out, json_object *status)
{
  json_object *recent = get (status, "recent");
  if (!json_object_is_type (recent, json_type_array))
    {
      fprintf (out, "%-12s%s\n", "recent", S (status, "recent_error"));
      return;
    }
  size_t n = json_object_array_length (recent);
  if (n == 0)
    {
      fprintf (out, "%-12sno decisions in the journal\n", "recent");
      return;
    }
  size_t from = n > RECENT_LINES ? n - RECENT_LINES : 0;
  fprintf (out, "%-12sthe last %zu %s (UTC, oldest first; in full: status --json)\n", "recent", n - from,
           plural ((int64_t) (n - from), "decision", "decisions"));
  for (size_t i = from; i < n; i++)
    print_record (out, json_object_array_get_idx (recent, i));
}

void
cp_status_print_text (json_object *status, FILE *out)
{
  json_object *topo = get (status, "topology");
  print_cgroup (out, get (status, "cgroup"));
  print_topology (out, topo);
  print_ledger (out, get (status, "ledger"), is_null (topo, "llc_label") ? "LLC" : S (topo, "llc_label"));
  print_recent (out, status);
  print_features (out, get (status, "features"));
  print_kubelet (out, get (status, "kubelet"));
  print_config (out, get (status, "config"));
}
