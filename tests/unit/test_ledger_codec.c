/* The ledger's codec (hook/state/ledger_codec*.c) against the json-c reference it
 * replaced (tests/support/ledger_codec_dom.c): on generated ledgers and on thousands of
 * corruptions of them, both readers accept the same texts and read them the same
 * way; each writer's text reads back the same through both readers and through
 * json-c alone (what jq and the docs rely on).  CACHEPIN_CODEC_SEED=N replays a
 * run (the seed is printed on a failure). */
#define _GNU_SOURCE
#include "testutil.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"
#include "ledger_codec_dom.h"
#include "ledger_internal.h"
#include "json.h"
#include "jsonpull.h"
#include "bitmap.h"
#include "cpulist.h"
#include "util.h"
#include "text.h"

static uint64_t rng_state;

static uint64_t
rnd (void)
{
  /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 2685821657736338717ULL;
}

static unsigned
below (unsigned n)
{
  return (unsigned) (rnd () % n);
}

static uint64_t seed;

static void
seed_rng (void)
{
  const char *s = getenv ("CACHEPIN_CODEC_SEED");
  seed = s ? strtoull (s, NULL, 10) : 20261130;
  rng_state = seed ? seed : 1;
}

/* Pieces of ids and paths: every kind of text the entry check allows, and the
 * characters a JSON writer must escape. */
static const char *const pieces[] = {
  "a", "b", "c0ffee", "-", "_", ".", ":", "\"", "\\", "/", "\\u0041", "caf\xc3\xa9", "\xe2\x82\xac",
  "\xf0\x9f\x90\xb3", "\xe4\xb8\xad", " ", "'", "{", "}", "[", "]", ",", "%s", "\x7e",
};

static char *
random_text (const char *prefix, unsigned max_pieces)
{
  char *s = cp_xstrdup (prefix);
  unsigned n = 1 + below (max_pieces);
  for (unsigned i = 0; i < n; i++)
    {
      char *next = cp_xasprintf ("%s%s", s, pieces[below (CP_ARRAY_SIZE (pieces))]);
      free (s);
      s = next;
    }
  return s;
}

static hwloc_bitmap_t
random_set (unsigned max_cpu, unsigned max_bits)
{
  hwloc_bitmap_t b = cp_bitmap_new ();
  unsigned n = below (max_bits + 1);
  for (unsigned i = 0; i < n; i++)
    {
      unsigned start = below (max_cpu), len = 1 + below (6);
      hwloc_bitmap_set_range (b, start, start + len - 1 > max_cpu ? max_cpu : start + len - 1);
    }
  return b;
}

/* A random entry the entry check accepts (put may still refuse a conflict). */
static struct cp_ledger_entry
random_entry (unsigned i)
{
  struct cp_ledger_entry e = { 0 };
  cleanup_free char *prefix = cp_xasprintf ("%u", i);
  e.id = random_text (below (4) == 0 ? "apply:/" : prefix, 6);
  e.cgroup_mount = below (2) ? cp_xstrdup ("/sys/fs/cgroup") : random_text ("/", 3);
  e.cgroup = random_text ("/machine/", 8);
  if (strstr (e.cgroup, "/.") || strstr (e.cgroup_mount, "/."))
    {
      free (e.cgroup);
      e.cgroup = cp_xasprintf ("/machine/x%u", i); /* no `..` component */
      free (e.cgroup_mount);
      e.cgroup_mount = cp_xstrdup ("/sys/fs/cgroup/cpuset");
    }
  e.pid = below (3) ? (pid_t) (rnd () % 4194304) : 0;
  e.start_time = e.pid ? (below (4) ? rnd () % 100000000 : (unsigned long long) CP_LEDGER_MAX_INT) : 0;
  e.mode = below (2) ? CP_MODE_EXCLUSIVE : CP_MODE_SHARED;
  do
    {
      hwloc_bitmap_free (e.cpus);
      e.cpus = random_set (below (8) ? 255 : CP_CPULIST_MAX, 4);
    }
  while (hwloc_bitmap_iszero (e.cpus));
  e.held = hwloc_bitmap_dup (e.cpus);
  if (e.mode == CP_MODE_EXCLUSIVE)
    {
      cleanup_bitmap hwloc_bitmap_t more = random_set (255, 2);
      hwloc_bitmap_or (e.held, e.held, more);
    }
  else
    hwloc_bitmap_zero (e.held);
  e.mems = random_set (3, 2);
  e.placed_at = below (4) ? 1700000000 + (long long) below (1000000) : (below (2) ? 0 : CP_LEDGER_MAX_INT);
  e.sched_cache = (enum cp_ask) below (3);
  e.core_sched = below (2);
  e.drift = random_set (255, below (3) ? 0 : 2);
  if (hwloc_bitmap_isequal (e.drift, e.cpus))
    hwloc_bitmap_zero (e.drift);
  e.cgroup_ino = below (3) ? 0 : below (2) ? 1 + rnd () % 100000 : (unsigned long long) CP_LEDGER_MAX_INT;
  if (below (2))
    {
      cleanup_free char *raw = random_text ("ns/pod/", 6);
      e.name = cp_text_clean_copy (raw, CP_LEDGER_MAX_NAME); /* as the front end keeps it */
    }
  return e;
}

