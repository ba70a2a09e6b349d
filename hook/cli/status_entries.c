/* `cachepin status` text: the ledger's entries, as a table of at most 80
 * columns (short ids, names, mode, CPUs, state) or in full with --wide, and a
 * line for each entry that drifted or is gone. */
#define _GNU_SOURCE
#include "status_view.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* The entry's state column: ok, DRIFTED (another manager moved it), GONE (its
   cgroup or process is gone: the next placement drops it), PENDING (the NRI
   plugin's, decided before its cgroup was made: settled by the plugin; or a
   pinned service's while it is stopped, its CPUs held for its next start), CLAIM
   (a prepared DRA claim's: held for the containers the claim is given). */
static const char *
entry_state (json_object *e)
{
  const char *state = S (e, "state");
  if (strcmp (state, "gone") == 0)
    return "GONE";
  if (strcmp (state, "pending") == 0)
    return "PENDING";
  if (strcmp (state, "claim") == 0)
    return "CLAIM";
  if (strcmp (state, "drifted") == 0 || (is_null (e, "state") && json_object_get_boolean (get (e, "drifted"))))
    return "DRIFTED";
  return "ok";
}

/* The default view's columns: 2 + 18 + 1 + 24 + 1 + 9 + 1 + 14 + 1 + 7 = 78. */
#define NAME_COLS 24
#define CPUS_COLS 14

/* The cgroup of an `apply` entry's id (the cpuset hierarchy's mount, then the
   cgroup's path) where only the id is at hand (a map's holders, the journal):
   the path under /sys/fs/cgroup/cpuset (v1) or /sys/fs/cgroup (v2), as the
   entries' table shows it; NULL when the id is under neither. */
static const char *
apply_cgroup (const char *path)
{
  static const char *const mounts[] = { "/sys/fs/cgroup/cpuset", "/sys/fs/cgroup" };
  for (size_t i = 0; i < sizeof mounts / sizeof *mounts; i++)
    {
      size_t n = strlen (mounts[i]);
      if (strncmp (path, mounts[i], n) == 0 && path[n] == '/')
        return path + n;
    }
  return NULL;
}

/* ID in at most CP_STATUS_ID_COLS columns: a container's first 12 characters when it is
   a long hex id (as podman and crictl print it), an `apply` entry as
   "apply:<cgroup>" (its path under the cpuset mount), the middle cut if long. */
const char *
cp_status_short_id (const char *id, const char *cgroup, char *buf, size_t size)
{
  size_t n = strlen (id);
  if (n > CP_STATUS_ID_COLS && strspn (id, "0123456789abcdef") == n)
    return snprintf (buf, size, "%.12s", id), buf;
  if (strncmp (id, "apply:", 6) == 0 && cgroup == NULL)
    cgroup = apply_cgroup (id + 6);
  if (strncmp (id, "apply:", 6) != 0 || cgroup == NULL)
    return cp_view_fit (id, CP_STATUS_ID_COLS, true, buf, size);
  /* A cgroup's last component tells it best: "apply:\u2026obs.service". */
  size_t cols = cp_view_columns (cgroup, SIZE_MAX), room = CP_STATUS_ID_COLS - 6;
  if (cols <= room)
    return snprintf (buf, size, "apply:%s", cgroup), buf;
  const char *tail = cgroup;
  for (size_t skip = cols - (room - 1); skip > 0; skip -= ((unsigned char) *tail & 0xC0) != 0x80 ? 1 : 0)
    tail++;
  while (((unsigned char) *tail & 0xC0) == 0x80)
    tail++;
  return snprintf (buf, size, "apply:\u2026%s", tail), buf;
}

static const char *
entry_short_id (json_object *e, char *buf, size_t size)
{
  return cp_status_short_id (S (e, "id"), is_null (e, "cgroup") ? NULL : S (e, "cgroup"), buf, size);
}

static void
print_entry_short (FILE *out, json_object *e)
{
  char id[4 * CP_STATUS_ID_COLS + 8], name[4 * NAME_COLS + 8], cpus[CPUS_COLS + 8];
  fputs ("  ", out);
  cp_view_cell (out, entry_short_id (e, id, sizeof id), CP_STATUS_ID_COLS + 1);
  cp_view_cell (out, is_null (e, "name") ? "-" : cp_view_fit (S (e, "name"), NAME_COLS, true, name, sizeof name),
                NAME_COLS + 1);
  fprintf (out, "%-9s %-*s %s\n", S (e, "mode"), CPUS_COLS,
           cp_view_fit_cpulist (S (e, "cpus"), CPUS_COLS, cpus, sizeof cpus), entry_state (e));
}

static void
print_entry_wide (FILE *out, json_object *e, int idw)
{
  char when[32] = "?", pid[24] = "-";
  time_t t = (time_t) num (e, "placed_at");
  struct tm tm;
  if (gmtime_r (&t, &tm))
    strftime (when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
  if (num (e, "pid") != 0)
    snprintf (pid, sizeof pid, "%" PRId64, num (e, "pid"));
  const char *cas = S (e, "sched_cache");
  bool core = json_object_get_boolean (get (e, "core_sched"));
  bool isolated = json_object_is_type (get (e, "isolate"), json_type_object);
  fprintf (out, "  %-*s %-9s %-10s %-10s %-5s %-8s %-19s %-7s %s  %s%s%s%s%s\n", idw, S (e, "id"), S (e, "mode"),
           S (e, "cpus"), S (e, "held"), *S (e, "mems") ? S (e, "mems") : "-", pid, when, entry_state (e),
           S (e, "cgroup"), is_null (e, "name") ? "-" : S (e, "name"),
           strcmp (cas, "none") != 0 ? "  sched-cache=" : "", strcmp (cas, "none") != 0 ? cas : "",
           core ? "  core-sched" : "", isolated ? "  isolated" : "");
}

/* An isolated entry (cachepin.io/isolate): its partition as the kernel reads it now. */
static void
print_isolation (const struct cp_view *v, json_object *e, const char *shown)
{
  json_object *iso = get (e, "isolate");
  if (!json_object_is_type (iso, json_type_object))
    return;
  json_object *part = get (iso, "partition"), *eff = get (iso, "exclusive_effective");
  const char *p = json_object_is_type (part, json_type_string) ? json_object_get_string (part) : NULL;
  const char *x = json_object_is_type (eff, json_type_string) ? json_object_get_string (eff) : "?";
  if (p && strcmp (p, "root") == 0)
    cp_view_line (v, 4, "  %s ISOLATED: a partition root on CPUs %s (no other cgroup runs there)", shown, x);
  else
    cp_view_line (v, 4, "  %s ISOLATION INVALID: cpuset.cpus.partition reads `%s` (docs/isolation.md)", shown,
                  p ? p : "?");
}

/* Below the table, a line for each entry that is not ok: what is wrong, and
   what will be done about it (status itself changes nothing). */
static void
print_entry_problems (const struct cp_view *v, json_object *entries)
{
  bool gone = false;
  for (size_t i = 0; json_object_is_type (entries, json_type_array) && i < json_object_array_length (entries); i++)
    {
      json_object *e = json_object_array_get_idx (entries, i);
      const char *state = entry_state (e);
      char id[4 * CP_STATUS_ID_COLS + 8];
      const char *shown = v->wide ? S (e, "id") : entry_short_id (e, id, sizeof id);
      print_isolation (v, e, shown);
      if (strcmp (state, "DRIFTED") == 0)
        cp_view_line (v, 4, "  %s DRIFTED: its cgroup runs on %s (another manager moved it: docs/managers.md)", shown,
                      S (e, "live_cpus"));
      else if (strcmp (state, "GONE") == 0)
        {
          cp_view_line (v, 4, "  %s GONE: %s", shown,
                        is_null (e, "gone_why") ? "its cgroup or process is gone" : S (e, "gone_why"));
          gone = true;
        }
    }
  if (gone)
    cp_view_line (v, 4, "  GONE: its CPUs stay held until the next placement (hook or apply) drops it");
}

void
cp_status_print_entries (const struct cp_view *v, json_object *entries)
{
  size_t n = json_object_is_type (entries, json_type_array) ? json_object_array_length (entries) : 0;
  int idw = width (entries, "id", 2);
  if (n > 0 && v->wide)
    fprintf (v->out, "  %-*s %-9s %-10s %-10s %-5s %-8s %-19s %-7s %s  %s\n", idw, "ID", "MODE", "CPUS", "HELD", "MEMS",
             "PID", "PLACED (UTC)", "STATE", "CGROUP", "NAME");
  else if (n > 0)
    fprintf (v->out, "  %-*s %-*s %-9s %-*s %s\n", CP_STATUS_ID_COLS, "ID", NAME_COLS, "NAME", "MODE", CPUS_COLS,
             "CPUS", "STATE");
  for (size_t i = 0; i < n; i++)
    if (v->wide)
      print_entry_wide (v->out, json_object_array_get_idx (entries, i), idw);
    else
      print_entry_short (v->out, json_object_array_get_idx (entries, i));
  print_entry_problems (v, entries);
}
