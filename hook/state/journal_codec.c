/* cachepin: the journal's records and their codec (see journal.h): names,
 * checks, the strict reader and the writer.  The file, its lock and the commit
 * are journal.c.
 *
 * The codec is json-c's DOM through the strict reader (policy/base/json.h), not a
 * pull parser as the ledger's: a journal is at most CP_JOURNAL_MAX_RECORDS
 * records and is read by a run that commits a record, not by every hook run
 * (bench/journal.c measures what that costs beside a ledger commit). */
#define _GNU_SOURCE
#include "journal.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "bitmap.h"
#include "cpulist.h"
#include "json.h"
#include "text.h"
#include "util.h"
#include "ledger_internal.h"

/* ------------------------------------------------------------------ names */

static const char *const front_names[CP_JOURNAL_N_FRONTS] = {
  [CP_JOURNAL_HOOK] = "hook",
  [CP_JOURNAL_APPLY] = "apply",
  [CP_JOURNAL_RELEASE] = "release",
  [CP_JOURNAL_NRI] = "nri",
};

static const char *const kind_names[CP_JOURNAL_N_KINDS] = {
  [CP_JOURNAL_PLACED] = "placed",     [CP_JOURNAL_UNPLACED] = "unplaced", [CP_JOURNAL_REFUSED] = "refused",
  [CP_JOURNAL_RELEASED] = "released", [CP_JOURNAL_DRIFT] = "drift",       [CP_JOURNAL_SWITCH] = "switch",
};

static const char *const cause_names[CP_JOURNAL_N_CAUSES] = {
  [CP_JOURNAL_CAUSE_NONE] = "",
  [CP_JOURNAL_CAUSE_INVALID] = "invalid",
  [CP_JOURNAL_CAUSE_UNSATISFIABLE] = "unsatisfiable",
  [CP_JOURNAL_CAUSE_FAILURE] = "failure",
};

const char *
cp_journal_cause_name (enum cp_journal_cause cause)
{
  return (unsigned) cause < CP_JOURNAL_N_CAUSES ? cause_names[cause] : "?";
}

enum cp_journal_cause
cp_journal_cause_of (enum cp_error_kind kind)
{
  switch (kind)
    {
    case CP_ERR_INPUT:
      return CP_JOURNAL_CAUSE_INVALID;
    case CP_ERR_UNSATISFIABLE:
      return CP_JOURNAL_CAUSE_UNSATISFIABLE;
    case CP_ERR_RUNTIME:
    default:
      return CP_JOURNAL_CAUSE_FAILURE;
    }
}

bool
cp_journal_kind_has_cause (enum cp_journal_kind kind)
{
  return kind == CP_JOURNAL_REFUSED || kind == CP_JOURNAL_UNPLACED;
}

const char *
cp_journal_front_name (enum cp_journal_front front)
{
  return (unsigned) front < CP_JOURNAL_N_FRONTS ? front_names[front] : "?";
}

const char *
cp_journal_kind_name (enum cp_journal_kind kind)
{
  return (unsigned) kind < CP_JOURNAL_N_KINDS ? kind_names[kind] : "?";
}

static bool
name_index (const char *const *names, size_t n, const char *s, size_t *out)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp (names[i], s) == 0)
      {
        *out = i;
        return true;
      }
  return false;
}

bool
cp_journal_front_parse (const char *s, enum cp_journal_front *out)
{
  size_t i;
  if (!name_index (front_names, CP_JOURNAL_N_FRONTS, s, &i))
    return false;
  *out = (enum cp_journal_front) i;
  return true;
}

bool
cp_journal_kind_parse (const char *s, enum cp_journal_kind *out)
{
  size_t i;
  if (!name_index (kind_names, CP_JOURNAL_N_KINDS, s, &i))
    return false;
  *out = (enum cp_journal_kind) i;
  return true;
}

bool
cp_journal_cause_parse (const char *s, enum cp_journal_cause *out)
{
  size_t i;
  if (!name_index (cause_names, CP_JOURNAL_N_CAUSES, s, &i))
    return false;
  *out = (enum cp_journal_cause) i;
  return true;
}

/* ---------------------------------------------------------------- records */

void
cp_journal_record_clear (struct cp_journal_record *r)
{
  free (r->id);
  free (r->name);
  free (r->cgroup);
  free (r->reason);
  if (r->cpus)
    hwloc_bitmap_free (r->cpus);
  if (r->mems)
    hwloc_bitmap_free (r->mems);
  memset (r, 0, sizeof *r);
}

