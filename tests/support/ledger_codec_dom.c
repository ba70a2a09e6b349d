/* cachepin: the reference ledger codec over json-c (see ledger_codec_dom.h).
 *
 * The hook's codec (ledger_codec.c) was this until it became the cost of a warm
 * hook (issue 12: json-c's DOM, one hash table per entry).  This copy stays as
 * the reference the differential test and fuzzer compare the fast codec with:
 * policy/base/json.c's strict reader, then the schema checked over json-c objects.
 * Nothing in the binary calls it. */
#define _GNU_SOURCE
#include "ledger_codec_dom.h"

#include "ledger_internal.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "json.h"
#include "bitmap.h"
#include "cpulist.h"
#include "util.h"

/* ------------------------------------------------------------------ reading */

static int
member (json_object *obj, const char *key, json_object **out, cp_error_t *err)
{
  if (!cp_json_member (obj, key, false, out))
    return cp_fail_input (err, "`%s` is missing", key);
  return 0;
}

/* Refuse keys not in KEYS (NULL-terminated). */
static int
only_keys (json_object *obj, const char *const *keys, cp_error_t *err)
{
  json_object_object_foreach (obj, name, value)
    {
      (void) value;
      bool known = false;
      for (const char *const *k = keys; *k && !known; k++)
        known = strcmp (name, *k) == 0;
      if (!known && cp_ledger_quotable (name))
        return cp_fail_input (err, "unknown key `%.64s`", name);
      if (!known)
        return cp_fail_input (err, "unknown key (not printable)");
    }
  return 0;
}

static int
get_int (json_object *obj, const char *key, int64_t max, int64_t *out, cp_error_t *err)
{
  json_object *v;
  cleanup_free char *field = cp_xasprintf ("`%s`", key);
  if (member (obj, key, &v, err) < 0 || cp_json_int (v, field, 0, max, out, err) < 0)
    return -1;
  return 0;
}

/* A string without NUL; emptiness and length are the entry check's to judge. */
static int
get_string (json_object *obj, const char *key, const char **out, cp_error_t *err)
{
  json_object *v;
  cleanup_free char *field = cp_xasprintf ("`%s`", key);
  if (member (obj, key, &v, err) < 0 || cp_json_string (v, field, SIZE_MAX, true, out, err) < 0)
    return -1;
  return 0;
}

static int
get_cpulist (json_object *obj, const char *key, bool allow_empty, hwloc_bitmap_t *out, cp_error_t *err)
{
  const char *s;
  if (get_string (obj, key, &s, err) < 0)
    return -1;
  *out = cp_bitmap_new ();
  /* The parser quotes the list in its errors: quote only lists of our alphabet. */
  if (s[strspn (s, "0123456789,-")] != '\0')
    return cp_fail_input (err, "`%s`: a character other than digits, `,` and `-`", key);
  if (cp_cpulist_parse (s, allow_empty ? CP_CPULIST_ALLOW_EMPTY : 0, *out, err) < 0)
    return cp_error_wrap (err, "`%s`", key);
  return 0;
}

static const char *const entry_keys_v1[] = {
  "id", "cgroup_mount", "cgroup", "pid", "start_time", "mode", "cpus", "held", "mems", "placed_at", NULL,
};
static const char *const entry_keys_v2[] = {
  "id",   "cgroup_mount", "cgroup",    "pid",         "start_time", "mode", "cpus",
  "held", "mems",         "placed_at", "sched_cache", "core_sched", NULL,
};
static const char *const entry_keys[] = {
  "id",        "cgroup_mount", "cgroup",     "pid",   "start_time", "mode", "cpus", "held", "mems",
  "placed_at", "sched_cache",  "core_sched", "drift", "cgroup_ino", "name", "isolated", "runtime", NULL,
};

static const char *const ask_names[] = { [CP_ASK_NONE] = "none", [CP_ASK_ON] = "on", [CP_ASK_OFF] = "off" };

