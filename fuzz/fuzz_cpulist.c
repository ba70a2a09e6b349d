/* Fuzz cp_cpulist_parse() against a reference model of the strict grammar, and
 * cp_cpulist_format() against hwloc's own list printer.
 *
 * Input: one byte of flags (its low two bits: CP_CPULIST_ALLOW_EMPTY,
 * CP_CPULIST_ALLOW_NEWLINE), then the text (read up to its first NUL, as C does).
 * Invariants:
 *   - parse accepts exactly what the reference accepts, with the same set;
 *   - on failure: an input error, and the output set empty (it held CPUs before);
 *   - on success: a finite set within 0..CP_CPULIST_MAX, empty only when allowed;
 *     format gives only digits, ',' and '-', the same text as hwloc's list
 *     printer, and parsing it gives the same set back (a canonical round trip). */
#include <hwloc.h>

#include "common.h"
#include "cpulist.h"

/* A number of the grammar at S (N bytes): 0 or [1-9][0-9]*, at most CP_CPULIST_MAX. */
static bool
ref_number (const char *s, size_t n, unsigned *out)
{
  if (n == 0 || n > 4 || (n > 1 && s[0] == '0'))
    return false;
  unsigned v = 0;
  for (size_t i = 0; i < n; i++)
    {
      if (s[i] < '0' || s[i] > '9')
        return false;
      v = v * 10 + (unsigned) (s[i] - '0');
    }
  if (v > CP_CPULIST_MAX)
    return false;
  *out = v;
  return true;
}

/* list := item (',' item)*; item := number | number '-' number with start <= end. */
static bool
ref_parse (const char *s, unsigned flags, hwloc_bitmap_t out)
{
  hwloc_bitmap_zero (out);
  size_t len = strlen (s);
  if (len > CP_CPULIST_MAX_LEN)
    return false;
  if ((flags & CP_CPULIST_ALLOW_NEWLINE) && len > 0 && s[len - 1] == '\n')
    len--;
  if (len == 0)
    return (flags & CP_CPULIST_ALLOW_EMPTY) != 0;
  size_t start = 0;
  while (start <= len)
    {
      size_t end = start;
      while (end < len && s[end] != ',')
        end++;
      const char *item = s + start;
      size_t n = end - start;
      const char *dash = memchr (item, '-', n);
      unsigned a, b;
      if (dash == NULL)
        {
          if (!ref_number (item, n, &a))
            return false;
          b = a;
        }
      else if (!ref_number (item, (size_t) (dash - item), &a)
               || !ref_number (dash + 1, n - (size_t) (dash - item) - 1, &b) || b < a)
        return false;
      hwloc_bitmap_set_range (out, a, (int) b);
      start = end + 1;
    }
  return true;
}

static bool
only_list_characters (const char *s)
{
  return s[strspn (s, "0123456789,-")] == '\0';
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  if (size == 0)
    return 0;
  unsigned flags = data[0] & (CP_CPULIST_ALLOW_EMPTY | CP_CPULIST_ALLOW_NEWLINE);
  char *s = fuzz_cstr (data + 1, size - 1);
  hwloc_bitmap_t set = hwloc_bitmap_alloc (), ref = hwloc_bitmap_alloc (), again = hwloc_bitmap_alloc ();
  if (set == NULL || ref == NULL || again == NULL)
    abort ();
  hwloc_bitmap_set_range (set, 3, 70); /* parse must empty it first */

  cp_error_t err = NULL;
  int r = cp_cpulist_parse (s, flags, set, &err);
  bool ref_ok = ref_parse (s, flags, ref);
  FUZZ_CHECK_MSG ((r == 0) == ref_ok, "parse says %d, the reference %s, for \"%.80s\" (flags %u)", r,
                  ref_ok ? "accepts" : "refuses", s, flags);
  if (r < 0)
    {
      fuzz_check_input_error (r, err, NULL);
      FUZZ_CHECK (hwloc_bitmap_iszero (set));
      cp_error_free (&err);
    }
  else
    {
      FUZZ_CHECK (err == NULL);
      FUZZ_CHECK (hwloc_bitmap_isequal (set, ref));
      FUZZ_CHECK (hwloc_bitmap_weight (set) >= 0);
      FUZZ_CHECK (hwloc_bitmap_last (set) <= CP_CPULIST_MAX);
      FUZZ_CHECK (!hwloc_bitmap_iszero (set) || (flags & CP_CPULIST_ALLOW_EMPTY));

      char *text = cp_cpulist_format (set);
      FUZZ_CHECK (only_list_characters (text));
      char *hw = NULL;
      FUZZ_CHECK (hwloc_bitmap_list_asprintf (&hw, set) >= 0 && hw != NULL);
      FUZZ_CHECK_MSG (strcmp (text, hw) == 0, "format \"%.80s\", hwloc \"%.80s\"", text, hw);
      free (hw);

      int r2 = cp_cpulist_parse (text, CP_CPULIST_ALLOW_EMPTY, again, &err);
      FUZZ_CHECK_MSG (r2 == 0, "\"%.80s\": %s", text, cp_error_message (err));
      FUZZ_CHECK (hwloc_bitmap_isequal (again, set));
      char *text2 = cp_cpulist_format (again);
      FUZZ_CHECK (strcmp (text, text2) == 0);
      /* The canonical text of what was parsed is what was written, once
         redundancy ("0,1" for "0-1") is gone: it can only be shorter. */
      FUZZ_CHECK (strlen (text) <= strlen (s));
      free (text2);
      free (text);
    }
  hwloc_bitmap_free (again);
  hwloc_bitmap_free (ref);
  hwloc_bitmap_free (set);
  free (s);
  return 0;
}