static struct cp_ledger *
random_ledger (unsigned max_entries)
{
  struct cp_ledger *l = cp_ledger_new ();
  unsigned n = below (max_entries + 1);
  for (unsigned i = 0; i < n; i++)
    {
      struct cp_ledger_entry e = random_entry (i);
      cp_error_t err = NULL;
      int r = cp_ledger_put (l, &e, &err);
      if (r == -1)
        fail_msg ("seed %llu: generated entry refused: %s", (unsigned long long) seed, cp_error_message (err));
      cp_error_free (&err); /* a conflict: left out */
      cp_ledger_entry_clear (&e);
    }
  cp_ledger_set_cas_restore (l, (int) below (3) - 1);
  return l;
}

/* ------------------------------------------------------------ comparison */

/* Parse TEXT with both readers: they accept or refuse it together, with an
 * input error of one line, and what they accept reads the same (the fast
 * writer's text of each, byte for byte).  The outcome, for statistics. */
static bool
agree (const char *text, size_t len, const char *what)
{
  struct cp_ledger *fast = NULL, *dom = NULL;
  cp_error_t fast_err = NULL, dom_err = NULL;
  int rf = cp_ledger_parse (text, len, &fast, &fast_err);
  int rd = cp_ledger_parse_dom (text, len, &dom, &dom_err);
  if ((rf < 0) != (rd < 0))
    fail_msg ("seed %llu, %s: the fast reader %s, the reference %s; text (%zu bytes):\n%.*s",
              (unsigned long long) seed, what, rf < 0 ? cp_error_message (fast_err) : "accepts",
              rd < 0 ? cp_error_message (dom_err) : "accepts", len, (int) (len > 4000 ? 4000 : len), text);
  if (rf < 0)
    {
      assert_int_equal (cp_error_kind (fast_err), CP_ERR_INPUT);
      assert_null (strchr (cp_error_message (fast_err), '\n'));
      cp_error_free (&fast_err);
      cp_error_free (&dom_err);
      return false;
    }
  cleanup_free char *a = cp_ledger_serialize (fast);
  cleanup_free char *b = cp_ledger_serialize (dom);
  if (strcmp (a, b) != 0)
    fail_msg ("seed %llu, %s: read differently:\nfast %s\nreference %s", (unsigned long long) seed, what, a, b);
  cp_ledger_close (fast);
  cp_ledger_close (dom);
  return true;
}