static int
get_ask (json_object *obj, const char *key, enum cp_ask *out, cp_error_t *err)
{
  const char *s;
  if (get_string (obj, key, &s, err) < 0)
    return -1;
  for (size_t i = 0; i < CP_ARRAY_SIZE (ask_names); i++)
    if (strcmp (s, ask_names[i]) == 0)
      {
        *out = (enum cp_ask) i;
        return 0;
      }
  return cp_fail_input (err, "`%s`: expected \"none\", \"on\" or \"off\"", key);
}

static int
get_bool (json_object *obj, const char *key, bool *out, cp_error_t *err)
{
  json_object *v;
  if (member (obj, key, &v, err) < 0)
    return -1;
  if (!json_object_is_type (v, json_type_boolean))
    return cp_fail_input (err, "`%s`: expected true or false", key);
  *out = json_object_get_boolean (v);
  return 0;
}

/* Version 2's fields about kernel features (version 1 had none: nothing asked). */
static int
kernel_fields_from_json (json_object *obj, struct cp_ledger_entry *e, cp_error_t *err)
{
  if (get_ask (obj, "sched_cache", &e->sched_cache, err) < 0 || get_bool (obj, "core_sched", &e->core_sched, err) < 0)
    return -1;
  return 0;
}

/* Fills E from the object OBJ of a ledger of VERSION (the caller clears E, also
 * on failure). */
static int
entry_from_json (json_object *obj, int64_t version, struct cp_ledger_entry *e, cp_error_t *err)
{
  if (only_keys (obj, version == 1 ? entry_keys_v1 : version == 2 ? entry_keys_v2 : entry_keys, err) < 0)
    return -1;
  if (version > 1 && kernel_fields_from_json (obj, e, err) < 0)
    return -1;
  if (version > 2 ? get_cpulist (obj, "drift", true, &e->drift, err) < 0 : (e->drift = cp_bitmap_new (), false))
    return -1;
  const char *id, *mount, *cgroup, *mode;
  int64_t pid, start_time, placed_at, ino = 0;
  json_object *ino_value;
  if (cp_json_member (obj, "cgroup_ino", false, &ino_value)
      && get_int (obj, "cgroup_ino", CP_LEDGER_MAX_INT, &ino, err) < 0)
    return -1;
  e->cgroup_ino = (unsigned long long) ino;
  json_object *isolated_value;
  if (cp_json_member (obj, "isolated", false, &isolated_value) && get_bool (obj, "isolated", &e->isolated, err) < 0)
    return -1;
  json_object *name_value;
  const char *name;
  if (cp_json_member (obj, "name", false, &name_value))
    {
      if (get_string (obj, "name", &name, err) < 0)
        return -1;
      e->name = cp_xstrdup (name);
    }
  json_object *runtime_value;
  const char *runtime;
  if (cp_json_member (obj, "runtime", false, &runtime_value))
    {
      if (get_string (obj, "runtime", &runtime, err) < 0)
        return -1;
      e->runtime = cp_xstrdup (runtime);
    }
  if (get_string (obj, "id", &id, err) < 0 || get_string (obj, "cgroup_mount", &mount, err) < 0
      || get_string (obj, "cgroup", &cgroup, err) < 0 || get_int (obj, "pid", INT_MAX, &pid, err) < 0
      || get_int (obj, "start_time", CP_LEDGER_MAX_INT, &start_time, err) < 0
      || get_string (obj, "mode", &mode, err) < 0
      || get_int (obj, "placed_at", CP_LEDGER_MAX_INT, &placed_at, err) < 0)
    return -1;
  if (!cp_ledger_quotable (mode))
    return cp_fail_input (err, "`mode` has a control character or is not valid UTF-8");
  if (cp_parse_mode (mode, &e->mode, err) < 0)
    return cp_error_wrap (err, "`mode`");
  e->id = cp_xstrdup (id);
  e->cgroup_mount = cp_xstrdup (mount);
  e->cgroup = cp_xstrdup (cgroup);
  e->pid = (pid_t) pid;
  e->start_time = (unsigned long long) start_time;
  e->placed_at = (long long) placed_at;
  if (get_cpulist (obj, "cpus", false, &e->cpus, err) < 0 || get_cpulist (obj, "held", true, &e->held, err) < 0
      || get_cpulist (obj, "mems", true, &e->mems, err) < 0)
    return -1;
  return cp_ledger_entry_check (e, err);
}

