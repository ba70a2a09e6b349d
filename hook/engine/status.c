/* cachepin: `cachepin status` gathered: the cgroup mode, the topology, the ledger
 * with its occupancy, the kernel features, the kubelet and the configuration in
 * effect, assembled from the parts status_host.c and status_ledger.c read
 * (status_internal.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <time.h>

#include "manager.h"
#include "log.h"
#include "status_internal.h"
#include "topocache.h"
#include "journal.h"
#include "why.h"

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
                                      "on_error", "log_level", "lock_timeout_ms", "sandbox", "sched_cache",
                                      "isolate", "kernel_root", "kubelet_state", "cdi_dir", NULL };
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
  add (o, "sched_cache", jstr (cp_sched_cache_setting_name (hc->sched_cache)));
  add (o, "isolate", jstr (cp_isolate_setting_name (hc->isolate)));
  add (o, "kernel_root", jstr (hc->kernel_root));
  add (o, "kubelet_state", jstr (hc->kubelet_state));
  add (o, "cdi_dir", jstr (hc->cdi_dir));
  add (o, "errno", NULL);
  add (o, "error", NULL);
  return o;
}

/* ------------------------------------------------------------------ the journal */

/* The journal's counts that are not zero, as it writes them: front, kind,
   cause and n. */
static json_object *
decisions_json (const struct cp_journal_counts *c)
{
  json_object *a = json_object_new_array ();
  for (unsigned f = 0; f < CP_JOURNAL_N_FRONTS; f++)
    for (unsigned k = 0; k < CP_JOURNAL_N_KINDS; k++)
      for (unsigned w = 0; w < CP_JOURNAL_N_CAUSES; w++)
        if (c->n[f][k][w] != 0)
          {
            json_object *o = json_object_new_object ();
            add (o, "front", jstr (cp_journal_front_name ((enum cp_journal_front) f)));
            add (o, "kind", jstr (cp_journal_kind_name ((enum cp_journal_kind) k)));
            add (o, "cause", jstr (cp_journal_cause_name ((enum cp_journal_cause) w)));
            add (o, "n", json_object_new_int64 ((int64_t) c->n[f][k][w]));
            json_object_array_add (a, o);
          }
  return a;
}

/* The journal, read without its lock, into ROOT: its last CP_STATUS_RECENT
   records as "recent" (oldest first), and what needs attention (why.h) as
   "attention", and its counts as "decisions"; "recent_error" says why they are not there (null then). */
static void
recent_part (json_object *root, const struct cp_hostconfig *hc, bool have_config)
{
  cleanup_error cp_error_t e = NULL;
  cleanup_journal_list struct cp_journal_list *l = NULL;
  if (!have_config || cp_journal_read (hc->state_dir, 0, &l, &e) < 0)
    {
      add (root, "attention", NULL);
      add (root, "recent", NULL);
      add (root, "decisions", NULL);
      add (root, "recent_errno", have_config ? jerrno (cp_error_errno (e)) : NULL);
      add (root, "recent_error", have_config ? jstr (cp_error_message (e))
                                             : jstr ("the host configuration could not be read: no state directory"));
      return;
    }
  add (root, "attention", cp_why_attention (l, (long long) time (NULL)));
  json_object *a = json_object_new_array ();
  for (size_t i = l->n > CP_STATUS_RECENT ? l->n - CP_STATUS_RECENT : 0; i < l->n; i++)
    json_object_array_add (a, cp_why_record_json (&l->records[i]));
  add (root, "recent", a);
  add (root, "decisions", decisions_json (&l->counts));
  add (root, "recent_errno", NULL);
  add (root, "recent_error", NULL);
}

/* ------------------------------------------------------------------ the command */

/* The ids of LEDGER's entries whose KEY is VALUE (a JSON array), or null when
   the ledger could not be read. */
static json_object *
entries_where (json_object *ledger, const char *key, json_object *value)
{
  json_object *entries = NULL;
  if (!json_object_object_get_ex (ledger, "entries", &entries) || !json_object_is_type (entries, json_type_array))
    return NULL;
  json_object *ids = json_object_new_array ();
  for (size_t i = 0; i < json_object_array_length (entries); i++)
    {
      json_object *e = json_object_array_get_idx (entries, i), *v = NULL, *id = NULL;
      if (json_object_object_get_ex (e, key, &v) && json_object_equal (v, value)
          && json_object_object_get_ex (e, "id", &id))
        json_object_array_add (ids, json_object_get (id));
    }
  return ids;
}

/* Each kernel feature with the containers that asked for it, and for cache-aware
   scheduling the value cachepin will give back (null: it does not hold it). */