/* json-c alone (as jq would) reads the writer's TEXT as the entries of L. */
static void
expect_plain_json (const char *text, const struct cp_ledger *l)
{
  json_object *root = json_tokener_parse (text);
  assert_non_null (root);
  json_object *v, *entries;
  assert_true (json_object_object_get_ex (root, "version", &v));
  assert_int_equal (json_object_get_int (v), CP_LEDGER_VERSION);
  assert_true (json_object_object_get_ex (root, "entries", &entries));
  assert_int_equal (json_object_array_length (entries), l->n);
  for (size_t i = 0; i < l->n; i++)
    {
      const struct cp_ledger_entry *e = &l->entries[i];
      json_object *o = json_object_array_get_idx (entries, i);
      assert_true (json_object_object_get_ex (o, "id", &v));
      assert_string_equal (json_object_get_string (v), e->id);
      assert_true (json_object_object_get_ex (o, "cgroup", &v));
      assert_string_equal (json_object_get_string (v), e->cgroup);
      assert_true (json_object_object_get_ex (o, "start_time", &v));
      assert_int_equal (json_object_get_int64 (v), (int64_t) e->start_time);
      assert_true (json_object_object_get_ex (o, "held", &v));
      cleanup_free char *held = cp_cpulist_format (e->held);
      assert_string_equal (json_object_get_string (v), held);
      /* cgroup_ino is written only when known. */
      json_object *ino = NULL;
      assert_true (json_object_object_get_ex (o, "cgroup_ino", &ino) == (e->cgroup_ino != 0));
      assert_true (ino == NULL || (unsigned long long) json_object_get_int64 (ino) == e->cgroup_ino);
      /* name too (never empty when written). */
      json_object *name = NULL;
      assert_true (json_object_object_get_ex (o, "name", &name) == (e->name != NULL));
      assert_true (name == NULL || strcmp (json_object_get_string (name), e->name) == 0);
      assert_int_equal (json_object_object_length (o), 13 + (e->cgroup_ino != 0) + (e->name != NULL));
    }
  json_object_put (root);
}

/* ------------------------------------------------------------ corruption */

static const char *const tokens[] = {
  "\"", "\\", "{", "}", "[", "]", ",", ":", " ", "\n", "\t", "0", "-", "1.", "-01", "00", "1e5", "1.5",
  "NaN", "Infinity", "-Infinity", "null", "true", "tru", "\"\\u0000\"", "\\u0000", "\\ud800", "\\udc00",
  "\\ud83d\\udc33", "\\u00e9", "\\u0069", "\\x", "99999999999999999999", "9007199254740993", "-0",
  "\xff", "\xc2", "\xc0\xaf", "\xed\xa0\x80", "\xc2\x9b", "\x7f", "\x01", "'a'", "\"id\":\"z\",",
  "\"pid\":1,", "\"drift\":\"\",", "\"cgroup_ino\":7,", "\"name\":\"w\",", "\"x\":[1,{}],", "/*c*/",
};

/* TEXT spoiled in one of a few ways, in *LEN bytes. */
static char *
corrupt (const char *text, size_t len, size_t *out_len)
{
  char *s = cp_xmalloc0 (len + 256);
  size_t at = len ? below ((unsigned) len) : 0;
  switch (below (7))
    {
    case 0: /* truncated */
      memcpy (s, text, at);
      *out_len = at;
      break;
    case 1: /* a bit flipped */
      memcpy (s, text, len);
      s[at] ^= (char) (1 << below (8));
      *out_len = len;
      break;
    case 2: /* a byte deleted */
      memcpy (s, text, at);
      memcpy (s + at, text + at + 1, len - at - (len > 0));
      *out_len = len - (len > 0);
      break;
    case 3: /* a token inserted */
    case 4: /* a byte replaced by a token */
      {
        const char *t = tokens[below (CP_ARRAY_SIZE (tokens))];
        size_t skip = at < len && below (2) ? 1 : 0;
        memcpy (s, text, at);
        memcpy (s + at, t, strlen (t));
        memcpy (s + at + strlen (t), text + at + skip, len - at - skip);
        *out_len = len + strlen (t) - skip;
        break;
      }
    case 5: /* a key duplicated: `"k":` copied to just before itself */
      {
        const char *q = memchr (text + at, '"', len - at);
        const char *colon = q ? memchr (q, ':', (size_t) (text + len - q)) : NULL;
        size_t klen = colon ? (size_t) (colon - q) + 1 : 0;
        memcpy (s, text, len);
        *out_len = len;
        if (colon && klen < 32)
          {
            const char *val = "\"0\",";
            size_t off = (size_t) (q - text);
            memcpy (s + off, q, klen);
            memcpy (s + off + klen, val, strlen (val));
            memcpy (s + off + klen + strlen (val), text + off, len - off);
            *out_len = len + klen + strlen (val);
          }
        break;
      }
    default: /* a random byte */
      memcpy (s, text, len);
      s[at] = (char) below (256);
      *out_len = len;
      break;
    }
  return s;
}

