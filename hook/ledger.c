/* cachepin: the ledger of placed containers (see ledger.h for the format). */
#define _GNU_SOURCE
#include "ledger.h"
#include "../policy/bitmap.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../policy/cpulist.h"
#include "../policy/util.h"

struct cp_ledger
{
  char *dir;    /* the state directory, for messages; NULL when detached */
  int dirfd;    /* -1 when detached (cp_ledger_parse) */
  int lockfd;   /* holds the flock; -1 when detached */
  struct cp_ledger_entry *entries;
  size_t n, cap;
  bool dirty;      /* changed since read or last commit */
  char *recovered; /* why ledger.json was set aside, or NULL */
};

/* ---------------------------------------------------------------- helpers */

static void
entry_clear (struct cp_ledger_entry *e)
{
  free (e->id);
  free (e->cgroup_mount);
  free (e->cgroup);
  hwloc_bitmap_free (e->cpus);
  hwloc_bitmap_free (e->held);
  hwloc_bitmap_free (e->mems);
  memset (e, 0, sizeof *e);
}

/* SRC has passed cp_ledger_entry_check(). */
static void
entry_copy (struct cp_ledger_entry *dst, const struct cp_ledger_entry *src)
{
  dst->id = cp_xstrdup (src->id);
  dst->cgroup_mount = cp_xstrdup (src->cgroup_mount);
  dst->cgroup = cp_xstrdup (src->cgroup);
  dst->pid = src->pid;
  dst->start_time = src->start_time;
  dst->mode = src->mode;
  dst->cpus = cp_bitmap_dup (src->cpus);
  dst->held = cp_bitmap_dup (src->held);
  dst->mems = cp_bitmap_dup (src->mems);
  dst->placed_at = src->placed_at;
}

static bool
entry_equal (const struct cp_ledger_entry *a, const struct cp_ledger_entry *b)
{
  return strcmp (a->id, b->id) == 0 && strcmp (a->cgroup_mount, b->cgroup_mount) == 0
         && strcmp (a->cgroup, b->cgroup) == 0 && a->pid == b->pid && a->start_time == b->start_time
         && a->mode == b->mode && hwloc_bitmap_isequal (a->cpus, b->cpus)
         && hwloc_bitmap_isequal (a->held, b->held) && hwloc_bitmap_isequal (a->mems, b->mems)
         && a->placed_at == b->placed_at;
}

static struct cp_ledger *
ledger_new (void)
{
  struct cp_ledger *l = cp_xmalloc0 (sizeof *l);
  l->dirfd = -1;
  l->lockfd = -1;
  return l;
}

static struct cp_ledger_entry *
ledger_append (struct cp_ledger *l)
{
  if (l->n == l->cap)
    {
      l->cap = l->cap ? l->cap * 2 : 16;
      l->entries = cp_xrealloc (l->entries, l->cap * sizeof *l->entries);
    }
  struct cp_ledger_entry *e = &l->entries[l->n++];
  memset (e, 0, sizeof *e);
  return e;
}

static ssize_t
index_of (const struct cp_ledger *l, const char *id)
{
  for (size_t i = 0; i < l->n; i++)
    if (strcmp (l->entries[i].id, id) == 0)
      return (ssize_t) i;
  return -1;
}

/* The first exclusive entry other than SKIP whose held CPUs meet HELD, or -1. */
static ssize_t
find_overlap (const struct cp_ledger *l, hwloc_const_bitmap_t held, ssize_t skip)
{
  for (size_t i = 0; i < l->n; i++)
    if ((ssize_t) i != skip && l->entries[i].mode == CP_MODE_EXCLUSIVE
        && hwloc_bitmap_intersects (l->entries[i].held, held))
      return (ssize_t) i;
  return -1;
}

static char *
overlap_text (hwloc_const_bitmap_t a, hwloc_const_bitmap_t b)
{
  hwloc_bitmap_t both = cp_bitmap_new ();
  hwloc_bitmap_and (both, a, b);
  char *s = cp_cpulist_format (both);
  hwloc_bitmap_free (both);
  return s;
}

/* ------------------------------------------------------------- validation */

/* Well-formed UTF-8 (no overlong forms, surrogates or values past U+10FFFF)
 * without C0 or C1 control characters or DEL: ids and paths end up in logs and
 * on terminals. */
static bool
text_ok (const unsigned char *s, size_t len)
{
  size_t i = 0;
  while (i < len)
    {
      unsigned c = s[i];
      if (c < 0x80)
        {
          if (c < 0x20 || c == 0x7f)
            return false;
          i++;
          continue;
        }
      size_t n;
      unsigned cp, min;
      if ((c & 0xe0) == 0xc0)
        n = 1, cp = c & 0x1f, min = 0x80;
      else if ((c & 0xf0) == 0xe0)
        n = 2, cp = c & 0x0f, min = 0x800;
      else if ((c & 0xf8) == 0xf0)
        n = 3, cp = c & 0x07, min = 0x10000;
      else
        return false;
      if (len - i <= n)
        return false;
      for (size_t k = 1; k <= n; k++)
        {
          if ((s[i + k] & 0xc0) != 0x80)
            return false;
          cp = (cp << 6) | (s[i + k] & 0x3f);
        }
      if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f))
        return false;
      i += n + 1;
    }
  return true;
}

/* Whether S can be quoted in a message: messages go to logs and terminals, and a
 * hostile ledger must not write escape sequences there. */
static bool
quotable (const char *s)
{
  size_t len = strnlen (s, 257);
  return len <= 256 && text_ok ((const unsigned char *) s, len);
}

