/* cachepin: a strict JSON pull reader (see jsonpull.h). */
#define _GNU_SOURCE
#include "jsonpull.h"

#include <string.h>

#include "util.h"
#include "json.h"

void
cp_jp_release (struct cp_jp *p)
{
  free (p->arena);
  p->arena = NULL;
}

int
cp_jp_fail (struct cp_jp *p, size_t at, const char *why)
{
  return cp_fail_input (p->err, "invalid JSON at byte %zu: %s", at, why);
}

static int
end_of_data (struct cp_jp *p)
{
  return cp_jp_fail (p, p->len, "unexpected end of data");
}

bool
cp_jp_is_space (char c)
{
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

int
cp_jp_skip_space (struct cp_jp *p)
{
  while (p->pos < p->len && cp_jp_is_space (p->buf[p->pos]))
    p->pos++;
  return p->pos < p->len ? 0 : end_of_data (p);
}

int
cp_jp_expect (struct cp_jp *p, char c, const char *why)
{
  if (cp_jp_skip_space (p) < 0)
    return -1;
  if (p->buf[p->pos] != c)
    return cp_jp_fail (p, p->pos, why);
  p->pos++;
  return 0;
}

static int
hex4 (struct cp_jp *p, size_t at, unsigned *out)
{
  *out = 0;
  for (size_t k = 0; k < 4; k++)
    {
      if (at + k >= p->len)
        return end_of_data (p);
      char c = p->buf[at + k];
      unsigned d = c >= '0' && c <= '9'   ? (unsigned) (c - '0')
                   : c >= 'a' && c <= 'f' ? (unsigned) (c - 'a' + 10)
                   : c >= 'A' && c <= 'F' ? (unsigned) (c - 'A' + 10)
                                          : 16;
      if (d == 16)
        return cp_jp_fail (p, at + k, "invalid \\u escape");
      *out = *out << 4 | d;
    }
  return 0;
}

static char *
put_utf8 (char *o, unsigned cp)
{
  if (cp < 0x80)
    *o++ = (char) cp;
  else if (cp < 0x800)
    {
      *o++ = (char) (0xc0 | cp >> 6);
      *o++ = (char) (0x80 | (cp & 0x3f));
    }
  else if (cp < 0x10000)
    {
      *o++ = (char) (0xe0 | cp >> 12);
      *o++ = (char) (0x80 | (cp >> 6 & 0x3f));
      *o++ = (char) (0x80 | (cp & 0x3f));
    }
  else
    {
      *o++ = (char) (0xf0 | cp >> 18);
      *o++ = (char) (0x80 | (cp >> 12 & 0x3f));
      *o++ = (char) (0x80 | (cp >> 6 & 0x3f));
      *o++ = (char) (0x80 | (cp & 0x3f));
    }
  return o;
}

#define IS_HIGH_SURROGATE(c) (((c) & 0xfc00) == 0xd800)
#define IS_LOW_SURROGATE(c) (((c) & 0xfc00) == 0xdc00)
#define REPLACEMENT 0xfffd

/* Decode the escapes of the string literal whose text is buf[start, end) (the
 * quotes excluded, already checked by scan_string) into the arena.  A surrogate
 * pair is one code point; a lone surrogate becomes U+FFFD, as json-c made it. */
static void
decode_escapes (struct cp_jp *p, size_t start, size_t end, struct cp_jp_val *v)
{
  if (p->arena == NULL)
    p->arena = cp_xmalloc0 (p->len + 1); /* decoding never lengthens a string */
  char *o = p->arena + p->used, *first = o;
  unsigned high = 0; /* a high surrogate waiting for its low half */
  for (size_t i = start; i < end;)
    {
      unsigned cp;
      if (p->buf[i] == '\\' && p->buf[i + 1] == 'u')
        {
          (void) hex4 (p, i + 2, &cp); /* checked */
          i += 6;
          if (high && IS_LOW_SURROGATE (cp))
            {
              o = put_utf8 (o, 0x10000 + ((high & 0x3ff) << 10) + (cp & 0x3ff));
              high = 0;
              continue;
            }
          if (high)
            o = put_utf8 (o, REPLACEMENT);
          high = IS_HIGH_SURROGATE (cp) ? cp : 0;
          if (!high)
            o = put_utf8 (o, IS_LOW_SURROGATE (cp) ? REPLACEMENT : cp);
          continue;
        }
      if (high)
        o = put_utf8 (o, REPLACEMENT);
      high = 0;
      if (p->buf[i] != '\\')
        {
          *o++ = p->buf[i++];
          continue;
        }
      static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
      *o++ = to[strchr (from, p->buf[i + 1]) - from];
      i += 2;
    }
  if (high)
    o = put_utf8 (o, REPLACEMENT);
  v->s = first;
  v->slen = (size_t) (o - first);
  p->used += v->slen;
}

/* At the opening quote: check the literal (escapes, no raw control character,
 * UTF-8 as json-c checked it: lead and continuation bytes, the finer rules are
 * the fields' own checks), leave pos after the closing quote, and fill V. */
int
cp_jp_string (struct cp_jp *p, struct cp_jp_val *v)
{
  size_t start = p->pos + 1;
  bool escaped = false;
  size_t i = start;
  for (;;)
    {
      if (i >= p->len)
        return end_of_data (p);
      unsigned char c = (unsigned char) p->buf[i];
      if (c == '"')
        break;
      if (c == '\\')
        {
          if (i + 1 >= p->len)
            return end_of_data (p);
          char e = p->buf[i + 1];
          unsigned cp;
          if (e == 'u' && hex4 (p, i + 2, &cp) < 0)
            return -1;
          if (e != 'u' && (e == '\0' || strchr ("\"\\/bfnrt", e) == NULL))
            return cp_jp_fail (p, i + 1, "invalid escape in a string");
          escaped = true;
          i += e == 'u' ? 6 : 2;
          continue;
        }
      if (c < 0x20)
        return cp_jp_fail (p, i, "control character in a string");
      size_t more = c < 0x80                ? 0
                    : (c & 0xe0) == 0xc0    ? 1
                    : (c & 0xf0) == 0xe0    ? 2
                    : (c & 0xf8) == 0xf0    ? 3
                                            : SIZE_MAX;
      if (more == SIZE_MAX)
        return cp_jp_fail (p, i, "invalid utf-8 in a string");
      for (size_t k = 1; k <= more; k++)
        {
          if (i + k >= p->len)
            return end_of_data (p);
          if (((unsigned char) p->buf[i + k] & 0xc0) != 0x80)
            return cp_jp_fail (p, i + k, "invalid utf-8 in a string");
        }
      i += 1 + more;
    }
  *v = (struct cp_jp_val){ .type = CP_JP_STRING, .at = p->pos, .raw_len = i + 1 - p->pos };
  if (escaped)
    decode_escapes (p, start, i, v);
  else
    {
      v->s = p->buf + start;
      v->slen = i - start;
    }
  p->pos = i + 1;
  return 0;
}

static bool
digit_at (const struct cp_jp *p, size_t i)
{
  return i < p->len && p->buf[i] >= '0' && p->buf[i] <= '9';
}

/* RFC 8259: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?  A number at the very
 * end of the text is cut: the object around it is not closed either. */
static int
scan_number (struct cp_jp *p, struct cp_jp_val *v)
{
  size_t start = p->pos, i = p->pos;
  bool negative = p->buf[i] == '-';
  i += negative;
  if (!digit_at (p, i))
    return i >= p->len ? end_of_data (p) : cp_jp_fail (p, start, "invalid number");
  if (p->buf[i] == '0' && digit_at (p, i + 1))
    return cp_jp_fail (p, start, "number with a leading zero");
  uint64_t mag = 0;
  bool big = false;
  for (; digit_at (p, i); i++)
    {
      unsigned d = (unsigned) (p->buf[i] - '0');
      big |= mag > (UINT64_MAX - d) / 10;
      mag = mag * 10 + d;
    }
  bool integer = true;
  if (i < p->len && p->buf[i] == '.')
    {
      integer = false;
      if (!digit_at (p, ++i))
        return i >= p->len ? end_of_data (p) : cp_jp_fail (p, start, "invalid number");
      while (digit_at (p, i))
        i++;
    }
  if (i < p->len && (p->buf[i] == 'e' || p->buf[i] == 'E'))
    {
      integer = false;
      i++;
      if (i < p->len && (p->buf[i] == '+' || p->buf[i] == '-'))
        i++;
      if (!digit_at (p, i))
        return i >= p->len ? end_of_data (p) : cp_jp_fail (p, start, "invalid number");
      while (digit_at (p, i))
        i++;
    }
  *v = (struct cp_jp_val){ .type = integer ? CP_JP_INT : CP_JP_NUMBER, .at = start, .raw_len = i - start };
  if (integer)
    {
      big |= negative ? mag > (uint64_t) INT64_MAX + 1 : mag > (uint64_t) INT64_MAX;
      v->big = big;
      v->i = big ? 0 : negative ? (int64_t) (0 - mag) : (int64_t) mag;
    }
  p->pos = i;
  return 0;
}

static int
scan_literal (struct cp_jp *p, const char *word, enum cp_jp_type type, struct cp_jp_val *v)
{
  size_t n = strlen (word);
  size_t have = p->len - p->pos < n ? p->len - p->pos : n;
  if (memcmp (p->buf + p->pos, word, have) != 0)
    return cp_jp_fail (p, p->pos, "unexpected character");
  if (have < n)
    return end_of_data (p);
  *v = (struct cp_jp_val){ .type = type, .at = p->pos, .raw_len = n };
  p->pos += n;
  return 0;
}


/* At '{' or '[': checked as JSON and skipped (see cp_jp_value()). */
static int
scan_container (struct cp_jp *p, int depth, struct cp_jp_val *v)
{
  if (depth > CP_JSON_MAX_DEPTH)
    return cp_jp_fail (p, p->pos, "nested too deeply");
  char close = p->buf[p->pos] == '{' ? '}' : ']';
  size_t start = p->pos++;
  struct cp_jp_val item;
  if (cp_jp_skip_space (p) < 0)
    return -1;
  if (p->buf[p->pos] == close)
    p->pos++;
  else
    for (;;)
      {
        if (close == '}')
          {
            if (cp_jp_skip_space (p) < 0)
              return -1;
            if (p->buf[p->pos] != '"')
              return cp_jp_fail (p, p->pos, "expected a quoted key");
            if (cp_jp_string (p, &item) < 0 || cp_jp_expect (p, ':', "expected ':'") < 0)
              return -1;
          }
        if (cp_jp_value (p, depth + 1, &item) < 0 || cp_jp_skip_space (p) < 0)
          return -1;
        char c = p->buf[p->pos++];
        if (c == close)
          break;
        if (c != ',')
          return cp_jp_fail (p, p->pos - 1, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
      }
  *v = (struct cp_jp_val){ .type = close == '}' ? CP_JP_OBJECT : CP_JP_ARRAY, .at = start, .raw_len = p->pos - start };
  return 0;
}

int
cp_jp_value (struct cp_jp *p, int depth, struct cp_jp_val *v)
{
  if (cp_jp_skip_space (p) < 0)
    return -1;
  switch (p->buf[p->pos])
    {
    case '"':
      return cp_jp_string (p, v);
    case '{':
    case '[':
      return scan_container (p, depth, v);
    case '-':
    case '0' ... '9':
      return scan_number (p, v);
    case 't':
      return scan_literal (p, "true", CP_JP_TRUE, v);
    case 'f':
      return scan_literal (p, "false", CP_JP_FALSE, v);
    case 'n':
      return scan_literal (p, "null", CP_JP_NULL, v);
    case '\'':
      return cp_jp_fail (p, p->pos, "single-quoted string");
    default: /* NaN, Infinity, ... */
      return cp_jp_fail (p, p->pos, "unexpected character");
    }
}


char *
cp_jp_describe (const struct cp_jp *p, const struct cp_jp_val *v)
{
  char out[68];
  size_t n = 0;
  bool in_string = false, escape = false, cut = false;
  for (size_t i = v->at; i < v->at + v->raw_len && !cut; i++)
    {
      char c = p->buf[i];
      if (!in_string && cp_jp_is_space (c))
        continue;
      cut = n == 64;
      if (!cut)
        out[n++] = c;
      if (escape)
        escape = false;
      else if (in_string)
        escape = c == '\\', in_string = c != '"';
      else
        in_string = c == '"';
    }
  /* Not in the middle of a character (the message is sanitized anyway). */
  while (cut && n > 0 && ((unsigned char) out[n - 1] & 0xc0) == 0x80)
    n--;
  if (cut && n > 0 && (unsigned char) out[n - 1] >= 0xc0)
    n--;
  return cp_xasprintf ("%.*s%s", (int) n, out, cut ? "..." : "");
}