/* The fast writer's TEXT with "entries" first and the other members after it:
 * the reader then keeps the entries until it knows the version. */
static char *
entries_first (const char *text)
{
  const char *entries = strstr (text, "\"entries\":[");
  const char *end = strrchr (text, '}');
  assert_non_null (entries);
  assert_non_null (end);
  /* {"version":3,...,"entries":[...]}  ->  {"entries":[...],"version":3,...} */
  return cp_xasprintf ("{%.*s,%.*s}\n", (int) (end - entries), entries, (int) (entries - text - 2), text + 1);
}

/* ------------------------------------------------------------ the tests */

/* Both writers' texts read back the same through both readers, the fast
 * writer's again to itself, and json-c alone reads it as the entries. */
static void
test_round_trips (void **state)
{
  (void) state;
  seed_rng ();
  for (unsigned k = 0; k < 300; k++)
    {
      cleanup_ledger struct cp_ledger *l = random_ledger (k % 10 == 0 ? 200 : 12);
      cleanup_free char *fast = cp_ledger_serialize (l);
      cleanup_free char *dom = cp_ledger_serialize_dom (l);
      assert_true (agree (fast, strlen (fast), "fast writer"));
      assert_true (agree (dom, strlen (dom), "reference writer"));
      cleanup_free char *reordered = entries_first (fast);
      assert_true (agree (reordered, strlen (reordered), "entries first"));
      struct cp_ledger *back = NULL;
      cp_error_t err = NULL;
      if (cp_ledger_parse (dom, strlen (dom), &back, &err) < 0)
        fail_msg ("%s", cp_error_message (err));
      cleanup_free char *again = cp_ledger_serialize (back);
      assert_string_equal (again, fast);
      cp_ledger_close (back);
      expect_plain_json (fast, l);
      /* One entry per line, ending in a newline. */
      size_t lines = 0;
      for (const char *p = fast; *p; p++)
        lines += *p == '\n';
      assert_int_equal (lines, l->n + 2);
      assert_int_equal (fast[strlen (fast) - 1], '\n');
    }
}

/* Corruptions of generated ledgers, in either writer's layout: the readers
 * agree on every one. */
static void
test_corruptions (void **state)
{
  (void) state;
  seed_rng ();
  size_t accepted = 0, total = 0;
  for (unsigned k = 0; k < 400; k++)
    {
      cleanup_ledger struct cp_ledger *l = random_ledger (6);
      cleanup_free char *fast = cp_ledger_serialize (l);
      /* Each layout, and the entries before the version (read another way). */
      cleanup_free char *text = k % 3 == 0 ? cp_ledger_serialize_dom (l) : k % 3 == 1 ? cp_xstrdup (fast)
                                                                                        : entries_first (fast);
      size_t len = strlen (text);
      for (unsigned m = 0; m < 40; m++)
        {
          size_t n;
          cleanup_free char *bad = corrupt (text, len, &n);
          /* Now and then a second one on top. */
          if (below (4) == 0)
            {
              size_t n2;
              char *worse = corrupt (bad, n, &n2);
              free (bad);
              bad = worse;
              n = n2;
            }
          accepted += agree (bad, n, "corrupted");
          total++;
        }
    }
  /* Enough of them still parse for the comparison of results to mean something. */
  print_message ("%zu of %zu corrupted ledgers accepted by both\n", accepted, total);
  assert_true (accepted > total / 50);
}

/* Texts a generator seldom makes: each strict-reader promise, each version,
 * escapes in keys and values. */
