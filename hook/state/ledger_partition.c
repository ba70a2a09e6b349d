/* cachepin: the ledger's partition records (see ledger_partition.h). */
#define _GNU_SOURCE
#include "ledger_internal.h"

#include <string.h>

#include "bitmap.h"
#include "cpulist.h"
#include "json.h"
#include "util.h"

size_t
cp_ledger_partition_count (const struct cp_ledger *l)
{
  return l->n_parts;
}

const struct cp_ledger_partition *
cp_ledger_partition_at (const struct cp_ledger *l, size_t i)
{
  return i < l->n_parts ? &l->parts[i] : NULL;
}

const struct cp_ledger_partition *
cp_ledger_partition_root (const struct cp_ledger *l, const char *id)
{
  for (size_t i = 0; i < l->n_parts; i++)
    if (l->parts[i].root && strcmp (l->parts[i].id, id) == 0)
      return &l->parts[i];
  return NULL;
}

static void
part_clear (struct cp_ledger_partition *p)
{
  free (p->id);
  free (p->cgroup_mount);
  free (p->cgroup);
  hwloc_bitmap_free (p->added);
  memset (p, 0, sizeof *p);
}

void
cp_ledger_partitions_clear (struct cp_ledger *l)
{
  for (size_t i = 0; i < l->n_parts; i++)
    part_clear (&l->parts[i]);
  free (l->parts);
  l->parts = NULL;
  l->n_parts = 0;
}

static int
part_check (const struct cp_ledger_partition *p, cp_error_t *err)
{
  if (cp_ledger_check_text ("id", p->id, CP_LEDGER_MAX_ID, err) < 0
      || cp_ledger_check_path ("cgroup_mount", p->cgroup_mount, err) < 0
      || cp_ledger_check_path ("cgroup", p->cgroup, err) < 0)
    return -1;
  if (strcmp (p->cgroup, "/") == 0)
    return cp_fail_input (err, "`cgroup` is the root cgroup");
  if (p->added == NULL || hwloc_bitmap_weight (p->added) < 0 || hwloc_bitmap_last (p->added) > CP_CPULIST_MAX)
    return cp_fail_input (err, "`added` is not a finite cpulist");
  if (p->root && hwloc_bitmap_iszero (p->added))
    return cp_fail_input (err, "`added` is empty in the root record");
  if (!p->root && p->invalid)
    return cp_fail_input (err, "`invalid` outside the root record");
  return 0;
}

/* A proper ancestor: "/a" of "/a/b". */
static bool
ancestor_of (const char *a, const char *b)
{
  size_t n = strlen (a);
  return strncmp (a, b, n) == 0 && b[n] == '/';
}

/* The rules across records (ledger_partition.h), over PARTS (N). */
static int
check_all (const struct cp_ledger_partition *parts, size_t n, cp_error_t *err)
{
  if (n > CP_LEDGER_MAX_PARTITIONS)
    return cp_fail_input (err, "%zu partition records, more than the limit %d", n, CP_LEDGER_MAX_PARTITIONS);
  for (size_t i = 0; i < n; i++)
    {
      const struct cp_ledger_partition *p = &parts[i], *root = NULL;
      for (size_t j = 0; j < n; j++)
        {
          const struct cp_ledger_partition *q = &parts[j];
          bool same_id = strcmp (p->id, q->id) == 0;
          if (same_id && q->root)
            {
              if (root)
                return cp_fail_input (err, "partitions: `%.64s` has two root records", p->id);
              root = q;
            }
          if (j != i && strcmp (p->cgroup, q->cgroup) == 0 && strcmp (p->cgroup_mount, q->cgroup_mount) == 0
              && (same_id || hwloc_bitmap_intersects (p->added, q->added)))
            return cp_fail_input (err, "partitions: cgroup %.64s is recorded twice for the same CPUs or id", p->cgroup);
        }
      if (root == NULL)
        return cp_fail_input (err, "partitions: `%.64s` has no root record", p->id);
      if (p != root
          && (strcmp (p->cgroup_mount, root->cgroup_mount) != 0 || !ancestor_of (p->cgroup, root->cgroup)))
        return cp_fail_input (err, "partitions: `%.64s`: cgroup %.64s is not an ancestor of its root %.64s", p->id,
                              p->cgroup, root->cgroup);
    }
  return 0;
}

static void
part_copy (struct cp_ledger_partition *dst, const struct cp_ledger_partition *src)
{
  dst->id = cp_xstrdup (src->id);
  dst->cgroup_mount = cp_xstrdup (src->cgroup_mount);
  dst->cgroup = cp_xstrdup (src->cgroup);
  dst->added = cp_bitmap_dup (src->added);
  dst->root = src->root;
  dst->invalid = src->invalid;
}

int
cp_ledger_partition_set (struct cp_ledger *l, const char *id, const struct cp_ledger_partition *recs, size_t n,
                         cp_error_t *err)
{
  size_t kept = 0;
  for (size_t i = 0; i < l->n_parts; i++)
    kept += strcmp (l->parts[i].id, id) != 0;
  struct cp_ledger_partition *all = cp_xcalloc (kept + n + 1, sizeof *all);
  size_t k = 0;
  for (size_t i = 0; i < l->n_parts; i++)
    if (strcmp (l->parts[i].id, id) != 0)
      all[k++] = l->parts[i]; /* shallow until accepted */
  for (size_t i = 0; i < n; i++)
    {
      int bad = strcmp (recs[i].id, id) != 0 ? cp_fail_input (err, "another id") : part_check (&recs[i], err);
      if (bad < 0)
        {
          free (all);
          return cp_error_wrap (err, "partition record of `%.64s`", id);
        }
      all[k++] = recs[i];
    }
  if (check_all (all, k, err) < 0)
    {
      free (all);
      return -1;
    }
  /* Accepted: the old records of ID go, the new ones are copied in. */
  for (size_t i = 0; i < l->n_parts; i++)
    if (strcmp (l->parts[i].id, id) == 0)
      part_clear (&l->parts[i]);
  for (size_t i = kept; i < k; i++)
    part_copy (&all[i], &recs[i - kept]);
  free (l->parts);
  l->parts = all;
  l->n_parts = k;
  l->dirty = true;
  return 0;
}

