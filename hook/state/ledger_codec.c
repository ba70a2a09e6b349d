/* cachepin: ledger.json text to a ledger (see ledger_codec.h; back is ledger_codec_write.c).
 *
 * Every hook run reads the whole ledger and most write it back, so this codec
 * does not build a json-c DOM (issue 12: with 1,000 entries json-c's hash table
 * per entry was 40% of a warm hook).  The reader is a strict JSON pull parser
 * that knows the schema; it keeps every promise policy/base/json.h makes for the strict
 * reader the rest of cachepin uses, and tells the same faults with the same
 * messages as that reader did here (ledger_codec_dom.c, the reference kept for
 * the differential test and fuzzer).
 *
 * It reads the text once with policy/base/jsonpull.h, recording each known key's value (type, text,
 * decoded string or integer), refusing duplicate keys and NUL in keys, noting
 * the first unknown key of each object; then checks the records in the order
 * the reference checked its DOM.  Entries are checked as they are read when the
 * version came before them (as this writer puts it), so that one record is all
 * it keeps; otherwise they are kept and checked at the end.  Either way a text
 * with a single fault gets the reference's message; one with several may get
 * another of its faults first.
 * The writer is ledger_codec_write.c. */
#define _GNU_SOURCE
#include "ledger_internal.h"

#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "json.h"
#include "jsonpull.h"
#include "bitmap.h"
#include "cpulist.h"
#include "util.h"

/* ------------------------------------------------------------ the records */

/* The keys of an entry, in the order the reference checked them in. */
enum ekey
{
  K_ID, K_CGROUP_MOUNT, K_CGROUP, K_PID, K_START_TIME, K_MODE, K_CPUS, K_HELD, K_MEMS, K_PLACED_AT,
  K_SCHED_CACHE, K_CORE_SCHED, /* version 2 */
  K_DRIFT,                     /* version 3 */
  K_CGROUP_INO,                /* version 3, optional */
  K_NAME,                      /* version 3, optional */
  K_ISOLATED,                  /* version 3, optional */
  K_RUNTIME,                   /* version 3, optional */
  N_EKEYS,
};
static const char *const ekey_names[N_EKEYS] = {
  "id",   "cgroup_mount", "cgroup",    "pid",         "start_time", "mode", "cpus",
  "held", "mems",         "placed_at", "sched_cache", "core_sched", "drift", "cgroup_ino", "name", "isolated",
  "runtime",
};
/* How many of the keys above each version has. */
static const unsigned version_ekeys[] = { [1] = K_SCHED_CACHE, [2] = K_DRIFT, [3] = N_EKEYS };

enum tkey
{
  T_VERSION, T_ENTRIES, T_RESTORE, /* sched_cache_restore: version 2 on */
  T_PARTITIONS,                     /* version 3, optional */
  N_TKEYS,
};
static const char *const tkey_names[N_TKEYS] = { "version", "entries", "sched_cache_restore", "partitions" };

#define UNKNOWN_KEY 0xff

/* An object's members by key, and the order its keys came in up to the first
 * unknown one (the reference refused the first key, in text order, that its
 * version does not have). */
struct keys
{
  uint8_t order[N_EKEYS + 1];
  uint8_t n_order;
  const char *unknown; /* the first unknown key, decoded: unknown[0, unknown_len) */
  size_t unknown_len;
};

struct rentry
{
  struct cp_jp_val self; /* what the element is; the members below when an object */
  struct cp_jp_val v[N_EKEYS];
  struct keys keys;
};

struct reader
{
  struct cp_jp jp;
  struct cp_jp_val top[N_TKEYS];
  struct keys top_keys;
  struct cp_ledger *l;   /* what is read */
  int64_t version;       /* 0 until checked */
  struct rentry scratch; /* the entry being read, when the version is known */
  struct rentry *entries; /* the entries read before the version */
  size_t n_entries, n_stored, cap;
};

static void
reader_release (struct reader *r)
{
  cp_jp_release (&r->jp);
  free (r->entries);
}

/* ---------------------------------------------------- reading: the text */

#define TOP_LEVEL SIZE_MAX

/* "entries[3]: duplicate key \"pid\"" (ENTRY 3; TOP_LEVEL: no "entries[3]: "),
 * as policy/base/json.c words it. */
