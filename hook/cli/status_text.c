/* `cachepin status` for people: the status object (status.h) as one screen of
 * text.  Every string is shown through policy/base/text.h's sanitizer: ids, paths and
 * messages come from files others wrote.
 *
 * Two views: the default fits 80 columns (short ids and names in the entries'
 * table; every other line wrapped after a space or a comma, its continuation
 * indented), `--wide` prints every field in full, one line each.  The occupancy
 * map (status_map.c, the one `plan` draws) is the same in both. */
#define _GNU_SOURCE
#include "cli.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "text.h"
#include "util.h"
#include "status.h"
#include "status_view.h"

static const char *
plural (int64_t n, const char *one, const char *many)
{
  return n == 1 ? one : many;
}

/* "  label  error message" for a part that could not be read. */
static bool
print_error (const struct cp_view *v, const char *label, json_object *part)
{
  if (is_null (part, "error"))
    return false;
  cp_view_line (v, 14, "%-12s%s", label, S (part, "error"));
  return true;
}

/* ------------------------------------------------------------------ cgroup */

static void
print_cgroup (const struct cp_view *v, json_object *c)
{
  if (is_null (c, "cpuset_mount"))
    {
      cp_view_line (v, 14, "%-12s%s; cpuset: %s", "cgroup", is_null (c, "mode") ? "?" : S (c, "mode"), S (c, "error"));
      return;
    }
  cp_view_line (v, 14, "%-12s%s; cpuset hierarchy: v%" PRId64 " at %s", "cgroup", S (c, "mode"),
                num (c, "cpuset_version"), S (c, "cpuset_mount"));
}

/* ------------------------------------------------------------------ topology */

/* "  LABEL      " and the items of ARR as " #<KEY>:<cpus>" (PREFIX before each). */
static void
print_sets (const struct cp_view *v, const char *label, json_object *arr, const char *prefix, const char *key)
{
  char *buf = NULL;
  size_t size = 0;
  FILE *m = open_memstream (&buf, &size);
  if (m == NULL)
    return;
  fprintf (m, "  %-10s", label);
  for (size_t i = 0; json_object_is_type (arr, json_type_array) && i < json_object_array_length (arr); i++)
    {
      json_object *o = json_object_array_get_idx (arr, i);
      fprintf (m, " %s%" PRId64 ":%s", prefix, num (o, key), S (o, "cpus"));
    }
  if (fclose (m) == 0)
    cp_view_items (v, 13, buf);
  free (buf);
}

static void
print_topology (const struct cp_view *v, json_object *t)
{
  if (print_error (v, "topology", t))
    return;
  int64_t pk = num (t, "packages"), nodes = (int64_t) len (t, "numa_nodes"), llcs = (int64_t) len (t, "llcs");
  int64_t cores = num (t, "cores");
  char shape[256], src[4 * CP_VIEW_COLS];
  snprintf (shape, sizeof shape, ": %" PRId64 " %s, %" PRId64 " NUMA %s, %" PRId64 " %s, %" PRId64 " %s, SMT %" PRId64,
            pk, plural (pk, "package", "packages"), nodes, plural (nodes, "node", "nodes"), llcs, S (t, "llc_label"),
            cores, plural (cores, "core", "cores"), num (t, "smt_width"));
  /* A captured topology's path gets what the shape leaves of the line. */
  size_t used = 12 + cp_view_columns (shape, SIZE_MAX), room = used + 16 < CP_VIEW_COLS ? CP_VIEW_COLS - used : 16;
  const char *source = v->wide ? S (t, "source") : cp_view_fit (S (t, "source"), room, true, src, sizeof src);
  cp_view_line (v, 14, "%-12s%s%s", "topology", source, shape);
  cp_view_line (v, 13, "  %-10s %s online, %s allowed", "CPUs", S (t, "online"), S (t, "allowed"));
  print_sets (v, "NUMA", get (t, "numa_nodes"), "#", "os_index");
  print_sets (v, S (t, "llc_label"), get (t, "llcs"), "#", "index");
  cp_view_line (v, 13, "  %-10s %s", "PE0", S (t, "pe0"));
  if (len (t, "cpu_kinds") == 0)
    cp_view_line (v, 13, "  %-10s one (hwloc reports no kinds)", "CPU kinds");
  else
    print_sets (v, "CPU kinds", get (t, "cpu_kinds"), "rank ", "efficiency");
  json_object *cache = get (t, "cache");
  if (json_object_get_boolean (get (cache, "used")))
    cp_view_line (v, 13, "  %-10s %s: used", "cache", S (cache, "file"));
  else if (cache)
    cp_view_line (v, 13, "  %-10s %s: not used (%s); the next hook run discovers and saves it", "cache",
                  S (cache, "file"), S (cache, "why_not"));
}

