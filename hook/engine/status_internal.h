/* cachepin: what the files of `cachepin status` share (cmd_status.c the command,
 * status_host.c the cgroup mode and kernel features, status_ledger.c the topology
 * and the ledger, status_text.c the text).  Each part is a JSON object whose keys
 * are always present (null when unknown) with an "error": null or why the part
 * could not be read, and an "errno": the errno behind it (null: none or no error); *OK is set when the part could be read at least in part. */
#ifndef CP_STATUS_INTERNAL_H
#define CP_STATUS_INTERNAL_H

#include <hwloc.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <string.h>

#include "cpulist.h"
#include "error.h"
#include "topo.h"
#include "util.h"
#include "hostconfig.h"
#include "topocache.h"
#include "status.h"

json_object *cp_status_cgroup (bool *ok);
json_object *cp_status_features (const struct cp_hostconfig *hc, bool *ok);
/* TOPO NULL: it could not be loaded from SOURCE, E says why.  ORIGIN: whether
   it came from the topology cache. */
json_object *cp_status_topology (const struct cp_topo *topo, const char *source, const struct cp_topocache_origin *origin,
                                 cp_error_t e, bool *ok);
/* HAVE_CONFIG false: HC holds the defaults, and the ledger is not read.  TOPO may
   be NULL (no occupancy then). */
json_object *cp_status_ledger (const struct cp_hostconfig *hc, bool have_config, const struct cp_topo *topo,
                               bool *ok);

static inline json_object *
jstr (const char *s)
{
  return s ? json_object_new_string (s) : NULL;
}

/* A cpulist; "all" for the infinite set (the config's cpus when not restricted). */
static inline json_object *
jcpulist (hwloc_const_bitmap_t set)
{
  if (hwloc_bitmap_weight (set) < 0)
    return json_object_new_string ("all");
  cleanup_free char *s = cp_cpulist_format (set);
  return json_object_new_string (s);
}

static inline void
add (json_object *obj, const char *key, json_object *value)
{
  json_object_object_add (obj, key, value);
}

/* An errno by its name ("EACCES"), null for none: what a part's "errno" holds,
   so that a front end decides on the error (cmd_status.c's root hint) without
   reading its text. */
static inline json_object *
jerrno (int errnum)
{
  return errnum ? jstr (strerrorname_np (errnum)) : NULL;
}

/* A part that could not be read: KEYS (NULL-terminated) present and null, why,
   and the errno behind it. */
static inline json_object *
failed_part (const char *const *keys, cp_error_t e)
{
  json_object *o = json_object_new_object ();
  for (const char *const *k = keys; *k; k++)
    add (o, *k, NULL);
  add (o, "errno", jerrno (cp_error_errno (e)));
  add (o, "error", jstr (cp_error_message (e)));
  return o;
}

#endif