static int
check_text (const char *what, const char *s, size_t max, cp_error_t *err)
{
  if (s == NULL)
    return cp_fail_input (err, "`%s` is missing", what);
  size_t len = strnlen (s, max + 1);
  if (len == 0)
    return cp_fail_input (err, "`%s` is empty", what);
  if (len > max)
    return cp_fail_input (err, "`%s` is longer than %zu bytes", what, max);
  if (!text_ok ((const unsigned char *) s, len))
    return cp_fail_input (err, "`%s` has a control character or is not valid UTF-8", what);
  return 0;
}

/* Absolute, no `..` component: reconcile stats these paths and other parts of the
 * hook may write below them. */
static int
check_path (const char *what, const char *s, cp_error_t *err)
{
  if (check_text (what, s, CP_LEDGER_MAX_PATH, err) < 0)
    return -1;
  if (s[0] != '/')
    return cp_fail_input (err, "`%s`: `%.64s` is not an absolute path", what, s);
  for (const char *p = s; *p;)
    {
      while (*p == '/')
        p++;
      size_t n = strcspn (p, "/");
      if (n == 2 && p[0] == '.' && p[1] == '.')
        return cp_fail_input (err, "`%s`: `%.64s` has a `..` component", what, s);
      p += n;
    }
  return 0;
}

/* Finite, non-empty unless ALLOW_EMPTY, and inside what cpulists may name. */
static int
check_set (const char *what, hwloc_const_bitmap_t set, bool allow_empty, cp_error_t *err)
{
  if (set == NULL)
    return cp_fail_input (err, "`%s` is missing", what);
  if (hwloc_bitmap_weight (set) < 0 || hwloc_bitmap_last (set) > CP_CPULIST_MAX)
    return cp_fail_input (err, "`%s` goes past the maximum %d", what, CP_CPULIST_MAX);
  if (!allow_empty && hwloc_bitmap_iszero (set))
    return cp_fail_input (err, "`%s` is empty", what);
  return 0;
}

int
cp_ledger_entry_check (const struct cp_ledger_entry *e, cp_error_t *err)
{
  if (check_text ("id", e->id, CP_LEDGER_MAX_ID, err) < 0 || check_path ("cgroup_mount", e->cgroup_mount, err) < 0
      || check_path ("cgroup", e->cgroup, err) < 0)
    return -1;
  if (e->pid < 0)
    return cp_fail_input (err, "`pid` %d is negative", (int) e->pid);
  if (e->start_time > (unsigned long long) CP_LEDGER_MAX_INT)
    return cp_fail_input (err, "`start_time` %llu is out of range", e->start_time);
  if (e->pid == 0 && e->start_time != 0)
    return cp_fail_input (err, "`start_time` is %llu without a pid", e->start_time);
  if (e->placed_at < 0 || e->placed_at > CP_LEDGER_MAX_INT)
    return cp_fail_input (err, "`placed_at` %lld is out of range", e->placed_at);
  if (e->mode != CP_MODE_EXCLUSIVE && e->mode != CP_MODE_SHARED)
    return cp_fail_input (err, "`mode` %d is unknown", (int) e->mode);
  if (check_set ("cpus", e->cpus, false, err) < 0 || check_set ("mems", e->mems, true, err) < 0
      || check_set ("held", e->held, e->mode == CP_MODE_SHARED, err) < 0)
    return -1;
  if (e->mode == CP_MODE_SHARED && !hwloc_bitmap_iszero (e->held))
    return cp_fail_input (err, "`held` is not empty in shared mode");
  if (e->mode == CP_MODE_EXCLUSIVE && !hwloc_bitmap_isincluded (e->cpus, e->held))
    return cp_fail_input (err, "`held` does not include `cpus` in exclusive mode");
  return 0;
}

/* ------------------------------------------------------------------ JSON */

static int
json_field (struct json_object *obj, const char *key, json_type type, struct json_object **out, cp_error_t *err)
{
  if (!json_object_object_get_ex (obj, key, out))
    return cp_fail_input (err, "`%s` is missing", key);
  if (!json_object_is_type (*out, type))
    return cp_fail_input (err, "`%s` is %s, expected %s", key, json_type_to_name (json_object_get_type (*out)),
                          json_type_to_name (type));
  return 0;
}

/* Refuse keys not in KEYS (NULL-terminated). */
static int
json_only_keys (struct json_object *obj, const char *const *keys, cp_error_t *err)
{
  struct json_object_iterator it = json_object_iter_begin (obj);
  struct json_object_iterator end = json_object_iter_end (obj);
  for (; !json_object_iter_equal (&it, &end); json_object_iter_next (&it))
    {
      const char *name = json_object_iter_peek_name (&it);
      bool known = false;
      for (const char *const *k = keys; *k && !known; k++)
        known = strcmp (name, *k) == 0;
      if (!known && quotable (name))
        return cp_fail_input (err, "unknown key `%.64s`", name);
      if (!known)
        return cp_fail_input (err, "unknown key (not printable)");
    }
  return 0;
}

static int
json_int (struct json_object *obj, const char *key, long long max, long long *out, cp_error_t *err)
{
  struct json_object *v;
  if (json_field (obj, key, json_type_int, &v, err) < 0)
    return -1;
  /* json-c saturates what does not fit in 64 bits; the bound (< INT64_MAX) catches it. */
  int64_t n = json_object_get_int64 (v);
  if (n < 0 || n > max)
    return cp_fail_input (err, "`%s` is out of range (0..%lld)", key, max);
  *out = (long long) n;
  return 0;
}

/* A string field; refuses embedded NUL bytes (json-c accepts "\u0000"). */
static int
json_string (struct json_object *obj, const char *key, const char **out, cp_error_t *err)
{
  struct json_object *v;
  if (json_field (obj, key, json_type_string, &v, err) < 0)
    return -1;
  const char *s = json_object_get_string (v);
  if (strlen (s) != (size_t) json_object_get_string_len (v))
    return cp_fail_input (err, "`%s` has a NUL byte", key);
  *out = s;
  return 0;
}