static int
key_fail (struct reader *r, size_t entry, const char *what, const struct cp_jp_val *key)
{
  int n = (int) strnlen (key->s, key->slen < 128 ? key->slen : 128);
  if (entry != TOP_LEVEL)
    return cp_fail_input (r->jp.err, "entries[%zu]: %s \"%.*s\"", entry, what, n, key->s);
  return cp_fail_input (r->jp.err, "%s \"%.*s\"", what, n, key->s);
}

/* Read one object member by member (at '{', DEPTH the object's, ENTRY which
 * entry or TOP_LEVEL): each known key's value (NAMES, N of them) into VALS, the
 * keys' order into KEYS.  ON_ENTRIES, when not NULL, reads the value of the key
 * ENTRIES_KEY instead. */
static int
scan_object (struct reader *r, int depth, size_t entry, const char *const *names, size_t n, struct cp_jp_val *vals,
             struct keys *keys, int (*on_entries) (struct reader *r, struct cp_jp_val *v), size_t entries_key)
{
  if (depth > CP_JSON_MAX_DEPTH)
    return cp_jp_fail (&r->jp, r->jp.pos, "nested too deeply");
  r->jp.pos++;
  if (cp_jp_skip_space (&r->jp) < 0)
    return -1;
  if (r->jp.buf[r->jp.pos] == '}')
    {
      r->jp.pos++;
      return 0;
    }
  for (;;)
    {
      struct cp_jp_val key, ignored;
      if (cp_jp_skip_space (&r->jp) < 0)
        return -1;
      if (r->jp.buf[r->jp.pos] != '"')
        return cp_jp_fail (&r->jp, r->jp.pos, "expected a quoted key");
      if (cp_jp_string (&r->jp, &key) < 0 || cp_jp_expect (&r->jp, ':', "expected ':'") < 0)
        return -1;
      if (memchr (key.s, '\0', key.slen))
        return key_fail (r, entry, "NUL character in key", &key);
      size_t k = 0;
      while (k < n && !(strlen (names[k]) == key.slen && memcmp (names[k], key.s, key.slen) == 0))
        k++;
      if (k < n && vals[k].type != CP_JP_ABSENT)
        return key_fail (r, entry, "duplicate key", &key);
      if (keys->unknown == NULL)
        keys->order[keys->n_order++] = k < n ? (uint8_t) k : UNKNOWN_KEY;
      if (k == n && keys->unknown == NULL)
        {
          keys->unknown = key.s;
          keys->unknown_len = key.slen;
        }
      struct cp_jp_val *v = k < n ? &vals[k] : &ignored;
      if (k == entries_key && on_entries)
        {
          if (on_entries (r, v) < 0)
            return -1;
        }
      else if (cp_jp_value (&r->jp, depth + 1, v) < 0)
        return -1;
      if (cp_jp_skip_space (&r->jp) < 0)
        return -1;
      char c = r->jp.buf[r->jp.pos++];
      if (c == '}')
        return 0;
      if (c != ',')
        return cp_jp_fail (&r->jp, r->jp.pos - 1, "expected ',' or '}'");
    }
}

static int check_version (struct reader *r);
static int check_entry (struct reader *r, const struct rentry *re, size_t i);

/* Where to read the next entry: the scratch record when it is checked at once,
 * else a new stored one (NULL past the limit: then the count is all that
 * matters, the ledger is refused). */
static struct rentry *
next_entry (struct reader *r)
{
  if (r->version)
    return &r->scratch;
  if (r->n_stored > CP_LEDGER_MAX_ENTRIES)
    return NULL;
  if (r->n_stored == r->cap)
    {
      r->cap = r->cap ? 2 * r->cap : 64;
      r->entries = cp_xrealloc (r->entries, r->cap * sizeof *r->entries);
    }
  return &r->entries[r->n_stored++];
}

/* The value of "entries": an array of entry objects is read member by member,
 * anything else is only recorded. */
