#define _GNU_SOURCE
#include "json.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <string.h>

#include "util.h"

/* ---- strictness json-c lacks ------------------------------------------------- *
 *
 * After json-c has accepted a document, one more pass over its text refuses what
 * json-c lets through (see json.h) and finds duplicate keys.  Keys are compared
 * as json-c decodes them, so "a" and "\u0061" are the same key.  Inside the one
 * member the caller reads leniently (cp_json_parse_object_twice()) a duplicate is
 * noted instead of refused. */

struct scan_level
{
  json_object *keys; /* objects: the keys seen so far, as a set; NULL in arrays */
  char *key;         /* objects: the member being read */
  size_t index;      /* arrays: the element being read */
};

struct scan
{
  const char *buf;
  size_t len, pos;
  struct scan_level levels[CP_JSON_MAX_DEPTH];
  int depth;
  const char *lenient; /* the top object's member whose objects may repeat a key; NULL: none */
  json_object *twice;  /* that member's own keys given more than once, as a set; NULL: none yet */
};

static void
scan_pop (struct scan *s)
{
  struct scan_level *l = &s->levels[--s->depth];
  json_object_put (l->keys);
  free (l->key);
}

static void
scan_release (struct scan *s)
{
  while (s->depth > 0)
    scan_pop (s);
  json_object_put (s->twice);
}

static int
scan_fail (size_t at, const char *why, cp_error_t *err)
{
  return cp_fail_input (err, "invalid JSON at byte %zu: %s", at, why);
}

/* "annotations", "linux.resources", "process.args[2]": where the innermost open
 * object is; "" at the top level. */
static char *
scan_path (const struct scan *s)
{
  char *path = cp_xstrdup ("");
  for (int i = 0; i + 1 < s->depth; i++)
    {
      const struct scan_level *l = &s->levels[i];
      char *next = l->keys ? cp_xasprintf ("%s%s%.128s", path, *path ? "." : "", l->key ? l->key : "")
                           : cp_xasprintf ("%s[%zu]", path, l->index);
      free (path);
      path = next;
    }
  return path;
}

static int
scan_key_fail (const struct scan *s, const char *what, const char *key, cp_error_t *err)
{
  cleanup_free char *path = scan_path (s);
  if (*path)
    return cp_fail_input (err, "%.512s: %s \"%.128s\"", path, what, key);
  return cp_fail_input (err, "%s \"%.128s\"", what, key);
}

/* At the opening quote; leaves pos after the closing one. */
static int
scan_string (struct scan *s, bool *escaped, cp_error_t *err)
{
  *escaped = false;
  for (size_t i = s->pos + 1; i < s->len; i++)
    {
      unsigned char c = (unsigned char) s->buf[i];
      if (c == '"')
        {
          s->pos = i + 1;
          return 0;
        }
      if (c < 0x20)
        return scan_fail (i, "control character in a string", err);
      if (c == '\\')
        {
          *escaped = true;
          i++; /* the escaped character; \uXXXX digits need no care */
        }
    }
  return scan_fail (s->len, "unterminated string", err);
}

/* json-c 0.17 reports an allocation failure inside the tokener as
 * json_tokener_error_memory; 0.16, which we build against, has no such code: it
 * reports whatever parse error follows, or returns NULL with "success", or cuts a
 * string short.  Every one of those leaves errno ENOMEM (malloc(3) sets it, and
 * json-c's own allocation checks do too), so after a parse errno decides, whatever
 * the tokener says: out of memory is never reported as bad JSON, nor a cut value
 * taken as the document. */
static json_object *
tokener_parse (struct json_tokener *tok, const char *buf, int len)
{
  errno = 0;
  json_object *obj = json_tokener_parse_ex (tok, buf, len);
  if (errno == ENOMEM)
    cp_oom ();
  return obj;
}