static int
json_cpulist (struct json_object *obj, const char *key, bool allow_empty, hwloc_bitmap_t *out, cp_error_t *err)
{
  const char *s;
  if (json_string (obj, key, &s, err) < 0)
    return -1;
  *out = cp_bitmap_new ();
  /* The parser quotes the list in its errors: quote only lists of our alphabet. */
  if (s[strspn (s, "0123456789,-")] != '\0')
    return cp_fail_input (err, "`%s`: a character other than digits, `,` and `-`", key);
  if (cp_cpulist_parse (s, allow_empty ? CP_CPULIST_ALLOW_EMPTY : 0, *out, err) < 0)
    return cp_error_wrap (err, "`%s`", key);
  return 0;
}

static const char *const entry_keys[] = {
  "id", "cgroup_mount", "cgroup", "pid", "start_time", "mode", "cpus", "held", "mems", "placed_at", NULL,
};

/* Fills E (which the caller clears, also on failure). */
static int
entry_from_json (struct json_object *obj, struct cp_ledger_entry *e, cp_error_t *err)
{
  if (!json_object_is_type (obj, json_type_object))
    return cp_fail_input (err, "is %s, expected object", json_type_to_name (json_object_get_type (obj)));
  if (json_only_keys (obj, entry_keys, err) < 0)
    return -1;
  const char *id, *mount, *cgroup, *mode;
  long long pid, start_time, placed_at;
  if (json_string (obj, "id", &id, err) < 0 || json_string (obj, "cgroup_mount", &mount, err) < 0
      || json_string (obj, "cgroup", &cgroup, err) < 0 || json_int (obj, "pid", INT_MAX, &pid, err) < 0
      || json_int (obj, "start_time", CP_LEDGER_MAX_INT, &start_time, err) < 0
      || json_string (obj, "mode", &mode, err) < 0
      || json_int (obj, "placed_at", CP_LEDGER_MAX_INT, &placed_at, err) < 0)
    return -1;
  if (check_text ("mode", mode, 32, err) < 0)
    return -1;
  if (cp_parse_mode (mode, &e->mode, err) < 0)
    return cp_error_wrap (err, "`mode`");
  e->id = cp_xstrdup (id);
  e->cgroup_mount = cp_xstrdup (mount);
  e->cgroup = cp_xstrdup (cgroup);
  e->pid = (pid_t) pid;
  e->start_time = (unsigned long long) start_time;
  e->placed_at = placed_at;
  if (json_cpulist (obj, "cpus", false, &e->cpus, err) < 0 || json_cpulist (obj, "held", true, &e->held, err) < 0
      || json_cpulist (obj, "mems", true, &e->mems, err) < 0)
    return -1;
  return cp_ledger_entry_check (e, err);
}

static int
cmp_entry_id (const void *a, const void *b)
{
  const struct cp_ledger_entry *x = *(const struct cp_ledger_entry *const *) a;
  const struct cp_ledger_entry *y = *(const struct cp_ledger_entry *const *) b;
  return strcmp (x->id, y->id);
}

/* Ids unique, exclusive helds disjoint: O(n log n) and O(n), as the input is hostile. */
static int
check_entries (const struct cp_ledger *l, cp_error_t *err)
{
  cleanup_free const struct cp_ledger_entry **sorted = cp_xcalloc (l->n, sizeof *sorted);
  for (size_t i = 0; i < l->n; i++)
    sorted[i] = &l->entries[i];
  qsort (sorted, l->n, sizeof *sorted, cmp_entry_id);
  for (size_t i = 1; i < l->n; i++)
    if (strcmp (sorted[i - 1]->id, sorted[i]->id) == 0)
      return cp_fail_input (err, "id `%.64s` appears more than once", sorted[i]->id);

  hwloc_bitmap_t all = cp_bitmap_new ();
  int ret = 0;
  for (size_t i = 0; i < l->n && ret == 0; i++)
    {
      const struct cp_ledger_entry *e = &l->entries[i];
      if (e->mode != CP_MODE_EXCLUSIVE)
        continue;
      if (hwloc_bitmap_intersects (all, e->held))
        {
          ssize_t other = find_overlap (l, e->held, (ssize_t) i);
          cleanup_free char *cpus = overlap_text (e->held, l->entries[other].held);
          ret = cp_fail_input (err, "CPUs %s are held by both `%.64s` and `%.64s`", cpus, l->entries[other].id,
                               e->id);
        }
      hwloc_bitmap_or (all, all, e->held);
    }
  hwloc_bitmap_free (all);
  return ret;
}

static const char *const top_keys[] = { "version", "entries", NULL };

static int
ledger_from_json (struct json_object *root, struct cp_ledger *l, cp_error_t *err)
{
  if (!json_object_is_type (root, json_type_object))
    return cp_fail_input (err, "the top level is %s, expected object", json_type_to_name (json_object_get_type (root)));
  if (json_only_keys (root, top_keys, err) < 0)
    return -1;
  struct json_object *version, *entries;
  if (json_field (root, "version", json_type_int, &version, err) < 0)
    return -1;
  if (json_object_get_int64 (version) != CP_LEDGER_VERSION)
    return cp_fail_input (err, "unsupported version %lld (expected %d)", (long long) json_object_get_int64 (version),
                          CP_LEDGER_VERSION);
  if (json_field (root, "entries", json_type_array, &entries, err) < 0)
    return -1;
  size_t n = json_object_array_length (entries);
  if (n > CP_LEDGER_MAX_ENTRIES)
    return cp_fail_input (err, "%zu entries, more than the limit %d", n, CP_LEDGER_MAX_ENTRIES);
  for (size_t i = 0; i < n; i++)
    {
      struct cp_ledger_entry *e = ledger_append (l);
      if (entry_from_json (json_object_array_get_idx (entries, i), e, err) < 0)
        {
          if (e->id && quotable (e->id))
            cp_error_wrap (err, "entry %zu (`%.64s`)", i, e->id);
          else
            cp_error_wrap (err, "entry %zu", i);
          return -1;
        }
    }
  return check_entries (l, err);
}