static int
scan_entries (struct reader *r, struct cp_jp_val *v)
{
  if (cp_jp_skip_space (&r->jp) < 0)
    return -1;
  if (r->jp.buf[r->jp.pos] != '[')
    return cp_jp_value (&r->jp, 2, v);
  if (r->top[T_VERSION].type != CP_JP_ABSENT && check_version (r) < 0)
    return -1;
  size_t start = r->jp.pos++;
  if (cp_jp_skip_space (&r->jp) < 0)
    return -1;
  if (r->jp.buf[r->jp.pos] == ']')
    r->jp.pos++;
  else
    for (;;)
      {
        if (cp_jp_skip_space (&r->jp) < 0)
          return -1;
        struct rentry *e = next_entry (r), spare;
        e = memset (e ? e : &spare, 0, sizeof *e);
        size_t i = r->n_entries++;
        if (r->jp.buf[r->jp.pos] == '{')
          {
            size_t at = r->jp.pos;
            if (scan_object (r, 3, i, ekey_names, N_EKEYS, e->v, &e->keys, NULL, 0) < 0)
              return -1;
            e->self = (struct cp_jp_val){ .type = CP_JP_OBJECT, .at = at, .raw_len = r->jp.pos - at };
          }
        else if (cp_jp_value (&r->jp, 3, &e->self) < 0)
          return -1;
        if (e == &r->scratch && i < CP_LEDGER_MAX_ENTRIES && check_entry (r, e, i) < 0)
          return -1;
        if (cp_jp_skip_space (&r->jp) < 0)
          return -1;
        char c = r->jp.buf[r->jp.pos++];
        if (c == ']')
          break;
        if (c != ',')
          return cp_jp_fail (&r->jp, r->jp.pos - 1, "expected ',' or ']'");
      }
  *v = (struct cp_jp_val){ .type = CP_JP_ARRAY, .at = start, .raw_len = r->jp.pos - start };
  return 0;
}

static int
scan_ledger (struct reader *r)
{
  const char *nul = memchr (r->jp.buf, '\0', r->jp.len);
  if (nul)
    return cp_jp_fail (&r->jp, (size_t) (nul - r->jp.buf), "NUL byte");
  while (r->jp.pos < r->jp.len && cp_jp_is_space (r->jp.buf[r->jp.pos]))
    r->jp.pos++;
  if (r->jp.pos == r->jp.len)
    return cp_fail_input (r->jp.err, "empty input");
  if (r->jp.buf[r->jp.pos] != '{')
    return cp_fail_input (r->jp.err, "expected a JSON object");
  if (scan_object (r, 1, TOP_LEVEL, tkey_names, N_TKEYS, r->top, &r->top_keys, scan_entries, T_ENTRIES) < 0)
    return -1;
  while (r->jp.pos < r->jp.len && cp_jp_is_space (r->jp.buf[r->jp.pos]))
    r->jp.pos++;
  if (r->jp.pos < r->jp.len)
    return cp_jp_fail (&r->jp, r->jp.pos, "data after the object");
  return 0;
}

/* -------------------------------------------------- reading: the schema */

/* A NUL-terminated copy of a string value, in SMALL when it fits, else in *HEAP
 * (the caller's to free). */
static const char *
cstr (const struct cp_jp_val *v, char *small, size_t small_size, char **heap)
{
  char *d = v->slen < small_size ? small : (*heap = cp_xmalloc0 (v->slen + 1));
  memcpy (d, v->s, v->slen);
  d[v->slen] = '\0';
  return d;
}

static int
present (const struct cp_jp_val *v, const char *key, cp_error_t *err)
{
  if (v->type == CP_JP_ABSENT)
    return cp_fail_input (err, "`%s` is missing", key);
  return 0;
}

/* Member KEY, a JSON integer in 0..MAX (cp_json_int()'s messages). */
static int
get_int (const struct reader *r, const struct cp_jp_val *v, const char *key, int64_t max, int64_t *out, cp_error_t *err)
{
  *out = 0; /* defined on failure too: GCC -O3 cannot tell that no caller reads it then */
  if (present (v, key, err) < 0)
    return -1;
  if (v->type == CP_JP_INT && !v->big && v->i >= 0 && v->i <= max)
    {
      *out = v->i;
      return 0;
    }
  cleanup_free char *got = cp_jp_describe (&r->jp, v);
  return cp_fail_input (err, "`%s`: expected an integer from 0 to %" PRId64 ", got %s", key, max, got);
}

/* Member KEY, a string without NUL of at most MAX_LEN bytes (cp_json_string()'s
 * messages); emptiness is the caller's to judge. */
