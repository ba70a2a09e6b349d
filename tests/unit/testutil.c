#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "policy/cpulist.h"
#include "policy/util.h"

struct cp_topo *
tu_topo (const char *source)
{
  struct cp_topo *topo = NULL;
  cp_error_t err = NULL;
  if (cp_topo_load (source, &topo, &err) < 0)
    fail_msg ("loading %s: %s", source, cp_error_message (err));
  return topo;
}

hwloc_bitmap_t
tu_set (const char *cpulist)
{
  hwloc_bitmap_t b = hwloc_bitmap_alloc ();
  cp_error_t err = NULL;
  if (cp_cpulist_parse (cpulist, CP_CPULIST_ALLOW_EMPTY, b, &err) < 0)
    fail_msg ("test cpulist %s: %s", cpulist, cp_error_message (err));
  return b;
}

void
tu_assert_set_ (hwloc_const_bitmap_t set, const char *expected, const char *file, int line)
{
  char *got = cp_cpulist_format (set);
  if (strcmp (got, expected) != 0)
    {
      print_error ("%s:%d: set is `%s`, expected `%s`\n", file, line, got, expected);
      free (got);
      _fail (file, line);
    }
  free (got);
}