int
cp_ledger_parse (const char *buf, size_t len, struct cp_ledger **out, cp_error_t *err)
{
  if (len > CP_LEDGER_MAX_SIZE)
    return cp_fail_input (err, "%zu bytes, more than the limit %d", len, CP_LEDGER_MAX_SIZE);
  const char *nul = memchr (buf, '\0', len);
  if (nul)
    return cp_fail_input (err, "NUL byte at offset %zu", (size_t) (nul - buf));
  /* The top object, the entries array, an entry, its values (json-c counts those too). */
  struct json_tokener *tok = json_tokener_new_ex (4);
  if (tok == NULL)
    abort ();
  json_tokener_set_flags (tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
  struct json_object *root = json_tokener_parse_ex (tok, buf, (int) len);
  enum json_tokener_error jerr = json_tokener_get_error (tok);
  size_t end = json_tokener_get_parse_end (tok);
  json_tokener_free (tok);
  if (root == NULL)
    {
      if (jerr == json_tokener_continue)
        return cp_fail_input (err, "truncated JSON (%zu bytes)", len);
      return cp_fail_input (err, "invalid JSON at offset %zu: %s", end, json_tokener_error_desc (jerr));
    }
  int ret = 0;
  for (size_t i = end; i < len && ret == 0; i++)
    if (strchr (" \t\r\n", buf[i]) == NULL)
      ret = cp_fail_input (err, "trailing data at offset %zu", i);
  cleanup_ledger struct cp_ledger *l = ledger_new ();
  if (ret == 0)
    ret = ledger_from_json (root, l, err);
  json_object_put (root);
  if (ret < 0)
    return ret;
  *out = cp_steal_pointer (&l);
  return 0;
}

static struct json_object *
json_cpulist_new (hwloc_const_bitmap_t set)
{
  cleanup_free char *s = cp_cpulist_format (set);
  return json_object_new_string (s);
}

char *
cp_ledger_serialize (const struct cp_ledger *l)
{
  struct json_object *root = json_object_new_object ();
  struct json_object *entries = json_object_new_array ();
  if (root == NULL || entries == NULL)
    abort ();
  json_object_object_add (root, "version", json_object_new_int (CP_LEDGER_VERSION));
  json_object_object_add (root, "entries", entries);
  for (size_t i = 0; i < l->n; i++)
    {
      const struct cp_ledger_entry *e = &l->entries[i];
      struct json_object *o = json_object_new_object ();
      if (o == NULL)
        abort ();
      json_object_object_add (o, "id", json_object_new_string (e->id));
      json_object_object_add (o, "cgroup_mount", json_object_new_string (e->cgroup_mount));
      json_object_object_add (o, "cgroup", json_object_new_string (e->cgroup));
      json_object_object_add (o, "pid", json_object_new_int64 (e->pid));
      json_object_object_add (o, "start_time", json_object_new_int64 ((int64_t) e->start_time));
      json_object_object_add (o, "mode", json_object_new_string (cp_mode_name (e->mode)));
      json_object_object_add (o, "cpus", json_cpulist_new (e->cpus));
      json_object_object_add (o, "held", json_cpulist_new (e->held));
      json_object_object_add (o, "mems", json_cpulist_new (e->mems));
      json_object_object_add (o, "placed_at", json_object_new_int64 (e->placed_at));
      json_object_array_add (entries, o);
    }
  const char *text = json_object_to_json_string_ext (root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
  if (text == NULL)
    abort ();
  char *ret = cp_xasprintf ("%s\n", text);
  json_object_put (root);
  return ret;
}

/* ------------------------------------------------------------ the entries */

size_t
cp_ledger_count (const struct cp_ledger *l)
{
  return l->n;
}

const struct cp_ledger_entry *
cp_ledger_at (const struct cp_ledger *l, size_t i)
{
  return i < l->n ? &l->entries[i] : NULL;
}

const struct cp_ledger_entry *
cp_ledger_find (const struct cp_ledger *l, const char *id)
{
  ssize_t i = index_of (l, id);
  return i < 0 ? NULL : &l->entries[i];
}

bool
cp_ledger_was_recovered (const struct cp_ledger *l, const char **why)
{
  if (why)
    *why = l->recovered;
  return l->recovered != NULL;
}

int
cp_ledger_dirfd (const struct cp_ledger *l)
{
  return l->dirfd;
}

int
cp_ledger_put (struct cp_ledger *l, const struct cp_ledger_entry *e, cp_error_t *err)
{
  if (cp_ledger_entry_check (e, err) < 0)
    return e->id ? cp_error_wrap (err, "ledger entry `%.64s`", e->id) : cp_error_wrap (err, "ledger entry");
  ssize_t same = index_of (l, e->id);
  if (e->mode == CP_MODE_EXCLUSIVE)
    {
      ssize_t other = find_overlap (l, e->held, same);
      if (other >= 0)
        {
          cleanup_free char *cpus = overlap_text (e->held, l->entries[other].held);
          cp_error_set (err, CP_ERR_RUNTIME, 0, "ledger entry `%.64s`: CPUs %s are already held by `%.64s`", e->id,
                        cpus, l->entries[other].id);
          return CP_LEDGER_CONFLICT;
        }
    }
  if (same >= 0)
    {
      if (entry_equal (&l->entries[same], e))
        return 0;
      entry_clear (&l->entries[same]);
      entry_copy (&l->entries[same], e);
    }
  else
    {
      if (l->n >= CP_LEDGER_MAX_ENTRIES)
        return cp_error_set (err, CP_ERR_RUNTIME, 0, "ledger entry `%.64s`: the ledger is full (%d entries)", e->id,
                             CP_LEDGER_MAX_ENTRIES);
      entry_copy (ledger_append (l), e);
    }
  l->dirty = true;
  return 0;
}

bool
cp_ledger_remove (struct cp_ledger *l, const char *id)
{
  ssize_t i = index_of (l, id);
  if (i < 0)
    return false;
  entry_clear (&l->entries[i]);
  memmove (&l->entries[i], &l->entries[i + 1], (l->n - (size_t) i - 1) * sizeof *l->entries);
  l->n--;
  l->dirty = true;
  return true;
}

void
cp_ledger_usage (const struct cp_ledger *l, const char *exclude_id, struct cp_ledger_usage *out)
{
  memset (out, 0, sizeof *out);
  out->held = cp_bitmap_new ();
  out->shared = cp_xcalloc (l->n, sizeof *out->shared);
  for (size_t i = 0; i < l->n; i++)
    {
      const struct cp_ledger_entry *e = &l->entries[i];
      if (exclude_id && strcmp (e->id, exclude_id) == 0)
        continue;
      if (e->mode == CP_MODE_EXCLUSIVE)
        hwloc_bitmap_or (out->held, out->held, e->held);
      else
        out->shared[out->n_shared++] = cp_bitmap_dup (e->cpus);
    }
  out->usage.held = out->held;
  out->usage.shared = (const hwloc_const_bitmap_t *) out->shared;
  out->usage.n_shared = out->n_shared;
}

void
cp_ledger_usage_release (struct cp_ledger_usage *u)
{
  if (u == NULL)
    return;
  hwloc_bitmap_free (u->held);
  for (size_t i = 0; i < u->n_shared; i++)
    hwloc_bitmap_free (u->shared[i]);
  free (u->shared);
  memset (u, 0, sizeof *u);
}

/* ------------------------------------------------------------- liveness */

int
cp_ledger_parse_proc_stat (const char *buf, size_t len, unsigned long long *start_time, char *state,
                           cp_error_t *err)
{
  /* "pid (comm) state ppid ...": comm is up to 15 bytes of anything a process
   * chose with prctl(PR_SET_NAME), ')' and spaces included, so the fields are
   * only counted from the last ')'. */
  const char *paren = memrchr (buf, ')', len);
  if (paren == NULL)
    return cp_fail_input (err, "/proc stat: no `)` after the command name");
  const char *p = paren + 1, *end = buf + len;
  if (end - p < 3 || p[0] != ' ' || p[2] != ' ')
    return cp_fail_input (err, "/proc stat: no state after the command name");
  char st = p[1];
  p += 3;
  /* p is at field 4; skip to field 22. */
  for (int field = 4; field < 22; field++)
    {
      const char *sp = memchr (p, ' ', (size_t) (end - p));
      if (sp == NULL || sp == p)
        return cp_fail_input (err, "/proc stat: field %d is missing", field);
      p = sp + 1;
    }
  unsigned long long v = 0;
  const char *digits = p;
  while (p < end && *p >= '0' && *p <= '9')
    {
      if (v > (ULLONG_MAX - 9) / 10)
        return cp_fail_input (err, "/proc stat: start time out of range");
      v = v * 10 + (unsigned) (*p - '0');
      p++;
    }
  if (p == digits || (p < end && *p != ' ' && *p != '\n'))
    return cp_fail_input (err, "/proc stat: field 22 (start time) is not a number");
  *start_time = v;
  if (state)
    *state = st;
  return 0;
}

int
cp_ledger_proc_start_time (pid_t pid, unsigned long long *start_time, bool *zombie, cp_error_t *err)
{
  if (pid <= 0)
    return cp_fail_input (err, "invalid pid %d", (int) pid);
  char path[64];
  snprintf (path, sizeof path, "/proc/%d/stat", (int) pid);
  cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return cp_fail_errno (err, errno, "open `%s`", path);
  /* The line is well under 1 KiB: 52 numbers and a 15-byte comm. */
  char buf[4096];
  size_t len = 0;
  for (;;)
    {
      ssize_t r = read (fd, buf + len, sizeof buf - len);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        return cp_fail_errno (err, errno, "read `%s`", path);
      if (r == 0 || (len += (size_t) r) == sizeof buf)
        break;
    }
  char st;
  if (cp_ledger_parse_proc_stat (buf, len, start_time, &st, err) < 0)
    return cp_error_wrap (err, "%s", path);
  if (zombie)
    *zombie = st == 'Z' || st == 'X' || st == 'x';
  return 0;
}

int
cp_ledger_pid_start_time (pid_t pid, unsigned long long *start_time, void *data)
{
  (void) data;
  cleanup_error cp_error_t err = NULL;
  bool zombie = false;
  if (cp_ledger_proc_start_time (pid, start_time, &zombie, &err) < 0)
    return err->errnum == ENOENT || err->errnum == ESRCH ? 0 : -1;
  return zombie ? 0 : 1;
}

int
cp_ledger_cgroup_exists (const char *cgroup_mount, const char *cgroup, void *data)
{
  (void) data;
  size_t ml = strlen (cgroup_mount);
  while (ml > 0 && cgroup_mount[ml - 1] == '/')
    ml--;
  cleanup_free char *path = cp_xasprintf ("%.*s%s", (int) ml, cgroup_mount, cgroup);
  struct stat st;
  if (stat (path, &st) < 0)
    return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
  return S_ISDIR (st.st_mode) ? 1 : 0;
}

/* Why E's container is gone, or NULL when it is (or may be) alive. */
static char *
gone_reason (const struct cp_ledger_entry *e, const struct cp_ledger_liveness *alive)
{
  if (alive->cgroup_exists (e->cgroup_mount, e->cgroup, alive->data) == 0)
    return cp_xasprintf ("cgroup %s under %s no longer exists", e->cgroup, e->cgroup_mount);
  if (e->pid == 0)
    return NULL;
  unsigned long long start = 0;
  int r = alive->pid_start_time (e->pid, &start, alive->data);
  if (r == 0)
    return cp_xasprintf ("pid %d has exited", (int) e->pid);
  if (r > 0 && start != e->start_time)
    return cp_xasprintf ("pid %d was reused (started at %llu, recorded %llu)", (int) e->pid, start, e->start_time);
  return NULL;
}

int
cp_ledger_reconcile (struct cp_ledger *l, const struct cp_ledger_liveness *alive, unsigned *dropped,
                     cp_error_t *err)
{
  static const struct cp_ledger_liveness real = {
    .cgroup_exists = cp_ledger_cgroup_exists,
    .pid_start_time = cp_ledger_pid_start_time,
  };
  if (alive == NULL)
    alive = &real;
  if (alive->cgroup_exists == NULL || alive->pid_start_time == NULL)
    return cp_error_set (err, CP_ERR_RUNTIME, 0, "reconcile: a liveness check is missing");
  size_t kept = 0;
  unsigned n = 0;
  for (size_t i = 0; i < l->n; i++)
    {
      struct cp_ledger_entry *e = &l->entries[i];
      cleanup_free char *why = gone_reason (e, alive);
      if (why)
        {
          if (alive->dropped)
            alive->dropped (e, why, alive->data);
          entry_clear (e);
          n++;
          continue;
        }
      if (kept != i)
        l->entries[kept] = *e;
      kept++;
    }
  l->n = kept;
  if (n)
    l->dirty = true;
  if (dropped)
    *dropped = n;
  return 0;
}

/* -------------------------------------------------------------- the files */

#ifdef CACHEPIN_FAULT_INJECTION
static cp_ledger_fault_fn fault_fn;
static void *fault_data;

void
cp_ledger_set_fault_hook (cp_ledger_fault_fn fn, void *data)
{
  fault_fn = fn;
  fault_data = data;
}

static int
fault_at (enum cp_ledger_fault_point point)
{
  return fault_fn ? fault_fn (point, fault_data) : 0;
}
#define FAULT(point) fault_at (point)
#else
#define FAULT(point) 0
#endif

static int
write_all (int fd, const char *buf, size_t len)
{
  while (len > 0)
    {
      ssize_t w = write (fd, buf, len);
      if (w < 0 && errno == EINTR)
        continue;
      if (w < 0)
        return -1;
      if (w == 0)
        {
          errno = EIO;
          return -1;
        }
      buf += w;
      len -= (size_t) w;
    }
  return 0;
}

/* Create the directory if missing and open it; refuse one that others could
 * change under us. */
static int
open_state_dir (const char *state_dir, cp_error_t *err)
{
  if (state_dir == NULL || state_dir[0] == '\0')
    return cp_fail_input (err, "the state directory is empty");
  /* With a trailing '/', the kernel follows a final symlink despite O_NOFOLLOW. */
  cleanup_free char *path = cp_xstrdup (state_dir);
  for (size_t len = strlen (path); len > 1 && path[len - 1] == '/'; len--)
    path[len - 1] = '\0';

  bool created = mkdir (path, 0700) == 0;
  if (!created && errno != EEXIST)
    {
      if (errno == ENOENT)
        return cp_fail_errno (err, errno, "create state directory `%s` (its parent must exist)", path);
      return cp_fail_errno (err, errno, "create state directory `%s`", path);
    }
  cleanup_close int fd = open (path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    {
      int saved = errno;
      struct stat lst;
      if (lstat (path, &lst) == 0 && S_ISLNK (lst.st_mode))
        return cp_error_set (err, CP_ERR_RUNTIME, 0, "state directory `%s` is a symlink; refusing it", path);
      return cp_fail_errno (err, saved, "open state directory `%s`", path);
    }
  struct stat st;
  if (fstat (fd, &st) < 0)
    return cp_fail_errno (err, errno, "stat state directory `%s`", path);
  if (st.st_uid != geteuid ())
    return cp_error_set (err, CP_ERR_RUNTIME, 0, "state directory `%s` is owned by uid %u, not %u; refusing it", path,
                         (unsigned) st.st_uid, (unsigned) geteuid ());
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return cp_error_set (err, CP_ERR_RUNTIME, 0,
                         "state directory `%s` is writable by group or others (mode %04o); refusing it", path,
                         (unsigned) (st.st_mode & 07777));
  /* The umask may have taken bits we want (it cannot have added any). */
  if (created && (st.st_mode & 07777) != 0700 && fchmod (fd, 0700) < 0)
    return cp_fail_errno (err, errno, "chmod state directory `%s`", path);
  int ret = fd;
  fd = -1;
  return ret;
}

static long long
elapsed_ms (const struct timespec *since)
{
  struct timespec now;
  clock_gettime (CLOCK_MONOTONIC, &now);
  return (long long) (now.tv_sec - since->tv_sec) * 1000 + (now.tv_nsec - since->tv_nsec) / 1000000;
}

/* flock() has no timeout and SIGALRM would disturb the rest of the hook, so poll
 * LOCK_NB with sleeps growing from 1 to 20 ms. */
static int
take_lock (int dirfd, const char *dir, unsigned timeout_ms, cp_error_t *err)
{
  cleanup_close int fd
      = openat (dirfd, CP_LEDGER_LOCK_FILE, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (fd < 0)
    return cp_fail_errno (err, errno, "open `%s/%s`", dir, CP_LEDGER_LOCK_FILE);
  struct stat st;
  if (fstat (fd, &st) < 0)
    return cp_fail_errno (err, errno, "stat `%s/%s`", dir, CP_LEDGER_LOCK_FILE);
  if (!S_ISREG (st.st_mode))
    return cp_error_set (err, CP_ERR_RUNTIME, 0, "`%s/%s` is not a regular file", dir, CP_LEDGER_LOCK_FILE);
  struct timespec start;
  clock_gettime (CLOCK_MONOTONIC, &start);
  /* Poll with short, jittered naps: a hook holds the lock for a few ms, and long
     or synchronized naps leave it idle while dozens of hooks wait (64 hooks at
     once waited up to 1.6 s with naps growing to 20 ms; with 2 ms, 0.2 s). */
  long nap_us = 200;
  unsigned jitter = (unsigned) getpid () * 2654435761u ^ (unsigned) start.tv_nsec;
  for (;;)
    {
      if (flock (fd, LOCK_EX | LOCK_NB) == 0)
        break;
      if (errno == EINTR)
        continue;
      if (errno != EWOULDBLOCK)
        return cp_fail_errno (err, errno, "lock `%s/%s`", dir, CP_LEDGER_LOCK_FILE);
      long long waited = elapsed_ms (&start);
      if (waited >= timeout_ms)
        return cp_error_set (err, CP_ERR_RUNTIME, 0,
                             "timed out after %lld ms (limit %u ms) waiting for the lock on `%s/%s`: another cachepin "
                             "holds it",
                             waited, timeout_ms, dir, CP_LEDGER_LOCK_FILE);
      long long left_us = ((long long) timeout_ms - waited) * 1000;
      jitter = jitter * 1103515245u + 12345u;
      long us = nap_us / 2 + (long) (jitter >> 16) % (nap_us / 2 + 1);
      if (left_us < us)
        us = (long) left_us;
      struct timespec nap = { .tv_sec = 0, .tv_nsec = us * 1000 };
      nanosleep (&nap, NULL);
      if (nap_us < 2000)
        nap_us *= 2;
    }
  int ret = fd;
  fd = -1;
  return ret;
}

/* ledger.json failed validation: keep it for a post-mortem and start empty.
 *
 * This fails open on purpose.  The ledger is input an attacker with root on the
 * host could tamper with and a disk or filesystem could tear; refusing to work
 * until someone repairs it would stop every container start on the host, while
 * an empty ledger only risks sharing CPUs until the containers that are still
 * running are seen again: the hook's next reconcile rebuilds what it can from
 * the cgroups it finds.  The caller logs *why*. */
static int
set_aside (struct cp_ledger *l, const char *why, cp_error_t *err)
{
  if (renameat (l->dirfd, CP_LEDGER_FILE, l->dirfd, CP_LEDGER_CORRUPT_FILE) < 0)
    {
      /* A file cannot replace a directory nor a directory a file: remove the old
       * one (an empty directory at most) and try again. */
      if (errno != EISDIR && errno != ENOTDIR && errno != ENOTEMPTY && errno != EEXIST)
        return cp_fail_errno (err, errno, "move untrusted `%s/%s` aside", l->dir, CP_LEDGER_FILE);
      if (unlinkat (l->dirfd, CP_LEDGER_CORRUPT_FILE, 0) < 0 && errno == EISDIR)
        unlinkat (l->dirfd, CP_LEDGER_CORRUPT_FILE, AT_REMOVEDIR);
      if (renameat (l->dirfd, CP_LEDGER_FILE, l->dirfd, CP_LEDGER_CORRUPT_FILE) < 0)
        return cp_fail_errno (err, errno, "move untrusted `%s/%s` aside", l->dir, CP_LEDGER_FILE);
    }
  if (fsync (l->dirfd) < 0)
    return cp_fail_errno (err, errno, "fsync `%s`", l->dir);
  l->recovered = cp_xasprintf ("%s/%s was not trusted (%s); moved it to %s and started an empty ledger", l->dir,
                               CP_LEDGER_FILE, why, CP_LEDGER_CORRUPT_FILE);
  return 0;
}

static int
load (struct cp_ledger *l, cp_error_t *err)
{
  /* O_NONBLOCK: a FIFO planted here must not hang the hook. */
  cleanup_close int fd = openat (l->dirfd, CP_LEDGER_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT)
    return 0;
  if (fd < 0 && errno == ELOOP)
    return set_aside (l, "it is a symlink", err);
  if (fd < 0)
    return cp_fail_errno (err, errno, "open `%s/%s`", l->dir, CP_LEDGER_FILE);
  struct stat st;
  if (fstat (fd, &st) < 0)
    return cp_fail_errno (err, errno, "stat `%s/%s`", l->dir, CP_LEDGER_FILE);
  if (!S_ISREG (st.st_mode))
    return set_aside (l, "not a regular file", err);
  if (st.st_size > CP_LEDGER_MAX_SIZE)
    {
      cleanup_free char *why = cp_xasprintf ("%lld bytes, more than the limit %d", (long long) st.st_size,
                                             CP_LEDGER_MAX_SIZE);
      return set_aside (l, why, err);
    }
  /* Read up to one byte past the limit, whatever st_size said. */
  size_t cap = (size_t) st.st_size + 1, len = 0;
  cleanup_free char *buf = cp_xmalloc0 (cap);
  for (;;)
    {
      if (len == cap)
        {
          if (cap > CP_LEDGER_MAX_SIZE)
            break;
          cap = cap * 2 > CP_LEDGER_MAX_SIZE + 1 ? CP_LEDGER_MAX_SIZE + 1 : cap * 2;
          buf = cp_xrealloc (buf, cap);
        }
      ssize_t r = read (fd, buf + len, cap - len);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        return cp_fail_errno (err, errno, "read `%s/%s`", l->dir, CP_LEDGER_FILE);
      if (r == 0)
        break;
      len += (size_t) r;
    }
  cleanup_error cp_error_t perr = NULL;
  struct cp_ledger *parsed = NULL;
  if (cp_ledger_parse (buf, len, &parsed, &perr) < 0)
    return set_aside (l, cp_error_message (perr), err);
  l->entries = cp_steal_pointer (&parsed->entries);
  l->n = parsed->n;
  l->cap = parsed->cap;
  parsed->n = parsed->cap = 0;
  cp_ledger_close (parsed);
  return 0;
}

int
cp_ledger_open (const char *state_dir, unsigned lock_timeout_ms, struct cp_ledger **out, cp_error_t *err)
{
  cleanup_ledger struct cp_ledger *l = ledger_new ();
  l->dirfd = open_state_dir (state_dir, err);
  if (l->dirfd < 0)
    return -1;
  l->dir = cp_xstrdup (state_dir);
  l->lockfd = take_lock (l->dirfd, l->dir, lock_timeout_ms, err);
  if (l->lockfd < 0)
    return -1;
  if (load (l, err) < 0)
    return -1;
  *out = cp_steal_pointer (&l);
  return 0;
}

/* Write, fsync and close ledger.json.tmp. */
static int
write_tmp (struct cp_ledger *l, const char *text, size_t len, cp_error_t *err)
{
  /* A stale tmp from a killed hook is replaced; unlinking first also takes care
   * of one that is not a plain file of ours (a FIFO would block the open, a hard
   * link would have O_TRUNC truncate another file). */
  if (unlinkat (l->dirfd, CP_LEDGER_TMP_FILE, 0) < 0 && errno != ENOENT)
    return cp_fail_errno (err, errno, "remove stale `%s/%s`", l->dir, CP_LEDGER_TMP_FILE);
  cleanup_close int fd
      = openat (l->dirfd, CP_LEDGER_TMP_FILE, O_CREAT | O_TRUNC | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return cp_fail_errno (err, errno, "create `%s/%s`", l->dir, CP_LEDGER_TMP_FILE);
  if (write_all (fd, text, len) < 0)
    return cp_fail_errno (err, errno, "write `%s/%s`", l->dir, CP_LEDGER_TMP_FILE);
  int fe = FAULT (CP_LEDGER_FAULT_TMP_WRITTEN);
  if (fe)
    return cp_fail_errno (err, fe, "fault injected after writing `%s/%s`", l->dir, CP_LEDGER_TMP_FILE);
  if (fsync (fd) < 0)
    return cp_fail_errno (err, errno, "fsync `%s/%s`", l->dir, CP_LEDGER_TMP_FILE);
  int rc = close (fd);
  fd = -1;
  if (rc < 0)
    return cp_fail_errno (err, errno, "close `%s/%s`", l->dir, CP_LEDGER_TMP_FILE);
  return 0;
}

int
cp_ledger_commit (struct cp_ledger *l, cp_error_t *err)
{
  if (l->dirfd < 0)
    return cp_error_set (err, CP_ERR_RUNTIME, 0, "commit: the ledger has no state directory");
  if (!l->dirty)
    return 0;
  cleanup_free char *text = cp_ledger_serialize (l);
  size_t len = strlen (text);
  /* Never write what the next open would refuse to read. */
  if (len > CP_LEDGER_MAX_SIZE)
    return cp_error_set (err, CP_ERR_RUNTIME, 0, "commit: the ledger would be %zu bytes, more than the limit %d", len,
                         CP_LEDGER_MAX_SIZE);
  if (write_tmp (l, text, len, err) < 0)
    {
      unlinkat (l->dirfd, CP_LEDGER_TMP_FILE, 0);
      return -1;
    }
  int fe = FAULT (CP_LEDGER_FAULT_TMP_SYNCED);
  if (fe)
    {
      unlinkat (l->dirfd, CP_LEDGER_TMP_FILE, 0);
      return cp_fail_errno (err, fe, "fault injected before renaming `%s/%s`", l->dir, CP_LEDGER_TMP_FILE);
    }
  if (renameat (l->dirfd, CP_LEDGER_TMP_FILE, l->dirfd, CP_LEDGER_FILE) < 0)
    {
      int saved = errno;
      unlinkat (l->dirfd, CP_LEDGER_TMP_FILE, 0);
      return cp_fail_errno (err, saved, "rename `%s/%s` to %s", l->dir, CP_LEDGER_TMP_FILE, CP_LEDGER_FILE);
    }
  fe = FAULT (CP_LEDGER_FAULT_RENAMED);
  if (fe)
    return cp_fail_errno (err, fe, "fault injected before syncing `%s`", l->dir);
  if (fsync (l->dirfd) < 0)
    return cp_fail_errno (err, errno, "fsync `%s`", l->dir);
  l->dirty = false;
  return 0;
}

void
cp_ledger_close (struct cp_ledger *l)
{
  if (l == NULL)
    return;
  for (size_t i = 0; i < l->n; i++)
    entry_clear (&l->entries[i]);
  free (l->entries);
  /* Closing the last descriptor of the open file releases the flock. */
  if (l->lockfd >= 0)
    close (l->lockfd);
  if (l->dirfd >= 0)
    close (l->dirfd);
  free (l->dir);
  free (l->recovered);
  free (l);
}