static void
test_edges (void **state)
{
  (void) state;
#define E(extra)                                                                                           \
  "{\"version\":3,\"entries\":[{\"id\":\"a\",\"cgroup_mount\":\"/m\",\"cgroup\":\"/c\",\"pid\":1,"      \
  "\"start_time\":2,\"mode\":\"exclusive\",\"cpus\":\"0-1\",\"held\":\"0-3\",\"mems\":\"\","           \
  "\"placed_at\":3,\"sched_cache\":\"on\",\"core_sched\":true,\"drift\":\"5\"" extra "}]}"
  static const struct
  {
    const char *text;
    bool ok;
  } cases[] = {
    { E (""), true },
    { " \n\t\r" E ("") " \n\t\r", true },
    { E (",\"\\u0069d\":\"b\""), false },       /* "id" twice, once escaped */
    { E (",\"i\\u0000d\":1"), false },           /* NUL in a key */
    { E (",\"x\":NaN"), false },
    { E (",\"x\":Infinity"), false },
    { E (",\"x\":-01"), false },
    { E (",\"x\":1."), false },
    { E (",\"x\":\"a\tb\""), false },            /* raw tab */
    { E ("") "x", false },
    { E ("") "{}", false },
    { "{\"version\":3,\"entries\":[],\"version\":3}", false },
    { "{\"entries\":[],\"version\":3}", true },   /* any key order */
    { "{\"version\":3,\"sched_cache_restore\":\"on\",\"entries\":[]}", true },
    { "{\"version\":3,\"sched_cache_restore\":\"\",\"entries\":[]}", false },
    { "{\"version\":3,\"sched_cache_restore\":\"offf_long\",\"entries\":[]}", false },
    { "{\"version\":3,\"sched_cache_restore\":\"o\\u0000\",\"entries\":[]}", false },
    { "{\"version\":-0,\"entries\":[]}", false },
    { "{\"version\":3e0,\"entries\":[]}", false },
    { "{\"version\":3,\"entries\":[] , \"x\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
      false },
    { "{\"version\":99999999999999999999,\"entries\":[]}", false },
    { "{\"version\":3,\"entries\":[{}]}", false },
    { "{\"version\":3,\"entries\":[1]}", false },
    { "{\"version\":3,\"entries\":[]]", false },
    { "{\"version\":3,\"entries\":[],}", false },
    { "{\"version\":3,\"entries\":[,]}", false },
    { "{\"version\":3 \"entries\":[]}", false },
    { "{'version':3,\"entries\":[]}", false },
    { "{\"version\":3,\"entries\":[]}\xef\xbb\xbf", false },
    { "\xef\xbb\xbf{\"version\":3,\"entries\":[]}", false },
    { "{\"version\":3,\"entries\":[]} \f", false },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (cases); i++)
    {
      cleanup_free char *what = cp_xasprintf ("case %zu", i);
      if (agree (cases[i].text, strlen (cases[i].text), what) != cases[i].ok)
        fail_msg ("%s: %s", what, cases[i].ok ? "refused" : "accepted");
    }

  /* Escapes in values: decoded alike (pairs, lone surrogates, \/ and the rest). */
  static const char *const ids[] = {
    "a\\/b", "\\ud83d\\udc33", "x\\ud800", "x\\udc00y", "\\ud800\\ud800", "\\ud800\\u0041", "\\ud800\\n",
    "q\\\"\\\\", "\\u00e9\\u20ac", "\\ud83d", "\\uDBFF\\uDFFF", "e\\u0301",
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (ids); i++)
    {
      cleanup_free char *text = cp_xasprintf (
          "{\"version\":1,\"entries\":[{\"id\":\"%s\",\"cgroup_mount\":\"/m\",\"cgroup\":\"/c\",\"pid\":0,"
          "\"start_time\":0,\"mode\":\"shared\",\"cpus\":\"0\",\"held\":\"\",\"mems\":\"0\",\"placed_at\":1}]}",
          ids[i]);
      agree (text, strlen (text), ids[i]);
    }
}

/* ------------------------------------------------------------ policy/base/jsonpull.h */

/* TEXT read as one value (depth 1): its result, *V, and the message in *MSG. */
static int
pull (const char *text, struct cp_jp_val *v, char **msg)
{
  cp_error_t err = NULL;
  struct cp_jp p = { .buf = text, .len = strlen (text), .err = &err };
  int r = cp_jp_value (&p, 1, v);
  *msg = r < 0 ? cp_xstrdup (cp_error_message (err)) : NULL;
  if (r == 0 && v->type == CP_JP_STRING)
    {
      /* The decoded string outlives the arena in the caller's copy. */
      char *copy = cp_xmalloc0 (v->slen + 1);
      memcpy (copy, v->s, v->slen);
      *msg = copy;
    }
  cp_error_free (&err);
  cp_jp_release (&p);
  return r;
}