static const char *const top_keys_v1[] = { "version", "entries", NULL };
static const char *const top_keys_v2[] = { "version", "entries", "sched_cache_restore", NULL };
static const char *const top_keys[] = { "version", "entries", "sched_cache_restore", "partitions", NULL };

/* The optional "sched_cache_restore": "on" | "off" (absent: -1). */
static int
restore_from_json (json_object *root, struct cp_ledger *l, cp_error_t *err)
{
  json_object *v;
  if (!cp_json_member (root, "sched_cache_restore", false, &v))
    return 0;
  const char *s;
  if (cp_json_string (v, "`sched_cache_restore`", 8, false, &s, err) < 0)
    return -1;
  if (strcmp (s, "on") != 0 && strcmp (s, "off") != 0)
    return cp_fail_input (err, "`sched_cache_restore`: expected \"on\" or \"off\"");
  l->cas_restore = strcmp (s, "on") == 0;
  return 0;
}

static int
ledger_from_json (json_object *root, struct cp_ledger *l, cp_error_t *err)
{
  json_object *version, *entries;
  int64_t number;
  if (member (root, "version", &version, err) < 0
      || cp_json_int (version, "`version`", 0, INT_MAX, &number, err) < 0)
    return -1;
  /* Versions 1 (before kernel features) and 2 (before drift) are still read, so
     that an upgrade keeps the running containers' CPUs held; they are written
     back as the current one. */
  if (number < 1 || number > CP_LEDGER_VERSION)
    return cp_fail_input (err, "unsupported version %lld (expected 1 to %d)", (long long) number,
                          CP_LEDGER_VERSION);
  if (only_keys (root, number == 1 ? top_keys_v1 : number == 2 ? top_keys_v2 : top_keys, err) < 0 || restore_from_json (root, l, err) < 0)
    return -1;
  if (member (root, "entries", &entries, err) < 0)
    return -1;
  if (!json_object_is_type (entries, json_type_array))
    {
      cleanup_free char *got = cp_json_describe (entries);
      return cp_fail_input (err, "`entries`: expected an array, got %s", got);
    }
  size_t n = json_object_array_length (entries);
  if (n > CP_LEDGER_MAX_ENTRIES)
    return cp_fail_input (err, "%zu entries, more than the limit %d", n, CP_LEDGER_MAX_ENTRIES);
  for (size_t i = 0; i < n; i++)
    {
      json_object *v = json_object_array_get_idx (entries, i);
      cleanup_free char *field = cp_xasprintf ("entry %zu", i);
      if (cp_json_object (v, field, err) < 0)
        return -1;
      struct cp_ledger_entry *e = cp_ledger_append (l);
      if (entry_from_json (v, number, e, err) < 0)
        {
          if (e->id && cp_ledger_quotable (e->id))
            return cp_error_wrap (err, "entry %zu (`%.64s`)", i, e->id);
          return cp_error_wrap (err, "entry %zu", i);
        }
    }
  if (cp_ledger_check_entries (l, err) < 0)
    return -1;
  json_object *parts;
  if (!cp_json_member (root, "partitions", false, &parts))
    return 0;
  return cp_ledger_partitions_from_json (parts, l, err);
}

int
cp_ledger_parse_dom (const char *buf, size_t len, struct cp_ledger **out, cp_error_t *err)
{
  if (len > CP_LEDGER_MAX_SIZE)
    return cp_fail_input (err, "%zu bytes, more than the limit %d", len, CP_LEDGER_MAX_SIZE);
  cleanup_json json_object *root = NULL;
  if (cp_json_parse_object (buf, len, &root, err) < 0)
    return -1;
  cleanup_ledger struct cp_ledger *l = cp_ledger_new ();
  if (ledger_from_json (root, l, err) < 0)
    return -1;
  *out = cp_steal_pointer (&l);
  return 0;
}