static int
get_string (const struct reader *r, const struct cp_jp_val *v, const char *key, size_t max_len, cp_error_t *err)
{
  if (present (v, key, err) < 0)
    return -1;
  if (v->type != CP_JP_STRING)
    {
      cleanup_free char *got = cp_jp_describe (&r->jp, v);
      return cp_fail_input (err, "`%s`: expected a string, got %s", key, got);
    }
  if (memchr (v->s, '\0', v->slen))
    return cp_fail_input (err, "`%s`: contains a NUL character", key);
  if (v->slen > max_len)
    return cp_fail_input (err, "`%s`: longer than %zu bytes", key, max_len);
  return 0;
}

static bool
string_is (const struct cp_jp_val *v, const char *s)
{
  return v->slen == strlen (s) && memcmp (v->s, s, v->slen) == 0;
}

static int
get_cpulist (const struct reader *r, const struct cp_jp_val *v, const char *key, bool allow_empty, hwloc_bitmap_t *out,
             cp_error_t *err)
{
  if (get_string (r, v, key, SIZE_MAX, err) < 0)
    return -1;
  *out = cp_bitmap_new ();
  /* The parser quotes the list in its errors: quote only lists of our alphabet. */
  for (size_t i = 0; i < v->slen; i++)
    if (strchr ("0123456789,-", v->s[i]) == NULL)
      return cp_fail_input (err, "`%s`: a character other than digits, `,` and `-`", key);
  char small[128];
  cleanup_free char *heap = NULL;
  const char *s = cstr (v, small, sizeof small, &heap);
  if (cp_cpulist_parse (s, allow_empty ? CP_CPULIST_ALLOW_EMPTY : 0, *out, err) < 0)
    return cp_error_wrap (err, "`%s`", key);
  return 0;
}

static int
get_ask (const struct reader *r, const struct cp_jp_val *v, const char *key, enum cp_ask *out, cp_error_t *err)
{
  if (get_string (r, v, key, SIZE_MAX, err) < 0)
    return -1;
  for (int i = CP_ASK_NONE; i <= CP_ASK_OFF; i++)
    if (string_is (v, cp_ask_name ((enum cp_ask) i)))
      {
        *out = (enum cp_ask) i;
        return 0;
      }
  return cp_fail_input (err, "`%s`: expected \"none\", \"on\" or \"off\"", key);
}

static int
get_bool (const struct cp_jp_val *v, const char *key, bool *out, cp_error_t *err)
{
  if (present (v, key, err) < 0)
    return -1;
  if (v->type != CP_JP_TRUE && v->type != CP_JP_FALSE)
    return cp_fail_input (err, "`%s`: expected true or false", key);
  *out = v->type == CP_JP_TRUE;
  return 0;
}

/* Refuse the first key, in text order, that is not among the first N_ALLOWED. */
static int
only_keys (const struct keys *keys, const char *const *names, unsigned n_allowed, cp_error_t *err)
{
  for (size_t i = 0; i < keys->n_order; i++)
    {
      if (keys->order[i] < n_allowed)
        continue;
      char small[72];
      cleanup_free char *heap = NULL;
      struct cp_jp_val unknown = { .s = keys->unknown, .slen = keys->unknown_len };
      const char *name
          = keys->order[i] == UNKNOWN_KEY ? cstr (&unknown, small, sizeof small, &heap) : names[keys->order[i]];
      if (cp_ledger_quotable (name))
        return cp_fail_input (err, "unknown key `%.64s`", name);
      return cp_fail_input (err, "unknown key (not printable)");
    }
  return 0;
}

static int
get_mode (const struct reader *r, const struct cp_jp_val *v, enum cp_mode *out, cp_error_t *err)
{
  if (get_string (r, v, "mode", SIZE_MAX, err) < 0)
    return -1;
  char small[64];
  cleanup_free char *heap = NULL;
  const char *mode = cstr (v, small, sizeof small, &heap);
  if (!cp_ledger_quotable (mode))
    return cp_fail_input (err, "`mode` has a control character or is not valid UTF-8");
  if (cp_parse_mode (mode, out, err) < 0)
    return cp_error_wrap (err, "`mode`");
  return 0;
}

