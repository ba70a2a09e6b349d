#include "text.h"

#include <string.h>

#include "util.h"

bool
cp_text_unsafe_codepoint (unsigned cp)
{
  return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)  /* C0, DEL, C1 (U+0085 NEL among them) */
         || cp == 0x2028 || cp == 0x2029           /* line and paragraph separators */
         || cp == 0x200e || cp == 0x200f || cp == 0x061c /* LRM, RLM, ALM */
         || (cp >= 0x202a && cp <= 0x202e)         /* embeddings and overrides */
         || (cp >= 0x2066 && cp <= 0x2069);        /* isolates */
}

/* The length (1..4) of the well-formed UTF-8 sequence at S (LEFT bytes available)
 * and its code point, or 0 when it is not one. */
static size_t
decode (const unsigned char *s, size_t left, unsigned *out)
{
  unsigned c = s[0];
  if (c < 0x80)
    {
      *out = c;
      return 1;
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
    return 0;
  if (left <= n)
    return 0;
  for (size_t k = 1; k <= n; k++)
    {
      if ((s[k] & 0xc0) != 0x80)
        return 0;
      cp = (cp << 6) | (s[k] & 0x3f);
    }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  *out = cp;
  return n + 1;
}

bool
cp_text_valid (const char *s, size_t len)
{
  const unsigned char *u = (const unsigned char *) s;
  for (size_t i = 0; i < len;)
    {
      unsigned cp;
      size_t n = decode (u + i, len - i, &cp);
      if (n == 0 || cp_text_unsafe_codepoint (cp))
        return false;
      i += n;
    }
  return true;
}

void
cp_text_sanitize (char *s)
{
  unsigned char *u = (unsigned char *) s;
  size_t len = strlen (s), out = 0;
  for (size_t i = 0; i < len;)
    {
      unsigned cp;
      size_t n = decode (u + i, len - i, &cp);
      if (n == 0 || cp_text_unsafe_codepoint (cp))
        {
          u[out++] = '?';
          i += n ? n : 1;
          continue;
        }
      memmove (u + out, u + i, n);
      out += n;
      i += n;
    }
  u[out] = '\0';
}

const char *
cp_plural (unsigned long n, const char *one, const char *many)
{
  return n == 1 ? one : many;
}

/* Names are short (commands, options, values): longer text is no typo of one. */
#define DISTANCE_MAX_LEN 64

unsigned
cp_text_distance (const char *a, const char *b, unsigned limit)
{
  size_t la = strlen (a), lb = strlen (b);
  if (la > DISTANCE_MAX_LEN || lb > DISTANCE_MAX_LEN)
    return limit + 1;
  if ((la > lb ? la - lb : lb - la) > limit)
    return limit + 1;
  /* Three rows of the table: i - 2, i - 1 and i. */
  unsigned rows[3][DISTANCE_MAX_LEN + 1];
  for (size_t j = 0; j <= lb; j++)
    rows[0][j] = (unsigned) j;
  for (size_t i = 1; i <= la; i++)
    {
      unsigned *two = rows[(i + 1) % 3], *prev = rows[(i + 2) % 3], *cur = rows[i % 3];
      cur[0] = (unsigned) i;
      for (size_t j = 1; j <= lb; j++)
        {
          unsigned cost = a[i - 1] != b[j - 1];
          unsigned d = prev[j] + 1;
          if (cur[j - 1] + 1 < d)
            d = cur[j - 1] + 1;
          if (prev[j - 1] + cost < d)
            d = prev[j - 1] + cost;
          if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && two[j - 2] + 1 < d)
            d = two[j - 2] + 1;
          cur[j] = d;
        }
    }
  unsigned d = rows[la % 3][lb];
  return d > limit ? limit + 1 : d;
}

const char *
cp_text_closest (const char *s, const char *const *names, size_t n)
{
  size_t len = strlen (s);
  unsigned limit = len > 2 ? 2 : (unsigned) len - (len > 0);
  const char *best = NULL;
  unsigned best_d = limit + 1;
  bool tie = false;
  for (size_t i = 0; i < n; i++)
    {
      if (names[i] == NULL)
        continue;
      unsigned d = cp_text_distance (s, names[i], limit);
      if (d < best_d)
        best = names[i], best_d = d, tie = false;
      else if (d == best_d && d <= limit)
        tie = true;
    }
  return best && !tie ? best : NULL;
}

char *
cp_text_clean_copy (const char *s, size_t max)
{
  if (s == NULL)
    return cp_xstrdup ("");
  size_t len = strnlen (s, max + 1);
  if (len > max)
    {
      len = max;
      while (len > 0 && ((unsigned char) s[len] & 0xc0) == 0x80)
        len--; /* s[len] continues a character: cut before the character */
    }
  char *t = cp_xstrndup (s, len);
  cp_text_sanitize (t);
  return t;
}
