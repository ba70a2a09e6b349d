/* `cachepin status`: the topology model (policy/topo.h) and the ledger, read once
 * without its lock, with its per-LLC occupancy map. */
#define _GNU_SOURCE
#include "status_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io.h"
#include "bitmap.h"
#include "cgroup.h"
#include "ledger.h"
#include "isolation.h"

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
cache_part (const struct cp_topocache_origin *origin)
{
  json_object *o = json_object_new_object ();
  add (o, "file", jstr (origin->file));
  add (o, "used", json_object_new_boolean (origin->used));
  add (o, "why_not", origin->why_not ? jstr (origin->why_not) : NULL);
  return o;
}

json_object *
cp_status_topology (const struct cp_topo *topo, const char *source, const struct cp_topocache_origin *origin,
                    cp_error_t e, bool *ok)
{
  static const char *const keys[] = { "online", "allowed", "packages", "numa_nodes", "llc_label", "llcs",
                                      "cores", "pe0", "smt_width", "cpu_kinds", NULL };
  if (topo == NULL)
    {
      json_object *f = failed_part (keys, e);
      add (f, "source", jstr (source));
      add (f, "cache", cache_part (origin));
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
  add (o, "cache", cache_part (origin));
  add (o, "errno", NULL);
  add (o, "error", NULL);
  return o;
}

/* ------------------------------------------------------------------ ledger */

/* Each entry's live CPUs, read as the hook's reconcile reads them (what its
   cgroup runs on; empty: gone or unreadable), so that status shows the drift the
   next hook run will count, and whether it is gone by the reconcile's own rule
   (cp_ledger_entry_gone(): the next hook run, `apply` or `release` drops it). */
struct live
{
  hwloc_bitmap_t *cpus; /* one per entry */
  char **gone;          /* one per entry: why it is gone, NULL: alive or cannot tell */
  size_t n;
};

static int
live_cgroup_cpus (const char *mount, const char *path, hwloc_bitmap_t cpus, unsigned long long *ino, void *data)
{
  return cp_cgroup_cpus_in (data, mount, path, cpus, ino);
}

static void
live_read (const struct cp_ledger *l, struct live *lv)
{
  lv->n = cp_ledger_count (l);
  lv->cpus = cp_xcalloc (lv->n ? lv->n : 1, sizeof *lv->cpus);
  lv->gone = cp_xcalloc (lv->n ? lv->n : 1, sizeof *lv->gone);
  struct cp_cgroup_mounts *m = cp_cgroup_mounts_new ();
  const struct cp_ledger_liveness alive = {
    .cgroup_cpus = live_cgroup_cpus,
    .pid_start_time = cp_ledger_pid_start_time,
    .data = m,
  };
  for (size_t i = 0; i < lv->n; i++)
    {
      lv->cpus[i] = cp_bitmap_new ();
      /* LIVE is left empty unless the cgroup is there and its own (the same inode). */
      lv->gone[i] = cp_ledger_entry_gone (cp_ledger_at (l, i), &alive, lv->cpus[i]);
    }
  cp_cgroup_mounts_free (m);
}

static void
live_free (struct live *lv)
{
  for (size_t i = 0; i < lv->n; i++)
    {
      hwloc_bitmap_free (lv->cpus[i]);
      free (lv->gone[i]);
    }
  free (lv->cpus);
  free (lv->gone);
}

static json_object *
entry_json (const struct cp_ledger_entry *e, hwloc_const_bitmap_t live, const char *gone, const struct cp_topo *topo)
{
  json_object *o = json_object_new_object ();
  bool drifted = cp_ledger_live_drifted (e, live);
  add (o, "id", jstr (e->id));
  add (o, "name", jstr (e->name));
  /* One state, as the text's column shows it: gone wins (nothing runs to drift); a
     pending entry (the NRI plugin's, its cgroup not recorded yet) is judged by
     nothing else. */
  bool pending = !gone && cp_ledger_entry_pending (e);
  bool claim = cp_ledger_entry_origin (e) == CP_ORIGIN_DRA; /* no cgroup: held for its claim */
  add (o, "state", jstr (gone      ? "gone"
                         : claim   ? "claim"
                         : pending ? "pending"
                         : drifted ? "drifted"
                                   : "ok"));
  add (o, "gone_why", jstr (gone));
  add (o, "origin", jstr (cp_ledger_origin_name (cp_ledger_entry_origin (e))));
  add (o, "runtime", jstr (e->runtime));
  add (o, "cgroup_mount", jstr (e->cgroup_mount));
  add (o, "cgroup", jstr (e->cgroup));
  add (o, "pid", json_object_new_int64 (e->pid));
  add (o, "mode", jstr (cp_mode_name (e->mode)));
  add (o, "cpus", jcpulist (e->cpus));
  add (o, "held", jcpulist (e->held));
  add (o, "mems", jcpulist (e->mems));
  add (o, "placed_at", json_object_new_int64 (e->placed_at));
  add (o, "sched_cache", jstr (cp_ask_name (e->sched_cache)));
  add (o, "core_sched", json_object_new_boolean (e->core_sched));
  add (o, "live_cpus", hwloc_bitmap_iszero (live) ? NULL : jcpulist (live));
  add (o, "drifted", json_object_new_boolean (drifted));
  add (o, "isolate", gone ? NULL : cp_isolate_status_json (e));
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
  hwloc_bitmap_t kept_back; /* what it keeps back: outside its `cpus`, or `reserved` */
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

/* The entries that use any of CPUS, counted as usage_fill() counts them (their
   drift too), so that no CPU is marked without its holder being named. */
static json_object *
holders (const struct cp_ledger *l, const struct live *lv, hwloc_const_bitmap_t cpus)
{
  json_object *a = json_object_new_array ();
  cleanup_bitmap hwloc_bitmap_t used = cp_bitmap_new ();
  for (size_t i = 0; i < cp_ledger_count (l); i++)
    {
      const struct cp_ledger_entry *e = cp_ledger_at (l, i);
      hwloc_bitmap_zero (used);
      cp_ledger_entry_taken (e, lv->cpus[i], used);
      if (hwloc_bitmap_intersects (used, cpus))
        json_object_array_add (a, jstr (e->id));
    }
  return a;
}

/* Each core's CPUs, in topology order: the map groups a core's threads. */
static json_object *
domain_cores (const struct cp_topo *topo, const struct cp_domain *d)
{
  json_object *a = json_object_new_array ();
  for (unsigned i = 0; i < d->n_cores; i++)
    json_object_array_add (a, jcpulist (topo->cores[d->cores[i]].pus));
  return a;
}

static json_object *
llc_occupancy (const struct cp_topo *topo, const struct cp_domain *d, const struct cp_ledger *l,
               const struct live *lv, const struct usage *u)
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
  cleanup_bitmap hwloc_bitmap_t kept = cp_bitmap_new ();
  hwloc_bitmap_and (kept, u->kept_back, d->cpus);
  add (o, "reserved", jcpulist (kept));
  add (o, "core_cpus", domain_cores (topo, d));
  add (o, "map", jstr (map));
  add (o, "holders", holders (l, lv, d->cpus));
  return o;
}

static void
usage_fill (const struct cp_ledger *l, const struct live *lv, const struct cp_topo *topo,
            const struct cp_hostconfig *hc, struct usage *u)
{
  u->held = cp_bitmap_new ();
  u->shared = cp_bitmap_new ();
  u->usable = cp_bitmap_dup (topo->allowed);
  hwloc_bitmap_and (u->usable, u->usable, hc->cpus);
  hwloc_bitmap_andnot (u->usable, u->usable, hc->reserved);
  u->kept_back = cp_bitmap_dup (topo->online);
  hwloc_bitmap_andnot (u->kept_back, u->kept_back, hc->cpus);
  hwloc_bitmap_or (u->kept_back, u->kept_back, hc->reserved);
  hwloc_bitmap_and (u->kept_back, u->kept_back, topo->online);
  for (size_t i = 0; i < cp_ledger_count (l); i++)
    {
      /* As the hook counts them, with what was read now (not read: what the
         last hook run saw). */
      const struct cp_ledger_entry *e = cp_ledger_at (l, i);
      cp_ledger_entry_taken (e, lv->cpus[i], e->mode == CP_MODE_EXCLUSIVE ? u->held : u->shared);
    }
}

/* The per-LLC map and the held CPUs that no LLC of this topology has (a ledger
   written under another topology). */
static void
add_occupancy (json_object *o, const struct cp_ledger *l, const struct live *lv, const struct cp_topo *topo,
               const struct cp_hostconfig *hc)
{
  struct usage u;
  usage_fill (l, lv, topo, hc, &u);
  json_object *a = json_object_new_array ();
  for (unsigned d = 0; d < topo->n_domains[CP_LEVEL_LLC]; d++)
    json_object_array_add (a, llc_occupancy (topo, &topo->domains[CP_LEVEL_LLC][d], l, lv, &u));
  add (o, "occupancy", a);
  add (o, "held", jcpulist (u.held));
  add (o, "held_count", json_object_new_int (hwloc_bitmap_weight (u.held)));
  hwloc_bitmap_andnot (u.held, u.held, topo->online);
  add (o, "held_outside_topology", jcpulist (u.held));
  hwloc_bitmap_free (u.held);
  hwloc_bitmap_free (u.shared);
  hwloc_bitmap_free (u.usable);
  hwloc_bitmap_free (u.kept_back);
}

/* What the hook (root) would refuse in the state directory (hook/state/ledger_store.c's
   open_state_dir()), as a phrase, or NULL. */
static char *
state_dir_problem (const char *dir)
{
  struct stat st;
  if (lstat (dir, &st) < 0)
    return NULL; /* missing: the hook creates it; unreadable: the ledger's error says so */
  if (S_ISLNK (st.st_mode))
    return cp_xasprintf ("the state directory %s is a symlink: the hook refuses it", dir);
  if (!S_ISDIR (st.st_mode))
    return cp_xasprintf ("the state directory %s is not a directory", dir);
  if (geteuid () == 0 && st.st_uid != 0)
    return cp_xasprintf ("the state directory %s is owned by uid %u, not root: the hook refuses it", dir,
                         (unsigned) st.st_uid);
  if (!cp_ledger_dir_mode_ok (st.st_mode))
    return cp_xasprintf (
        "the state directory %s has mode %04o, open to group or others (cachepin makes its own 0700): the hook "
        "refuses it",
        dir, (unsigned) (st.st_mode & 07777));
  return NULL;
}

/* One line each for people to act on (status itself repairs nothing): a state
   directory the hook refuses, and a ledger.json it set aside as untrusted. */
static json_object *
ledger_warnings (const char *dir)
{
  json_object *a = json_object_new_array ();
  cleanup_free char *problem = state_dir_problem (dir);
  if (problem)
    json_object_array_add (a, jstr (problem));
  cleanup_free char *aside = cp_xasprintf ("%s/%s", dir, CP_LEDGER_CORRUPT_FILE);
  struct stat st;
  struct tm tm;
  char when[32] = "?";
  if (lstat (aside, &st) < 0)
    return a;
  if (gmtime_r (&st.st_mtime, &tm))
    strftime (when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
  cleanup_free char *line = cp_xasprintf ("a ledger the hook could not trust was set aside as %s (%s)", aside, when);
  json_object_array_add (a, jstr (line));
  return a;
}

json_object *
cp_status_ledger (const struct cp_hostconfig *hc, bool have_config, const struct cp_topo *topo, bool *ok)
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
      add (f, "warnings", NULL);
      return f;
    }
  const char *state = NULL;
  cleanup_ledger struct cp_ledger *l = NULL;
  if (cp_ledger_read (hc->state_dir, &state, &l, &e) < 0)
    {
      json_object *f = failed_part (keys, e);
      add (f, "path", jstr (path));
      add (f, "state", jstr (state));
      add (f, "warnings", ledger_warnings (hc->state_dir));
      return f;
    }
  *ok = true;
  json_object *o = json_object_new_object ();
  add (o, "path", jstr (path));
  add (o, "state", jstr (state));
  int restore = cp_ledger_cas_restore (l);
  add (o, "sched_cache_restore", restore < 0 ? NULL : jstr (restore ? "on" : "off"));
  struct live lv;
  live_read (l, &lv);
  json_object *entries = json_object_new_array ();
  for (size_t i = 0; i < cp_ledger_count (l); i++)
    json_object_array_add (entries, entry_json (cp_ledger_at (l, i), lv.cpus[i], lv.gone[i], topo));
  add (o, "entries", entries);
  add (o, "warnings", ledger_warnings (hc->state_dir));
  if (topo)
    add_occupancy (o, l, &lv, topo, hc);
  else
    for (const char *const *k = keys + 2; *k; k++)
      add (o, *k, NULL);
  live_free (&lv);
  add (o, "errno", NULL);
  add (o, "error", NULL);
  return o;
}