void
cp_journal_list_free (struct cp_journal_list *l)
{
  if (l == NULL)
    return;
  for (size_t i = 0; i < l->n; i++)
    cp_journal_record_clear (&l->records[i]);
  free (l->records);
  free (l);
}

struct cp_journal_record *
cp_journal_list_push (struct cp_journal_list *l)
{
  /* At most a bound's worth plus a run's few: doubling is not worth it. */
  l->records = cp_xrealloc (l->records, (l->n + 1) * sizeof *l->records);
  struct cp_journal_record *r = &l->records[l->n++];
  memset (r, 0, sizeof *r);
  return r;
}

enum cp_journal_cause
cp_journal_cause_for (enum cp_journal_kind kind, enum cp_journal_cause cause)
{
  if (!cp_journal_kind_has_cause (kind))
    return CP_JOURNAL_CAUSE_NONE;
  if ((unsigned) cause < CP_JOURNAL_N_CAUSES && cause != CP_JOURNAL_CAUSE_NONE)
    return cause;
  return CP_JOURNAL_CAUSE_FAILURE;
}

void
cp_journal_counts_add (struct cp_journal_counts *c, const struct cp_journal_record *r)
{
  unsigned long long *n = &c->n[r->front][r->kind][cp_journal_cause_for (r->kind, r->cause)];
  if (*n < CP_JOURNAL_MAX_COUNT)
    (*n)++;
}

static int
check_text (const char *key, const char *s, size_t max, bool allow_empty, cp_error_t *err)
{
  size_t len = s ? strnlen (s, max + 1) : 0;
  if (len == 0 && !allow_empty)
    return cp_fail_input (err, "`%s`: empty", key);
  if (len > max)
    return cp_fail_input (err, "`%s`: longer than %zu bytes", key, max);
  if (!cp_text_valid (s ? s : "", len))
    return cp_fail_input (err, "`%s`: not valid UTF-8, or a control character", key);
  return 0;
}

/* A set the writer can spell and the reader takes back: finite, within
 * CP_CPULIST_MAX. */
static int
check_set (const char *key, hwloc_const_bitmap_t set, cp_error_t *err)
{
  if (set == NULL || hwloc_bitmap_iszero (set))
    return 0;
  if (hwloc_bitmap_weight (set) < 0 || hwloc_bitmap_last (set) > CP_CPULIST_MAX)
    return cp_fail_input (err, "`%s`: beyond CPU %d", key, CP_CPULIST_MAX);
  return 0;
}

int
cp_journal_record_check (const struct cp_journal_record *r, cp_error_t *err)
{
  if (r->time < 0 || r->time > CP_JOURNAL_MAX_TIME)
    return cp_fail_input (err, "`time`: expected an integer from 0 to %lld", CP_JOURNAL_MAX_TIME);
  if ((unsigned) r->front >= CP_JOURNAL_N_FRONTS)
    return cp_fail_input (err, "`front`: unknown");
  if ((unsigned) r->kind >= CP_JOURNAL_N_KINDS)
    return cp_fail_input (err, "`kind`: unknown");
  if ((unsigned) r->cause >= CP_JOURNAL_N_CAUSES)
    return cp_fail_input (err, "`cause`: unknown");
  if (check_text ("id", r->id, CP_JOURNAL_MAX_ID, false, err) < 0
      || check_text ("name", r->name, CP_JOURNAL_MAX_NAME, true, err) < 0
      || check_text ("cgroup", r->cgroup, CP_JOURNAL_MAX_CGROUP, true, err) < 0
      || check_text ("reason", r->reason, CP_JOURNAL_MAX_REASON, true, err) < 0
      || check_set ("cpus", r->cpus, err) < 0 || check_set ("mems", r->mems, err) < 0)
    return -1;
  return 0;
}

/* ------------------------------------------------------------------ reading */

/* The keys of a record, every one required. */
static const char *const record_keys[] = { "time", "front", "kind", "id", "name", "cgroup", "cpus", "mems", "reason" };

static int
only_keys (json_object *obj, const char *const *keys, size_t n, cp_error_t *err)
{
  json_object_object_foreach (obj, key, val)
  {
    (void) val;
    size_t i;
    if (!name_index (keys, n, key, &i))
      {
        if (cp_ledger_quotable (key))
          return cp_fail_input (err, "unknown key `%.64s`", key);
        return cp_fail_input (err, "unknown key (not printable)");
      }
  }
  return 0;
}

/* KEY as messages quote it, as the ledger's do: "`time`: ...". */
#define LABEL(key) (snprintf (label, sizeof label, "`%s`", key), label)