/* ------------------------------------------------------------------ ledger */

static void
print_warnings (const struct cp_view *v, json_object *l)
{
  for (size_t i = 0; i < len (l, "warnings"); i++)
    {
      char buf[2 * TEXT_MAX];
      snprintf (buf, sizeof buf, "%s", json_object_get_string (at (l, "warnings", i)));
      cp_text_sanitize (buf);
      cp_view_line (v, 4, "  warning: %s", buf);
    }
}

static void
print_ledger (const struct cp_view *v, json_object *l, const char *llc_label)
{
  FILE *out = v->out;
  if (!is_null (l, "error"))
    {
      cp_view_line (v, 14, "%-12s%s: %s", "ledger", S (l, "state"), S (l, "error"));
      print_warnings (v, l);
      return;
    }
  int64_t n = (int64_t) len (l, "entries");
  char held[TEXT_MAX + 16] = "";
  if (!is_null (l, "held"))
    snprintf (held, sizeof held, ", CPUs held: %s", *S (l, "held") ? S (l, "held") : "none");
  cp_view_line (v, 14, "%-12s%s%s: %" PRId64 " %s%s", "ledger", S (l, "path"),
                strcmp (S (l, "state"), "missing") == 0 ? " (none yet)" : "", n, plural (n, "entry", "entries"), held);
  print_warnings (v, l);
  cp_status_print_entries (v, get (l, "entries"));
  cp_status_print_map (out, l, llc_label);
}

/* ------------------------------------------------------------------ features */

/* "asked by a, b" ("?" when the ledger is unread, "no placed container asks"),
   ids short in the default view, into M. */
static void
print_asked_by (const struct cp_view *v, FILE *m, json_object *ids)
{
  if (ids == NULL)
    {
      fprintf (m, "asked by ? (ledger not read)");
      return;
    }
  size_t n = json_object_array_length (ids);
  for (size_t i = 0; i < n; i++)
    {
      char buf[TEXT_MAX], id[4 * CP_STATUS_ID_COLS + 8];
      snprintf (buf, sizeof buf, "%s", json_object_get_string (json_object_array_get_idx (ids, i)));
      cp_text_sanitize (buf);
      fprintf (m, "%s%s", i == 0 ? "asked by " : ", ", v->wide ? buf : cp_status_short_id (buf, NULL, id, sizeof id));
    }
  if (n == 0)
    fprintf (m, "no placed container asks");
}

/* A feature's line built in a memory stream, then wrapped (line()) under its
   26-column label. */
struct feature_line
{
  char *buf;
  size_t size;
  FILE *m;
};

static FILE *
feature_begin (struct feature_line *f, const char *label)
{
  *f = (struct feature_line) { 0 };
  f->m = open_memstream (&f->buf, &f->size);
  if (f->m)
    fprintf (f->m, "  %-24s", label);
  return f->m;
}

static void
feature_end (const struct cp_view *v, struct feature_line *f)
{
  if (f->m && fclose (f->m) == 0)
    cp_view_line (v, 26, "%s", f->buf);
  free (f->buf);
}

/* One line: the state, and the host setting; then who asks, when containers ask
   or cachepin holds the switch, and what it gives back. */