void
cp_ledger_partition_mark (struct cp_ledger *l, const char *id, bool invalid)
{
  for (size_t i = 0; i < l->n_parts; i++)
    if (l->parts[i].root && strcmp (l->parts[i].id, id) == 0 && l->parts[i].invalid != invalid)
      {
        l->parts[i].invalid = invalid;
        l->dirty = true;
      }
}

void
cp_ledger_partitions_taken (const struct cp_ledger *l, const char *exclude_id, hwloc_bitmap_t into)
{
  for (size_t i = 0; i < l->n_parts; i++)
    if (l->parts[i].root && (exclude_id == NULL || strcmp (l->parts[i].id, exclude_id) != 0))
      hwloc_bitmap_or (into, into, l->parts[i].added);
}

/* ---------------------------------------------------------------- the codec */

static int
get_string (json_object *o, const char *key, char **out, cp_error_t *err)
{
  json_object *v;
  const char *s;
  cleanup_free char *field = cp_xasprintf ("`%s`", key);
  if (!cp_json_member (o, key, false, &v))
    return cp_fail_input (err, "`%s` is missing", key);
  if (cp_json_string (v, field, SIZE_MAX, true, &s, err) < 0)
    return -1;
  *out = cp_xstrdup (s);
  return 0;
}

static int
record_from_json (json_object *o, struct cp_ledger_partition *p, cp_error_t *err)
{
  static const char *const keys[] = { "id", "cgroup_mount", "cgroup", "added", "root", "invalid" };
  json_object_object_foreach (o, name, value)
    {
      (void) value;
      bool known = false;
      for (size_t k = 0; k < CP_ARRAY_SIZE (keys) && !known; k++)
        known = strcmp (name, keys[k]) == 0;
      if (!known)
        return cp_ledger_quotable (name) ? cp_fail_input (err, "unknown key `%.64s`", name)
                                         : cp_fail_input (err, "unknown key (not printable)");
    }
  cleanup_free char *added = NULL;
  json_object *root;
  if (get_string (o, "id", &p->id, err) < 0 || get_string (o, "cgroup_mount", &p->cgroup_mount, err) < 0
      || get_string (o, "cgroup", &p->cgroup, err) < 0 || get_string (o, "added", &added, err) < 0)
    return -1;
  if (!cp_json_member (o, "root", false, &root))
    return cp_fail_input (err, "`root` is missing");
  if (!json_object_is_type (root, json_type_boolean))
    return cp_fail_input (err, "`root`: expected true or false");
  p->root = json_object_get_boolean (root);
  json_object *invalid;
  if (cp_json_member (o, "invalid", false, &invalid))
    {
      if (!json_object_is_type (invalid, json_type_boolean))
        return cp_fail_input (err, "`invalid`: expected true or false");
      p->invalid = json_object_get_boolean (invalid);
    }
  p->added = cp_bitmap_new ();
  if (added[strspn (added, "0123456789,-")] != '\0')
    return cp_fail_input (err, "`added`: a character other than digits, `,` and `-`");
  if (cp_cpulist_parse (added, CP_CPULIST_ALLOW_EMPTY, p->added, err) < 0)
    return cp_error_wrap (err, "`added`");
  return part_check (p, err);
}

int
cp_ledger_partitions_from_json (json_object *array, struct cp_ledger *l, cp_error_t *err)
{
  if (!json_object_is_type (array, json_type_array))
    {
      cleanup_free char *got = cp_json_describe (array);
      return cp_fail_input (err, "`partitions`: expected an array, got %s", got);
    }
  size_t n = json_object_array_length (array);
  if (n > CP_LEDGER_MAX_PARTITIONS)
    return cp_fail_input (err, "%zu partition records, more than the limit %d", n, CP_LEDGER_MAX_PARTITIONS);
  cp_ledger_partitions_clear (l);
  l->parts = cp_xcalloc (n + 1, sizeof *l->parts);
  for (size_t i = 0; i < n; i++)
    {
      json_object *v = json_object_array_get_idx (array, i);
      cleanup_free char *field = cp_xasprintf ("partitions[%zu]", i);
      l->n_parts++;
      if (cp_json_object (v, field, err) < 0)
        return -1;
      if (record_from_json (v, &l->parts[i], err) < 0)
        return cp_error_wrap (err, "%s", field);
    }
  return check_all (l->parts, l->n_parts, err);
}

int
cp_ledger_partitions_parse (const char *text, size_t len, struct cp_ledger *l, cp_error_t *err)
{
  /* The strict reader takes objects: the array is read as one's member. */
  cleanup_free char *wrapped = cp_xasprintf ("{\"partitions\":%.*s}", (int) len, text);
  cleanup_json json_object *o = NULL;
  json_object *array;
  if (cp_json_parse_object (wrapped, strlen (wrapped), &o, err) < 0)
    return cp_error_wrap (err, "`partitions`");
  cp_json_member (o, "partitions", false, &array);
  return cp_ledger_partitions_from_json (array, l, err);
}