static int
member (json_object *obj, const char *key, json_object **out, cp_error_t *err)
{
  if (!cp_json_member (obj, key, false, out))
    return cp_fail_input (err, "`%s` is missing", key);
  return 0;
}

/* Member KEY, a string within MAX bytes that is safe text, copied to *OUT. */
static int
get_text (json_object *obj, const char *key, size_t max, bool allow_empty, char **out, cp_error_t *err)
{
  json_object *v;
  const char *s;
  char label[32];
  if (member (obj, key, &v, err) < 0 || cp_json_string (v, LABEL (key), max, allow_empty, &s, err) < 0)
    return -1;
  if (!cp_text_valid (s, strlen (s)))
    return cp_fail_input (err, "`%s`: not valid UTF-8, or a control character", key);
  *out = cp_xstrdup (s);
  return 0;
}

static int
get_cpulist (json_object *obj, const char *key, hwloc_bitmap_t *out, cp_error_t *err)
{
  json_object *v;
  const char *s;
  char label[32];
  if (member (obj, key, &v, err) < 0 || cp_json_string (v, LABEL (key), CP_CPULIST_MAX_LEN, true, &s, err) < 0)
    return -1;
  *out = cp_bitmap_new ();
  /* The parser quotes the list in its errors: quote only lists of our alphabet. */
  if (s[strspn (s, "0123456789,-")] != '\0')
    return cp_fail_input (err, "`%s`: a character other than digits, `,` and `-`", key);
  if (cp_cpulist_parse (s, CP_CPULIST_ALLOW_EMPTY, *out, err) < 0)
    return cp_error_wrap (err, "`%s`", key);
  return 0;
}

static int
get_name (json_object *obj, const char *key, const char *const *names, size_t n, size_t *out, cp_error_t *err)
{
  json_object *v;
  const char *s;
  char label[32];
  if (member (obj, key, &v, err) < 0 || cp_json_string (v, LABEL (key), 16, false, &s, err) < 0)
    return -1;
  if (!name_index (names, n, s, out))
    return cp_ledger_quotable (s) ? cp_fail_input (err, "`%s`: unknown `%s`", key, s)
                                  : cp_fail_input (err, "`%s`: unknown", key);
  return 0;
}

static int
record_from_json (json_object *obj, struct cp_journal_record *r, cp_error_t *err)
{
  if (!json_object_is_type (obj, json_type_object))
    {
      cleanup_free char *got = cp_json_describe (obj);
      return cp_fail_input (err, "expected an object, got %s", got);
    }
  if (only_keys (obj, record_keys, CP_ARRAY_SIZE (record_keys), err) < 0)
    return -1;
  json_object *t;
  int64_t time;
  size_t front = 0, kind = 0; /* get_name() sets them; GCC -O3 cannot see it */
  if (member (obj, "time", &t, err) < 0 || cp_json_int (t, "`time`", 0, CP_JOURNAL_MAX_TIME, &time, err) < 0
      || get_name (obj, "front", front_names, CP_JOURNAL_N_FRONTS, &front, err) < 0
      || get_name (obj, "kind", kind_names, CP_JOURNAL_N_KINDS, &kind, err) < 0)
    return -1;
  r->time = (long long) time;
  r->front = (enum cp_journal_front) front;
  r->kind = (enum cp_journal_kind) kind;
  if (get_text (obj, "id", CP_JOURNAL_MAX_ID, false, &r->id, err) < 0
      || get_text (obj, "name", CP_JOURNAL_MAX_NAME, true, &r->name, err) < 0
      || get_text (obj, "cgroup", CP_JOURNAL_MAX_CGROUP, true, &r->cgroup, err) < 0
      || get_cpulist (obj, "cpus", &r->cpus, err) < 0 || get_cpulist (obj, "mems", &r->mems, err) < 0
      || get_text (obj, "reason", CP_JOURNAL_MAX_REASON, true, &r->reason, err) < 0)
    return -1;
  return 0;
}

/* The keys of a count, every one required. */
static const char *const count_keys[] = { "front", "kind", "cause", "n" };

/* One line of "counts" into C: a front, kind and cause the journal knows, not
   seen before, with a count from 1 to CP_JOURNAL_MAX_COUNT. */
