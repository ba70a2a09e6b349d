/* The 80-column view `cachepin status` is written in (status_view.h): lines
 * wrapped after a space or a comma, fields fitted with an ellipsis, cpulists
 * cut at a range with "+". */
#define _GNU_SOURCE
#include "status_view.h"

#include <stdarg.h>
#include <string.h>

#include "util.h"

/* Terminal columns of S (sanitized UTF-8): one per character. */
size_t
cp_view_columns (const char *s, size_t bytes)
{
  size_t n = 0;
  for (size_t i = 0; i < bytes && s[i]; i++)
    n += ((unsigned char) s[i] & 0xC0) != 0x80;
  return n;
}

/* The byte offset of S's character number COL (or S's end). */
static size_t
offset_of_column (const char *s, size_t col)
{
  size_t i = 0, n = 0;
  for (; s[i]; i++)
    if (((unsigned char) s[i] & 0xC0) != 0x80 && n++ == col)
      break;
  return i;
}

/* S on V: in the default view wrapped at CP_VIEW_COLS after a space or (COMMAS) a
   comma (a word longer than a line is cut where it must), each continuation
   indented by INDENT columns. */
static void
wrap (const struct cp_view *v, size_t indent, bool commas, const char *s)
{
  const char *p = s;
  size_t room = CP_VIEW_COLS;
  while (!v->wide && cp_view_columns (p, SIZE_MAX) > room)
    {
      size_t limit = offset_of_column (p, room), cut = 0;
      for (size_t i = 1; i <= limit; i++)
        if ((p[i - 1] == ' ' || (commas && p[i - 1] == ',')) && i > indent + 1)
          cut = i;
      if (cut == 0)
        cut = limit;
      size_t keep = cut;
      while (keep > 0 && p[keep - 1] == ' ')
        keep--;
      fprintf (v->out, "%.*s\n%*s", (int) keep, p, (int) indent, "");
      p += cut;
      while (*p == ' ')
        p++;
      room = CP_VIEW_COLS - indent;
    }
  fprintf (v->out, "%s\n", p);
}

void
cp_view_line (const struct cp_view *v, size_t indent, const char *fmt, ...)
{
  cleanup_free char *s = NULL;
  va_list ap;
  va_start (ap, fmt);
  int r = vasprintf (&s, fmt, ap);
  va_end (ap);
  if (r >= 0)
    wrap (v, indent, true, s);
}

void
cp_view_items (const struct cp_view *v, size_t indent, const char *s)
{
  wrap (v, indent, false, s);
}

/* S fitted in COLS columns into BUF: as it is when it fits, else with an
   ellipsis in the MIDDLE (paths: both ends tell) or at the end. */
const char *
cp_view_fit (const char *s, size_t cols, bool middle, char *buf, size_t size)
{
  size_t n = cp_view_columns (s, SIZE_MAX);
  if (n <= cols || cols < 2)
    snprintf (buf, size, "%s", s);
  else if (middle)
    {
      size_t head = (cols - 1) / 2, tail = cols - 1 - head;
      snprintf (buf, size, "%.*s\u2026%s", (int) offset_of_column (s, head), s, s + offset_of_column (s, n - tail));
    }
  else
    snprintf (buf, size, "%.*s\u2026", (int) offset_of_column (s, cols - 1), s);
  return buf;
}

/* S then spaces to COLS columns (printf's %-*s counts bytes, not characters). */
void
cp_view_cell (FILE *out, const char *s, size_t cols)
{
  size_t n = cp_view_columns (s, SIZE_MAX);
  fprintf (out, "%s%*s", s, (int) (n < cols ? cols - n : 0), "");
}

/* A cpulist in COLS columns: whole ranges, then "+" when more follow. */
const char *
cp_view_fit_cpulist (const char *s, size_t cols, char *buf, size_t size)
{
  if (strlen (s) <= cols)
    return snprintf (buf, size, "%s", s), buf;
  size_t cut = 0;
  for (size_t i = 0; i < cols; i++)
    if (s[i] == ',')
      cut = i;
  if (cut == 0)
    cut = cols - 1;
  snprintf (buf, size, "%.*s+", (int) cut, s);
  return buf;
}
