/* `cachepin status` as text (status_text.c, status_entries.c): reading the
 * status object (status.h) and the 80-column view it is written in
 * (status_view.c).  Every string read with S() is sanitized (policy/base/text.h):
 * ids, paths and messages come from files others wrote. */
#ifndef CP_STATUS_VIEW_H
#define CP_STATUS_VIEW_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "text.h"

/* ---- the status object: a key that is missing or of another type is "?", 0 or NULL ---- */

static inline json_object *
get (json_object *o, const char *key)
{
  json_object *v = NULL;
  if (o == NULL || !json_object_is_type (o, json_type_object) || !json_object_object_get_ex (o, key, &v))
    return NULL;
  return v;
}

/* The string at KEY, sanitized into BUF; "?" when it is not a string. */
static inline const char *
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

static inline bool
is_null (json_object *o, const char *key)
{
  return get (o, key) == NULL;
}

static inline int64_t
num (json_object *o, const char *key)
{
  return json_object_get_int64 (get (o, key));
}

static inline size_t
len (json_object *o, const char *key)
{
  json_object *v = get (o, key);
  return json_object_is_type (v, json_type_array) ? json_object_array_length (v) : 0;
}

static inline json_object *
at (json_object *o, const char *key, size_t i)
{
  return json_object_array_get_idx (get (o, key), i);
}

/* The widest string at KEY among the objects in the array ARR, at least MIN. */
static inline int
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

/* ---- the view ---- */

#define CP_VIEW_COLS 80

struct cp_view
{
  FILE *out;
  bool wide; /* --wide: every field in full, no line cut or wrapped */
};

/* Terminal columns of S's first BYTES bytes (sanitized UTF-8): one per character. */
size_t cp_view_columns (const char *s, size_t bytes);

/* One line on V, from FMT: in the default view wrapped at CP_VIEW_COLS after a
   space or a comma (a word longer than a line is cut where it must), each
   continuation indented by INDENT columns; in the wide view as it is. */
void cp_view_line (const struct cp_view *v, size_t indent, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));

/* The line S, a list of items separated by spaces ("#7:56-63,248-255 #8:..."),
   as cp_view_line() writes it but wrapped after a space only, so that an item is
   never split over two lines (one L3's CPU list read as two). */
void cp_view_items (const struct cp_view *v, size_t indent, const char *s);

/* S fitted in COLS columns into BUF: as it is when it fits, else with an
   ellipsis in the MIDDLE (paths: both ends tell) or at the end. */
const char *cp_view_fit (const char *s, size_t cols, bool middle, char *buf, size_t size);

/* S then spaces to COLS columns on OUT (printf's %-*s counts bytes). */
void cp_view_cell (FILE *out, const char *s, size_t cols);

/* A cpulist in COLS columns: whole ranges, then "+" when more follow. */
const char *cp_view_fit_cpulist (const char *s, size_t cols, char *buf, size_t size);

/* ---- the ledger's entries (status_entries.c) ---- */

/* The widest short id: a container's 12 characters, "apply:<cgroup>" cut. */
#define CP_STATUS_ID_COLS 18

/* ID as the default view shows it (at most CP_STATUS_ID_COLS columns) into BUF
   (4 * CP_STATUS_ID_COLS + 8 bytes): a long hex container id's first 12
   characters, as podman and crictl print it; an `apply` entry as
   "apply:<CGROUP>" (its path under the cpuset mount; CGROUP NULL: the id); the
   middle cut when long. */
const char *cp_status_short_id (const char *id, const char *cgroup, char *buf, size_t size);

/* The ledger part's entries: the table (its header when there are any) and a
   line for each entry that is not ok. */
void cp_status_print_entries (const struct cp_view *v, json_object *entries);

/* The ledger part's map (status_map.c): the occupancy of each domain (LABEL:
   "L3", "L2"...) drawn as `plan` draws its map (cpumap.h), with who holds it. */
void cp_status_print_map (FILE *out, json_object *ledger, const char *label);

#endif