static void
print_cas (const struct cp_view *v, json_object *c)
{
  struct feature_line f;
  FILE *m = feature_begin (&f, "cache-aware scheduling");
  if (m == NULL)
    return;
  if (!is_null (c, "error"))
    fprintf (m, "could not tell: %s", S (c, "error"));
  else if (strcmp (S (c, "state"), "on") == 0 || strcmp (S (c, "state"), "off") == 0)
    fprintf (m, "%s (interface %s)", S (c, "state"), S (c, "interface"));
  else if (strcmp (S (c, "state"), "debugfs-not-mounted") == 0)
    fprintf (m, "unknown: debugfs is not mounted at /sys/kernel/debug");
  else if (strcmp (S (c, "state"), "denied") == 0)
    fprintf (m, "unknown: access denied (%s; interface %s)", is_null (c, "errno") ? "?" : S (c, "errno"),
             S (c, "interface"));
  else
    fprintf (m, "unsupported: this kernel has no CONFIG_SCHED_CACHE");
  fprintf (m, "; sched_cache %s", S (c, "setting"));
  feature_end (v, &f);
  json_object *ids = get (c, "asked_by");
  if (ids != NULL && json_object_array_length (ids) == 0 && is_null (c, "restore"))
    return;
  if ((m = feature_begin (&f, "")) == NULL)
    return;
  print_asked_by (v, m, ids);
  feature_end (v, &f);
  if (!is_null (c, "restore"))
    cp_view_line (v, 26, "  %-24sheld by cachepin, gives back %s when none asks", "", S (c, "restore"));
}

static void
print_core (const struct cp_view *v, json_object *c)
{
  const char *state = S (c, "state"), *label = "core scheduling";
  if (!is_null (c, "error"))
    cp_view_line (v, 26, "  %-24scould not tell: %s", label, S (c, "error"));
  else if (strcmp (state, "supported") == 0)
    cp_view_line (v, 26, "  %-24ssupported", label);
  else if (strcmp (state, "unsupported") == 0)
    cp_view_line (v, 26, "  %-24sunsupported: no CONFIG_SCHED_CORE", label);
  else if (strcmp (state, "no-smt") == 0)
    cp_view_line (v, 26, "  %-24sunsupported: no SMT (or SMT is off)", label);
  else
    cp_view_line (v, 26, "  %-24s%s (%s)", label, state, is_null (c, "errno") ? "?" : S (c, "errno"));
  json_object *ids = get (c, "asked_by");
  if (ids == NULL || json_object_array_length (ids) > 0)
    {
      struct feature_line f;
      FILE *m = feature_begin (&f, "");
      if (m == NULL)
        return;
      fprintf (m, "cookies: ");
      print_asked_by (v, m, ids);
      feature_end (v, &f);
    }
}

static void
print_asym (const struct cp_view *v, json_object *a)
{
  const char *state = S (a, "state"), *label = "sched_smt_asym_packing";
  if (strcmp (state, "unset") == 0)
    cp_view_line (v, 26, "  %-24soff (not on the kernel command line)", label);
  else if (strcmp (state, "unknown") == 0)
    cp_view_line (v, 26, "  %-24sunknown: %s", label, S (a, "error"));
  else
    cp_view_line (v, 26, "  %-24sboot option %s", label, state);
}

static void
print_features (const struct cp_view *v, json_object *f)
{
  fprintf (v->out, "kernel features\n");
  print_cas (v, get (f, "cache_aware_scheduling"));
  print_core (v, get (f, "core_scheduling"));
  print_asym (v, get (f, "smt_asym_packing"));
}

/* ------------------------------------------------------------------ config */

static const char *
onoff (json_object *o, const char *key)
{
  return json_object_get_boolean (get (o, key)) ? "true" : "false";
}

static void
print_config (const struct cp_view *v, json_object *c)
{
  if (!is_null (c, "error"))
    {
      cp_view_line (v, 14, "%-12s%s", "config", S (c, "error"));
      return;
    }
  cp_view_line (v, 14, "%-12s%s%s", "config", S (c, "path"),
                json_object_get_boolean (get (c, "found")) ? "" : " (not found: the defaults)");
  json_object *d = get (c, "defaults");
  cp_view_line (v, 4, "  state_dir %s  topology %s  cpus %s  reserved %s", S (c, "state_dir"), S (c, "topology"),
                S (c, "cpus"), *S (c, "reserved") ? S (c, "reserved") : "none");
  cp_view_line (v, 4, "  defaults align=%s smt=%s mode=%s strict=%s", S (d, "align"), S (d, "smt"), S (d, "mode"),
                onoff (d, "strict"));
  cp_view_line (v, 4, "  on_error %s  log_level %s  lock_timeout_ms %" PRId64 "  sandbox %s  sched_cache %s",
                S (c, "on_error"), S (c, "log_level"), num (c, "lock_timeout_ms"), onoff (c, "sandbox"),
                S (c, "sched_cache"));
}