static struct json_tokener *
tokener_new (void)
{
  struct json_tokener *tok = json_tokener_new_ex (CP_JSON_MAX_DEPTH);
  if (tok == NULL)
    cp_oom ();
  json_tokener_set_flags (tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
  return tok;
}

static void
tokener_freep (struct json_tokener **tok)
{
  if (*tok)
    json_tokener_free (*tok);
}
#define cleanup_tokener __attribute__ ((cleanup (tokener_freep)))

/* Inside the lenient member's value: the top object's member being read is it. */
static bool
scan_lenient (const struct scan *s)
{
  return s->lenient && s->depth >= 2 && s->levels[0].key && strcmp (s->levels[0].key, s->lenient) == 0;
}

static json_object *
new_object (void)
{
  json_object *o = json_object_new_object ();
  if (o == NULL)
    cp_oom ();
  return o;
}

/* KEY given again in the innermost object: refused, or inside the lenient member
   noted (its own keys only: deeper ones are values nobody reads as keys). */
static int
scan_duplicate (struct scan *s, const char *key, cp_error_t *err)
{
  if (!scan_lenient (s))
    return scan_key_fail (s, "duplicate key", key, err);
  if (s->depth > 2)
    return 0;
  if (s->twice == NULL)
    s->twice = new_object ();
  if (json_object_object_add (s->twice, key, NULL) < 0)
    cp_oom ();
  return 0;
}

/* The string literal buf[start..end) is a key of the innermost object. */
static int
scan_key (struct scan *s, size_t start, size_t end, bool escaped, cp_error_t *err)
{
  struct scan_level *l = &s->levels[s->depth - 1];
  cleanup_free char *key = NULL;
  if (!escaped)
    key = cp_xstrndup (s->buf + start + 1, end - start - 2);
  else
    {
      /* Let json-c decode it, as it did for the document. */
      cleanup_tokener struct json_tokener *tok = tokener_new ();
      cleanup_json json_object *v = tokener_parse (tok, s->buf + start, (int) (end - start));
      if (!json_object_is_type (v, json_type_string))
        return scan_fail (start, "invalid key", err);
      key = cp_xstrdup (json_object_get_string (v));
      if (strlen (key) != (size_t) json_object_get_string_len (v))
        return scan_key_fail (s, "NUL character in key", key, err);
    }
  if (json_object_object_get_ex (l->keys, key, NULL))
    {
      if (scan_duplicate (s, key, err) < 0)
        return -1;
    }
  else if (json_object_object_add (l->keys, key, NULL) < 0)
    cp_oom ();
  free (l->key);
  l->key = cp_steal_pointer (&key);
  return 0;
}

static bool
is_digit (const struct scan *s, size_t i)
{
  return i < s->len && s->buf[i] >= '0' && s->buf[i] <= '9';
}

/* RFC 8259: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int
scan_number (struct scan *s, cp_error_t *err)
{
  size_t start = s->pos, i = s->pos;
  if (s->buf[i] == '-')
    i++;
  if (!is_digit (s, i))
    return scan_fail (start, "invalid number", err);
  if (s->buf[i] == '0' && is_digit (s, i + 1))
    return scan_fail (start, "number with a leading zero", err);
  while (is_digit (s, i))
    i++;
  if (i < s->len && s->buf[i] == '.')
    {
      if (!is_digit (s, ++i))
        return scan_fail (start, "invalid number", err);
      while (is_digit (s, i))
        i++;
    }
  if (i < s->len && (s->buf[i] == 'e' || s->buf[i] == 'E'))
    {
      i++;
      if (i < s->len && (s->buf[i] == '+' || s->buf[i] == '-'))
        i++;
      if (!is_digit (s, i))
        return scan_fail (start, "invalid number", err);
      while (is_digit (s, i))
        i++;
    }
  s->pos = i;
  return 0;
}

static int
scan_literal (struct scan *s, const char *word, cp_error_t *err)
{
  size_t n = strlen (word);
  if (s->len - s->pos < n || memcmp (s->buf + s->pos, word, n) != 0)
    return scan_fail (s->pos, "unexpected character", err);
  s->pos += n;
  return 0;
}

/* *TWICE: the lenient member's keys given more than once (NULL: none). */
static int
check_strict (const char *buf, size_t len, const char *lenient, json_object **twice, cp_error_t *err)
{
  __attribute__ ((cleanup (scan_release))) struct scan s = { .buf = buf, .len = len, .lenient = lenient };
  bool expect_key = false;
  while (s.pos < s.len)
    {
      int r = 0;
      switch (buf[s.pos])
        {
        case ' ':
        case '\t':
        case '\n':
        case '\r':
        case ':':
          s.pos++;
          break;
        case '{':
        case '[':
          if (s.depth == CP_JSON_MAX_DEPTH)
            return scan_fail (s.pos, "nested too deeply", err);
          s.levels[s.depth++] = (struct scan_level){ .keys = buf[s.pos] == '{' ? new_object () : NULL };
          expect_key = buf[s.pos] == '{';
          s.pos++;
          break;
        case '}':
        case ']':
          if (s.depth == 0)
            return scan_fail (s.pos, "unexpected character", err);
          scan_pop (&s);
          expect_key = false;
          s.pos++;
          break;
        case ',':
          if (s.depth == 0)
            return scan_fail (s.pos, "unexpected character", err);
          if (s.levels[s.depth - 1].keys)
            expect_key = true;
          else
            s.levels[s.depth - 1].index++;
          s.pos++;
          break;
        case '"':
          {
            size_t start = s.pos;
            bool escaped;
            r = scan_string (&s, &escaped, err);
            if (r == 0 && expect_key)
              r = scan_key (&s, start, s.pos, escaped, err);
            expect_key = false;
            break;
          }
        case '\'':
          return scan_fail (s.pos, "single-quoted string", err);
        case '-':
        case '0' ... '9':
          r = scan_number (&s, err);
          break;
        case 't':
          r = scan_literal (&s, "true", err);
          break;
        case 'f':
          r = scan_literal (&s, "false", err);
          break;
        case 'n':
          r = scan_literal (&s, "null", err);
          break;
        default: /* NaN, Infinity */
          return scan_fail (s.pos, "unexpected character", err);
        }
      if (r < 0)
        return r;
    }
  *twice = cp_steal_pointer (&s.twice);
  return 0;
}

static bool
is_json_space (char c)
{
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int
cp_json_parse_object (const char *buf, size_t len, json_object **out, cp_error_t *err)
{
  return cp_json_parse_object_twice (buf, len, NULL, NULL, out, err);
}

int
cp_json_parse_object_twice (const char *buf, size_t len, const char *member, json_object **twice,
                            json_object **out, cp_error_t *err)
{
  if (twice)
    *twice = NULL;
  if (len >= INT_MAX)
    return cp_fail_input (err, "larger than %d bytes", INT_MAX - 1);
  const char *nul = memchr (buf, '\0', len);
  if (nul)
    return cp_fail_input (err, "invalid JSON at byte %zu: NUL byte", (size_t) (nul - buf));
  size_t first = 0;
  while (first < len && is_json_space (buf[first]))
    first++;
  if (first == len)
    return cp_fail_input (err, "empty input");
  if (buf[first] != '{')
    return cp_fail_input (err, "expected a JSON object");

  cleanup_tokener struct json_tokener *tok = tokener_new ();
  json_object *obj = tokener_parse (tok, buf, (int) len);
  enum json_tokener_error jerr = json_tokener_get_error (tok);
  size_t end = json_tokener_get_parse_end (tok);
  if (jerr == json_tokener_continue)
    return cp_fail_input (err, "invalid JSON at byte %zu: unexpected end of data", len);
  if (jerr != json_tokener_success)
    {
      json_object_put (obj);
      return cp_fail_input (err, "invalid JSON at byte %zu: %s", end, json_tokener_error_desc (jerr));
    }
  for (size_t i = end; i < len; i++)
    if (!is_json_space (buf[i]))
      {
        json_object_put (obj);
        return cp_fail_input (err, "invalid JSON at byte %zu: data after the object", i);
      }
  cleanup_json json_object *seen_twice = NULL;
  if (check_strict (buf, end, member, &seen_twice, err) < 0)
    {
      json_object_put (obj);
      return -1;
    }
  if (twice)
    *twice = cp_steal_pointer (&seen_twice);
  *out = obj;
  return 0;
}

bool
cp_json_complete (const char *buf, size_t len)
{
  if (len >= INT_MAX)
    return true;
  cleanup_tokener struct json_tokener *tok = tokener_new ();
  cleanup_json json_object *obj = tokener_parse (tok, buf, (int) len);
  return json_tokener_get_error (tok) != json_tokener_continue;
}

/* ---- typed access --------------------------------------------------------------- */

char *
cp_json_describe (json_object *v)
{
  const char *s = json_object_to_json_string_ext (v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  if (s == NULL)
    cp_oom ();
  if (strlen (s) > 64)
    return cp_xasprintf ("%.64s...", s);
  return cp_xstrdup (s);
}

int
cp_json_string (json_object *v, const char *field, size_t max_len, bool allow_empty, const char **out,
                cp_error_t *err)
{
  if (!json_object_is_type (v, json_type_string))
    {
      cleanup_free char *got = cp_json_describe (v);
      return cp_fail_input (err, "%s: expected a string, got %s", field, got);
    }
  const char *s = json_object_get_string (v);
  size_t n = (size_t) json_object_get_string_len (v);
  if (strlen (s) != n)
    return cp_fail_input (err, "%s: contains a NUL character", field);
  if (n > max_len)
    return cp_fail_input (err, "%s: longer than %zu bytes", field, max_len);
  if (n == 0 && !allow_empty)
    return cp_fail_input (err, "%s: empty", field);
  *out = s;
  return 0;
}

int
cp_json_int (json_object *v, const char *field, int64_t min, int64_t max, int64_t *out, cp_error_t *err)
{
  if (json_object_is_type (v, json_type_int))
    {
      int64_t x = json_object_get_int64 (v);
      /* json-c keeps a positive literal above INT64_MAX as a uint64 (clamped to
         UINT64_MAX past that) and get_int64 then answers INT64_MAX. */
      bool clamped = x == INT64_MAX && json_object_get_uint64 (v) > (uint64_t) INT64_MAX;
      if (!clamped && x >= min && x <= max)
        {
          *out = x;
          return 0;
        }
    }
  cleanup_free char *got = cp_json_describe (v);
  if (min == INT64_MIN && max == INT64_MAX)
    return cp_fail_input (err, "%s: expected an integer, got %s", field, got);
  return cp_fail_input (err, "%s: expected an integer from %" PRId64 " to %" PRId64 ", got %s", field, min, max,
                        got);
}

int
cp_json_object (json_object *v, const char *field, cp_error_t *err)
{
  if (json_object_is_type (v, json_type_object))
    return 0;
  cleanup_free char *got = cp_json_describe (v);
  return cp_fail_input (err, "%s: expected an object, got %s", field, got);
}

bool
cp_json_member (json_object *obj, const char *key, bool null_is_absent, json_object **out)
{
  json_object *v = NULL;
  if (!json_object_object_get_ex (obj, key, &v))
    return false;
  if (v == NULL && null_is_absent)
    return false;
  *out = v;
  return true;
}