static char *
dup_val (const struct cp_jp_val *v)
{
  char *s = cp_xmalloc0 (v->slen + 1);
  memcpy (s, v->s, v->slen);
  s[v->slen] = '\0';
  return s;
}

/* Fills E from the record RE of a ledger of VERSION (the caller clears E, also
 * on failure), checking in the reference's order. */
static int
entry_from_record (const struct reader *r, const struct rentry *re, int64_t version, struct cp_ledger_entry *e,
                   cp_error_t *err)
{
  const struct cp_jp_val *v = re->v;
  if (only_keys (&re->keys, ekey_names, version_ekeys[version], err) < 0)
    return -1;
  if (version > 1
      && (get_ask (r, &v[K_SCHED_CACHE], "sched_cache", &e->sched_cache, err) < 0
          || get_bool (&v[K_CORE_SCHED], "core_sched", &e->core_sched, err) < 0))
    return -1;
  if (version > 2 ? get_cpulist (r, &v[K_DRIFT], "drift", true, &e->drift, err) < 0
                  : (e->drift = cp_bitmap_new (), false))
    return -1;
  int64_t pid, start_time, placed_at, ino = 0;
  if (v[K_CGROUP_INO].type != CP_JP_ABSENT
      && get_int (r, &v[K_CGROUP_INO], "cgroup_ino", CP_LEDGER_MAX_INT, &ino, err) < 0)
    return -1;
  e->cgroup_ino = (unsigned long long) ino;
  if (v[K_ISOLATED].type != CP_JP_ABSENT && get_bool (&v[K_ISOLATED], "isolated", &e->isolated, err) < 0)
    return -1;
  if (v[K_NAME].type != CP_JP_ABSENT)
    {
      if (get_string (r, &v[K_NAME], "name", SIZE_MAX, err) < 0)
        return -1;
      e->name = dup_val (&v[K_NAME]); /* judged by cp_ledger_entry_check() */
    }
  if (v[K_RUNTIME].type != CP_JP_ABSENT)
    {
      if (get_string (r, &v[K_RUNTIME], "runtime", SIZE_MAX, err) < 0)
        return -1;
      e->runtime = dup_val (&v[K_RUNTIME]); /* judged by cp_ledger_entry_check() */
    }
  if (get_string (r, &v[K_ID], "id", SIZE_MAX, err) < 0
      || get_string (r, &v[K_CGROUP_MOUNT], "cgroup_mount", SIZE_MAX, err) < 0
      || get_string (r, &v[K_CGROUP], "cgroup", SIZE_MAX, err) < 0
      || get_int (r, &v[K_PID], "pid", INT_MAX, &pid, err) < 0
      || get_int (r, &v[K_START_TIME], "start_time", CP_LEDGER_MAX_INT, &start_time, err) < 0
      || get_string (r, &v[K_MODE], "mode", SIZE_MAX, err) < 0
      || get_int (r, &v[K_PLACED_AT], "placed_at", CP_LEDGER_MAX_INT, &placed_at, err) < 0
      || get_mode (r, &v[K_MODE], &e->mode, err) < 0)
    return -1;
  e->id = dup_val (&v[K_ID]);
  e->cgroup_mount = dup_val (&v[K_CGROUP_MOUNT]);
  e->cgroup = dup_val (&v[K_CGROUP]);
  e->pid = (pid_t) pid;
  e->start_time = (unsigned long long) start_time;
  e->placed_at = (long long) placed_at;
  if (get_cpulist (r, &v[K_CPUS], "cpus", false, &e->cpus, err) < 0
      || get_cpulist (r, &v[K_HELD], "held", true, &e->held, err) < 0
      || get_cpulist (r, &v[K_MEMS], "mems", true, &e->mems, err) < 0)
    return -1;
  return cp_ledger_entry_check (e, err);
}

/* The optional "sched_cache_restore": "on" | "off" (absent: -1). */
static int
restore_from_record (const struct reader *r, struct cp_ledger *l, cp_error_t *err)
{
  const struct cp_jp_val *v = &r->top[T_RESTORE];
  if (v->type == CP_JP_ABSENT)
    return 0;
  if (get_string (r, v, "sched_cache_restore", 8, err) < 0)
    return -1;
  if (v->slen == 0)
    return cp_fail_input (err, "`sched_cache_restore`: empty");
  if (!string_is (v, "on") && !string_is (v, "off"))
    return cp_fail_input (err, "`sched_cache_restore`: expected \"on\" or \"off\"");
  l->cas_restore = string_is (v, "on");
  return 0;
}