static int
count_from_json (json_object *obj, struct cp_journal_counts *c, cp_error_t *err)
{
  if (!json_object_is_type (obj, json_type_object))
    {
      cleanup_free char *got = cp_json_describe (obj);
      return cp_fail_input (err, "expected an object, got %s", got);
    }
  size_t front = 0, kind = 0, cause = 0;
  json_object *v;
  int64_t n;
  if (only_keys (obj, count_keys, CP_ARRAY_SIZE (count_keys), err) < 0
      || get_name (obj, "front", front_names, CP_JOURNAL_N_FRONTS, &front, err) < 0
      || get_name (obj, "kind", kind_names, CP_JOURNAL_N_KINDS, &kind, err) < 0)
    return -1;
  /* "" is a cause's name (none): get_name() takes no empty string. */
  const char *s;
  if (member (obj, "cause", &v, err) < 0 || cp_json_string (v, "`cause`", 16, true, &s, err) < 0)
    return -1;
  if (!name_index (cause_names, CP_JOURNAL_N_CAUSES, s, &cause))
    return cp_ledger_quotable (s) ? cp_fail_input (err, "`cause`: unknown `%s`", s)
                                  : cp_fail_input (err, "`cause`: unknown");
  if ((cause != CP_JOURNAL_CAUSE_NONE) != cp_journal_kind_has_cause ((enum cp_journal_kind) kind))
    return cp_fail_input (err, "`cause`: not one for kind `%s`", kind_names[kind]);
  if (member (obj, "n", &v, err) < 0 || cp_json_int (v, "`n`", 1, (int64_t) CP_JOURNAL_MAX_COUNT, &n, err) < 0)
    return -1;
  if (c->n[front][kind][cause] != 0)
    return cp_fail_input (err, "%s %s%s%s given twice", front_names[front], kind_names[kind], cause ? " " : "",
                          cause_names[cause]);
  c->n[front][kind][cause] = (unsigned long long) n;
  return 0;
}

static int
counts_from_json (json_object *counts, struct cp_journal_counts *c, cp_error_t *err)
{
  if (!json_object_is_type (counts, json_type_array))
    {
      cleanup_free char *got = cp_json_describe (counts);
      return cp_fail_input (err, "`counts`: expected an array, got %s", got);
    }
  size_t n = json_object_array_length (counts);
  for (size_t i = 0; i < n; i++)
    if (count_from_json (json_object_array_get_idx (counts, i), c, err) < 0)
      return cp_error_wrap (err, "count %zu", i);
  return 0;
}

static const char *const top_keys[] = { "version", "records", "counts" };

int
cp_journal_parse (const char *buf, size_t len, struct cp_journal_list **out, cp_error_t *err)
{
  if (len > CP_JOURNAL_MAX_BYTES)
    return cp_fail_input (err, "%zu bytes, more than the limit %d", len, CP_JOURNAL_MAX_BYTES);
  cleanup_json json_object *top = NULL;
  if (cp_json_parse_object (buf, len, &top, err) < 0 || only_keys (top, top_keys, CP_ARRAY_SIZE (top_keys), err) < 0)
    return -1;
  json_object *v, *records;
  int64_t version;
  if (member (top, "version", &v, err) < 0 || cp_json_int (v, "`version`", 0, INT32_MAX, &version, err) < 0)
    return -1;
  if (version != CP_JOURNAL_VERSION && version != 1)
    return cp_fail_input (err, "unsupported version %" PRId64 " (expected 1 or %d)", version, CP_JOURNAL_VERSION);
  json_object *counts = NULL;
  bool have_counts = cp_json_member (top, "counts", false, &counts);
  if (version == 1 && have_counts)
    return cp_fail_input (err, "unknown key `counts` (version 1)");
  if (member (top, "records", &records, err) < 0 || (version > 1 && member (top, "counts", &counts, err) < 0))
    return -1;
  if (!json_object_is_type (records, json_type_array))
    {
      cleanup_free char *got = cp_json_describe (records);
      return cp_fail_input (err, "`records`: expected an array, got %s", got);
    }
  size_t n = json_object_array_length (records);
  if (n > CP_JOURNAL_MAX_RECORDS)
    return cp_fail_input (err, "%zu records, more than the limit %d", n, CP_JOURNAL_MAX_RECORDS);
  cleanup_journal_list struct cp_journal_list *l = cp_xmalloc0 (sizeof *l);
  for (size_t i = 0; i < n; i++)
    if (record_from_json (json_object_array_get_idx (records, i), cp_journal_list_push (l), err) < 0)
      return cp_error_wrap (err, "record %zu", i);
  if (counts && counts_from_json (counts, &l->counts, err) < 0)
    return -1;
  *out = cp_steal_pointer (&l);
  return 0;
}

/* ------------------------------------------------------------------ writing */

/* S as a JSON string (checked text: only `"` and `\` need an escape, but control
 * characters get one anyway, so that the writer can never break a line). */