static void
test_jsonpull (void **state)
{
  (void) state;
  struct cp_jp_val v;
  char *m;
  static const struct
  {
    const char *text;
    const char *decoded; /* NULL: refused */
    size_t len;
  } strings[] = {
    { "\"a\\ud83d\\udc33\"", "a\xf0\x9f\x90\xb3", 5 },
    /* U+1DA00: json-c 0.16 reads it as U+FFFD (its 16-bit surrogate mask); we must not. */
    { "\"\\ud836\\ude00\"", "\xf0\x9d\xa8\x80", 4 },
    { "\"\\ud800x\"", "\xef\xbf\xbdx", 4 },
    { "\"\\udc00\\ud800\"", "\xef\xbf\xbd\xef\xbf\xbd", 6 },
    { "\"\\u0000\"", "", 1 },
    { "\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"", "/\b\f\n\r\t\"\\", 8 },
    { "\"\xc0\xaf\"", "\xc0\xaf", 2 }, /* structurally UTF-8: the fields judge overlong forms */
    { "\"\\x\"", NULL, 0 },
    { "\"\\u12g4\"", NULL, 0 },
    { "\"a\tb\"", NULL, 0 },
    { "\"\xff\"", NULL, 0 },
    { "\"\xe2\x82\"", NULL, 0 },
    { "\"abc", NULL, 0 },
  };
  for (size_t i = 0; i < CP_ARRAY_SIZE (strings); i++)
    {
      int r = pull (strings[i].text, &v, &m);
      if (strings[i].decoded == NULL)
        {
          assert_int_equal (r, -1);
          tu_assert_contains (m, "invalid JSON at byte");
        }
      else
        {
          assert_int_equal (r, 0);
          assert_int_equal (v.slen, strings[i].len);
          assert_memory_equal (m, strings[i].decoded, strings[i].len);
        }
      free (m);
    }

  assert_int_equal (pull ("-0", &v, &m), 0);
  assert_true (v.type == CP_JP_INT && v.i == 0 && !v.big);
  assert_int_equal (pull ("-9223372036854775808", &v, &m), 0);
  assert_true (v.type == CP_JP_INT && v.i == INT64_MIN && !v.big);
  assert_int_equal (pull ("9223372036854775808", &v, &m), 0);
  assert_true (v.type == CP_JP_INT && v.big);
  assert_int_equal (pull ("99999999999999999999999", &v, &m), 0);
  assert_true (v.type == CP_JP_INT && v.big);
  assert_int_equal (pull ("1.5e3", &v, &m), 0);
  assert_int_equal (v.type, CP_JP_NUMBER);
  static const char *const bad[] = { "01", "-01", "1.", "1.e5", "1e", "+1", ".5", "NaN", "Infinity", "-Infinity",
                                     "nul", "True", "'a'", "-" };
  for (size_t i = 0; i < CP_ARRAY_SIZE (bad); i++)
    {
      if (pull (bad[i], &v, &m) != -1)
        fail_msg ("`%s` accepted", bad[i]);
      free (m);
    }

  /* Nesting: CP_JSON_MAX_DEPTH levels, not one more. */
  char deep[2 * CP_JSON_MAX_DEPTH + 3];
  memset (deep, '[', CP_JSON_MAX_DEPTH);
  memset (deep + CP_JSON_MAX_DEPTH, ']', CP_JSON_MAX_DEPTH);
  deep[2 * CP_JSON_MAX_DEPTH] = '\0';
  assert_int_equal (pull (deep, &v, &m), 0);
  memset (deep, '[', CP_JSON_MAX_DEPTH + 1);
  memset (deep + CP_JSON_MAX_DEPTH + 1, ']', CP_JSON_MAX_DEPTH + 1);
  deep[2 * CP_JSON_MAX_DEPTH + 2] = '\0';
  assert_int_equal (pull (deep, &v, &m), -1);
  tu_assert_contains (m, "nested too deeply");
  free (m);

  /* "got ...": compact, cut after 64 bytes. */
  const char *text = "[ 1, 2 ,\n \"a b\" , {\"k\" : [ ] }, 11111111111111111111111111111111111111111111111111111 ]";
  cp_error_t err = NULL;
  struct cp_jp p = { .buf = text, .len = strlen (text), .err = &err };
  assert_int_equal (cp_jp_value (&p, 1, &v), 0);
  cleanup_free char *got = cp_jp_describe (&p, &v);
  assert_string_equal (got, "[1,2,\"a b\",{\"k\":[]},11111111111111111111111111111111111111111111...");
  cp_jp_release (&p);
}

