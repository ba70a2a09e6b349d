#include "cpulist.h"
#include "util.h"

#include <string.h>

/* Reads one number at *p; on success advances *p past it. */
static int
parse_number (const char **p, unsigned *out, bool zeros, const char *whole, cp_error_t *err)
{
  const char *s = *p;
  if (*s < '0' || *s > '9')
    {
      if (*s == '\0')
        return cp_fail_input (err, "`%s`: a number is missing at the end", whole);
      return cp_fail_input (err, "`%s`: expected a number at `%.16s`", whole, s);
    }
  if (!zeros && s[0] == '0' && s[1] >= '0' && s[1] <= '9')
    return cp_fail_input (err, "`%s`: number with a leading zero at `%.16s`", whole, s);
  unsigned long v = 0;
  while (*s >= '0' && *s <= '9')
    {
      v = v * 10 + (unsigned long) (*s - '0');
      if (v > CP_CPULIST_MAX)
        return cp_fail_input (err, "`%s`: number above the maximum %d", whole, CP_CPULIST_MAX);
      s++;
    }
  *out = (unsigned) v;
  *p = s;
  return 0;
}

static int
parse_into (const char *s, const char *end, const char *whole, hwloc_bitmap_t out, cp_error_t *err)
{
  const char *p = s;
  for (;;)
    {
      unsigned start, stop;
      if (parse_number (&p, &start, false, whole, err) < 0)
        return -1;
      stop = start;
      if (*p == '-')
        {
          p++;
          if (parse_number (&p, &stop, false, whole, err) < 0)
            return -1;
          if (stop < start)
            return cp_fail_input (err, "`%s`: range end %u is before start %u", whole, stop, start);
        }
      hwloc_bitmap_set_range (out, start, stop);
      if (p == end)
        return 0;
      if (*p != ',')
        return cp_fail_input (err, "`%s`: unexpected character at `%.16s`", whole, p);
      p++;
    }
}

static bool
kernel_separator (char c)
{
  return c == ',' || c == ' ' || (c >= '\t' && c <= '\r');
}

/* The kernel's bitmap_parselist() as cpuset.cpus takes it, less what we refuse
   (see cpulist.h). */
static int
parse_kernel (const char *whole, hwloc_bitmap_t out, cp_error_t *err)
{
  const char *p = whole;
  for (;;)
    {
      while (kernel_separator (*p))
        p++;
      if (*p == '\0')
        return 0;
      unsigned start, stop;
      if (parse_number (&p, &start, true, whole, err) < 0)
        return -1;
      stop = start;
      if (*p == '-')
        {
          p++;
          if (parse_number (&p, &stop, true, whole, err) < 0)
            return -1;
          if (stop < start)
            return cp_fail_input (err, "`%s`: range end %u is before start %u", whole, stop, start);
        }
      if (*p != '\0' && !kernel_separator (*p))
        return cp_fail_input (err, "`%s`: unexpected character at `%.16s`", whole, p);
      hwloc_bitmap_set_range (out, start, stop);
    }
}

int
cp_cpulist_parse (const char *s, unsigned flags, hwloc_bitmap_t out, cp_error_t *err)
{
  hwloc_bitmap_zero (out);
  size_t len = strnlen (s, CP_CPULIST_MAX_LEN + 1);
  if (len > CP_CPULIST_MAX_LEN)
    return cp_fail_input (err, "cpulist longer than %d characters", CP_CPULIST_MAX_LEN);
  if (flags & CP_CPULIST_KERNEL)
    {
      if (parse_kernel (s, out, err) < 0)
        {
          hwloc_bitmap_zero (out);
          return -1;
        }
      if (hwloc_bitmap_iszero (out) && !(flags & CP_CPULIST_ALLOW_EMPTY))
        return cp_fail_input (err, "empty cpulist");
      return 0;
    }
  const char *end = s + len;
  if ((flags & CP_CPULIST_ALLOW_NEWLINE) && len > 0 && s[len - 1] == '\n')
    end--;
  if (end == s)
    {
      if (flags & CP_CPULIST_ALLOW_EMPTY)
        return 0;
      return cp_fail_input (err, "empty cpulist");
    }
  /* The message quotes the list; keep only what we would parse. */
  cleanup_free char *whole = cp_xstrndup (s, (size_t) (end - s));
  if (parse_into (whole, whole + (end - s), whole, out, err) < 0)
    {
      hwloc_bitmap_zero (out);
      return -1;
    }
  return 0;
}

char *
cp_cpulist_format (hwloc_const_bitmap_t set)
{
  size_t cap = 64, len = 0;
  char *buf = cp_xmalloc0 (cap);
  /* An (never expected) infinite set stops at CP_CPULIST_MAX instead of looping
     forever; a finite one is written whole. */
  int last = hwloc_bitmap_last (set);
  int limit = hwloc_bitmap_weight (set) < 0 ? CP_CPULIST_MAX : last;
  int i = hwloc_bitmap_first (set);
  while (i >= 0 && i <= limit)
    {
      int j = i;
      while (j < limit && hwloc_bitmap_isset (set, (unsigned) j + 1))
        j++;
      char piece[32];
      int n = j > i ? snprintf (piece, sizeof piece, "%s%d-%d", len ? "," : "", i, j)
                    : snprintf (piece, sizeof piece, "%s%d", len ? "," : "", i);
      if (len + (size_t) n + 1 > cap)
        {
          cap = (cap + (size_t) n + 1) * 2;
          buf = cp_xrealloc (buf, cap);
        }
      memcpy (buf + len, piece, (size_t) n + 1);
      len += (size_t) n;
      i = hwloc_bitmap_next (set, j);
    }
  return buf;
}