static void
put_string (char **p, const char *s)
{
  char *o = *p;
  *o++ = '"';
  for (const unsigned char *c = (const unsigned char *) (s ? s : ""); *c; c++)
    if (*c == '"' || *c == '\\')
      {
        *o++ = '\\';
        *o++ = (char) *c;
      }
    else if (*c < 0x20)
      o += sprintf (o, "\\u%04x", *c);
    else
      *o++ = (char) *c;
  *o++ = '"';
  *p = o;
}

static size_t
string_room (const char *s)
{
  return 6 * (s ? strlen (s) : 0) + 2;
}

/* One record as one line of JSON, without the separator.  Caller frees. */
static char *
record_line (const struct cp_journal_record *r)
{
  cleanup_free char *cpus = r->cpus ? cp_cpulist_format (r->cpus) : cp_xstrdup ("");
  cleanup_free char *mems = r->mems ? cp_cpulist_format (r->mems) : cp_xstrdup ("");
  size_t room = 256 + string_room (r->id) + string_room (r->name) + string_room (r->cgroup)
                + string_room (r->reason) + string_room (cpus) + string_room (mems);
  char *line = cp_xmalloc0 (room);
  char *p = line + sprintf (line, "{\"time\":%lld,\"front\":\"%s\",\"kind\":\"%s\",\"id\":", r->time,
                            cp_journal_front_name (r->front), cp_journal_kind_name (r->kind));
  put_string (&p, r->id);
  p = stpcpy (p, ",\"name\":");
  put_string (&p, r->name);
  p = stpcpy (p, ",\"cgroup\":");
  put_string (&p, r->cgroup);
  p = stpcpy (p, ",\"cpus\":");
  put_string (&p, cpus);
  p = stpcpy (p, ",\"mems\":");
  put_string (&p, mems);
  p = stpcpy (p, ",\"reason\":");
  put_string (&p, r->reason);
  p = stpcpy (p, "}");
  return line;
}

#define HEAD "{\"version\":2,\"records\":["
#define TAIL "\n]}\n"

/* The counts that are not zero, "],\"counts\":[" to TAIL: one line each, in
   front, kind and cause order.  Caller frees. */
static char *
counts_text (const struct cp_journal_counts *c)
{
  /* At most N_FRONTS * N_KINDS * N_CAUSES lines of fixed names and a number. */
  size_t room = 32 + (size_t) CP_JOURNAL_N_FRONTS * CP_JOURNAL_N_KINDS * CP_JOURNAL_N_CAUSES * 96;
  char *text = cp_xmalloc0 (room);
  char *p = stpcpy (text, "\n],\"counts\":[");
  const char *sep = "\n ";
  for (unsigned f = 0; f < CP_JOURNAL_N_FRONTS; f++)
    for (unsigned k = 0; k < CP_JOURNAL_N_KINDS; k++)
      for (unsigned w = 0; w < CP_JOURNAL_N_CAUSES; w++)
        if (c->n[f][k][w] != 0)
          {
            p += sprintf (p, "%s{\"front\":\"%s\",\"kind\":\"%s\",\"cause\":\"%s\",\"n\":%llu}", sep,
                          front_names[f], kind_names[k], cause_names[w], c->n[f][k][w]);
            sep = ",\n ";
          }
  stpcpy (p, TAIL);
  return text;
}

char *
cp_journal_serialize (const struct cp_journal_list *l, size_t *kept)
{
  /* The newest records first, as many as fit; then written oldest first.  Each
     line costs its length and "\n " (its separator, and a comma but for the
     first): the sum is the file's size exactly. */
  size_t first = l->n > CP_JOURNAL_MAX_RECORDS ? l->n - CP_JOURNAL_MAX_RECORDS : 0;
  char **lines = cp_xcalloc (l->n ? l->n : 1, sizeof *lines);
  cleanup_free char *tail = counts_text (&l->counts);
  size_t total = strlen (HEAD) + strlen (tail);
  for (size_t i = l->n; i > first; i--)
    {
      char *line = record_line (&l->records[i - 1]);
      size_t cost = strlen (line) + 2 + (i < l->n ? 1 : 0);
      if (i < l->n && total + cost > CP_JOURNAL_MAX_BYTES)
        {
          free (line);
          first = i;
          break;
        }
      total += cost;
      lines[i - 1] = line;
    }
  char *text = cp_xmalloc0 (total + 1);
  char *p = stpcpy (text, HEAD);
  for (size_t i = first; i < l->n; i++)
    {
      p = stpcpy (p, i > first ? ",\n " : "\n ");
      p = stpcpy (p, lines[i]);
      free (lines[i]);
    }
  stpcpy (p, tail);
  free (lines);
  if (kept)
    *kept = l->n - first;
  return text;
}