static void
link_features (json_object *features, json_object *ledger)
{
  json_object *cas = NULL, *core = NULL, *restore = NULL;
  json_object *on = json_object_new_string ("on"), *yes = json_object_new_boolean (true);
  if (json_object_object_get_ex (features, "cache_aware_scheduling", &cas))
    {
      add (cas, "asked_by", entries_where (ledger, "sched_cache", on));
      json_object_object_get_ex (ledger, "sched_cache_restore", &restore);
      add (cas, "restore", json_object_get (restore));
    }
  if (json_object_object_get_ex (features, "core_scheduling", &core))
    add (core, "asked_by", entries_where (ledger, "core_sched", yes));
  json_object_put (on);
  json_object_put (yes);
}

/* The parts from HC (HAVE_CONFIG false: defaults, the config at CONFIG not read,
   CFG_ERR says why). */
static int
gather (const struct cp_hostconfig *hc, bool have_config, const char *config, cp_error_t cfg_err, json_object **out,
        cp_error_t *err)
{
  struct cp_topo *topo = NULL;
  cleanup_error cp_error_t topo_err = NULL;
  struct cp_topocache_origin origin = { 0 };
  if (cp_topocache_load_from (hc, CP_TOPOCACHE_READ_ONLY, &topo, &origin, &topo_err) < 0)
    topo = NULL;

  bool ok[5] = { false };
  json_object *root = json_object_new_object ();
  add (root, "format", json_object_new_int (CP_STATUS_FORMAT));
  recent_part (root, hc, have_config); /* what needs attention leads */
  add (root, "cgroup", cp_status_cgroup (&ok[0]));
  add (root, "topology", cp_status_topology (topo, hc->topology, &origin, topo_err, &ok[1]));
  cp_topocache_origin_clear (&origin);
  json_object *ledger = cp_status_ledger (hc, have_config, topo, &ok[2]);
  json_object *features = cp_status_features (hc, &ok[3]);
  link_features (features, ledger);
  add (root, "ledger", ledger);
  add (root, "features", features);
  /* Each manager's part (manager.h): the kubelet's today. */
  struct cp_manager_ctx mctx = { .step = CP_MANAGER_STATUS, .kubelet_state = hc->kubelet_state };
  cp_managers_status (NULL, &mctx, root);
  add (root, "config", config_part (config, hc, cfg_err, &ok[4]));
  cp_topo_free (topo);
  if (!ok[0] && !ok[1] && !ok[2] && !ok[3] && !ok[4])
    {
      json_object_put (root);
      return cp_fail_runtime (err, "nothing could be read (the host configuration: %s)",
                              cfg_err ? cp_error_message (cfg_err) : "read");
    }
  *out = root;
  return 0;
}

int
cp_status_gather (const char *config, json_object **out, cp_error_t *err)
{
  struct cp_hostconfig hc = { 0 };
  cleanup_error cp_error_t cfg_err = NULL;
  bool have_config = cp_hostconfig_load (config, &hc, &cfg_err) == 0;
  if (!have_config)
    cp_hostconfig_init (&hc); /* the topology still shows; the ledger does not */
  int r = gather (&hc, have_config, config ? config : CP_HOSTCONFIG_DEFAULT_PATH, cfg_err, out, err);
  cp_hostconfig_free (&hc);
  return r;
}

int
cp_status_gather_hc (const struct cp_hostconfig *hc, json_object **out, cp_error_t *err)
{
  return gather (hc, true, hc->path ? hc->path : CP_HOSTCONFIG_DEFAULT_PATH, NULL, out, err);
}

/* EACCES or EPERM in O's "errno" (named as jerrno() names them). */
static bool
errno_denied (json_object *o, const char *key)
{
  json_object *v = NULL;
  if (!json_object_is_type (o, json_type_object) || !json_object_object_get_ex (o, key, &v)
      || !json_object_is_type (v, json_type_string))
    return false;
  const char *name = json_object_get_string (v);
  return strcmp (name, strerrorname_np (EACCES)) == 0 || strcmp (name, strerrorname_np (EPERM)) == 0;
}

/* EACCES or EPERM in OBJ's own "errno", or in that of an object it holds (the
   kernel features are parts within "features"). */
static bool
part_denied (json_object *obj)
{
  if (errno_denied (obj, "errno"))
    return true;
  if (!json_object_is_type (obj, json_type_object))
    return false;
  json_object_object_foreach (obj, key, inner)
  {
    (void) key;
    if (errno_denied (inner, "errno"))
      return true;
  }
  return false;
}

bool
cp_status_denied (json_object *status)
{
  if (errno_denied (status, "recent_errno"))
    return true;
  json_object_object_foreach (status, name, part)
  {
    (void) name;
    if (part_denied (part))
      return true;
  }
  return false;
}