/* ------------------------------------------------------------------ writing */

static json_object *
json_cpulist_new (hwloc_const_bitmap_t set)
{
  cleanup_free char *s = cp_cpulist_format (set);
  return json_object_new_string (s);
}

static json_object *
entry_to_json (const struct cp_ledger_entry *e)
{
  json_object *o = json_object_new_object ();
  if (o == NULL)
    abort ();
  json_object_object_add (o, "id", json_object_new_string (e->id));
  if (e->name && *e->name)
    json_object_object_add (o, "name", json_object_new_string (e->name));
  json_object_object_add (o, "cgroup_mount", json_object_new_string (e->cgroup_mount));
  json_object_object_add (o, "cgroup", json_object_new_string (e->cgroup));
  if (e->cgroup_ino)
    json_object_object_add (o, "cgroup_ino", json_object_new_int64 ((int64_t) e->cgroup_ino));
  json_object_object_add (o, "pid", json_object_new_int64 (e->pid));
  json_object_object_add (o, "start_time", json_object_new_int64 ((int64_t) e->start_time));
  json_object_object_add (o, "mode", json_object_new_string (cp_mode_name (e->mode)));
  json_object_object_add (o, "cpus", json_cpulist_new (e->cpus));
  json_object_object_add (o, "held", json_cpulist_new (e->held));
  json_object_object_add (o, "mems", json_cpulist_new (e->mems));
  json_object_object_add (o, "placed_at", json_object_new_int64 (e->placed_at));
  json_object_object_add (o, "sched_cache", json_object_new_string (ask_names[e->sched_cache]));
  json_object_object_add (o, "core_sched", json_object_new_boolean (e->core_sched));
  json_object_object_add (o, "drift", e->drift ? json_cpulist_new (e->drift) : json_object_new_string (""));
  if (e->isolated)
    json_object_object_add (o, "isolated", json_object_new_boolean (true));
  if (e->runtime)
    json_object_object_add (o, "runtime", json_object_new_string (e->runtime));
  return o;
}

char *
cp_ledger_serialize_dom (const struct cp_ledger *l)
{
  json_object *root = json_object_new_object ();
  json_object *entries = json_object_new_array ();
  if (root == NULL || entries == NULL)
    abort ();
  json_object_object_add (root, "version", json_object_new_int (CP_LEDGER_VERSION));
  json_object_object_add (root, "entries", entries);
  if (l->cas_restore >= 0)
    json_object_object_add (root, "sched_cache_restore", json_object_new_string (l->cas_restore ? "on" : "off"));
  for (size_t i = 0; i < l->n; i++)
    json_object_array_add (entries, entry_to_json (&l->entries[i]));
  if (l->n_parts)
    {
      json_object *parts = json_object_new_array ();
      for (size_t i = 0; i < l->n_parts; i++)
        {
          const struct cp_ledger_partition *p = &l->parts[i];
          json_object *o = json_object_new_object ();
          json_object_object_add (o, "id", json_object_new_string (p->id));
          json_object_object_add (o, "cgroup_mount", json_object_new_string (p->cgroup_mount));
          json_object_object_add (o, "cgroup", json_object_new_string (p->cgroup));
          json_object_object_add (o, "added", json_cpulist_new (p->added));
          json_object_object_add (o, "root", json_object_new_boolean (p->root));
          if (p->invalid)
            json_object_object_add (o, "invalid", json_object_new_boolean (true));
          json_object_array_add (parts, o);
        }
      json_object_object_add (root, "partitions", parts);
    }
  const char *text = json_object_to_json_string_ext (root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
  if (text == NULL)
    abort ();
  char *ret = cp_xasprintf ("%s\n", text);
  json_object_put (root);
  return ret;
}