/* The writer's word-at-a-time paths (issue 22): cpulists whose runs cross a word of
 * the bitmap, written as cp_cpulist_format() writes them; strings with a byte to
 * escape at every place in and after an 8-byte block, written as the json-c
 * reference writer writes them (the same value read back). */
static void
test_writer_words (void **state)
{
  (void) state;
  static const char *const sets[] = { "0", "63", "64", "63-64", "0-127", "1,3,5-70,127-129", "62,64,66", "0-63,65",
                                      "255", "4095", "1000-1100" };
  for (size_t i = 0; i < CP_ARRAY_SIZE (sets); i++)
    {
      cleanup_ledger struct cp_ledger *l = cp_ledger_new ();
      cleanup_bitmap hwloc_bitmap_t cpus = tu_set (sets[i]);
      cleanup_bitmap hwloc_bitmap_t none = cp_bitmap_new ();
      cleanup_bitmap hwloc_bitmap_t mems = tu_set ("0");
      struct cp_ledger_entry e = { .id = (char *) "x", .cgroup_mount = (char *) "/sys/fs/cgroup",
                                   .cgroup = (char *) "/a", .mode = CP_MODE_SHARED, .cpus = cpus, .held = none,
                                   .mems = mems, .drift = none };
      cp_error_t err = NULL;
      assert_int_equal (cp_ledger_put (l, &e, &err), 0);
      cleanup_free char *text = cp_ledger_serialize (l);
      cleanup_free char *list = cp_cpulist_format (cpus);
      cleanup_free char *want = cp_xasprintf ("\"cpus\":\"%s\",\"held\":\"\",\"mems\":\"0\"", list);
      tu_assert_contains (text, want);
    }
  static const char *const specials[] = { "\"", "\\", "\xc3\xa9" };
  for (size_t k = 0; k < CP_ARRAY_SIZE (specials); k++)
    for (size_t len = 1; len <= 19; len++)
      for (size_t at = 0; at < len; at++)
        {
          char id[64];
          memset (id, 'a', len);
          id[len] = '\0';
          cleanup_free char *with = cp_xasprintf ("%.*s%s%s", (int) at, id, specials[k], id + at + 1);
          cleanup_ledger struct cp_ledger *l = cp_ledger_new ();
          cleanup_bitmap hwloc_bitmap_t cpus = tu_set ("0");
          cleanup_bitmap hwloc_bitmap_t none = cp_bitmap_new ();
          struct cp_ledger_entry e = { .id = with, .cgroup_mount = (char *) "/sys/fs/cgroup", .cgroup = (char *) "/a",
                                       .mode = CP_MODE_SHARED, .cpus = cpus, .held = none, .mems = cpus,
                                       .drift = none };
          cp_error_t err = NULL;
          assert_int_equal (cp_ledger_put (l, &e, &err), 0);
          cleanup_free char *fast = cp_ledger_serialize (l);
          cleanup_free char *dom = cp_ledger_serialize_dom (l);
          assert_true (agree (fast, strlen (fast), "fast writer"));
          struct cp_ledger *a = NULL, *b = NULL;
          assert_int_equal (cp_ledger_parse (fast, strlen (fast), &a, &err), 0);
          assert_int_equal (cp_ledger_parse (dom, strlen (dom), &b, &err), 0);
          assert_string_equal (cp_ledger_at (a, 0)->id, with);
          assert_string_equal (cp_ledger_at (b, 0)->id, with);
          cp_ledger_close (a);
          cp_ledger_close (b);
        }
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_round_trips),
    cmocka_unit_test (test_writer_words),
    cmocka_unit_test (test_corruptions),
    cmocka_unit_test (test_edges),
    cmocka_unit_test (test_jsonpull),
  };
  return tu_exit (cmocka_run_group_tests (tests, NULL, NULL));
}