/* Only when there is a kubelet CPU manager state file to speak of. */
static void
print_kubelet (const struct cp_view *v, json_object *k)
{
  if (!is_null (k, "error"))
    cp_view_line (v, 14, "%-12s%s: %s", "kubelet", S (k, "state_file"), S (k, "error"));
  else if (!is_null (k, "warning"))
    cp_view_line (v, 14, "%-12sWARNING: %s", "kubelet", S (k, "warning"));
  else if (!is_null (k, "policy"))
    cp_view_line (v, 14, "%-12sCPU manager policy %s (%s)", "kubelet", S (k, "policy"), S (k, "state_file"));
}

/* ---- recent: the journal's last decisions, one line of at most RECENT_COLS each ---- */

#define RECENT_COLS 80
/* The header and this many records: about ten lines. */
#define RECENT_LINES 9

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

/* One record in a line: cut at RECENT_COLS in the default view, in full (the
   whole id too) with --wide. */
static void
print_record (const struct cp_view *v, json_object *r)
{
  char when[32] = "?", id[TEXT_MAX], line[2 * TEXT_MAX + 256];
  time_t t = (time_t) num (r, "time");
  struct tm tm;
  if (gmtime_r (&t, &tm))
    strftime (when, sizeof when, "%m-%d %H:%M", &tm);
  if (v->wide)
    snprintf (id, sizeof id, "%s", S (r, "id"));
  else
    cp_status_short_id (S (r, "id"), NULL, id, sizeof id);
  const char *kind = S (r, "kind"), *cpus = S (r, "cpus"), *reason = S (r, "reason");
  /* The front (hook, apply, release) is in --json: the width goes to the reason. */
  /* %-*s pads bytes: an ellipsis is 3 bytes in 1 column. */
  int pad = 12 + (int) (strlen (id) - cp_view_columns (id, SIZE_MAX));
  int n = snprintf (line, sizeof line, "  %s %-8s %-*s", when, kind, pad, id);
  if (n > 0 && (size_t) n < sizeof line && *cpus)
    n += snprintf (line + n, sizeof line - n, " cpus %s:", cpus);
  if (n > 0 && (size_t) n < sizeof line)
    snprintf (line + n, sizeof line - n, " %s", *reason ? reason : "-");
  if (!v->wide)
    cut_line (line);
  fprintf (v->out, "%s\n", line);
}

static void
print_recent (const struct cp_view *v, json_object *status)
{
  FILE *out = v->out;
  json_object *recent = get (status, "recent");
  if (!json_object_is_type (recent, json_type_array))
    {
      cp_view_line (v, 14, "%-12s%s", "recent", S (status, "recent_error"));
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
    print_record (v, json_object_array_get_idx (recent, i));
}

/* First: the containers that started unplaced, were refused or drifted in the
   last hour and were not settled since (why.h), one line each. */
static void
print_attention (const struct cp_view *v, json_object *status)
{
  json_object *attention = get (status, "attention");
  if (!json_object_is_type (attention, json_type_array))
    {
      cp_view_line (v, 14, "%-12sunknown: the journal could not be read (recent, below, says why)", "attention");
      return;
    }
  size_t n = json_object_array_length (attention);
  if (n == 0)
    {
      fprintf (v->out, "%-12snone in the last hour (unplaced, refused, drifted)\n", "attention");
      return;
    }
  fprintf (v->out, "%-12s%zu %s in the last hour; `cachepin why ID` explains each\n", "attention", n,
           plural ((int64_t) n, "container", "containers"));
  for (size_t i = 0; i < n; i++)
    print_record (v, json_object_array_get_idx (attention, i));
}

void
cp_status_print_text (json_object *status, bool wide, FILE *out)
{
  const struct cp_view v = { .out = out, .wide = wide };
  json_object *topo = get (status, "topology");
  print_attention (&v, status);
  print_cgroup (&v, get (status, "cgroup"));
  print_topology (&v, topo);
  print_ledger (&v, get (status, "ledger"), is_null (topo, "llc_label") ? "LLC" : S (topo, "llc_label"));
  print_recent (&v, status);
  print_features (&v, get (status, "features"));
  print_kubelet (&v, get (status, "kubelet"));
  print_config (&v, get (status, "config"));
}