/* Sets r->version from "version". */
static int
check_version (struct reader *r)
{
  if (present (&r->top[T_VERSION], "version", r->jp.err) < 0)
    return -1;
  const struct cp_jp_val *vv = &r->top[T_VERSION];
  if (vv->type != CP_JP_INT || vv->big || vv->i < 0 || vv->i > INT_MAX)
    {
      cleanup_free char *got = cp_jp_describe (&r->jp, vv);
      return cp_fail_input (r->jp.err, "`version`: expected an integer from 0 to %d, got %s", INT_MAX, got);
    }
  /* Versions 1 (before kernel features) and 2 (before drift) are still read, so
     that an upgrade keeps the running containers' CPUs held; they are written
     back as the current one. */
  if (vv->i < 1 || vv->i > CP_LEDGER_VERSION)
    return cp_fail_input (r->jp.err, "unsupported version %lld (expected 1 to %d)", (long long) vv->i,
                          CP_LEDGER_VERSION);
  r->version = vv->i;
  return 0;
}

/* Entry I, read into RE: into the ledger. */
static int
check_entry (struct reader *r, const struct rentry *re, size_t i)
{
  if (re->self.type != CP_JP_OBJECT)
    {
      cleanup_free char *got = cp_jp_describe (&r->jp, &re->self);
      return cp_fail_input (r->jp.err, "entry %zu: expected an object, got %s", i, got);
    }
  struct cp_ledger_entry *e = cp_ledger_append (r->l);
  if (entry_from_record (r, re, r->version, e, r->jp.err) < 0)
    {
      if (e->id && cp_ledger_quotable (e->id))
        return cp_error_wrap (r->jp.err, "entry %zu (`%.64s`)", i, e->id);
      return cp_error_wrap (r->jp.err, "entry %zu", i);
    }
  return 0;
}

static int
ledger_from_records (struct reader *r, cp_error_t *err)
{
  struct cp_ledger *l = r->l;
  if (check_version (r) < 0)
    return -1;
  if (only_keys (&r->top_keys, tkey_names, r->version == 1 ? T_RESTORE : r->version == 2 ? T_PARTITIONS : N_TKEYS,
                 err) < 0
      || restore_from_record (r, l, err) < 0)
    return -1;
  const struct cp_jp_val *entries = &r->top[T_ENTRIES];
  if (present (entries, "entries", err) < 0)
    return -1;
  if (entries->type != CP_JP_ARRAY)
    {
      cleanup_free char *got = cp_jp_describe (&r->jp, entries);
      return cp_fail_input (err, "`entries`: expected an array, got %s", got);
    }
  if (r->n_entries > CP_LEDGER_MAX_ENTRIES)
    return cp_fail_input (err, "%zu entries, more than the limit %d", r->n_entries, CP_LEDGER_MAX_ENTRIES);
  /* The entries read before the version (none when it came first). */
  for (size_t i = 0; i < r->n_stored; i++)
    if (check_entry (r, &r->entries[i], i) < 0)
      return -1;
  if (cp_ledger_check_entries (l, err) < 0)
    return -1;
  /* Few and rare (isolated containers): read with the strict DOM reader. */
  const struct cp_jp_val *parts = &r->top[T_PARTITIONS];
  if (parts->type == CP_JP_ABSENT)
    return 0;
  return cp_ledger_partitions_parse (r->jp.buf + parts->at, parts->raw_len, l, err);
}

int
cp_ledger_parse (const char *buf, size_t len, struct cp_ledger **out, cp_error_t *err)
{
  if (len > CP_LEDGER_MAX_SIZE)
    return cp_fail_input (err, "%zu bytes, more than the limit %d", len, CP_LEDGER_MAX_SIZE);
  cleanup_ledger struct cp_ledger *l = cp_ledger_new ();
  __attribute__ ((cleanup (reader_release))) struct reader r = { .jp = { .buf = buf, .len = len, .err = err }, .l = l };
  if (scan_ledger (&r) < 0 || ledger_from_records (&r, err) < 0)
    return -1;
  *out = cp_steal_pointer (&l);
  return 0;
}
